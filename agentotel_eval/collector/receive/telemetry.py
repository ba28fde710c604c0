"""The receivers' metrics: records received and rejected, export requests by outcome, what ``[limits]`` cut,
refused tokens, and the HTTP listener's connections."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.receive.auth import Authenticator
from agentotel_eval.collector.receive.http.server import HttpStats
from agentotel_eval.collector.receive.ingest import IngestStats
from agentotel_eval.collector.telemetry.families import Samples, counter, gauge

_TRANSPORTS = ("grpc", "http")


def _by_transport(counts: Mapping[tuple[str, str], int], signal: str) -> Samples:
    return [((transport,), n) for (transport, s), n in sorted(counts.items()) if s == signal] or [
        ((t,), 0) for t in _TRANSPORTS
    ]


class ReceiveTelemetry(Collector):
    def __init__(self, ingest: IngestStats, http: HttpStats, auth: Authenticator | None) -> None:
        self._ingest = ingest
        self._http = http
        self._auth = auth

    def collect(self) -> Iterator[Metric]:
        received, rejected, requests = self._ingest.snapshot()
        labels = ("transport",)
        yield counter(
            "spans_received",
            "Valid spans received in export requests.",
            _by_transport(received, "traces"),
            labels=labels,
        )
        yield counter(
            "spans_rejected",
            "Invalid spans rejected (OTLP partial success).",
            _by_transport(rejected, "traces"),
            labels=labels,
        )
        yield counter(
            "log_records_received",
            "Valid log records received.",
            _by_transport(received, "logs"),
            labels=labels,
        )
        yield counter(
            "log_records_rejected",
            "Invalid log records rejected.",
            _by_transport(rejected, "logs"),
            labels=labels,
        )
        yield counter(
            "export_requests",
            "Export requests by transport, signal and outcome (ok, empty: valid but with no "
            "record, partial, bad_request, over_limit, too_large, unsupported, overloaded, unavailable).",
            [(key, n) for key, n in sorted(requests.items())],
            labels=("transport", "signal", "outcome"),
            empty=("grpc", "traces", "ok"),
        )
        yield counter(
            "limited",
            "What [limits] cut from accepted requests, by signal and kind: attributes_dropped, "
            "events_dropped, links_dropped, values_truncated, values_too_deep.",
            [(key, n) for key, n in sorted(self._ingest.limited_snapshot().items())],
            labels=("signal", "kind"),
            empty=("traces", "values_truncated"),
        )
        failures = self._auth.failures() if self._auth is not None else {}
        yield counter(
            "auth_failures",
            "Requests refused for a missing or wrong bearer token, by transport.",
            [((t,), failures.get(t, 0)) for t in sorted({*_TRANSPORTS, *failures})],
            labels=labels,
        )
        http = self._http
        yield gauge("http_connections_open", "HTTP connections open now.", http.open)
        yield counter(
            "http_connections_refused",
            "HTTP connections refused (503) over receiver.http_max_connections.",
            http.refused,
        )
        yield counter(
            "http_requests_timed_out",
            "HTTP requests cut because they did not arrive whole within receiver.http_read_timeout.",
            http.timed_out,
        )
