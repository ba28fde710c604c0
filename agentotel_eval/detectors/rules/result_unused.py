"""Results nothing used: a successful call whose result feeds no later call's arguments and no part of the
final answer (``result_ignored``, subtype ``result_unused``).

This is an observation, not an error: a lookup whose answer the agent did not need, a write whose confirmation
went unmentioned. It is reported with low severity apart from the findings (``informational`` in the
evaluation log) and never changes a verdict, a score or a pass rate.

A result counts as used when any of its salient values appears, as a whole token, in a later call's arguments
or in the answer: its ids, its names and short texts (3 to 80 characters), its numbers (to the cent, thousands
separators ignored) and, for texts of several words, any of their words of four letters or more. A result with
nothing salient ("ok", ``true``, an empty list) has nothing to use and is never reported. It runs only where
the answer and the call's result are recorded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.statements.scan import NUMBER, read
from agentotel_eval.detectors.statements.values import parsed
from agentotel_eval.detectors.tokens import contains_token, string_values, value_text
from agentotel_eval.detectors.types import RESULT_IGNORED
from agentotel_eval.detectors.view import RunView

SEVERITY = "low"
_SHORT_TEXT = (3, 80)
_WORD = re.compile(r"[^\W\d_]{4,}")
_COMMON = frozenset(
    {
        "this",
        "that",
        "with",
        "from",
        "have",
        "been",
        "were",
        "will",
        "your",
        "into",
        "than",
        "then",
        "they",
        "them",
        "what",
        "when",
        "also",
        "only",
        "some",
        "more",
        "most",
        "such",
        "each",
        "over",
        "very",
        "just",
        "like",
        "does",
        "there",
        "their",
        "which",
        "would",
        "could",
        "should",
        "about",
    }
)
_PLAIN = frozenset(
    {
        "true",
        "false",
        "none",
        "null",
        "success",
        "successful",
        "error",
        "status",
        "result",
        "results",
        "found",
        "empty",
        "done",
    }
)
_NUMBER_LEAF = re.compile(r"-?\d+(?:\.\d+)?")


def _texts(strings: Sequence[str]) -> set[str]:
    """The strings' forms a later step could copy: short texts whole (lower-cased), a
    sentence's longer words."""
    texts: set[str] = set()
    for value in strings:
        value = value.strip()
        lowered = value.lower()
        if _SHORT_TEXT[0] <= len(value) <= _SHORT_TEXT[1] and lowered not in _PLAIN:
            texts.add(lowered)
        if " " in value:  # a sentence is used when the answer takes up its words, whatever the phrasing
            texts.update(w for w in _WORD.findall(lowered) if w not in _PLAIN and w not in _COMMON)
    return texts


def _numbers(value: Any) -> set[float]:
    out: set[float] = set()
    _collect(parsed(value), out, 0)
    return out


def _collect(value: Any, out: set[float], depth: int) -> None:
    if depth > 8 or len(out) > 400:
        return
    if isinstance(value, dict):  # containers and strings first: most of a result (bool is told before int)
        for item in value.values():
            _collect(item, out, depth + 1)
    elif isinstance(value, str):
        if any(ch.isdigit() for ch in value):
            out.update(round(abs(f.value), 2) for f in read(value, statuses=False).facts if f.kind == NUMBER)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, out, depth + 1)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        out.add(round(abs(float(value)), 2))


def find(view: RunView) -> list[Finding]:
    answer = view.answer or ""
    calls = view.calls
    if not answer.strip() or not calls:
        return []
    answer_text = answer.lower()
    answer_numbers = {round(abs(f.value), 2) for f in view.answer_reading.facts if f.kind == NUMBER}
    args = [c.input_parameters if c.input_parameters is not None else c.raw_arguments for c in calls]
    step_texts: list[str | None] = [None] * len(calls)
    step_numbers: list[set[float] | None] = [None] * len(calls)

    def text_of_step(j: int) -> str:
        found = step_texts[j]
        if found is None:
            found = step_texts[j] = value_text(args[j]).lower()
        return found

    def numbers_of_step(j: int) -> set[float]:
        found = step_numbers[j]
        if found is None:
            found = step_numbers[j] = _numbers(args[j])
        return found

    def used_in(text: str, texts: set[str]) -> bool:
        return any(t in text and contains_token(text, t) for t in texts)

    out = []
    for i, call in enumerate(calls):
        if view.fails[i] or call.output is None:
            continue
        result = parsed(call.output)
        numbers = _numbers(result)
        if numbers & answer_numbers:
            continue
        texts = _texts(list(string_values(result)))
        if (not texts and not numbers) or used_in(answer_text, texts):
            continue
        if any(
            numbers & numbers_of_step(j) or used_in(text_of_step(j), texts) for j in range(i + 1, len(calls))
        ):
            continue
        out.append(
            finding(
                RESULT_IGNORED,
                "result_unused",
                "result_ignored.unused",
                call.name,
                (i,),
                f"call #{i + 1} {call.name}: no value of its result appears in a later call's arguments "
                "or in the final answer",
                {
                    "values_checked": len(texts) + len(numbers),
                    "sample": sorted(texts)[:3] + [f"{n:g}" for n in sorted(numbers)[:3]],
                },
            )
        )
    return out


RULE = Rule(
    "result_ignored.result_unused",
    RESULT_IGNORED,
    ("result_unused",),
    "a successful call's result that no later call and no part of the answer used (an observation)",
    find,
    needs=("answer",),
    severity=SEVERITY,
    observation=True,
)
