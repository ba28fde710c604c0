"""The forwarder's metrics: its queue, records sent and dropped, failed attempts."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.forward.forwarder import Forwarder
from agentotel_eval.collector.telemetry.families import counter, gauge


class ForwardTelemetry(Collector):
    def __init__(self, forwarder: Forwarder) -> None:
        self._forwarder = forwarder

    def collect(self) -> Iterator[Metric]:
        stats = self._forwarder.stats
        yield gauge("forward_queue_records", "Records waiting to be forwarded.", stats.queued)
        yield counter(
            "forward_sent",
            "Records forwarded downstream, by signal.",
            [(("traces",), stats.sent_spans), (("logs",), stats.sent_logs)],
            labels=("signal",),
        )
        yield counter(
            "forward_dropped",
            "Records that could not be forwarded and were dropped, by signal.",
            [(("traces",), stats.dropped_spans), (("logs",), stats.dropped_logs)],
            labels=("signal",),
        )
        yield counter(
            "forward_failed_attempts",
            "Forwarding attempts that failed (retried or not).",
            stats.failed_attempts,
        )
