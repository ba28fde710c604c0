"""What ``/healthz`` says of a node's copy to the shared lake, and when it is ``degraded``: the last flush
failed, or the oldest committed row not yet copied is older than ``[lake] max_lag``. Errors are already
scrubbed of the catalog's password by the flusher and the reconciler."""

from __future__ import annotations

from typing import Any

from agentotel_eval.collector.lake.flusher import LakeFlusher
from agentotel_eval.collector.lake.reconciler import Reconciler


def lake_health(flusher: LakeFlusher, reconciler: Reconciler | None, max_lag: float) -> dict[str, Any]:
    stats = flusher.stats
    lag = stats.lag_seconds()
    reasons = []
    if stats.failing:
        reasons.append(f"the last {stats.failing} flush(es) failed")
    if lag > max_lag:
        reasons.append(f"the oldest row not yet copied is {lag:.0f}s old (max_lag {max_lag:g}s)")
    out: dict[str, Any] = {
        "node": flusher.node,
        "degraded": bool(reasons),
        "reasons": reasons,
        "flushes": stats.flushes,
        "flush_failures": stats.failures,
        "failing": stats.failing,
        "flush_timeouts": stats.timeouts,
        "heartbeats": stats.heartbeats,
        "last_error": stats.last_error or None,
        "lag_seconds": round(lag, 3),
        "max_lag_seconds": max_lag,
    }
    if reconciler is not None:
        out["reconciler"] = {
            "looks": reconciler.looks,
            "split_traces_found": reconciler.splits_found,
            "traces_rebuilt": reconciler.traces_rebuilt,
            "failures": reconciler.failures,
            "last_error": reconciler.last_error or None,
        }
    return out
