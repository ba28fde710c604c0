"""Every answer of the OTLP receivers, against a real collector on ephemeral ports."""

from __future__ import annotations

import gzip
import json
import logging
import re
import threading

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from agentotel_eval.otlp.encode import encode_logs, encode_traces, traces_to_json
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from tests.support.collector_harness import (
    HeldCommits,
    grpc_export,
    http_request,
    metric_samples,
    post_otlp,
    running_collector,
    wait_until,
)
from tests.support.fixture_traces import fixtures

LIMIT = 256 * 1024


def fixture(name: str):
    return next(f for f in fixtures() if f.name == name)


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    with running_collector(
        tmp_path_factory.mktemp("recv") / "r.duckdb", receiver={"max_request_size": LIMIT}
    ) as c:
        yield c


def rows(collector, sql: str) -> list[list]:
    return collector.query(sql)["rows"]


def span_count(collector, trace_id: str) -> int:
    return rows(collector, f"SELECT count(*) FROM spans WHERE trace_id = '{trace_id}'")[0][0]


def new_span(trace: int, sid: int = 1, **kw) -> SpanRecord:
    return SpanRecord(
        f"{trace:032x}",
        f"{sid:016x}",
        None,
        "op",
        start_ns=1_700_000_000_000_000_000 + sid,
        end_ns=1_700_000_000_000_000_100 + sid,
        **kw,
    )


# ---- success -----------------------------------------------------------------------------------------------


def test_http_protobuf_is_answered_in_protobuf_after_the_commit(collector):
    fx = fixture("pydantic-ai__native-v5__sequence")
    answer = post_otlp(collector.http_endpoint, "traces", fx.body("protobuf"))
    assert answer.status == 200
    assert answer.headers["content-type"] == "application/x-protobuf"
    response = ExportTraceServiceResponse.FromString(answer.body)
    assert not response.HasField("partial_success")
    assert span_count(collector, fx.spans()[0].trace_id) == len(fx.spans())  # committed before the answer


def test_http_json_is_answered_in_json(collector):
    fx = fixture("strands__default__sequence")
    answer = post_otlp(collector.http_endpoint, "traces", fx.body("json"), "json")
    assert answer.status == 200 and answer.headers["content-type"] == "application/json"
    assert json.loads(answer.body) == {}
    assert span_count(collector, fx.spans()[0].trace_id) == len(fx.spans())


def test_gzip_bodies_over_http_and_grpc(collector):
    fx = fixture("google-adk__default__sequence")
    assert post_otlp(collector.http_endpoint, "traces", fx.body("json"), "json", gzip=True).status == 200
    fx2 = fixture("google-adk__default__parallel")
    grpc_export(collector.grpc_endpoint, "traces", fx2.body("protobuf"), compression=grpc.Compression.Gzip)
    assert span_count(collector, fx.spans()[0].trace_id) == len(fx.spans())
    assert span_count(collector, fx2.spans()[0].trace_id) == len(fx2.spans())


def test_logs_over_both_transports(collector):
    fx = fixture("raw-openai__openai-v2-legacy__sequence")
    assert post_otlp(collector.http_endpoint, "logs", fx.logs_body("json"), "json").status == 200
    fx2 = fixture("raw-openai__otel-genai-manual__sequence")
    response = ExportLogsServiceResponse.FromString(
        grpc_export(collector.grpc_endpoint, "logs", fx2.logs_body("protobuf"))
    )
    assert not response.HasField("partial_success")
    for f in (fx, fx2):
        trace_id = f.logs()[0].trace_id
        stored = rows(collector, f"SELECT event_name FROM logs WHERE trace_id = '{trace_id}' ORDER BY time")
        assert sorted(r[0] for r in stored) == sorted(r.event_name for r in f.logs())


# ---- partial success ---------------------------------------------------------------------------------------


def _with_bad_span(valid: SpanRecord) -> bytes:
    request = encode_traces([valid, new_span(999, 2)])
    request.resource_spans[0].scope_spans[0].spans[1].trace_id = b"\x01\x02\x03\x04"  # 4 bytes, not 16
    return request.SerializeToString()


