"""``repeated_failure``: one tool failing two or more times in a row with the same arguments
(``same_arguments``), or with arguments that differ only in how a value is written: case, spaces, punctuation
around it, a number written as text or in another unit ("Rome" / " rome ", 5 / "5", "5 km" / "5000 m":
``equivalent_arguments``). "In a row" counts that tool's calls: calls of other tools in between do not break
the streak; a call of the same tool with other arguments, or a success, does. The streak
reads the call's status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval.detectors.failure import error_text
from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.schemas import preview
from agentotel_eval.detectors.statements.scan import NUMBER, read
from agentotel_eval.detectors.types import REPEATED_FAILURE
from agentotel_eval.detectors.view import RunView, normalized
from agentotel_eval.frozen import thaw
from agentotel_eval.test_case import ToolCall


def find(view: RunView) -> list[Finding]:
    calls = view.calls
    if [call.status for call in calls].count("error") < 2:
        return []  # a streak needs two failures
    streaks: dict[str, list[int]] = {}  # tool name -> indices of the current failing streak
    out: list[Finding] = []

    def close(name: str) -> None:
        indices = streaks.pop(name, None)
        if indices and len(indices) >= 2:
            out.append(_repeated(calls, indices))

    for index, call in enumerate(calls):
        current = streaks.get(call.name)
        if call.status != "error":
            close(call.name)
            continue
        if current and _equivalent(calls[current[-1]], call):
            current.append(index)
        else:
            close(call.name)
            streaks[call.name] = [index]
    for name in list(streaks):
        close(name)
    return out


def _arguments(call: ToolCall) -> Any:
    return call.input_parameters if call.input_parameters is not None else call.raw_arguments


def _equivalent(a: ToolCall, b: ToolCall) -> bool:
    first, second = _arguments(a), _arguments(b)
    return first == second or canonical(first) == canonical(second)


def canonical(value: Any) -> Any:
    """A value as it compares for "the same call": strings normalized, numbers (also written as text, with a
    unit) in one unit, objects by key."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return ("n", "", round(float(value), 6))
    if isinstance(value, str):
        text = value.strip()
        facts = read(text, statuses=False).facts if any(ch.isdigit() for ch in text) else ()
        if (
            len(facts) == 1
            and facts[0].kind == NUMBER
            and facts[0].start == 0
            and facts[0].end >= len(text.rstrip("."))
        ):
            return ("n", facts[0].dim, round(float(facts[0].value), 6))
        return ("s", normalized(text))
    if isinstance(value, dict | Mapping):
        return ("o", frozenset((str(k), canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("l", tuple(canonical(v) for v in value))
    return ("?", repr(value))


def _repeated(calls: Sequence[ToolCall], indices: list[int]) -> Finding:
    first = calls[indices[0]]
    positions = ", ".join(f"#{i + 1}" for i in indices)
    args = preview(_arguments(first))
    error = calls[indices[-1]].error
    reason = f": {preview(error) if not isinstance(error, str) else error[:160]}" if error else ""
    exact = all(thaw(_arguments(calls[i])) == thaw(_arguments(first)) for i in indices)
    subtype = "same_arguments" if exact else "equivalent_arguments"
    how = "the same arguments" if exact else "arguments written differently but the same"
    return finding(
        REPEATED_FAILURE,
        subtype,
        f"repeated_failure.{subtype}",
        first.name,
        tuple(indices),
        f"{first.name!r} failed {len(indices)} times in a row with {how} {args} (calls {positions}){reason}",
        {
            "arguments": args,
            "error": reason[2:] or error_text(calls[indices[-1]])[:200] or None,
            "times": len(indices),
        },
    )


RULE = Rule(
    "repeated_failure.same_arguments",
    REPEATED_FAILURE,
    ("same_arguments", "equivalent_arguments"),
    "one tool failing two or more times in a row with the same (or equivalently written) arguments",
    find,
)
