"""The writer's metrics: records stored and re-sent, the write queue, commits and their duration, run and
retention writes, and the database's reopens."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.store.writer import StoreWriter
from agentotel_eval.collector.store.writer_stats import FLUSH_BUCKETS
from agentotel_eval.collector.telemetry.families import by_key, counter, gauge, histogram


class StoreTelemetry(Collector):
    """``is_open``: whether the database is open now (false after a reopen could not open it again)."""

    def __init__(self, writer: StoreWriter, is_open: Callable[[], bool]) -> None:
        self._writer = writer
        self._is_open = is_open

    def collect(self) -> Iterator[Metric]:
        writer, stats = self._writer, self._writer.stats
        yield counter("spans_stored", "Spans appended to the database.", stats.spans_stored)
        yield counter(
            "spans_duplicate", "Re-sent spans already stored (not stored again).", stats.spans_duplicate
        )
        yield counter("log_records_stored", "Log records appended to the database.", stats.logs_stored)
        yield counter("log_records_duplicate", "Re-sent log records already stored.", stats.logs_duplicate)
        yield gauge("write_queue_records", "Records waiting to be committed.", writer.queued_records)
        yield gauge("write_queue_capacity_records", "Bound of the write queue.", writer.capacity)
        yield gauge(
            "write_operations_pending",
            "Run/retention writes waiting for the writer.",
            writer.pending_operations,
        )
        yield counter("commits", "Ingest transactions committed.", stats.commits)
        yield counter("commit_failures", "Ingest transactions that failed.", stats.commit_failures)
        yield counter(
            "database_reopens",
            "Times the database was closed and opened again to give back DuckDB's "
            "memory (writer.reopen_rows).",
            stats.reopens,
        )
        yield gauge(
            "database_open",
            "1 while the database is open (0 after a reopen could not open it again).",
            1 if self._is_open() else 0,
        )
        yield counter(
            "database_reopen_failures",
            "Reopens that could not open the database again (exports are refused until one can).",
            stats.reopen_failures,
        )
        yield histogram(
            "flush_duration_seconds",
            "Time to append and commit one batch.",
            FLUSH_BUCKETS,
            stats.flush_buckets,
            stats.flush_sum,
            stats.flush_count,
        )
        yield counter(
            "write_operations",
            "Run and retention writes applied, by kind.",
            by_key(stats.operations),
            labels=("kind",),
            empty=("replace_runs",),
        )
        yield counter(
            "write_operation_failures",
            "Run and retention writes that failed, by kind.",
            by_key(stats.operation_failures),
            labels=("kind",),
            empty=("replace_runs",),
        )