def test_partial_success_over_http_protobuf(collector):
    valid = new_span(101)
    answer = post_otlp(collector.http_endpoint, "traces", _with_bad_span(valid))
    assert answer.status == 200
    partial = ExportTraceServiceResponse.FromString(answer.body).partial_success
    assert partial.rejected_spans == 1 and "invalid trace id" in partial.error_message
    assert span_count(collector, valid.trace_id) == 1


def test_partial_success_over_http_json(collector):
    valid = new_span(102)
    body = traces_to_json([valid, new_span(103, 2)])
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["traceId"] = "abc"
    answer = post_otlp(collector.http_endpoint, "traces", json.dumps(body).encode(), "json")
    assert answer.status == 200
    partial = json.loads(answer.body)["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 1 and "invalid trace id 'abc'" in partial["errorMessage"]
    assert span_count(collector, valid.trace_id) == 1


def test_partial_success_over_grpc(collector):
    valid = new_span(104)
    response = ExportTraceServiceResponse.FromString(
        grpc_export(collector.grpc_endpoint, "traces", _with_bad_span(valid))
    )
    assert response.partial_success.rejected_spans == 1
    assert span_count(collector, valid.trace_id) == 1


def test_partial_success_for_logs(collector):
    request = encode_logs([LogRecord(5, 0, f"{105:032x}", None, 9, "", "x", "ok")] * 2)
    request.resource_logs[0].scope_logs[0].log_records[1].span_id = b"\x01"
    answer = post_otlp(collector.http_endpoint, "logs", request.SerializeToString())
    partial = ExportLogsServiceResponse.FromString(answer.body).partial_success
    assert partial.rejected_log_records == 1 and "span id" in partial.error_message


def test_a_number_out_of_its_range_rejects_its_record_not_the_request(collector):
    # protobuf times are uint64, OTLP/JSON numbers unbounded; stored times are int64 and severities int32
    from agentotel_eval.otlp.records import SpanEvent

    valid, far = new_span(106), new_span(106, 2)
    request = encode_traces([valid, far])
    request.resource_spans[0].scope_spans[0].spans[1].start_time_unix_nano = 2**63
    answer = post_otlp(collector.http_endpoint, "traces", request.SerializeToString())
    partial = ExportTraceServiceResponse.FromString(answer.body).partial_success
    assert answer.status == 200 and partial.rejected_spans == 1 and "int64" in partial.error_message
    assert span_count(collector, valid.trace_id) == 1

    body = traces_to_json([new_span(107), new_span(107, 2, events=(SpanEvent("e", 1, {}),))])
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["events"][0]["timeUnixNano"] = str(10**20)
    answer = post_otlp(collector.http_endpoint, "traces", json.dumps(body).encode(), "json")
    assert answer.status == 200 and int(json.loads(answer.body)["partialSuccess"]["rejectedSpans"]) == 1
    assert span_count(collector, f"{107:032x}") == 1

    trace_id = f"{108:032x}"
    records = [
        {"timeUnixNano": "5", "traceId": trace_id, "severityNumber": n, "body": {"stringValue": "ok"}}
        for n in (9, 2**31)
    ]
    logs = {"resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {}, "logRecords": records}]}]}
    answer = post_otlp(collector.http_endpoint, "logs", json.dumps(logs).encode(), "json")
    assert answer.status == 200 and int(json.loads(answer.body)["partialSuccess"]["rejectedLogRecords"]) == 1
    assert rows(collector, f"SELECT count(*) FROM logs WHERE trace_id = '{trace_id}'") == [[1]]


# ---- errors ------------------------------------------------------------------------------------------------


def test_an_undecodable_body_is_400_with_a_status_in_the_request_encoding(collector):
    answer = post_otlp(collector.http_endpoint, "traces", b"\xff\xff\xff\xff")
    assert answer.status == 400 and answer.headers["content-type"] == "application/x-protobuf"
    status = status_pb2.Status.FromString(answer.body)
    assert status.code == code_pb2.INVALID_ARGUMENT and "ExportTraceServiceRequest" in status.message
    answer = post_otlp(collector.http_endpoint, "traces", b"{not json", "json")
    assert answer.status == 400 and answer.headers["content-type"] == "application/json"
    assert "not valid JSON" in json.loads(answer.body)["message"]
    answer = post_otlp(collector.http_endpoint, "logs", b'{"resourceLogs": 5}', "json")
    assert answer.status == 400


def test_an_undecodable_body_is_invalid_argument_over_grpc(collector):
    with pytest.raises(grpc.RpcError) as info:
        grpc_export(collector.grpc_endpoint, "traces", b"\xff\xff\xff\xff")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_body_over_the_limit_is_413(collector):
    big = b"\0" * (LIMIT + 1)
    answer = post_otlp(collector.http_endpoint, "traces", big)
    assert answer.status == 413 and "limit" in status_pb2.Status.FromString(answer.body).message


def test_a_gzip_bomb_is_413_over_http(collector):
    answer = post_otlp(collector.http_endpoint, "traces", b"\0" * (32 * LIMIT), gzip=True)
    assert answer.status == 413
    assert "inflated body" in status_pb2.Status.FromString(answer.body).message


def test_over_the_limit_and_bombs_are_resource_exhausted_over_grpc(collector):
    with pytest.raises(grpc.RpcError) as info:
        grpc_export(collector.grpc_endpoint, "traces", b"\x0a" + b"\0" * (LIMIT + 10))
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(grpc.RpcError) as info:
        grpc_export(
            collector.grpc_endpoint, "traces", b"\0" * (32 * LIMIT), compression=grpc.Compression.Gzip
        )
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert collector.health()["status"] == "ok"


def test_unknown_content_type_or_encoding_is_415(collector):
    answer = post_otlp(collector.http_endpoint, "traces", b"x", headers={"Content-Type": "text/plain"})
    assert answer.status == 415 and b"application/x-protobuf" in answer.body
    answer = post_otlp(collector.http_endpoint, "traces", b"x", headers={"Content-Encoding": "br"})
    assert answer.status == 415 and b"Content-Encoding" in answer.body


def test_wrong_methods_are_405_with_allow_and_unknown_paths_404(collector):
    answer = http_request(collector.http_endpoint, "GET", "/v1/traces")
    assert answer.status == 405 and answer.headers["allow"] == "POST"
    answer = http_request(collector.http_endpoint, "PUT", "/v1/logs", b"x", {"Content-Length": "1"})
    assert answer.status == 405
    answer = http_request(collector.http_endpoint, "POST", "/metrics", b"", {"Content-Length": "0"})
    assert answer.status == 405 and answer.headers["allow"] == "GET, HEAD"
    assert http_request(collector.http_endpoint, "GET", "/v1/nothing").status == 404


# ---- idempotency and late spans ----------------------------------------------------------------------------


def test_a_resent_request_is_stored_once_over_both_transports(collector):
    fx = fixture("openai-agents__otel-genai__sequence")
    trace_id = fx.spans()[0].trace_id
    for _ in range(2):
        assert post_otlp(collector.http_endpoint, "traces", fx.body("protobuf")).status == 200
        grpc_export(collector.grpc_endpoint, "traces", fx.body("protobuf"))
        assert post_otlp(collector.http_endpoint, "traces", fx.body("json"), "json").status == 200
    assert span_count(collector, trace_id) == len(fx.spans())
    wait_until(
        lambda: rows(collector, f"SELECT count(*) FROM agent_runs WHERE trace_id = '{trace_id}'")[0][0],
        what="the run",
    )
    collector.writer.flush(5)
    assert rows(collector, f"SELECT count(*) FROM agent_runs WHERE trace_id = '{trace_id}'")[0][0] == 1
    assert collector.writer.stats.spans_duplicate >= 5 * len(fx.spans())


def test_a_late_span_replaces_the_runs_rows_instead_of_adding(collector):
    fx = fixture("pydantic-ai__native-v6__sequence")
    spans = fx.spans()
    trace_id = spans[0].trace_id
    late = next(s for s in spans if s.name == "execute_tool book_hotel")
    early = [s for s in spans if s is not late]
    assert (
        post_otlp(collector.http_endpoint, "traces", encode_traces(early).SerializeToString()).status == 200
    )

    def calls():
        return rows(
            collector,
            f"SELECT seq, tool_name, span_id FROM tool_calls WHERE trace_id = '{trace_id}' ORDER BY seq",
        )

    # Without its execution span, book_hotel is known only from the model's request (the chat span's output).
    wait_until(
        lambda: len(calls()) == 3 and calls()[2][2] != late.span_id, what="the run without the late span"
    )
    reopened = collector.assembler.snapshot().assembler.traces_reopened
    assert (
        post_otlp(collector.http_endpoint, "traces", encode_traces([late]).SerializeToString()).status == 200
    )
    wait_until(
        lambda: calls()[2][2] == late.span_id, what="the rebuilt run, book_hotel now from its execution span"
    )
    wait_until(
        lambda: collector.assembler.snapshot().assembler.traces_reopened == reopened + 1,
        timeout=5,
        what="the counter",
    )
    assert [c[:2] for c in calls()] == [[0, "search_flights"], [1, "get_weather"], [2, "book_hotel"]]
    assert rows(collector, f"SELECT count(*) FROM agent_runs WHERE trace_id = '{trace_id}'") == [[1]]


# ---- overload ----------------------------------------------------------------------------------------------


def test_a_full_write_queue_answers_503_and_unavailable_with_a_retry_delay(tmp_path):
    with running_collector(
        tmp_path / "o.duckdb", writer={"max_queue_records": 3}, receiver={"retry_after": 1.5}
    ) as collector:
        commits = HeldCommits(collector.writer)
        held: dict = {}
        first = threading.Thread(
            target=lambda: held.update(
                answer=post_otlp(
                    collector.http_endpoint,
                    "traces",
                    encode_traces([new_span(1, i) for i in range(1, 3)]).SerializeToString(),
                )
            )
        )
        first.start()
        assert commits.entered.wait(5)
        wait_until(lambda: collector.writer.queued_records == 2, what="the first request to be queued")

        answer = post_otlp(
            collector.http_endpoint,
            "traces",
            encode_traces([new_span(2, 1), new_span(2, 2)]).SerializeToString(),
        )
        assert answer.status == 503 and answer.headers["retry-after"] == "2"
        status = status_pb2.Status.FromString(answer.body)
        assert status.code == code_pb2.UNAVAILABLE and "write queue full" in status.message

        with pytest.raises(grpc.RpcError) as info:
            grpc_export(
                collector.grpc_endpoint,
                "traces",
                encode_traces([new_span(3, 1), new_span(3, 2)]).SerializeToString(),
            )
        error = info.value
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        trailers = dict(error.trailing_metadata())
        retry = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
        assert (retry.retry_delay.seconds, retry.retry_delay.nanos) == (1, 500_000_000)
        details = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
        assert details.code == code_pb2.UNAVAILABLE and details.details[0].Is(
            error_details_pb2.RetryInfo.DESCRIPTOR
        )

        commits.release.set()
        first.join(10)
        assert held["answer"].status == 200  # the accepted request was not lost
        # its records count against the bound until the assembler has taken them and their runs are written
        # (the exporter's retry delay)
        wait_until(
            lambda: collector.assembler.backlog == 0 and collector.writer.pending_operation_rows == 0,
            what="the assembler to take the committed records and their runs to be written",
        )
        assert (
            post_otlp(
                collector.http_endpoint,
                "traces",
                encode_traces([new_span(2, 1), new_span(2, 2)]).SerializeToString(),
            ).status
            == 200
        )  # the retry gets in
        assert collector.query("SELECT count(*) FROM spans")["rows"] == [[4]]
        metrics = collector.metrics_text()
        assert (
            metric_samples(metrics)[
                'agentotel_export_requests_total{transport="http",signal="traces",outcome="overloaded"}'
            ]
            == 1
        )
        assert (
            metric_samples(metrics)[
                'agentotel_export_requests_total{transport="grpc",signal="traces",outcome="overloaded"}'
            ]
            == 1
        )


def test_the_sdk_exporter_retries_after_503_and_the_spans_arrive(tmp_path):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("root"), tracer.start_as_current_span("child"):
        pass
    spans = memory.get_finished_spans()

    with running_collector(tmp_path / "sdk.duckdb", writer={"max_queue_records": 1}) as collector:
        commits = HeldCommits(collector.writer)
        filler = threading.Thread(
            target=post_otlp,
            args=(collector.http_endpoint, "traces", encode_traces([new_span(50)]).SerializeToString()),
        )
        filler.start()
        assert commits.entered.wait(5)
        wait_until(lambda: collector.writer.queued_records == 1, what="the queue to fill")
        exporter = OTLPSpanExporter(endpoint=f"{collector.http_endpoint}/v1/traces", timeout=20)
        result: dict = {}
        export = threading.Thread(target=lambda: result.update(r=exporter.export(spans)))
        export.start()
        wait_until(lambda: 'outcome="overloaded"' in collector.metrics_text(), what="a refusal")
        commits.release.set()
        export.join(20)
        filler.join(5)
        assert result["r"] == SpanExportResult.SUCCESS
        stored = {r[0] for r in collector.query("SELECT span_id FROM spans")["rows"]}
        assert {f"{s.context.span_id:016x}" for s in spans} <= stored
        exporter.shutdown()


# ---- health and metrics ------------------------------------------------------------------------------------

_SAMPLE = re.compile(
    r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? '
    r"-?[0-9.e+\-]+$"
)


def test_healthz_and_prometheus_metrics(collector):
    post_otlp(collector.http_endpoint, "traces", fixture("langchain__otel-genai__delegate").body("protobuf"))
    health = json.loads(http_request(collector.http_endpoint, "GET", "/healthz").body)
    assert health["status"] == "ok" and health["token"] and health["db"].endswith("r.duckdb")
    assert health["database_open"] is True
    answer = http_request(collector.http_endpoint, "GET", "/metrics")
    assert answer.status == 200 and answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = answer.body.decode()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) agentotel_\w+ ", line), line
            continue
        assert _SAMPLE.match(line), line
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
    assert samples['agentotel_spans_received_total{transport="http"}'] > 0
    assert samples["agentotel_spans_stored_total"] > 0
    for name in (
        "agentotel_open_traces",
        "agentotel_write_queue_records",
        "agentotel_flush_duration_seconds_count",
        "agentotel_runs_completed_total",
        "agentotel_late_records_total",
        "agentotel_traces_completed_early_total",
        "agentotel_read_errors_total",
        "agentotel_reload_errors_total",
    ):
        assert name in samples, name
    assert samples["agentotel_flush_duration_seconds_count"] >= 1
    assert (
        samples["agentotel_database_open"] == 1 and samples["agentotel_database_reopen_failures_total"] == 0
    )
    assert (
        samples['agentotel_flush_duration_seconds_bucket{le="+Inf"}']
        == samples["agentotel_flush_duration_seconds_count"]
    )


def test_gzip_helper_compresses():  # guards the helper the tests above rely on
    assert gzip.decompress(gzip.compress(b"x")) == b"x"


def test_a_body_of_the_wrong_shape_is_an_empty_success_counted_and_warned_once(tmp_path, caplog):
    """``{"foo": 1}`` is valid OTLP/JSON with nothing in it: answered ``{}`` and 200 as the specification
    says, but counted apart in /metrics and logged once, so a misconfigured exporter does not go unnoticed."""
    with running_collector(tmp_path / "empty.duckdb") as collector, caplog.at_level(logging.WARNING):
        for _ in range(3):
            answer = post_otlp(collector.http_endpoint, "traces", b'{"foo": 1}', "json")
            assert (answer.status, json.loads(answer.body)) == (200, {})
        samples = metric_samples(collector.metrics_text())
        assert (
            samples['agentotel_export_requests_total{transport="http",signal="traces",outcome="empty"}'] == 3
        )
        assert (
            samples.get('agentotel_export_requests_total{transport="http",signal="traces",outcome="ok"}', 0)
            == 0
        )
    warned = [r.getMessage() for r in caplog.records if "held no spans" in r.getMessage()]
    assert len(warned) == 1 and 'outcome="empty"' in warned[0]
