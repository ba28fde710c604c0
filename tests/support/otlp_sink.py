"""A real OTLP endpoint for tests: gRPC and HTTP receivers on 127.0.0.1 that keep what they are sent.

``OtlpSink`` starts a gRPC server (``TraceService``/``LogsService`` ``Export`` via opentelemetry-proto's
generated servicers) and an HTTP server (``POST /v1/traces`` and ``/v1/logs``; protobuf or JSON bodies,
optionally gzip or deflate encoded) on ephemeral ports, decodes every request with ``agentotel_eval.otlp`` and
stores the records, the request metadata (headers, transport, encoding) and nothing else. Anything that
exports OTLP (the SDK exporters, ``configure()``, the collector's forwarder) can be pointed at it::

    with OtlpSink() as sink:
        exporter = OTLPSpanExporter(endpoint=sink.grpc_endpoint, insecure=True)
        ...
        sink.wait_for(lambda s: len(s.spans) >= 3)
        assert {span.name for span in sink.spans} == {...}

Failure injection for retry tests: ``sink.reject(times=2)`` answers the next two export requests (either
transport) with a retryable error (gRPC UNAVAILABLE / HTTP 503 with ``Retry-After: 0``); ``reject(...,
retry_after=7.5)`` asks for that delay (a gRPC ``RetryInfo`` detail, the HTTP ``Retry-After`` header);
``reject(..., retryable=False)`` answers INVALID_ARGUMENT / 400 instead. Rejected requests are recorded
(``accepted=False``) but their records are not kept.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from agentotel_eval.otlp import (
    DecodeError,
    LogRecord,
    SpanRecord,
    decode,
    logs_from_message,
    traces_from_message,
)

_CONTENT_TYPES = {
    "application/x-protobuf": "protobuf",
    "application/protobuf": "protobuf",
    "application/json": "json",
}
_PATHS = {"/v1/traces": "traces", "/v1/logs": "logs"}


@dataclass(frozen=True)
class ReceivedRequest:
    """One export request as the sink saw it."""

    transport: str  # grpc | http
    signal: str  # traces | logs
    encoding: str  # protobuf | json
    headers: Mapping[str, str]  # lower-cased names (gRPC metadata or HTTP headers)
    records: int
    accepted: bool = True
    path: str = ""


@dataclass
class _Rejection:
    remaining: int
    retryable: bool
    retry_after: float | None = None


@dataclass
class _Store:
    spans: list[SpanRecord] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    requests: list[ReceivedRequest] = field(default_factory=list)
    rejection: _Rejection | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_rejection(self) -> _Rejection | None:
        with self.lock:
            rejection = self.rejection
            if rejection is None or rejection.remaining <= 0:
                return None
            rejection.remaining -= 1
            return rejection

    def add(self, request: ReceivedRequest, records: list[Any]) -> None:
        with self.lock:
            self.requests.append(request)
            if request.accepted:
                (self.spans if request.signal == "traces" else self.logs).extend(records)


class _TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, store: _Store) -> None:
        self._store = store

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        return _grpc_export(self._store, "traces", traces_from_message, request, context)


class _LogsServicer(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, store: _Store) -> None:
        self._store = store

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        return _grpc_export(self._store, "logs", logs_from_message, request, context)


def _grpc_export(
    store: _Store, signal: str, to_records: Callable[[Any], Any], request: Any, context: Any
) -> Any:
    headers = {key.lower(): value for key, value in context.invocation_metadata() if isinstance(value, str)}
    rejection = store.take_rejection()
    decoded = to_records(request)
    store.add(
        ReceivedRequest("grpc", signal, "protobuf", headers, len(decoded.records), rejection is None),
        decoded.records,
    )
    if rejection is not None:
        code = grpc.StatusCode.UNAVAILABLE if rejection.retryable else grpc.StatusCode.INVALID_ARGUMENT
        if rejection.retryable and rejection.retry_after is not None:
            context.set_trailing_metadata(
                (("grpc-status-details-bin", _retry_status(rejection.retry_after)),)
            )
        context.abort(code, "rejected by OtlpSink.reject()")
    if signal == "traces":
        return trace_service_pb2.ExportTraceServiceResponse()
    return logs_service_pb2.ExportLogsServiceResponse()


def _retry_status(delay: float) -> bytes:
    """A ``google.rpc.Status`` (UNAVAILABLE) carrying a ``RetryInfo`` of ``delay`` seconds, serialized."""
    seconds = int(delay)
    retry = error_details_pb2.RetryInfo(
        retry_delay=duration_pb2.Duration(seconds=seconds, nanos=round((delay - seconds) * 1e9))
    )
    detail = any_pb2.Any()
    detail.Pack(retry)
    return status_pb2.Status(
        code=code_pb2.UNAVAILABLE, message="rejected", details=[detail]
    ).SerializeToString()


def _make_handler(store: _Store) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # silence per-request stderr lines
            pass

        def _reply(
            self, status: int, body: bytes = b"", content_type: str = "text/plain", extra: dict | None = None
        ):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            signal = _PATHS.get(self.path.split("?", 1)[0])
            if signal is None:
                self._reply(404, b"unknown OTLP path")
                return
            content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
            encoding = _CONTENT_TYPES.get(content_type)
            if encoding is None:
                self._reply(415, f"unsupported content type {content_type!r}".encode())
                return
            try:
                body = _decompress(body, (self.headers.get("Content-Encoding") or "").strip().lower())
                decoded = decode(signal, encoding, body)
            except (DecodeError, OSError, zlib.error, ValueError) as exc:
                self._reply(400, str(exc).encode())
                return
            headers = {key.lower(): value for key, value in self.headers.items()}
            rejection = store.take_rejection()
            store.add(
                ReceivedRequest(
                    "http", signal, encoding, headers, len(decoded.records), rejection is None, self.path
                ),
                decoded.records,
            )
            if rejection is not None:
                if rejection.retryable:
                    delay = f"{rejection.retry_after:g}" if rejection.retry_after is not None else "0"
                    self._reply(503, b"rejected by OtlpSink.reject()", extra={"Retry-After": delay})
                else:
                    self._reply(400, b"rejected by OtlpSink.reject()")
                return
            if encoding == "json":
                self._reply(200, b"{}", "application/json")
            else:
                response = (
                    trace_service_pb2.ExportTraceServiceResponse()
                    if signal == "traces"
                    else logs_service_pb2.ExportLogsServiceResponse()
                )
                self._reply(200, response.SerializeToString(), "application/x-protobuf")

    return Handler


def _decompress(body: bytes, content_encoding: str) -> bytes:
    if content_encoding in ("", "identity"):
        return body
    if content_encoding == "gzip":
        return gzip.decompress(body)
    if content_encoding == "deflate":
        return zlib.decompress(body)
    raise ValueError(f"unsupported Content-Encoding {content_encoding!r}")


class OtlpSink:
    """OTLP gRPC + HTTP receivers on 127.0.0.1 ephemeral ports that keep decoded records. Use
    as a context manager."""

    def __init__(self, *, grpc_enabled: bool = True, http_enabled: bool = True) -> None:
        self._store = _Store()
        self._grpc_enabled = grpc_enabled
        self._http_enabled = http_enabled
        self._grpc_server: grpc.Server | None = None
        self._http_server: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None
        self.grpc_port: int | None = None
        self.http_port: int | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> OtlpSink:
        if self._grpc_enabled:
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
            trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceServicer(self._store), server)
            logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_LogsServicer(self._store), server)
            self.grpc_port = server.add_insecure_port("127.0.0.1:0")
            server.start()
            self._grpc_server = server
        if self._http_enabled:
            http_server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self._store))
            http_server.daemon_threads = True
            self.http_port = http_server.server_address[1]
            self._http_thread = threading.Thread(
                target=http_server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="otlp-sink-http",
                daemon=True,
            )
            self._http_thread.start()
            self._http_server = http_server
        return self

    def stop(self) -> None:
        if self._grpc_server is not None:
            self._grpc_server.stop(grace=None).wait(5)
            self._grpc_server = None
        if self._http_server is not None:
            self._http_server.shutdown()
            self._http_server.server_close()
            self._http_server = None

    def __enter__(self) -> OtlpSink:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------------------------------

    @property
    def grpc_endpoint(self) -> str:
        """``http://127.0.0.1:<port>``: what gRPC OTLP exporters take as ``endpoint``."""
        if self.grpc_port is None:
            raise RuntimeError("the gRPC receiver is not running")
        return f"http://127.0.0.1:{self.grpc_port}"

    @property
    def http_endpoint(self) -> str:
        """``http://127.0.0.1:<port>``: the base URL (``OTEL_EXPORTER_OTLP_ENDPOINT`` style)."""
        if self.http_port is None:
            raise RuntimeError("the HTTP receiver is not running")
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def http_traces_url(self) -> str:
        return f"{self.http_endpoint}/v1/traces"

    @property
    def http_logs_url(self) -> str:
        return f"{self.http_endpoint}/v1/logs"

    # -- what arrived ----------------------------------------------------------------------------------------

    @property
    def spans(self) -> list[SpanRecord]:
        with self._store.lock:
            return list(self._store.spans)

    @property
    def logs(self) -> list[LogRecord]:
        with self._store.lock:
            return list(self._store.logs)

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._store.lock:
            return list(self._store.requests)

    def spans_named(self, name: str) -> list[SpanRecord]:
        return [span for span in self.spans if span.name == name]

    def clear(self) -> None:
        with self._store.lock:
            self._store.spans.clear()
            self._store.logs.clear()
            self._store.requests.clear()

    def reject(self, times: int = 1, *, retryable: bool = True, retry_after: float | None = None) -> None:
        """Answer the next ``times`` export requests with an error (see the module docstring)."""
        with self._store.lock:
            self._store.rejection = _Rejection(times, retryable, retry_after)

    def wait_for(
        self, predicate: Callable[[OtlpSink], bool], timeout: float = 10.0, interval: float = 0.02
    ) -> None:
        """Poll until ``predicate(sink)`` is true; AssertionError with what did arrive when
        ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self):
                return
            if time.monotonic() >= deadline:
                names = sorted(span.name for span in self.spans)
                raise AssertionError(
                    f"OtlpSink: condition not met within {timeout}s; received {len(self.requests)} requests, "
                    f"{len(names)} spans {names[:20]}, {len(self.logs)} logs"
                )
            time.sleep(interval)

    def wait_for_spans(self, count: int, timeout: float = 10.0) -> list[SpanRecord]:
        self.wait_for(lambda sink: len(sink.spans) >= count, timeout)
        return self.spans
