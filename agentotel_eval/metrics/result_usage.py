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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agentotel_eval.metrics.outcome_detectors import (
    answer_numbers,
    norm_number,
    parsed_result,
    unit_numbers,
)
from agentotel_eval.metrics.provenance import contains_token
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


def _leaves(value: Any, strings: list[str], numbers: list[float], depth: int = 0) -> None:
    """A result's strings and numbers, in one walk."""
    kind = type(value)
    if kind is str:
        strings.append(value)
    elif kind is int or kind is float:
        numbers.append(value)
    elif depth > 8 or len(strings) + len(numbers) > _MAX_TOKENS or kind is bool or value is None:
        return
    elif isinstance(value, Mapping):
        for v in value.values():
            _leaves(v, strings, numbers, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            _leaves(v, strings, numbers, depth + 1)


def _texts(strings: Sequence[str]) -> set[str]:
    """The strings' forms a later step could copy: short texts whole (lower-cased), a sentence's longer words."""
    texts: set[str] = set()
    for value in strings:
        value = value.strip()
        lowered = value.lower()
        if _SHORT_TEXT[0] <= len(value) <= _SHORT_TEXT[1] and lowered not in _PLAIN:
            texts.add(lowered)
        if " " in value:  # a sentence is used when the answer takes up its words, whatever the phrasing
            texts.update(w for w in _WORD.findall(lowered) if w not in _PLAIN and w not in _COMMON)
    return texts


def _numbers(strings: Sequence[str], numbers: Sequence[float]) -> set[float]:
    found = {norm_number(n) for n in numbers}
    for value in strings:
        if any(ch.isdigit() for ch in value):
            found.update(norm_number(n) for _, _, n in unit_numbers(value))
    return found


def _numbers_in(text: str) -> set[float]:
    return {norm_number(n) for _, n in answer_numbers(text)} | {norm_number(n) for _, _, n in unit_numbers(text)}


def unused_results(calls: Sequence[ToolCall], fails: Sequence[bool], answer: str | None) -> list[dict[str, Any]]:
    """One observation per successful call whose recorded result no later step used (see the module docstring)."""
    if not (answer or "").strip() or not calls:
        return []
    assert answer is not None
    # each later step's numbers once (the numbers of every suffix as one set), its text only when needed
    args = [c.input_parameters if c.input_parameters is not None else c.raw_arguments for c in calls]
    after: list[set[float]] = [set() for _ in calls]
    seen = _numbers_in(answer)
    for j in range(len(calls) - 1, -1, -1):
        after[j] = seen
        if args[j]:
            strings: list[str] = []
            raw_numbers: list[float] = []
            _leaves(args[j] if not isinstance(args[j], str) else parsed_result(args[j]), strings, raw_numbers)
            seen = seen | _numbers(strings, raw_numbers)
    texts_after: list[str | None] = [None] * len(calls)
    answer_text = answer.lower()

    def later_texts(i: int) -> Iterator[str]:
        yield answer_text
        for j in range(i + 1, len(calls)):
            if texts_after[j] is None:
                texts_after[j] = _text(args[j]).lower()
            yield texts_after[j] or ""

    out = []
    for i, call in enumerate(calls):
        if fails[i] or call.output is None:
            continue
        strings = []
        raw_numbers = []
        _leaves(parsed_result(call.output), strings, raw_numbers)
        numbers = _numbers(strings, raw_numbers)
        if numbers & after[i]:
            continue
        texts = _texts(strings)
        if not texts and not numbers:
            continue
        if any(t in part and contains_token(part, t) for part in later_texts(i) for t in texts):
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
