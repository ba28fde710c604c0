"""The service's own metrics: rows retention deleted, queries answered, uptime."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.telemetry.families import by_key, counter, gauge


class ServiceTelemetry(Collector):
    def __init__(
        self,
        *,
        retention_deleted: Callable[[], Mapping[str, int]],
        queries: Callable[[], Mapping[str, int]],
        uptime: Callable[[], float],
    ) -> None:
        self._retention = retention_deleted
        self._queries = queries
        self._uptime = uptime

    def collect(self) -> Iterator[Metric]:
        yield counter(
            "retention_deleted_rows",
            "Rows deleted by retention, by table.",
            by_key(self._retention()),
            labels=("table",),
            empty=("spans",),
        )
        yield counter(
            "queries",
            "Queries on POST /v1/query, by outcome.",
            by_key(self._queries()),
            labels=("outcome",),
            empty=("ok",),
        )
        yield gauge("uptime_seconds", "Seconds since the collector started.", round(self._uptime(), 3))
