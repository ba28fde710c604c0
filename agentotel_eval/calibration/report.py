"""The calibration figures as a table for people and as JSON for machines. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval.calibration.runner import Scored
from agentotel_eval.calibration.stats import (
    GATE_F1,
    GATE_MIN_POSITIVES,
    GATE_PRECISION,
    GATE_RECALL,
    Interval,
    TypeFigures,
)


def _num(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


def _ci(interval: Interval | None) -> str:
    return "      -      " if interval is None else f"[{interval.low:.2f}, {interval.high:.2f}]"


def render_table(
    title: str, scored: Sequence[Scored], figures: Sequence[TypeFigures], notes: Sequence[str] = ()
) -> str:
    cases = len({s.id for s in scored})
    conventions = sorted({s.convention for s in scored})
    lines = [
        f"{title}: {cases} cases x {len(conventions)} convention(s) ({', '.join(conventions)}) = "
        f"{len(scored)} scored runs",
        f"{'type':<18} {'pos':>5} {'neg':>5}  {'precision':>9} {'95% CI':<13}  {'recall':>6} {'95% CI':<13}  "
        f"{'F1':>5} {'95% CI':<13}  {'kappa':>6}  status",
    ]
    for f in figures:
        lines.append(
            f"{f.type:<18} {f.positives:>5} {f.fp + f.tn:>5}  {_num(f.precision):>9} {_ci(f.precision_ci)}  "
            f"{_num(f.recall):>6} {_ci(f.recall_ci)}  {_num(f.f1):>5} {_ci(f.f1_ci)}  "
            f"{_num(f.kappa):>6}  {f.status}"
        )
    lines.append(
        f"gate per type: precision > {GATE_PRECISION}, recall > {GATE_RECALL}, F1 > {GATE_F1}, "
        f"at least {GATE_MIN_POSITIVES} positives; a type that misses it is experimental"
    )
    misses = sum(1 for s in scored if s.missed)
    if misses:
        lines.append(f"reconstruction: {misses} scored run(s) did not rebuild to exactly one agent run")
    unanswered = sum(1 for s in scored if s.status != "ok")
    if unanswered:
        lines.append(f"judge: {unanswered} case(s) got no answer and count as no error found")
    lines += notes
    return "\n".join(lines)


def misclassified(scored: Sequence[Scored], limit: int = 10) -> list[str]:
    """The commonest disagreements, by operator: where to look first."""
    wrong: Counter[tuple[str, str, str]] = Counter()
    for s in scored:
        if s.labels != s.predicted:
            wrong[
                (
                    s.suite,
                    s.operator,
                    "missed " + ",".join(sorted(s.labels - s.predicted))
                    if s.labels - s.predicted
                    else "extra " + ",".join(sorted(s.predicted - s.labels)),
                )
            ] += 1
    return [f"  {n:>5}  {suite}/{op}: {what}" for (suite, op, what), n in wrong.most_common(limit)]


def as_json(
    title: str,
    scored: Sequence[Scored],
    figures: Sequence[TypeFigures],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    def interval(value: Interval | None) -> list[float] | None:
        return None if value is None else [round(value.low, 4), round(value.high, 4)]

    return {
        "suite": title,
        "cases": len({s.id for s in scored}),
        "scored_runs": len(scored),
        "conventions": sorted({s.convention for s in scored}),
        "reconstruction_misses": sum(1 for s in scored if s.missed),
        "types": [
            {
                "type": f.type,
                "positives": f.positives,
                "tp": f.tp,
                "fp": f.fp,
                "fn": f.fn,
                "tn": f.tn,
                "precision": f.precision,
                "precision_ci": interval(f.precision_ci),
                "recall": f.recall,
                "recall_ci": interval(f.recall_ci),
                "f1": f.f1,
                "f1_ci": interval(f.f1_ci),
                "kappa": f.kappa,
                "status": f.status,
            }
            for f in figures
        ],
        **(dict(extra) if extra else {}),
    }
