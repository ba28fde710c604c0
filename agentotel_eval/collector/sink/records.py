"""Committed evaluation rows as what the sinks send: pure functions over plain data.

One ``SinkEvaluation`` per (run, metric): the score, a pass/fail label, the reason, which evaluator (name and
version) and what kind (code for rules and detectors, an LLM for the judge), and for the tool-error metrics
the detectors' findings (type, subtype, rule, confidence, uncertain) with the verdict's own ``uncertain``
flag. The rest of a row's evaluation log (the user's input, the tool history shown to the judge)
stays in the database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.metrics.registry import METRICS, TOOL_ERRORS, TOOL_ERRORS_DETECTORS, family
from agentotel_eval.store.rows import OWN_SOURCE

#: the evaluation statuses a tool is told of: a score, or a failed evaluation; ``pending`` and ``skipped``
#: rows are not evaluations yet
SENT_STATUSES = frozenset({"ok", "error"})
#: the keys of a finding that go with it (its evidence and arguments stay in the database)
FINDING_KEYS = (
    "type",
    "subtype",
    "rule",
    "confidence",
    "uncertain",
    "tool_name",
    "call_indices",
    "description",
)
#: the metrics whose evaluation log holds the detectors' findings (the tool-error metrics)
WITH_FINDINGS = frozenset(d.name for d in family(TOOL_ERRORS))
#: agent and service when the run is not known (a run removed before its judge's answer was sent)
UNKNOWN = ""


@dataclass(frozen=True, slots=True)
class RunIdentity:
    """Which agent of which service a run belongs to (the labels of the quality metrics), and when it started
    (a time that stays the same when the run is re-scored)."""

    service: str
    agent: str
    start_ns: int = 0


@dataclass(frozen=True, slots=True)
class SinkEvaluation:
    """One evaluation of one run, as every sink sends it."""

    trace_id: str
    span_id: str  # the run's span
    metric: str
    score: float | None
    success: bool | None
    status: str  # ok | error
    reason: str
    evaluator: str
    evaluator_version: str
    #: CODE (rules, detectors, tool correctness, trajectory) or LLM (the judge)
    annotator: str
    threshold: float | None
    model: str | None
    findings: tuple[Mapping[str, Any], ...]
    uncertain: bool | None
    run: RunIdentity
    created_at_ns: int

    @property
    def key(self) -> tuple[str, str, str]:
        """What a newer evaluation replaces: one per run and metric."""
        return (self.trace_id, self.span_id, self.metric)

    @property
    def label(self) -> str:
        """``pass`` / ``fail``; ``error`` for an evaluation that failed."""
        if self.status != "ok" or self.success is None:
            return "error"
        return "pass" if self.success else "fail"

    def metadata(self) -> dict[str, Any]:
        """The keys every tool gets alongside the score (JSON-ready)."""
        out: dict[str, Any] = {
            "source": OWN_SOURCE,
            "evaluator": self.evaluator,
            "evaluator_version": self.evaluator_version,
            "annotator_kind": self.annotator,
            "label": self.label,
            "threshold": self.threshold,
            "service": self.run.service,
            "agent": self.run.agent,
        }
        if self.model:
            out["model"] = self.model
        if self.metric in WITH_FINDINGS:
            out["findings"] = [dict(f) for f in self.findings]
            out["uncertain"] = self.uncertain
        return out


def _details(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str) and value:
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, Mapping) else {}
    return {}


def findings_of(details: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The detectors' findings in an evaluation log, each cut to ``FINDING_KEYS``."""
    found = details.get("detectors")
    if not isinstance(found, list):
        return ()
    return tuple(
        {key: item.get(key) for key in FINDING_KEYS if key in item}
        for item in found
        if isinstance(item, Mapping)
    )


def annotator_of(row: Mapping[str, Any]) -> str:
    """LLM for the judge's verdict, CODE for everything computed by rules."""
    declared = METRICS.get(str(row.get("metric")))
    return "LLM" if declared is not None and declared.llm else "CODE"


def sink_evaluations(
    rows: Iterable[Mapping[str, Any]], runs: Mapping[tuple[str, str], RunIdentity]
) -> list[SinkEvaluation]:
    """This collector's sendable rows (``evaluations`` columns as dicts) as ``SinkEvaluation``; other tools'
    scores, pending and skipped rows are left out. ``runs`` names each run's service and agent."""
    out = []
    for row in rows:
        if row.get("source", OWN_SOURCE) != OWN_SOURCE or row.get("status") not in SENT_STATUSES:
            continue
        details = _details(row.get("details"))
        uncertain = details.get("uncertain")
        key = (row["trace_id"], row["run_span_id"])
        created = row.get("created_at")
        out.append(
            SinkEvaluation(
                trace_id=row["trace_id"],
                span_id=row["run_span_id"],
                metric=row["metric"],
                score=row.get("score"),
                success=row.get("success"),
                status=row["status"],
                reason=row.get("reason") or "",
                evaluator=row.get("evaluator") or "",
                evaluator_version=row.get("evaluator_version") or "",
                annotator=annotator_of(row),
                threshold=row.get("threshold"),
                model=row.get("model"),
                findings=findings_of(details),
                uncertain=uncertain if isinstance(uncertain, bool) else None,
                run=runs.get(key, RunIdentity(UNKNOWN, UNKNOWN)),
                created_at_ns=_ns(created),
            )
        )
    return out


def _ns(value: Any) -> int:
    """Nanoseconds since the epoch from an Arrow timestamp's Python value (a datetime) or a number."""
    if value is None:
        return 0
    if isinstance(value, int | float):
        return int(value)
    return int(value.timestamp() * 1e9)


def run_identities(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], RunIdentity]:
    """(trace_id, span_id) -> identity, from ``agent_runs`` rows as dicts."""
    return {
        (r["trace_id"], r["span_id"]): RunIdentity(
            r.get("service_name") or "", r.get("agent_name") or "", _ns(r.get("start_time"))
        )
        for r in rows
    }


def sure_error_types(evaluation: SinkEvaluation) -> list[str]:
    """The types of the detectors' findings in a ``tool_errors_detectors`` evaluation that they are sure of,
    one per finding (what ``agentotel_tool_errors_total`` counts)."""
    if evaluation.metric != TOOL_ERRORS_DETECTORS.name:
        return []
    return [str(f["type"]) for f in evaluation.findings if f.get("type") and not f.get("uncertain")]
