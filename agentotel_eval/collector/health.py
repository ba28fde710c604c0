"""What ``GET /healthz`` answers: the collector's state, where it listens, its queues, its helper processes
and, on a lake, its copy to the lake (a lagging or failing copy makes a running collector ``degraded``)."""

from __future__ import annotations

import os
from typing import Any

from agentotel_eval.collector.decode.pool import DecodePool
from agentotel_eval.collector.lake.flusher import LakeFlusher
from agentotel_eval.collector.lake.health import lake_health
from agentotel_eval.collector.lake.reconciler import Reconciler
from agentotel_eval.collector.pipeline.assembly import AssemblyStage
from agentotel_eval.collector.store.database import Database
from agentotel_eval.collector.store.writer import StoreWriter


def health_report(
    state: str,
    *,
    token: str,
    db: str,
    grpc: str,
    http: str,
    uptime: float,
    writer: StoreWriter,
    database: Database | None,
    assembler: AssemblyStage,
    decoders: DecodePool | None,
    lake: LakeFlusher | None = None,
    reconciler: Reconciler | None = None,
    lake_max_lag: float = 0.0,
) -> dict[str, Any]:
    """``lake``, ``reconciler`` and ``lake_max_lag``: a node's copy to the shared lake (None: no lake)."""
    status = "ok" if state == "running" else state
    lake_report = lake_health(lake, reconciler, lake_max_lag) if lake is not None else None
    degraded = status == "ok" and lake_report is not None and lake_report["degraded"]
    return {
        "status": "degraded" if degraded else status,
        "token": token,
        "pid": os.getpid(),
        "db": db,
        "grpc": grpc,
        "http": http,
        "uptime_seconds": round(uptime, 3),
        "write_queue_records": writer.queued_records,
        # false only after a reopen could not open the file again: exports are refused until it can
        "database_open": database is not None and database.is_open,
        "open_traces": assembler.open_traces,
        "assembler_pid": assembler.pid,  # None: assembly runs on a thread here
        "decode_pids": decoders.pids if decoders is not None else [],  # []: decoding runs here
        **({"lake": lake_report} if lake_report is not None else {}),
    }
