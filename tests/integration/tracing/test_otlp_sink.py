"""The reusable OTLP test sink (tests/support/otlp_sink.py) behaves like a real OTLP endpoint, for every
transport it offers."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agentotel_eval.otlp import SpanRecord
from agentotel_eval.otlp.encode import encode_traces, traces_to_json
from tests.support.fixture_traces import fixtures
from tests.support.otlp_sink import OtlpSink


@pytest.fixture
def sink():
    with OtlpSink() as running:
        yield running


def post(url: str, body: bytes, content_type: str, encoding: str = "") -> tuple[int, bytes]:
    headers = {"Content-Type": content_type}
    if encoding:
        headers["Content-Encoding"] = encoding
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def sample_spans() -> list[SpanRecord]:
    return fixtures()[0].spans()


def test_sdk_exporters_over_grpc_and_http_gzip(sink):
    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(GrpcSpanExporter(endpoint=sink.grpc_endpoint, insecure=True))
    )
    provider.add_span_processor(
        SimpleSpanProcessor(HttpSpanExporter(endpoint=sink.http_traces_url, compression=Compression.Gzip))
    )
    with provider.get_tracer("t").start_as_current_span("hello", attributes={"k": "v"}):
        pass
    spans = sink.wait_for_spans(2)
    assert [s.name for s in spans] == ["hello", "hello"]
    assert all(s.attributes == {"k": "v"} for s in spans)
    assert {r.transport for r in sink.requests} == {"grpc", "http"}
    provider.shutdown()


def test_logs_over_grpc(sink):
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(
        SimpleLogRecordProcessor(OTLPLogExporter(endpoint=sink.grpc_endpoint, insecure=True))
    )
    logger_provider.get_logger("t").emit(body={"message": "hi"}, event_name="gen_ai.choice")
    sink.wait_for(lambda s: len(s.logs) == 1)
    (record,) = sink.logs
    assert record.body == {"message": "hi"}
    assert sink.requests[0].signal == "logs"
    logger_provider.shutdown()


def test_http_json_and_protobuf_bodies_decode_to_the_same_records(sink):
    spans = sample_spans()
    json_body = json.dumps(traces_to_json(spans)).encode()
    assert post(sink.http_traces_url, json_body, "application/json") == (200, b"{}")
    status, _ = post(sink.http_traces_url, gzip.compress(encode_traces(spans).SerializeToString()),
                     "application/x-protobuf", "gzip")  # fmt: skip
    assert status == 200
    received = sink.spans
    assert len(received) == 2 * len(spans)
    by_encoding = received[: len(spans)], received[len(spans) :]
    assert [s.key for s in by_encoding[0]] == [s.key for s in by_encoding[1]] == [s.key for s in spans]
    assert [r.encoding for r in sink.requests] == ["json", "protobuf"]


def test_http_errors_are_specific(sink):
    assert post(f"{sink.http_endpoint}/v1/metrics", b"", "application/json")[0] == 404
    assert post(sink.http_traces_url, b"{}", "text/plain")[0] == 415
    assert post(sink.http_traces_url, b"not json", "application/json")[0] == 400
    assert post(sink.http_traces_url, b"x", "application/x-protobuf", "br")[0] == 400
    assert sink.requests == []  # nothing undecodable is recorded


def test_rejections_make_exporters_retry(sink):
    sink.reject(times=1)
    exporter = HttpSpanExporter(endpoint=sink.http_traces_url)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span("retried"):
        pass
    sink.wait_for_spans(1)
    assert [r.accepted for r in sink.requests] == [False, True]
    provider.shutdown()

    sink.clear()
    sink.reject(times=1, retryable=False)
    assert post(sink.http_traces_url, b"{}", "application/json")[0] == 400
    assert post(sink.http_traces_url, b"{}", "application/json")[0] == 200


def test_wait_for_says_what_arrived(sink):
    with pytest.raises(AssertionError, match="0 spans"):
        sink.wait_for(lambda s: len(s.spans) > 0, timeout=0.05)
