"""The shared lake's metrics: the flusher's copies, failures and lag, the reconciler's looks and rebuilds, and
the other nodes' spans read to assemble split traces."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.lake.flusher import LakeFlusher
from agentotel_eval.collector.lake.peer_spans import PeerSpans
from agentotel_eval.collector.lake.reconciler import Reconciler
from agentotel_eval.collector.telemetry.families import by_key, counter, gauge


class LakeTelemetry(Collector):
    def __init__(self, flusher: LakeFlusher, reconciler: Reconciler | None, peers: PeerSpans | None) -> None:
        self._flusher = flusher
        self._reconciler = reconciler
        self._peers = peers

    def collect(self) -> Iterator[Metric]:
        stats = self._flusher.stats
        yield counter(
            "lake_flushes", "Flushes of this node's committed rows to the shared lake.", stats.flushes
        )
        yield counter(
            "lake_flush_failures",
            "Flushes that failed (the rows wait in the node's file; retried).",
            stats.failures,
        )
        yield counter(
            "lake_rows_flushed",
            "Rows copied to the shared lake, by table.",
            by_key(stats.rows),
            labels=("table",),
        )
        yield gauge(
            "lake_flushes_failing",
            "Flushes failed in a row since the last that worked (0: healthy).",
            stats.failing,
        )
        yield counter(
            "lake_flush_timeouts",
            "Flushes that ran past the lake's timeout and were interrupted.",
            stats.timeouts,
        )
        yield counter(
            "lake_heartbeats", "Heartbeat marks written while there was nothing to copy.", stats.heartbeats
        )
        yield counter("lake_trace_parts", "Rows written to the lake's index of trace parts.", stats.parts)
        yield gauge("lake_flush_seconds", "How long the last flush took.", stats.last_seconds)
        yield gauge(
            "lake_lag_seconds",
            "Age of the oldest committed row not yet copied to the lake (0: all copied).",
            stats.lag_seconds(),
        )
        if self._reconciler is not None:
            r = self._reconciler
            yield counter(
                "lake_reconcile_looks", "Looks for traces split between nodes, as the searcher.", r.looks
            )
            yield counter(
                "lake_reconcile_parts_read", "Index rows of trace parts the reconciler read.", r.parts_read
            )
            yield counter("lake_split_traces", "Traces found split between nodes.", r.splits_found)
            yield counter(
                "lake_traces_reconciled",
                "Split traces rebuilt whole from the lake by this node.",
                r.traces_rebuilt,
            )
            yield counter("lake_reconcile_failures", "Reconciler looks that failed (retried).", r.failures)
        if self._peers is not None:
            p = self._peers
            yield counter(
                "lake_peer_reads",
                "Reads of other nodes' parts of incomplete traces before assembly.",
                p.reads,
            )
            yield counter(
                "lake_peer_spans", "Other nodes' spans added to traces before assembly.", p.spans_added
            )
            yield counter(
                "lake_peer_read_failures",
                "Reads of other nodes' parts that failed (the part was built alone).",
                p.failures,
            )
