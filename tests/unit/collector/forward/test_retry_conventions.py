"""The forwarder's retry conventions: which failures are retried and the delay a server asks for, read from
real gRPC trailers and real HTTP answers on 127.0.0.1."""

from __future__ import annotations

import email.utils
import importlib
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import pytest
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from agentotel_eval.collector.forward.forwarder import (
    RETRYABLE_GRPC_CODES,
    RETRYABLE_HTTP_STATUSES,
    ExportRefused,
    ExportRetryable,
    ForwardConfig,
    HttpSender,
    _GrpcSender,
    grpc_retry_delay,
)
from agentotel_eval.otlp.encode import encode_traces
from agentotel_eval.otlp.records import SpanRecord


def _retry_info(seconds: float) -> error_details_pb2.RetryInfo:
    whole = int(seconds)
    return error_details_pb2.RetryInfo(
        retry_delay=duration_pb2.Duration(seconds=whole, nanos=round((seconds - whole) * 1e9))
    )


def _status_with(*details: object) -> bytes:
    packed = []
    for detail in details:
        any_detail = any_pb2.Any()
        any_detail.Pack(detail)
        packed.append(any_detail)
    return status_pb2.Status(code=code_pb2.UNAVAILABLE, details=packed).SerializeToString()


def test_retry_info_in_the_status_details_is_read():
    other = error_details_pb2.DebugInfo(detail="busy")  # a detail of another kind first: skipped
    trailers = [("x-other", "1"), ("grpc-status-details-bin", _status_with(other, _retry_info(2.25)))]
    assert grpc_retry_delay(trailers) == pytest.approx(2.25)


def test_a_bare_retry_info_trailer_is_read_as_the_python_exporters_read_it():
    assert grpc_retry_delay([("google.rpc.retryinfo-bin", _retry_info(0.5).SerializeToString())]) == 0.5


def test_no_usable_retry_info_means_our_own_backoff():
    assert grpc_retry_delay([]) is None
    assert (
        grpc_retry_delay([("grpc-status-details-bin", _status_with(error_details_pb2.DebugInfo()))]) is None
    )
    # malformed bytes under either key: no delay, and no exception that would drop the batch
    assert grpc_retry_delay([("grpc-status-details-bin", b"\xff\xff\xff")]) is None
    assert grpc_retry_delay([("google.rpc.retryinfo-bin", b"\x0a\xff")]) is None
    # a RetryInfo without a delay asks for nothing
    assert grpc_retry_delay([("google.rpc.retryinfo-bin", b"")]) is None


def test_the_retried_codes_and_statuses_are_the_exporters():
    """The same lists as the installed OpenTelemetry exporters, where those keep them (private names: a
    release without them skips, one that changes them fails here)."""
    try:
        grpc_exporter = importlib.import_module("opentelemetry.exporter.otlp.proto.grpc.exporter")
        http_common = importlib.import_module("opentelemetry.exporter.otlp.common.http")
        grpc_codes = grpc_exporter._RETRYABLE_ERROR_CODES
        http_statuses = http_common._RETRYABLE_STATUS_CODES
    except (ImportError, AttributeError) as exc:
        pytest.skip(f"this exporter release keeps no retry lists to compare with: {exc}")
    assert {code.name for code in grpc_codes} == RETRYABLE_GRPC_CODES
    assert set(http_statuses) == RETRYABLE_HTTP_STATUSES


# -- HTTP: a real server answering what each test scripts ----------------------------------------------------
class _Scripted(ThreadingHTTPServer):
    status = 200
    headers: dict[str, str]
    paths: list[str]


class _Handler(BaseHTTPRequestHandler):
    server: _Scripted

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.paths.append(self.path)
        self.send_response(self.server.status)
        for name, value in self.server.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[_Scripted]:
    server = _Scripted(("127.0.0.1", 0), _Handler)
    server.headers, server.paths = {}, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _request() -> object:
    return encode_traces([SpanRecord("1" * 32, "2" * 16, None, "s", start_ns=1, end_ns=2)])


def _http_sender(server: _Scripted, path: str = "") -> HttpSender:
    return HttpSender(ForwardConfig(url=f"http://127.0.0.1:{server.server_address[1]}{path}", timeout_s=5))


