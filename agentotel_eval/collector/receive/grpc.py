"""OTLP/gRPC receiver: ``TraceService/Export`` and ``LogsService/Export``.

grpc inflates gzip and refuses a message over ``max_request_size`` (compressed or inflated); the handler
passes the message bytes to the same decode-and-enqueue path as the HTTP receiver. Answers: OK with
``partial_success`` when records were rejected; INVALID_ARGUMENT for data that cannot be stored; UNAVAILABLE
with a ``RetryInfo`` detail when the write queue is full or the collector is stopping — in
``grpc-status-details-bin`` as the OTLP spec and the Go exporters expect, and in ``google.rpc.retryinfo-bin``,
which the Python exporter reads.

With a token, a call without ``authorization: Bearer <token>`` metadata is UNAUTHENTICATED before its message
is decoded (``auth.BearerInterceptor``). With a certificate the port serves TLS. gRPC's own transport bounds
idle connections (``grpc.max_connection_idle_ms``), handshakes and the streams one connection may open at
once; a connection that sends nothing holds no worker thread.
"""

from __future__ import annotations

import logging
import math
from concurrent import futures
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from agentotel_eval.collector.receive.auth import Authenticator, BearerInterceptor
from agentotel_eval.collector.receive.errors import ReceiverError
from agentotel_eval.collector.receive.ingest import Ingestor
from agentotel_eval.collector.receive.ports import in_use_message

log = logging.getLogger(__name__)


def _abort(context: grpc.ServicerContext, exc: ReceiverError) -> None:
    code = getattr(grpc.StatusCode, exc.grpc_code)
    if exc.retryable:
        delay = float(getattr(exc, "retry_after", 1.0))
        seconds = math.floor(delay)
        retry = error_details_pb2.RetryInfo(
            retry_delay=duration_pb2.Duration(seconds=seconds, nanos=int((delay - seconds) * 1e9))
        )
        detail = any_pb2.Any()
        detail.Pack(retry)
        status = status_pb2.Status(code=getattr(code_pb2, exc.grpc_code), message=str(exc), details=[detail])
        context.set_trailing_metadata(
            (
                ("grpc-status-details-bin", status.SerializeToString()),
                ("google.rpc.retryinfo-bin", retry.SerializeToString()),
            )
        )
    context.abort(code, str(exc))


#: (service, signal, response type) served; the paths are those of the generated OTLP servicers.
SERVICES = (
    (
        "opentelemetry.proto.collector.trace.v1.TraceService",
        "traces",
        trace_service_pb2.ExportTraceServiceResponse,
    ),
    ("opentelemetry.proto.collector.logs.v1.LogsService", "logs", logs_service_pb2.ExportLogsServiceResponse),
)


#: concurrent calls on one connection (HTTP/2 streams); an exporter sends one or a few at a time
MAX_CONCURRENT_STREAMS = 32


def _export_handler(ingestor: Ingestor, signal: str, response_type: Any) -> Any:
    def export(body: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            outcome = ingestor.ingest_body(signal, "protobuf", body, "grpc")
        except ReceiverError as exc:
            _abort(context, exc)
            raise  # unreachable: abort raises
        response = response_type()
        if outcome.rejected:
            if signal == "traces":
                response.partial_success.rejected_spans = outcome.rejected
            else:
                response.partial_success.rejected_log_records = outcome.rejected
            response.partial_success.error_message = outcome.message
        return response.SerializeToString()

    # No (de)serializers: the handler sees the raw message bytes, so a body that is not a valid request is an
    # INVALID_ARGUMENT from the shared decode path, where a generated servicer would fail
    # inside grpc (INTERNAL).
    return grpc.unary_unary_rpc_method_handler(export)


class GrpcReceiver:
    """``auth``: the token check (None: none); ``tls``: (certificate chain, private key) PEM bytes to serve
    TLS; ``idle_timeout``: a connection with no call for this long is closed; ``handshake_timeout``: the TLS
    and HTTP/2 handshakes must be done within it."""

    def __init__(
        self,
        host: str,
        port: int,
        ingestor: Ingestor,
        *,
        workers: int = 16,
        max_request_size: int = 20 * 1024 * 1024,
        auth: Authenticator | None = None,
        tls: tuple[bytes, bytes] | None = None,
        idle_timeout: float = 60.0,
        handshake_timeout: float = 30.0,
    ) -> None:
        self._host = host
        self._port = port
        self._ingestor = ingestor
        self._workers = workers
        self._max = max_request_size
        self._auth = auth
        self._tls = tls
        self._idle_ms = max(1, int(idle_timeout * 1000))
        self._handshake_ms = max(1, int(handshake_timeout * 1000))
        self._server: grpc.Server | None = None
        self._bound: int | None = None

    @property
    def address(self) -> tuple[str, int]:
        return self._host, self._bound if self._bound is not None else self._port

    def start(self) -> None:
        if self._server is not None:
            return
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="agentotel-grpc"),
            options=[
                ("grpc.max_receive_message_length", self._max),
                ("grpc.so_reuseport", 0),  # a second collector on the same port must fail, not share it
                ("grpc.max_connection_idle_ms", self._idle_ms),
                ("grpc.server_handshake_timeout_ms", self._handshake_ms),
                ("grpc.max_concurrent_streams", MAX_CONCURRENT_STREAMS),
            ],
            interceptors=[BearerInterceptor(self._auth)] if self._auth is not None else None,
        )
        server.add_generic_rpc_handlers(
            [
                grpc.method_handlers_generic_handler(
                    service, {"Export": _export_handler(self._ingestor, signal, rtype)}
                )
                for service, signal, rtype in SERVICES
            ]
        )
        host = f"[{self._host}]" if ":" in self._host else self._host
        try:
            if self._tls is not None:
                chain, key = self._tls
                bound = server.add_secure_port(
                    f"{host}:{self._port}", grpc.ssl_server_credentials([(key, chain)])
                )
            else:
                bound = server.add_insecure_port(f"{host}:{self._port}")
        except (
            RuntimeError
        ) as exc:  # gRPC says only "Failed to bind": taken between the check and here, or in use
            if "bind" in str(exc).lower():
                raise OSError(in_use_message(self._port, "OTLP/gRPC", self._host, "grpc")) from None
            raise OSError(f"cannot listen for gRPC on {self._host}:{self._port}: {exc}") from None
        if not bound:
            raise OSError(in_use_message(self._port, "OTLP/gRPC", self._host, "grpc"))
        self._bound = bound
        server.start()
        self._server = server

    def stop_accepting(self, grace: float = 10.0) -> Any:
        """Refuse new calls; calls in flight get ``grace`` seconds to finish. Returns an
        event set when done."""
        if self._server is None:
            return None
        return self._server.stop(grace)

    def shutdown(self, grace: float = 10.0) -> None:
        if self._server is not None:
            done = self._server.stop(grace)
            done.wait(grace + 1)
            self._server = None
