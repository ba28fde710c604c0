"""Results nothing used: a successful call whose result feeds no later call's arguments and no part of the final
answer (``result_ignored``, subtype ``result_unused``).

This is an observation, not an error: a lookup whose answer the agent did not need, a write whose confirmation
went unmentioned. It is reported with low severity apart from the detectors' findings (``informational`` in the
evaluation log) and never changes a verdict, a score or a pass rate.

A result counts as used when any of its salient values appears, as a whole token, in a later call's arguments or
in the answer: its ids, its names and short texts (3 to 80 characters), its numbers (to the cent, thousands
separators ignored) and, for texts of several words, any of their words of four letters or more. A result with
nothing salient ("ok", ``true``, an empty list) has nothing to use and is never reported. It runs only where the
answer and the call's result are recorded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentotel_eval.metrics.outcome_detectors import RunValues
from agentotel_eval.metrics.provenance import contains_token, value_text
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


def unused_results(calls: Sequence[ToolCall], fails: Sequence[bool], answer: str | None,
                   values: RunValues | None = None) -> list[dict[str, Any]]:
    """One observation per successful call whose recorded result no later step used (see the module docstring)."""
    if not (answer or "").strip() or not calls:
        return []
    assert answer is not None
    # the answer first (where results usually go), then each later call's arguments, each read once if at all
    values = values if values is not None else RunValues(calls, answer)
    answer_text = answer.lower()
    answer_numbers_ = values.numbers("answer")
    args = [c.input_parameters if c.input_parameters is not None else c.raw_arguments for c in calls]
    step_texts: list[str | None] = [None] * len(calls)

    def text_of_step(j: int) -> str:
        found = step_texts[j]
        if found is None:
            found = step_texts[j] = value_text(args[j]).lower()
        return found

    def used_in(text: str, texts: set[str]) -> bool:
        return any(t in text and contains_token(text, t) for t in texts)

    out = []
    for i, call in enumerate(calls):
        if fails[i] or call.output is None:
            continue
        strings = values.result(i)[1]
        numbers = values.numbers("result", i)
        if numbers & answer_numbers_:
            continue
        texts = _texts(strings)
        if (not texts and not numbers) or used_in(answer_text, texts):
            continue
        if any(numbers & values.numbers("arguments", j) or used_in(text_of_step(j), texts) for j in range(i + 1, len(calls))):
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
