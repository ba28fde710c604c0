"""A run's trajectory result as the run page draws it: the spec's steps in written order beside the calls that
matched them, each argument check (holds, failed with its reason, not recorded), the nearest call of a missing
step and why it did not match, the extra calls and the violations. Pure: it reads the ``trajectory``
evaluation row (its ``details`` as the scorer wrote them); ``templates/trajectory.html`` lays it out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from agentotel_eval.pages.markup import fmt_score
from agentotel_eval.trajectory.text import step_marks

#: a step's status, in words, and the chip class it is shown with
STATUS = {
    "matched": ("matched", "pass"),
    "partial": ("partly matched", "kind-out_of_order"),
    "missing": ("missing", "kind-missing"),
    "skipped": ("optional, skipped", "muted"),
    "not_taken": ("alternative not taken", "muted"),
}
VERDICT = {True: ("holds", "pass"), False: ("failed", "fail"), None: ("not recorded", "muted")}
EXTRA_MODE = {"ignore": "not penalised", "penalize": "penalised (F1 with precision)", "forbid": "forbidden"}


class Check(NamedTuple):
    key: str
    verdict: str  # holds | failed | not recorded
    chip: str
    expected: str  # the matcher, as written
    reason: str


class NearMiss(NamedTuple):
    call: str  # "#5 issue_refund"
    taken_by: str | None  # the step that took the call instead, if one did
    checks: list[Check]  # the checks that kept it out


class StepRow(NamedTuple):
    path: str
    label: str
    kind: str
    depth: int
    status: str  # matched | partial | missing | skipped | not_taken
    status_text: str
    chip: str
    marks: list[str]  # id, optional, count, weight
    calls: list[str]  # "#3 get_order"
    checks: list[tuple[str, list[Check]]]  # per matched call, its argument checks
    near_misses: list[NearMiss]


class Violation(NamedTuple):
    kind: str
    message: str


class TrajectoryView(NamedTuple):
    score: str
    result: str  # pass | fail | error
    recall: str
    precision: str
    weight: str  # "4 of 6"
    extra_mode: str  # in words
    penalized: bool
    preset: str | None
    steps: list[StepRow]
    extra: list[str]
    violations: list[Violation]
    turns_not_recorded: bool
    error: str | None  # the spec could not be read: why


def _call(calls: Sequence[Mapping[str, Any]], index: Any) -> str:
    j = int(index) if isinstance(index, int | str) and str(index).lstrip("-").isdigit() else -1
    tool = calls[j].get("tool") if 0 <= j < len(calls) else None
    return f"#{j + 1} {tool or '?'}"


def _check(check: Mapping[str, Any]) -> Check:
    verdict, chip = VERDICT.get(check.get("ok"), VERDICT[None])
    return Check(
        str(check.get("key", "")),
        verdict,
        chip,
        str(check.get("expected") or ""),
        str(check.get("reason") or ""),
    )


def _marks(row: Mapping[str, Any]) -> list[str]:
    return ([f"id {row['id']}"] if row.get("id") else []) + step_marks(row)


def _step(row: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]) -> StepRow:
    status = str(row.get("status") or "")
    text, chip = STATUS.get(status, (status, "muted"))
    taken = list(row.get("calls") or [])
    checks_by_call = row.get("checks") or {}
    checks = (
        [
            (_call(calls, j), [_check(c) for c in checks_by_call.get(str(j), [])])
            for j in taken
            if checks_by_call.get(str(j))
        ]
        if row.get("kind") == "tool"
        else []
    )
    near = [
        NearMiss(_call(calls, m.get("call")), m.get("taken_by"), [_check(c) for c in m.get("checks") or []])
        for m in row.get("near_misses") or []
        if isinstance(m, Mapping)
    ]
    return StepRow(
        str(row.get("path") or ""),
        str(row.get("label") or ""),
        str(row.get("kind") or ""),
        min(int(row.get("depth") or 0), 8),
        status,
        text,
        chip,
        _marks(row),
        [_call(calls, j) for j in taken] if row.get("kind") == "tool" else [],
        checks,
        near,
    )


def trajectory_view(evaluation: Mapping[str, Any] | None) -> TrajectoryView | None:
    """The view of a run's ``trajectory`` evaluation row; None when the run has none."""
    if evaluation is None:
        return None
    details = evaluation.get("details") if isinstance(evaluation.get("details"), Mapping) else {}
    if evaluation.get("status") != "ok" or not isinstance(details, Mapping) or "steps" not in details:
        why = str(evaluation.get("reason") or evaluation.get("status") or "not scored")
        return TrajectoryView(
            "-",
            str(evaluation.get("status") or "error"),
            "-",
            "-",
            "",
            "",
            False,
            None,
            [],
            [],
            [],
            False,
            why,
        )
    calls: Sequence[Mapping[str, Any]] = details.get("calls") or []
    mode = str(details.get("extra_mode") or "ignore")
    return TrajectoryView(
        fmt_score(evaluation.get("score")),
        "pass" if evaluation.get("success") else "fail",
        fmt_score(details.get("recall")),
        fmt_score(details.get("precision")),
        f"{details.get('matched_weight', 0):g} of {details.get('required_weight', 0):g}",
        EXTRA_MODE.get(mode, mode),
        mode == "penalize",
        details.get("preset"),
        [_step(row, calls) for row in details.get("steps") or [] if isinstance(row, Mapping)],
        [_call(calls, j) for j in details.get("extra") or []],
        [
            Violation(str(v.get("type") or ""), str(v.get("message") or ""))
            for v in details.get("violations") or []
            if isinstance(v, Mapping)
        ],
        bool(details.get("turns_not_recorded")),
        None,
    )
