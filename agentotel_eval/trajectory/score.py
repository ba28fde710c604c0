"""A run's score against a trajectory spec, with everything a person needs to see why.

score = matched required weight / required weight (along the chosen alternative of each ``any_of``); with
``extra = "penalize"`` the F1 of that and of precision (matched calls / all calls). Violations fail the run
whatever the score: a forbidden call, more calls than ``max_calls``, an extra call under ``extra = "forbid"``,
a ``parallel`` group split over LLM turns. ``details`` is JSON-ready: every step with the calls it took (or
missing) and each constrained key's verdict and reason, the extra calls, and the violations.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory.align import Alignment, align
from agentotel_eval.trajectory.checks import Checker
from agentotel_eval.trajectory.report import MISSING, PARTIAL, Report, turns_matter
from agentotel_eval.trajectory.spec import TrajectorySpec

#: reports kept, by shape of run, for all specs together: steps and calls (rows) they hold, at most
SHAPE_ROWS_KEPT = 50_000
#: a run whose report holds more rows than this is not kept (a long run's alignment is where its time goes)
SHAPE_MOST_ROWS = 512
_shapes: dict[tuple[Any, ...], Report] = {}
_shape_rows = 0
_shapes_lock = threading.Lock()  # scorers on several threads share the kept reports
_spec_numbers = itertools.count()


@dataclass(frozen=True, slots=True)
class TrajectoryOutcome:
    score: float
    recall: float
    precision: float
    violations: tuple[dict[str, Any], ...]
    details: dict[str, Any] = field(repr=False)
    alignment: Alignment = field(repr=False)

    @property
    def passed_checks(self) -> bool:
        return not self.violations


def _shape(
    spec: TrajectorySpec, calls: Sequence[ToolCall], checker: Checker, budget: int | None
) -> tuple[Any, ...] | None:
    """What a run's report depends on, besides argument values: its tools, which steps' matchers each call
    passes, and where turns matter, which calls share an LLM turn. None when a ``$ref`` to a step id makes the
    matchers depend on the alignment (the alignment is then the run's own)."""
    if checker.plan.slot_of:
        return None
    number = spec.memo.get("number")
    if number is None:
        number = spec.memo.setdefault("number", next(_spec_numbers))
    turns = None
    if turns_matter(spec):
        seen: dict[Any, int] = {}
        turns = tuple(None if c.llm_turn is None else seen.setdefault(c.llm_turn, len(seen)) for c in calls)
    return number, tuple(c.name for c in calls), checker.can, turns, budget


def _keep(shape: tuple[Any, ...], report: Report) -> None:
    global _shape_rows
    rows = len(report.rows) + len(report.call_steps)
    if rows > SHAPE_MOST_ROWS:
        return
    with _shapes_lock:
        if _shape_rows + rows > SHAPE_ROWS_KEPT:
            _shapes.clear()
            _shape_rows = 0
        if shape not in _shapes:
            _shapes[shape] = report
            _shape_rows += rows


def forget_shapes() -> None:
    """Drops every kept report: the next run of each shape is aligned again (a benchmark of the alignment)."""
    global _shape_rows
    with _shapes_lock:
        _shapes.clear()
        _shape_rows = 0


def score_trajectory(
    spec: TrajectorySpec, calls: Sequence[ToolCall], threshold: float = 1.0, budget: int | None = None
) -> TrajectoryOutcome:
    """Score ``calls`` (in run order, with their LLM turns) against ``spec`` (``budget``: the alignment's work
    budget, ``align.WORK_BUDGET`` unless given).

    A run of a shape seen before (``_shape``) takes its report from that run and only its own checks are read:
    runs of one agent repeat a few shapes, and for short runs the alignment and the report's rows are most of
    the cost."""
    checker = Checker(spec, calls)
    shape = _shape(spec, calls, checker, budget)
    report = _shapes.get(shape) if shape is not None else None
    if report is None:
        alignment = align(spec, calls, budget, checker)
        report = Report(spec, calls, alignment)
        if shape is not None:
            _keep(shape, report)
    else:
        alignment = report.alignment(checker)
    details, violations = report.details(spec, calls, checker, threshold)
    reason = report.reason
    if reason is None:
        reason = reason_text(details, calls)
        if report.reason_is_fixed:
            report.reason = reason
    details["reason"] = reason
    return TrajectoryOutcome(
        report.score, report.recall, report.precision, tuple(violations), details, alignment
    )


def _fmt(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def reason_text(details: dict[str, Any], calls: Sequence[ToolCall]) -> str:
    """One paragraph: the score's parts, what is missing and why, extra calls, violations."""
    parts = [
        f"Matched {_fmt(details['matched_weight'])} of {_fmt(details['required_weight'])} required weight"
    ]
    if details["extra_mode"] == "penalize":
        parts[0] += (
            f"; precision {_fmt(details['precision'])} ({len(calls) - len(details['extra'])} of "
            f"{len(calls)} calls matched), F1 {_fmt(details['score'])}"
        )
    parts[0] += "."
    missing = [r for r in details["steps"] if r["status"] in (MISSING, PARTIAL) and r["kind"] == "tool"]
    missing += [r for r in details["steps"] if r["status"] == MISSING and r["kind"] == "any_of"]
    if missing:
        shown = []
        for row in missing[:4]:
            text = f"{row['path']} {row['label']}" + (" (partly)" if row["status"] == PARTIAL else "")
            for near in row.get("near_misses", ())[:1]:
                failing = near["checks"][:1]
                if failing:
                    text += (
                        f" [call #{near['call'] + 1}: {failing[0]['key']}: "
                        f"{failing[0].get('reason', 'failed')}]"
                    )
                elif "taken_by" in near:
                    text += f" [call #{near['call'] + 1} went to {near['taken_by']}]"
            shown.append(text)
        parts.append("Missing: " + "; ".join(shown) + (" …" if len(missing) > 4 else "") + ".")
    if details["extra"]:
        counts: dict[str, int] = {}
        for j in details["extra"]:
            counts[calls[j].name] = counts.get(calls[j].name, 0) + 1
        listed = ", ".join(name if n == 1 else f"{name} ×{n}" for name, n in counts.items())
        penalised = {"ignore": "not penalised", "penalize": "penalised", "forbid": "forbidden"}[
            details["extra_mode"]
        ]
        parts.append(f"Extra calls ({penalised}): {listed}.")
    if details.get("approximate"):
        parts.append(f"Approximate: {details['approximate_reason']}.")
    if details["violations"]:
        parts.append(
            "Violations: "
            + "; ".join(v["message"] for v in details["violations"][:4])
            + (" …" if len(details["violations"]) > 4 else "")
            + "."
        )
    return " ".join(parts)