@pytest.mark.parametrize("status", sorted(RETRYABLE_HTTP_STATUSES))
def test_http_statuses_the_exporters_retry_are_retryable(http_server, status):
    http_server.status, http_server.headers = status, {"Retry-After": "3"}
    with pytest.raises(ExportRetryable) as caught:
        _http_sender(http_server).send("traces", _request())
    assert caught.value.retry_after_s == 3.0 and str(status) in str(caught.value)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 408, 413, 500, 501])
def test_every_other_error_status_is_final(http_server, status):
    http_server.status = status
    with pytest.raises(ExportRefused, match=str(status)):
        _http_sender(http_server).send("traces", _request())


def test_a_retry_after_date_is_the_time_until_then(http_server):
    http_server.status = 503
    http_server.headers = {"Retry-After": email.utils.formatdate(time.time() + 120, usegmt=True)}
    with pytest.raises(ExportRetryable) as caught:
        _http_sender(http_server).send("traces", _request())
    assert caught.value.retry_after_s is not None and 110 <= caught.value.retry_after_s <= 120


def test_an_unreadable_retry_after_leaves_the_delay_to_our_backoff(http_server):
    http_server.status, http_server.headers = 429, {"Retry-After": "soon"}
    with pytest.raises(ExportRetryable) as caught:
        _http_sender(http_server).send("traces", _request())
    assert caught.value.retry_after_s is None


@pytest.mark.parametrize("path", ["", "/", "/otlp", "/otlp/v1/traces"])
def test_the_signal_path_is_appended_once(http_server, path):
    sender = _http_sender(http_server, path)
    sender.send("traces", _request())
    sender.send("logs", _request())
    base = "/otlp" if path.startswith("/otlp") else ""
    assert http_server.paths == [f"{base}/v1/traces", f"{base}/v1/logs"]


def test_a_closed_port_is_retryable():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    port = server.server_address[1]
    server.server_close()  # nothing listens there any more
    with pytest.raises(ExportRetryable, match=f"127.0.0.1:{port}"):
        HttpSender(ForwardConfig(url=f"http://127.0.0.1:{port}", timeout_s=2)).send("traces", _request())


# -- gRPC: a real server aborting with the code and trailers each test chooses -------------------------------
class _Aborting(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.code = grpc.StatusCode.UNAVAILABLE
        self.trailers: tuple[tuple[str, bytes], ...] = ()

    def Export(self, request, context):
        if self.trailers:
            context.set_trailing_metadata(self.trailers)
        context.abort(self.code, "scripted")


@pytest.fixture
def grpc_server() -> Iterator[tuple[_Aborting, str]]:
    servicer = _Aborting()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, f"grpc://127.0.0.1:{port}"
    server.stop(0)


@pytest.mark.parametrize(
    "key, value",
    [
        ("grpc-status-details-bin", _status_with(_retry_info(1.5))),
        ("google.rpc.retryinfo-bin", _retry_info(1.5).SerializeToString()),
    ],
)
def test_a_grpc_server_s_retry_info_sets_the_delay(grpc_server, key, value):
    servicer, url = grpc_server
    servicer.trailers = ((key, value),)
    sender = _GrpcSender(ForwardConfig(url=url, timeout_s=5))
    try:
        with pytest.raises(ExportRetryable, match="UNAVAILABLE") as caught:
            sender.send("traces", trace_service_pb2.ExportTraceServiceRequest())
    finally:
        sender.close()
    assert caught.value.retry_after_s == 1.5


@pytest.mark.parametrize(
    "code, retried",
    [
        (grpc.StatusCode.RESOURCE_EXHAUSTED, True),
        (grpc.StatusCode.ABORTED, True),
        (grpc.StatusCode.INVALID_ARGUMENT, False),
        (grpc.StatusCode.UNAUTHENTICATED, False),
        (grpc.StatusCode.UNIMPLEMENTED, False),
    ],
)
def test_grpc_codes_are_retried_as_the_exporters_retry_them(grpc_server, code, retried):
    servicer, url = grpc_server
    servicer.code = code
    sender = _GrpcSender(ForwardConfig(url=url, timeout_s=5))
    try:
        with pytest.raises(ExportRetryable if retried else ExportRefused, match=code.name) as caught:
            sender.send("traces", trace_service_pb2.ExportTraceServiceRequest())
    finally:
        sender.close()
    assert getattr(caught.value, "retry_after_s", None) is None
