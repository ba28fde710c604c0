"""``GET /metrics``: the collector's counters and gauges in the Prometheus text format (version 0.0.4).

Nothing is counted here: each component keeps its own plain counters (updated once per request or per batch, never
per span), and ``render`` reads them at scrape time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentotel_eval.collector.service import Collector

Labels = Mapping[str, str]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


class PromText:
    """A small writer of the text exposition format."""

    def __init__(self, prefix: str = "agentotel_") -> None:
        self._prefix = prefix
        self._lines: list[str] = []

    def add(self, name: str, kind: str, help_text: str, samples: Iterable[tuple[Labels, float]] | float) -> None:
        full = self._prefix + name
        self._lines.append(f"# HELP {full} {help_text}")
        self._lines.append(f"# TYPE {full} {kind}")
        if isinstance(samples, int | float):
            samples = [({}, samples)]
        for labels, value in samples:
            self._lines.append(f"{full}{_labels(labels)} {_number(value)}")

    def histogram(self, name: str, help_text: str, bounds: Sequence[float], counts: Sequence[int], total: float,
                  count: int) -> None:
        full = self._prefix + name
        self._lines.append(f"# HELP {full} {help_text}")
        self._lines.append(f"# TYPE {full} histogram")
        cumulative = 0
        for bound, n in zip(bounds, counts, strict=False):
            cumulative += n
            self._lines.append(f'{full}_bucket{{le="{bound:g}"}} {cumulative}')
        self._lines.append(f'{full}_bucket{{le="+Inf"}} {count}')
        self._lines.append(f"{full}_sum {_number(total)}")
        self._lines.append(f"{full}_count {count}")

    def render(self) -> str:
        return "\n".join(self._lines) + "\n"


def render(collector: Collector) -> str:
    """Every metric of a running collector."""
    from agentotel_eval.collector.store.writer import FLUSH_BUCKETS

    out = PromText()
    received, rejected, requests = collector.ingestor.stats.snapshot()
    writer = collector.writer.stats
    assembly = collector.assembler.snapshot()
    assembler, buffer_stats = assembly.assembler, assembly.buffer

    def by_signal(counts: Mapping[tuple[str, str], int], signal: str) -> list[tuple[Labels, float]]:
        samples: list[tuple[Labels, float]] = [
            ({"transport": t}, n) for (t, s), n in sorted(counts.items()) if s == signal
        ]
        return samples or [({"transport": "grpc"}, 0), ({"transport": "http"}, 0)]

    out.add("spans_received_total", "counter", "Valid spans received in export requests.", by_signal(received, "traces"))
    out.add("spans_rejected_total", "counter", "Invalid spans rejected (OTLP partial success).",
            by_signal(rejected, "traces"))
    out.add("spans_stored_total", "counter", "Spans appended to the database.", writer.spans_stored)
    out.add("spans_duplicate_total", "counter", "Re-sent spans already stored (not stored again).",
            writer.spans_duplicate)
    out.add("log_records_received_total", "counter", "Valid log records received.", by_signal(received, "logs"))
    out.add("log_records_rejected_total", "counter", "Invalid log records rejected.", by_signal(rejected, "logs"))
    out.add("log_records_stored_total", "counter", "Log records appended to the database.", writer.logs_stored)
    out.add("log_records_duplicate_total", "counter", "Re-sent log records already stored.", writer.logs_duplicate)
    out.add(
        "export_requests_total", "counter",
        "Export requests by transport, signal and outcome (ok, partial, bad_request, over_limit, too_large, "
        "unsupported, overloaded, unavailable).",
        [({"transport": t, "signal": s, "outcome": o}, n) for (t, s, o), n in sorted(requests.items())]
        or [({"transport": "grpc", "signal": "traces", "outcome": "ok"}, 0)],
    )
    out.add(
        "limited_total", "counter",
        "What [limits] cut from accepted requests, by signal and kind: attributes_dropped, events_dropped, "
        "links_dropped, values_truncated, values_too_deep.",
        [({"signal": s, "kind": k}, n) for (s, k), n in sorted(collector.ingestor.stats.limited_snapshot().items())]
        or [({"signal": "traces", "kind": "values_truncated"}, 0)],
    )
    out.add("write_queue_records", "gauge", "Records waiting to be committed.", collector.writer.queued_records)
    out.add("write_queue_capacity_records", "gauge", "Bound of the write queue.", collector.writer.capacity)
    out.add("write_operations_pending", "gauge", "Run/retention writes waiting for the writer.",
            collector.writer.pending_operations)
    out.add("commits_total", "counter", "Ingest transactions committed.", writer.commits)
    out.add("commit_failures_total", "counter", "Ingest transactions that failed.", writer.commit_failures)
    out.add("database_reopens_total", "counter",
            "Times the database was closed and opened again to give back DuckDB's memory (writer.reopen_rows).",
            writer.reopens)
    out.add("database_open", "gauge", "1 while the database is open (0 after a reopen could not open it again).",
            1 if collector.database is not None and collector.database.is_open else 0)
    out.add("database_reopen_failures_total", "counter",
            "Reopens that could not open the database again (exports are refused until one can).",
            writer.reopen_failures)
    out.histogram("flush_duration_seconds", "Time to append and commit one batch.", FLUSH_BUCKETS,
                  writer.flush_buckets, writer.flush_sum, writer.flush_count)
    out.add("open_traces", "gauge", "Traces buffered by the assembler, waiting to complete.", assembly.open_traces)
    out.add("buffered_records", "gauge", "Spans and log records held by the assembler.", assembly.buffered_records)
    out.add("assembler_backlog_records", "gauge", "Committed records not yet taken by the assembler.",
            collector.assembler.backlog)
    out.add("traces_completed_total", "counter",
            "Traces completed, by reason (quiet, timeout, early, shutdown).",
            [({"reason": r}, n) for r, n in sorted(buffer_stats.completed.items())] or [({"reason": "quiet"}, 0)])
    out.add("traces_completed_early_total", "counter",
            "Traces completed before they were quiet because of the memory bounds.",
            buffer_stats.completed.get("early", 0))
    out.add("late_records_total", "counter",
            "Spans and log records that arrived after their trace was completed (its runs are rebuilt).",
            buffer_stats.late_records)
    out.add("traces_reopened_total", "counter", "Completed traces re-opened by late records.",
            assembler.traces_reopened)
    out.add("traces_recovered_total", "counter", "Stored but unassembled traces re-opened at startup.",
            assembler.traces_recovered)
    out.add("traces_without_evidence_total", "counter",
            "Completed traces with no run, tool or LLM span, evaluation event or non-score log record: stored, "
            "not assembled.",
            assembler.traces_without_evidence)
    out.add("runs_completed_total", "counter", "Agent runs reconstructed from completed traces.",
            assembler.runs_completed)
    out.add("reconstruct_errors_total", "counter", "Traces whose reconstruction raised.",
            assembler.reconstruct_errors)
    out.add("run_conversion_errors_total", "counter", "Completed traces whose runs could not be turned into rows.",
            assembly.conversion_errors)
    out.add("reload_errors_total", "counter", "Late traces that could not be re-read (their runs were kept).",
            assembler.reload_errors)
    out.add("read_errors_total", "counter",
            "Completed traces that could not be read back after every retry (their runs were not written).",
            assembler.read_errors)
    out.add("write_operations_total", "counter", "Run and retention writes applied, by kind.",
            [({"kind": k}, n) for k, n in sorted(writer.operations.items())] or [({"kind": "replace_runs"}, 0)])
    out.add("write_operation_failures_total", "counter", "Run and retention writes that failed, by kind.",
            [({"kind": k}, n) for k, n in sorted(writer.operation_failures.items())]
            or [({"kind": "replace_runs"}, 0)])
    out.add("retention_deleted_rows_total", "counter", "Rows deleted by retention, by table.",
            [({"table": t}, n) for t, n in sorted(collector.retention_deleted.items())] or [({"table": "spans"}, 0)])
    auth_failures = collector.auth.failures() if collector.auth is not None else {}
    out.add("auth_failures_total", "counter", "Requests refused for a missing or wrong bearer token, by transport.",
            [({"transport": t}, auth_failures.get(t, 0)) for t in sorted({"grpc", "http", *auth_failures})])
    http = collector.http.stats
    out.add("http_connections_open", "gauge", "HTTP connections open now (each holds a thread).", http.open)
    out.add("http_connections_refused_total", "counter",
            "HTTP connections refused (503) over receiver.http_max_connections.", http.refused)
    out.add("http_requests_timed_out_total", "counter",
            "HTTP requests cut because they did not arrive whole within receiver.http_read_timeout.", http.timed_out)
    out.add("queries_total", "counter", "Queries on POST /v1/query, by outcome.",
            [({"outcome": o}, n) for o, n in sorted(collector.query_counts.items())] or [({"outcome": "ok"}, 0)])
    scoring = assembly.scoring
    out.add("runs_scored_total", "counter", "Agent runs scored by the deterministic metrics.", scoring.runs_scored)
    out.add("runs_without_expectation_total", "counter",
            "Scored runs with no expected tools (tool correctness not run).", scoring.runs_without_expectation)
    out.add("evaluations_written_total", "counter", "Evaluation rows written at scoring time, by metric.",
            [({"metric": m}, n) for m, n in sorted(scoring.evaluations.items())] or [({"metric": "tool_correctness"}, 0)])
    out.add("external_evaluations_total", "counter", "gen_ai.evaluation.result records from other tools stored.",
            scoring.external_evaluations + collector.external_log_evaluations)
    out.add("scoring_errors_total", "counter", "Traces whose scoring raised (their runs were written unscored).",
            scoring.errors)
    judge = collector.judge
    if judge is not None:
        stats = judge.stats
        out.add("judge_queued_total", "counter", "Runs queued for the LLM judge.", scoring.judge_queued)
        out.add("judge_pending", "gauge", "Pending judge rows in the database at the last look.", stats.pending_seen)
        out.add("judge_in_flight", "gauge", "Judge evaluations being answered now.", stats.in_flight)
        out.add("judge_results_total", "counter", "Judge rows answered, by status (ok, error, skipped).",
                [({"status": k}, n) for k, n in sorted(stats.by_status.items())] or [({"status": "ok"}, 0)])
        out.add("judge_stale_total", "counter", "Judge answers dropped because the run was re-queued meanwhile.",
                stats.stale)
        out.add("judge_cost_usd_today", "gauge", "LLM judge spend today (UTC), in USD.", stats.cost_usd_today)
        out.add("judge_cost_usd_total", "counter", "LLM judge spend since start, in USD.", stats.cost_usd_total)
    forwarder = collector.forwarder
    if forwarder is not None:
        f = forwarder.stats
        out.add("forward_queue_records", "gauge", "Records waiting to be forwarded.", f.queued)
        out.add("forward_sent_total", "counter", "Records forwarded downstream, by signal.",
                [({"signal": "traces"}, f.sent_spans), ({"signal": "logs"}, f.sent_logs)])
        out.add("forward_dropped_total", "counter", "Records that could not be forwarded and were dropped, by signal.",
                [({"signal": "traces"}, f.dropped_spans), ({"signal": "logs"}, f.dropped_logs)])
        out.add("forward_failed_attempts_total", "counter", "Forwarding attempts that failed (retried or not).",
                f.failed_attempts)
    helpers = collector.helpers()
    out.add("helper_up", "gauge", "1 while a helper process (decode worker, assembler) is running and ready.",
            [({"helper": h.name}, 1 if h.alive else 0) for h in helpers] or [({"helper": "none"}, 0)])
    out.add("helper_restarts_total", "counter", "Times a helper process died and its supervisor started it again (failed starts included).",
            [({"helper": h.name}, h.restarts) for h in helpers] or [({"helper": "none"}, 0)])
    out.add("helper_given_up", "gauge", "1 when a helper kept dying and is no longer started.",
            [({"helper": h.name}, 1 if h.gave_up else 0) for h in helpers] or [({"helper": "none"}, 0)])
    out.add("uptime_seconds", "gauge", "Seconds since the collector started.", round(collector.uptime, 3))
    return out.render()
