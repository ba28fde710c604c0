"""The assembly stage's metrics, and those of the scoring that runs in it: open traces, how traces completed,
runs rebuilt, scores written. One snapshot a scrape (with an assembler process, one call to it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.pipeline.assembly import AssemblyStage
from agentotel_eval.collector.telemetry.families import by_key, counter, gauge
from agentotel_eval.metrics.registry import TOOL_CORRECTNESS


class AssemblyTelemetry(Collector):
    """``judge``: whether runs are queued for the LLM judge (its queue counter is shown only then);
    ``external_logs``: evaluation results other tools sent as log records, stored at ingest."""

    def __init__(self, stage: AssemblyStage, *, judge: bool, external_logs: Callable[[], int]) -> None:
        self._stage = stage
        self._judge = judge
        self._external_logs = external_logs

    def collect(self) -> Iterator[Metric]:
        snapshot = self._stage.snapshot()
        assembler, buffer, scoring = snapshot.assembler, snapshot.buffer, snapshot.scoring
        yield gauge(
            "open_traces", "Traces buffered by the assembler, waiting to complete.", snapshot.open_traces
        )
        yield gauge(
            "buffered_records", "Spans and log records held by the assembler.", snapshot.buffered_records
        )
        yield gauge(
            "assembler_backlog_records",
            "Committed records not yet taken by the assembler.",
            self._stage.backlog,
        )
        yield counter(
            "traces_completed",
            "Traces completed, by reason (quiet, timeout, early, shutdown).",
            by_key(buffer.completed),
            labels=("reason",),
            empty=("quiet",),
        )
        yield counter(
            "traces_completed_early",
            "Traces completed before they were quiet because of the memory bounds.",
            buffer.completed.get("early", 0),
        )
        yield counter(
            "late_records",
            "Spans and log records that arrived after their trace was completed (its runs are rebuilt).",
            buffer.late_records,
        )
        yield counter(
            "traces_reopened", "Completed traces re-opened by late records.", assembler.traces_reopened
        )
        yield counter(
            "traces_recovered",
            "Stored but unassembled traces re-opened at startup.",
            assembler.traces_recovered,
        )
        yield counter(
            "traces_without_evidence",
            "Completed traces with no run, tool or LLM span, evaluation event "
            "or non-score log record: stored, not assembled.",
            assembler.traces_without_evidence,
        )
        yield counter(
            "traces_completed_later",
            "Completed traces rebuilt because a later trace fed back results for "
            "their calls (a plain client loop, one trace per LLM call).",
            assembler.traces_completed_later,
        )
        yield counter(
            "runs_completed", "Agent runs reconstructed from completed traces.", assembler.runs_completed
        )
        yield counter(
            "reconstruct_errors", "Traces whose reconstruction raised.", assembler.reconstruct_errors
        )
        yield counter(
            "run_conversion_errors",
            "Completed traces whose runs could not be turned into rows.",
            snapshot.conversion_errors,
        )
        yield counter(
            "reload_errors",
            "Late traces that could not be re-read (their runs were kept).",
            assembler.reload_errors,
        )
        yield counter(
            "read_errors",
            "Completed traces that could not be read back after every retry (their runs were not written).",
            assembler.read_errors,
        )
        yield counter("runs_scored", "Agent runs scored by the deterministic metrics.", scoring.runs_scored)
        yield counter(
            "runs_without_expectation",
            "Scored runs with no expected tools (tool correctness not run).",
            scoring.runs_without_expectation,
        )
        yield counter(
            "evaluations_written",
            "Evaluation rows written at scoring time, by metric.",
            by_key(scoring.evaluations),
            labels=("metric",),
            empty=(TOOL_CORRECTNESS.name,),
        )
        yield counter(
            "external_evaluations",
            "gen_ai.evaluation.result records from other tools stored.",
            scoring.external_evaluations + self._external_logs(),
        )
        yield counter(
            "scoring_errors",
            "Traces whose scoring raised (their runs were written unscored).",
            scoring.errors,
        )
        if self._judge:
            yield counter("judge_queued", "Runs queued for the LLM judge.", scoring.judge_queued)
