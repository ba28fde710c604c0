"""The shared lake's metrics: the flusher's copies, failures and lag, the reconciler's looks and rebuilds, and
the other nodes' spans read to assemble split traces."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.lake.flusher import LakeFlusher
from agentotel_eval.collector.lake.peer_spans import PeerSpans
from agentotel_eval.collector.lake.reconciler import Reconciler
from agentotel_eval.collector.telemetry.families import by_key, counter, gauge


class LakeMetrics(Collector):
    def __init__(self, flusher: LakeFlusher, reconciler: Reconciler | None, peers: PeerSpans | None) -> None:
        self._flusher = flusher
        self._reconciler = reconciler
        self._peers = peers

    def collect(self) -> Iterator[Metric]:
        stats = self._flusher.stats
        yield counter("lake_flushes", "Flushes of this node's committed rows to the shared lake.", stats.flushes)
        yield counter("lake_flush_failures", "Flushes that failed (the rows wait in the node's file; retried).",
                      stats.failures)
        yield counter("lake_rows_flushed", "Rows copied to the shared lake, by table.", by_key(stats.rows),
                      labels=("table",))
        yield gauge("lake_flush_seconds", "How long the last flush took.", stats.last_seconds)
        watermark = stats.last_watermark
        lag = (datetime.now(UTC) - watermark).total_seconds() if watermark is not None else 0.0
        yield gauge("lake_lag_seconds", "Age of the newest span commit copied to the lake (0 before the first).",
                    lag)
        if self._reconciler is not None:
            r = self._reconciler
            yield counter("lake_reconcile_looks", "Searches for traces split between nodes (after a membership "
                          "change).", r.looks)
            yield counter("lake_traces_reconciled", "Split traces rebuilt whole from the lake by this node.",
                          r.traces_rebuilt)
            yield counter("lake_reconcile_failures", "Reconciler looks that failed (retried).", r.failures)
        if self._peers is not None:
            p = self._peers
            yield counter("lake_peer_reads", "Reads of other nodes' parts of incomplete traces before assembly.",
                          p.reads)
            yield counter("lake_peer_spans", "Other nodes' spans added to traces before assembly.", p.spans_added)
            yield counter("lake_peer_read_failures", "Reads of other nodes' parts that failed (the part was built "
                          "alone).", p.failures)
