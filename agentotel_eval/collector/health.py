"""What ``GET /healthz`` answers: the collector's state, where it listens, its queues, its helper processes and,
on a lake, its copy to the lake (a lagging or failing copy makes a running collector ``degraded``)."""

from __future__ import annotations

import os
from typing import Any


def health_report(
    state: str,
    *,
    token: str,
    db: str,
    grpc: str,
    http: str,
    uptime: float,
    queued_records: int,
    database_open: bool,
    open_traces: int,
    assembler_pid: int | None,
    decode_pids: list[int],
    lake: dict[str, Any] | None,
) -> dict[str, Any]:
    status = "ok" if state == "running" else state
    return {
        "status": "degraded" if status == "ok" and lake is not None and lake["degraded"] else status,
        "token": token,
        "pid": os.getpid(),
        "db": db,
        "grpc": grpc,
        "http": http,
        "uptime_seconds": round(uptime, 3),
        "write_queue_records": queued_records,
        # false only after a reopen could not open the file again: exports are refused until it can
        "database_open": database_open,
        "open_traces": open_traces,
        "assembler_pid": assembler_pid,  # None: assembly runs on a thread here
        "decode_pids": decode_pids,  # []: decoding runs here
        **({"lake": lake} if lake is not None else {}),
    }
