"""The registry ``GET /metrics`` exposes: each part's own Prometheus collector (its ``telemetry`` module),
read from the part's plain counters at scrape time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from agentotel_eval.collector.forward.forwarder import Forwarder
from agentotel_eval.collector.forward.telemetry import ForwardTelemetry
from agentotel_eval.collector.lake.flusher import LakeFlusher
from agentotel_eval.collector.lake.peer_spans import PeerSpans
from agentotel_eval.collector.lake.reconciler import Reconciler
from agentotel_eval.collector.lake.telemetry import LakeTelemetry
from agentotel_eval.collector.pipeline.assembly import AssemblyStage
from agentotel_eval.collector.pipeline.telemetry import AssemblyTelemetry
from agentotel_eval.collector.process.supervisor import Supervisor
from agentotel_eval.collector.process.telemetry import HelperTelemetry
from agentotel_eval.collector.receive.auth import Authenticator
from agentotel_eval.collector.receive.http.server import HttpStats
from agentotel_eval.collector.receive.ingest import Ingestor
from agentotel_eval.collector.receive.telemetry import ReceiveTelemetry
from agentotel_eval.collector.score.judge_worker import JudgeWorker
from agentotel_eval.collector.score.telemetry import JudgeTelemetry
from agentotel_eval.collector.sink.hub import SinkHub
from agentotel_eval.collector.store.telemetry import StoreTelemetry
from agentotel_eval.collector.store.writer import StoreWriter
from agentotel_eval.collector.telemetry.service import ServiceTelemetry


def prometheus_registry(
    *,
    ingestor: Ingestor,
    http_stats: HttpStats,
    auth: Authenticator | None,
    writer: StoreWriter,
    database_open: Callable[[], bool],
    assembler: AssemblyStage,
    judge: JudgeWorker | None,
    external_logs: Callable[[], int],
    retention_deleted: Callable[[], dict[str, int]],
    queries: Callable[[], dict[str, int]],
    uptime: Callable[[], float],
    forwarder: Forwarder | None,
    lake: LakeFlusher | None,
    reconciler: Reconciler | None,
    peers: PeerSpans | None,
    sinks: SinkHub | None,
    helpers: Callable[[], Sequence[Supervisor]],
) -> CollectorRegistry:
    """The parts present in this collector (judge, forwarder, lake and sinks only where configured)."""
    registry = CollectorRegistry(auto_describe=False)
    parts: list[Any] = [
        ReceiveTelemetry(ingestor.stats, http_stats, auth),
        StoreTelemetry(writer, database_open),
        AssemblyTelemetry(assembler, judge=judge is not None, external_logs=external_logs),
        ServiceTelemetry(retention_deleted=retention_deleted, queries=queries, uptime=uptime),
    ]
    if judge is not None:
        parts.append(JudgeTelemetry(judge))
    if forwarder is not None:
        parts.append(ForwardTelemetry(forwarder))
    if lake is not None:
        parts.append(LakeTelemetry(lake, reconciler, peers))
    if sinks is not None:
        parts.extend(sinks.telemetry())
    parts.append(HelperTelemetry(helpers))
    for part in parts:
        registry.register(part)
    return registry


def exposition(registry: CollectorRegistry) -> str:
    """The registry in Prometheus' text format."""
    return generate_latest(registry).decode()
