"""Results nothing used: a successful call whose result feeds no later call's arguments and no part of the final
answer (``result_ignored``, subtype ``result_unused``).

This is an observation, not an error: a lookup whose answer the agent did not need, a write whose confirmation
went unmentioned. It is reported with low severity apart from the detectors' findings (``informational`` in the
evaluation log) and never changes a verdict, a score or a pass rate.

A result counts as used when any of its salient values appears, as a whole token, in a later call's arguments or
in the answer: its ids, its names and short texts (3 to 80 characters), its numbers (to the cent, thousands
separators ignored) and, for texts of several words, any of their words of four letters or more. A result with nothing salient ("ok", ``true``,
an empty list) has nothing to use and is never reported. It runs only where the answer and the call's result are
recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agentotel_eval.metrics.outcome_detectors import (
    answer_numbers,
    norm_number,
    numeric_leaves,
    parsed_result,
    unit_numbers,
)
from agentotel_eval.metrics.provenance import contains_token, string_values
from agentotel_eval.test_case import ToolCall

RESULT_IGNORED = "result_ignored"
SEVERITY = "low"
_SHORT_TEXT = (3, 80)
_WORD = re.compile(r"[^\W\d_]{4,}")
_COMMON = frozenset({"this", "that", "with", "from", "have", "been", "were", "will", "your", "into", "than", "then",
                     "they", "them", "what", "when", "also", "only", "some", "more", "most", "such", "each", "over",
                     "very", "just", "like", "does", "there", "their", "which", "would", "could", "should", "about"})
_MAX_TOKENS = 200
_PLAIN = frozenset({"true", "false", "none", "null", "success", "successful", "error", "status", "result",
                    "results", "found", "empty", "done"})


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _salient(result: Any) -> tuple[set[str], set[float]]:
    """The values of a result a later step could use: texts (lower-cased) and numbers (normalised)."""
    texts: set[str] = set()
    for value in string_values(result):
        value = value.strip()
        if _SHORT_TEXT[0] <= len(value) <= _SHORT_TEXT[1] and value.lower() not in _PLAIN:
            texts.add(value.lower())
        if " " in value:  # a sentence is used when the answer takes up its words, whatever the phrasing
            texts.update(w for w in map(str.lower, _WORD.findall(value)) if w not in _PLAIN and w not in _COMMON)
        if len(texts) >= _MAX_TOKENS:
            break
    numbers = {norm_number(n) for _, n in numeric_leaves(result)}
    return texts, numbers


def _numbers_in(text: str) -> set[float]:
    return {norm_number(n) for _, n in answer_numbers(text)} | {norm_number(n) for _, _, n in unit_numbers(text)}


def unused_results(calls: Sequence[ToolCall], fails: Sequence[bool], answer: str | None) -> list[dict[str, Any]]:
    """One observation per successful call whose recorded result no later step used (see the module docstring)."""
    if not (answer or "").strip() or not calls:
        return []
    assert answer is not None
    later_args = [_text(c.input_parameters if c.input_parameters is not None else c.raw_arguments) for c in calls]
    out = []
    for i, call in enumerate(calls):
        if fails[i] or call.output is None:
            continue
        texts, numbers = _salient(parsed_result(call.output))
        if not texts and not numbers:
            continue
        downstream = "\n".join([*later_args[i + 1:], answer])
        lowered = downstream.lower()
        if any(contains_token(lowered, t) for t in texts) or numbers & _numbers_in(downstream):
            continue
        out.append({
            "type": RESULT_IGNORED,
            "subtype": "result_unused",
            "rule": "result_ignored.unused",
            "description": f"call #{i + 1} {call.name}: no value of its result appears in a later call's arguments "
                           "or in the final answer",
            "tool_name": call.name,
            "call_indices": (i,),
            "evidence": {"values_checked": len(texts) + len(numbers),
                         "sample": sorted(texts)[:3] + [f"{n:g}" for n in sorted(numbers)[:3]]},
        })
    return out
