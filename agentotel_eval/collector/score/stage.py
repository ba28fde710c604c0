"""The scoring stage: every completed agent run is scored before its rows are written.

Between the assembler and the run writer (see ``agentotel_eval.collector.process.completed``). For each run it
finds the expectation, runs the deterministic metrics inline (tool correctness in the configured modes, the
tool-error detectors), queues the LLM judge as a ``pending`` evaluation row (the judge worker answers it
later; ingest never waits for an LLM), stores ``gen_ai.evaluation.result`` scores other tools sent, and
rewrites the stored run span with its score attributes and events. With forwarding on, it releases the spans
the collector held back (run and root spans) to the downstream endpoint, the run spans carrying their scores.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.collector.config_scoring import ScoringConfig
from agentotel_eval.collector.expectations import MODE_METRICS, Expectation, ExpectationFinder
from agentotel_eval.collector.process.completed import CompletedTrace, TraceStage
from agentotel_eval.collector.score.judge_policy import judge_decision
from agentotel_eval.collector.store.operations import SpanUpdate
from agentotel_eval.metrics.base import BaseMetric, MetricResult
from agentotel_eval.metrics.registry import TOOL_ERRORS, TOOL_ERRORS_DETECTORS, TRAJECTORY
from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct import is_run_span
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.scores import (
    ExternalEvaluation,
    evaluation_span,
    external_evaluations,
    scored_on,
    with_scores,
    write_back,
)
from agentotel_eval.store.rows import (
    OWN_SOURCE,
    EvaluationRow,
)

log = logging.getLogger(__name__)

#: the metrics the stage computes inline, as opposed to the judge's answer that comes later
DETERMINISTIC_METRICS = (
    *(d.name for d in MODE_METRICS.values()),
    TRAJECTORY.name,
    TOOL_ERRORS_DETECTORS.name,
)
_DETERMINISTIC = frozenset(DETERMINISTIC_METRICS)
_CORRECTNESS = frozenset(d.name for d in MODE_METRICS.values())


def is_held_span(span: SpanRecord) -> bool:
    """Spans forwarded only once their trace is scored: a run span may carry scores, a root may be a run."""
    return span.parent_span_id is None or is_run_span(span)


def result_row(
    trace_id: str,
    run_span_id: str,
    result: MetricResult,
    now_ns: int,
    latency_s: float | None = None,
    **details: Any,
) -> EvaluationRow:
    """The evaluations row of one metric result on a run; ``details`` adds keys to its evaluation log."""
    log_ = {**result.evaluation_log, **details}
    if result.evaluator_version:  # which code gave the score: a re-score with newer code replaces it
        log_["metric_version"] = result.evaluator_version
    return EvaluationRow(
        trace_id=trace_id,
        run_span_id=run_span_id,
        metric=result.metric,
        score=result.score,
        threshold=result.threshold,
        success=result.success,
        reason=result.reason or (result.error or ""),
        details=log_ or None,
        status=result.status,
        model=result.model,
        cost_usd=result.cost_usd,
        created_at_ns=now_ns,
        evaluator=result.evaluator or None,
        evaluator_version=result.evaluator_version or None,
        latency_s=result.latency_s if latency_s is None else latency_s,
        source=OWN_SOURCE,
        updated_at_ns=now_ns,
    )


def external_row(ev: ExternalEvaluation, now_ns: int) -> EvaluationRow:
    """A ``gen_ai.evaluation.result`` from another tool as an evaluations row (source recorded)."""
    return EvaluationRow(
        trace_id=ev.trace_id or "",
        run_span_id=ev.span_id or "",
        metric=ev.name,
        score=ev.score,
        success=ev.success,
        reason=ev.explanation,
        details={
            "label": ev.label,
            "error_type": ev.error_type,
            "response_id": ev.response_id,
            "origin": ev.origin,
        },
        status="error" if ev.error_type else "ok",
        created_at_ns=ev.time_ns or now_ns,
        evaluator="external",
        evaluator_version=ev.source,
        source=ev.source,
        updated_at_ns=now_ns,
    )


def external_rows(logs: Sequence[LogRecord], now_ns: int) -> list[EvaluationRow]:
    """Rows for the evaluation results that arrived as log records (with a trace id: they belong to a run)."""
    return [external_row(ev, now_ns) for ev in external_evaluations((), logs) if ev.trace_id]


def judge_row(
    config: ScoringConfig,
    run: AgentRun,
    case: Any,
    results: Sequence[MetricResult],
    expectation: Expectation | None,
    now: int,
) -> EvaluationRow | None:
    """The judge's row for a scored run: ``pending`` (the judge worker takes it from the table), ``skipped``
    when there is nothing to show the judge, or None when the run is not a candidate
    (sampling, ``only_when``)."""
    settings = config.judge
    if settings is None:
        return None
    judge, _why = judge_decision(run, list(results), settings)
    if not judge:
        return None  # not a candidate (sampling / only_when): no row, nothing to wait for
    if not (run.input or "").strip():  # nothing to show the judge what was asked: say so, spend nothing
        return EvaluationRow(
            trace_id=run.trace_id,
            run_span_id=run.span_id,
            metric=TOOL_ERRORS.name,
            threshold=settings.threshold,
            reason="not judged: the run has no recorded user input (is message content capture on?)",
            status="skipped",
            model=settings.model,
            created_at_ns=now,
            evaluator=ToolsErrorMetric.__name__,
            evaluator_version=ToolsErrorMetric.version,
        )
    return EvaluationRow(
        trace_id=run.trace_id,
        run_span_id=run.span_id,
        metric=TOOL_ERRORS.name,
        threshold=settings.threshold,
        reason="queued for the LLM judge",
        status="pending",
        model=settings.model,
        created_at_ns=now,
        details={
            "test_case": case.to_dict(),
            "run_start_ns": run.start_time_ns,
            "expectation": expectation.source if expectation is not None else None,
        },
        evaluator=ToolsErrorMetric.__name__,
        evaluator_version=ToolsErrorMetric.version,
    )


def _expectation_source(expectation: Expectation | None, metric: str) -> str | None:
    """Where the expectation a metric scored against came from (for its row's details)."""
    if expectation is None:
        return None
    if metric in _CORRECTNESS:
        return expectation.source
    if metric == TRAJECTORY.name:
        return expectation.trajectory_source
    return None


@dataclass
class ScoringStats:
    runs_scored: int = 0
    runs_without_expectation: int = 0
    evaluations: dict[str, int] = field(default_factory=dict)  # metric -> rows written
    judge_queued: int = 0
    external_evaluations: int = 0
    errors: int = 0
    spans_forwarded: int = 0


class RunScorer:
    """The deterministic part, pure over one run: expectation -> metric results. Reusable and thread-safe."""

    def __init__(self, config: ScoringConfig) -> None:
        self.config = config
        settings = config.scoring
        self._correctness: dict[str, ToolCorrectnessMetric] = {
            mode: metric.build(settings.threshold) for mode, metric in MODE_METRICS.items()
        }
        self._finder = ExpectationFinder(config.expectations, config.dataset, settings.modes)
        self._trajectory = TRAJECTORY.build()
        self._detectors: BaseMetric | None = None
        if settings.detectors:
            judge = config.judge
            self._detectors = TOOL_ERRORS_DETECTORS.build(
                judge.threshold if judge else None,
                error_types=list(judge.error_types) if judge and judge.error_types else None,
                tool_rules=config.tools,
                disabled_rules=settings.disabled_rules,
            )

    def expectation(self, run: AgentRun) -> Expectation | None:
        return self._finder.find(run)

    def score(
        self, run: AgentRun, expectation: Expectation | None
    ) -> tuple[Any, list[tuple[MetricResult, float]]]:
        """The run's test case and its deterministic results with the seconds each took (tool correctness only
        with expected tools, the trajectory only with a spec)."""
        case = run.to_test_case(expected_tools=expectation.calls if expectation is not None else None)
        results: list[tuple[MetricResult, float]] = []
        if not self.config.scoring.enabled:
            return case, results  # the judge may still want the case
        metrics: list[BaseMetric] = []
        if expectation is not None and expectation.expected_tools is not None:
            metrics.extend(self._correctness[mode] for mode in expectation.modes)
        if expectation is not None and expectation.trajectory is not None:
            case.expected_trajectory = expectation.trajectory
            metrics.append(self._trajectory)
        if self._detectors is not None:
            metrics.append(self._detectors)
        for metric in metrics:
            started = time.perf_counter()
            result = metric.measure(case)
            results.append((result, time.perf_counter() - started))
        if expectation is not None and expectation.trajectory_error is not None:
            results.append((self._trajectory.unreadable(expectation.trajectory_error), 0.0))
        return case, results


class ScoringStage:
    """A ``TraceStage``: scores each completed trace's runs, then hands the batch to the next stage."""

    def __init__(
        self,
        next_stage: TraceStage,
        config: ScoringConfig,
        *,
        forward: Callable[[Sequence[SpanRecord]], None] | None = None,
        wall_clock: Callable[[], int] = time.time_ns,
        forwarded_memory: int = 100_000,
        queue_judge: bool = True,
    ) -> None:
        self._next = next_stage
        self.config = config
        self.scorer = RunScorer(config)
        self._forward = forward
        self._now = wall_clock
        self.stats = ScoringStats()
        self._lock = threading.Lock()
        # Held spans already sent downstream (a re-built trace must not send them twice): bounded, oldest out.
        self._forwarded: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._forwarded_memory = forwarded_memory
        self._error_logged = False
        #: whether scored runs are queued for the judge (a re-score of stored runs may keep their verdicts)
        self._queue_judge = queue_judge

    def start(self) -> None:
        self._next.start()

    def shutdown(self) -> None:
        self._next.shutdown()

    def consume(self, traces: Sequence[CompletedTrace]) -> None:
        out: list[CompletedTrace] = []
        outgoing: list[SpanRecord] = []
        for trace in traces:
            try:
                scored, spans = self._score_trace(trace)
            except Exception:  # a scoring bug must not cost the trace its runs
                self.stats.errors += 1
                if not self._error_logged:
                    self._error_logged = True
                    log.exception("scoring trace %s failed; its runs are written unscored", trace.trace_id)
                scored, spans = trace, self._held_unsent(trace, {})
            out.append(scored)
            outgoing.extend(spans)
        self._next.consume(out)
        if outgoing and self._forward is not None:
            self._forward(outgoing)
            self.stats.spans_forwarded += len(outgoing)

    # ---- one trace ----------------------------------------------------------------------------------------

    def _score_trace(self, trace: CompletedTrace) -> tuple[CompletedTrace, list[SpanRecord]]:
        now = self._now()
        spans: dict[str, SpanRecord] = {}
        with_events: list[SpanRecord] = []  # the only ones that may carry other tools' scores
        for s in trace.spans:  # one pass: the spans are touched here for the first time since they were read
            spans[s.span_id] = s
            if s.events:
                with_events.append(s)
        rows: list[EvaluationRow] = []
        updates: list[SpanUpdate] = []
        scored_spans: dict[str, SpanRecord] = {}
        late_scores: list[SpanRecord] = []
        for run in trace.runs:
            expectation = self.scorer.expectation(run)
            case, timed = self.scorer.score(run, expectation)
            results = [r for r, _ in timed]
            self.stats.runs_scored += 1
            if expectation is None:
                self.stats.runs_without_expectation += 1
            for r, seconds in timed:
                source = _expectation_source(expectation, r.metric)
                if source is not None:
                    rows.append(result_row(run.trace_id, run.span_id, r, now, seconds, expectation=source))
                else:
                    rows.append(result_row(run.trace_id, run.span_id, r, now, seconds))
            judge_row = self._judge_row(run, case, results, expectation, now)
            if judge_row is not None:
                rows.append(judge_row)
            span = spans.get(run.span_id)
            # A re-built trace's earlier rows give way to these: scores its span still shows that were not
            # given again (the run lost its expectation) are removed from it too.
            cleared: set[str] = set()
            if span is not None and trace.replace:
                cleared = (scored_on(span) & _DETERMINISTIC) - {r.metric for r in results}
            if span is not None and (results or cleared):
                # First scoring of a trace: the span here is the span as stored, so the whole new value is
                # known (cheaper to set than to merge in SQL). A re-built trace may have been scored in the
                # database since it was read (a judge answer): it gets the delta.
                updates.append(
                    SpanUpdate(
                        span.trace_id,
                        span.span_id,
                        span.start_ns,
                        *write_back(span, results, now, not trace.replace, sorted(cleared)),
                    )
                )
                if self._forward is not None:
                    if self._was_forwarded(span):  # re-scored after it was sent: new scores go as child spans
                        late_scores.extend(
                            evaluation_span(span, r, now, now) for r in results if r.status == "ok"
                        )
                    else:
                        scored_spans[span.span_id] = with_scores(span, results, now)
        # Scores other tools put on spans come with the trace; those sent as log records are stored at ingest
        # (``external_rows``), since a late score must not wait for, or re-build, its trace.
        for ev in external_evaluations(with_events, ()):
            rows.append(external_row(ev, now))
            self.stats.external_evaluations += 1
        for row in rows:
            self.stats.evaluations[row.metric] = self.stats.evaluations.get(row.metric, 0) + 1
        scored_trace = dataclasses.replace(
            trace,
            evaluations=trace.evaluations + tuple(rows),
            span_updates=trace.span_updates + tuple(updates),
        )
        return scored_trace, self._held_unsent(trace, scored_spans) + late_scores

    def _judge_row(
        self, run: AgentRun, case: Any, results: list[MetricResult], expectation: Expectation | None, now: int
    ) -> EvaluationRow | None:
        if not self._queue_judge:
            return None
        row = judge_row(self.config, run, case, results, expectation, now)
        if row is not None and row.status == "pending":
            self.stats.judge_queued += 1
        return row

    # ---- forwarding held spans ----------------------------------------------------------------------------

    def _was_forwarded(self, span: SpanRecord) -> bool:
        with self._lock:
            return span.key in self._forwarded

    def _held_unsent(self, trace: CompletedTrace, scored: dict[str, SpanRecord]) -> list[SpanRecord]:
        if self._forward is None:
            return []
        out = []
        with self._lock:
            for span in trace.spans:
                if not is_held_span(span) or span.key in self._forwarded:
                    continue
                self._forwarded[span.key] = None
                out.append(scored.get(span.span_id, span))
            while len(self._forwarded) > self._forwarded_memory:
                self._forwarded.popitem(last=False)
        return out
