"""A scored trajectory as lines of text, for a terminal (``explain``) or a test failure: the spec's steps in
written order beside the calls that matched them, each argument check, the extra calls and the violations.

It reads the ``details`` a score carries (plain JSON data, as stored in an evaluation row), so a stored result
prints the same as a fresh one::

    trajectory 0.67 (4 of 6 required weight; extra calls not penalised)
      ok        steps[0] find_user [who]   #1 find_user   zip: ok ($regex '\\\\d{5}')
      missing   steps[5] issue_refund      nearest #5 issue_refund: method: FAILED: 'cash' is not one of [...]
      extra     #5 issue_refund (not penalised)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_STATUS = {
    "matched": "ok",
    "partial": "partial",
    "missing": "missing",
    "skipped": "skipped",
    "not_taken": "not taken",
}
_EXTRA = {"ignore": "not penalised", "penalize": "penalised", "forbid": "forbidden"}


def _call(calls: Sequence[Mapping[str, Any]], index: int) -> str:
    tool = calls[index].get("tool") if 0 <= index < len(calls) else None
    return f"#{index + 1} {tool or '?'}"


def _check(check: Mapping[str, Any]) -> str:
    ok = check.get("ok")
    verdict = "ok" if ok is True else "not recorded" if ok is None else "FAILED"
    reason = f": {check['reason']}" if ok is False and check.get("reason") else ""
    expected = f" ({check['expected']})" if ok is not False and check.get("expected") else ""
    return f"{check.get('key')}: {verdict}{reason}{expected}"


def step_marks(row: Mapping[str, Any]) -> list[str]:
    """A step row's modifiers in words: ``optional``, ``count 1..3`` (``..∞``: no maximum), ``weight 0.5``."""
    marks = []
    if row.get("optional"):
        marks.append("optional")
    count = row.get("count")
    if isinstance(count, Mapping):
        high = count.get("max")
        marks.append(f"count {count.get('min')}..{'∞' if high is None else high}")
    if row.get("weight") is not None:
        marks.append(f"weight {row['weight']:g}")
    return marks


def _step_label(row: Mapping[str, Any]) -> str:
    label = f"{row.get('path')} {row.get('label')}"
    if row.get("id"):
        label += f" [{row['id']}]"
    marks = step_marks(row)
    return f"{label} ({', '.join(marks)})" if marks else label


def _number(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "-"


def trajectory_lines(details: Mapping[str, Any], indent: str = "  ") -> list[str]:
    """The lines for one scored trajectory (``TrajectoryOutcome.details`` or a stored row's ``details``)."""
    calls: Sequence[Mapping[str, Any]] = details.get("calls") or []
    mode = details.get("extra_mode", "ignore")
    head = (
        f"trajectory {_number(details.get('score'))} ({details.get('matched_weight', 0):g} of "
        f"{details.get('required_weight', 0):g} required weight"
    )
    if mode == "penalize":
        head += f"; recall {_number(details.get('recall'))}, precision {_number(details.get('precision'))}"
    head += f"; extra calls {_EXTRA.get(mode, mode)}"
    if details.get("preset"):
        head += f"; preset {details['preset']}"
    lines = [head + ")"]
    rows: Sequence[Mapping[str, Any]] = details.get("steps") or []
    labels = [indent * int(row.get("depth", 0)) + _step_label(row) for row in rows]
    width = max((len(label) for label in labels), default=0)
    for row, label in zip(rows, labels, strict=True):
        status = _STATUS.get(str(row.get("status")), str(row.get("status")))
        taken = [_call(calls, i) for i in row.get("calls") or []]
        notes: list[str] = []
        if row.get("kind") == "tool":
            checks = row.get("checks") or {}
            for i in row.get("calls") or []:
                notes.extend(_check(c) for c in checks.get(str(i), []))
            for miss in row.get("near_misses") or []:
                failed = "; ".join(_check(c) for c in miss.get("checks") or [])
                taken_by = f" (taken by {miss['taken_by']})" if miss.get("taken_by") else ""
                notes.append(f"nearest {_call(calls, int(miss.get('call', -1)))}{taken_by}: {failed}")
        text = f"{indent}{status:<10}{label.ljust(width)}"
        if taken and row.get("kind") == "tool":
            text += "   " + ", ".join(taken)
        if notes:
            text += "   " + "; ".join(notes)
        lines.append(text.rstrip())
    extra = details.get("extra") or []
    if extra:
        lines.append(
            f"{indent}{'extra':<10}{', '.join(_call(calls, i) for i in extra)} ({_EXTRA.get(mode, mode)})"
        )
    for violation in details.get("violations") or []:
        lines.append(f"{indent}{'violation':<10}{violation.get('type')}: {violation.get('message')}")
    if details.get("approximate"):
        lines.append(f"{indent}(approximate: {details.get('approximate_reason')})")
    if details.get("turns_not_recorded"):
        lines.append(f"{indent}(LLM turns not recorded: parallel groups were not checked for one turn)")
    return lines
