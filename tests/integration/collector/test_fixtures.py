"""Every recorded trace fixture, replayed over HTTP/protobuf, HTTP/JSON and gRPC (with its log records), lands
in DuckDB exactly: its spans, its logs, and the agent runs and tool calls that ``reconstruct`` finds in it."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any

import pytest

from agentotel_eval.frozen import thaw
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.scores import EVALUATOR_ATTRIBUTE
from agentotel_eval.store.rows import LOG_SELECT, SPAN_SELECT, logs_from_arrow, spans_from_arrow
from tests.support.collector_harness import (
    grpc_export,
    metric_samples,
    post_otlp,
    running_collector,
    wait_until,
)
from tests.support.fixture_traces import Fixture, as_stored, fixtures

#: "grpc-thread" runs assembly and scoring on a thread of the collector's process (``assembler.process =
#: false``); the others in the assembler process, the default. "grpc" closes and reopens the database every
#: few dozen records, between the commits, reads and run writes of the replay (``writer.reopen_rows``)
MODES = ("http-protobuf", "http-json", "grpc", "grpc-thread")
REOPEN_ROWS = {"grpc": 40}
FIXTURES = fixtures()


def _send(collector: Any, mode: str, fx: Fixture) -> None:
    encoding = "json" if mode == "http-json" else "protobuf"
    bodies = [("traces", fx.body(encoding)), ("logs", fx.logs_body(encoding))]
    for signal, body in bodies:
        if body is None:
            continue
        if mode.startswith("grpc"):
            grpc_export(collector.grpc_endpoint, signal, body)
        else:
            answer = post_otlp(collector.http_endpoint, signal, body, encoding)
            assert answer.status == 200, answer.body


@pytest.fixture(scope="module", params=MODES)
def replayed(request, tmp_path_factory):
    mode = request.param
    path = tmp_path_factory.mktemp(mode) / "fixtures.duckdb"
    reopen = {"writer": {"reopen_rows": REOPEN_ROWS[mode]}} if mode in REOPEN_ROWS else {}
    with running_collector(path, assembler={"process": mode != "grpc-thread"}, **reopen) as collector:
        assert collector.in_process == (mode == "grpc-thread")
        for fx in FIXTURES:
            _send(collector, mode, fx)

        def settled() -> bool:
            return collector.assembler.backlog == 0 and collector.assembler.open_traces == 0

        wait_until(settled, timeout=30, what="every trace to complete")
        assert collector.writer.flush(10)
        yield mode, collector


def _encoding(mode: str) -> str:
    return "json" if mode == "http-json" else "protobuf"


def _in(ids: set[str]) -> str:
    return "(" + ", ".join(f"'{i}'" for i in sorted(ids)) + ")"


def _select(collector: Any, sql: str) -> list[tuple]:
    with collector._cursor() as cursor:
        return cursor.execute(sql).fetchall()


def _select_arrow(collector: Any, sql: str) -> Any:
    with collector._cursor() as cursor:
        return cursor.sql(sql).to_arrow_table()


def _json_or_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return json.loads(json.dumps(thaw(value)))


def _stored_text(value: str | None, expected: Any) -> Any:
    return value if expected is None or isinstance(expected, str) else json.loads(value)


def _expected_runs(fx: Fixture, encoding: str):
    """What the collector writes: runs trace by trace (a plain client loop spread over several traces is one
    run per trace), a request-only call's result completed from a later trace that fed it back (the asking
    trace is rebuilt when that one arrives), which is what ``reconstruct`` gives the traces together."""
    return sorted(
        reconstruct(fx.spans(encoding), fx.logs(encoding)), key=lambda r: (r.start_time_ns, r.span_id)
    )


def _stored_calls(collector: Any, trace_ids: set[str]) -> list[tuple]:
    return _select(
        collector,
        "SELECT trace_id, run_span_id, seq, span_id, call_id, tool_name, arguments, result, status, "
        f"epoch_us(start_time), start_time FROM tool_calls WHERE trace_id IN {_in(trace_ids)} "
        "ORDER BY trace_id, run_span_id, seq",
    )


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.name)
def test_spans_and_logs_are_stored_exactly(replayed, fx):
    mode, collector = replayed
    expected = {s.key: s for s in fx.spans(_encoding(mode))}
    trace_ids = {tid for tid, _ in expected}
    rows = spans_from_arrow(
        _select_arrow(collector, f"SELECT {SPAN_SELECT} FROM spans WHERE trace_id IN {_in(trace_ids)}")
    )
    assert len(rows) == len(expected)  # each span once
    stored = {span.key: span for span in rows}
    run_keys = {run.key for run in _expected_runs(fx, _encoding(mode))}
    for key, span in stored.items():
        added = {k for k in span.attributes if k.startswith("agentotel.eval.")} - set(
            expected[key].attributes
        )
        ours = [e for e in span.events if EVALUATOR_ATTRIBUTE in e.attributes]
        if key in run_keys:  # every run is scored (the detectors need no expectation): its span says so
            assert "agentotel.eval.tool_errors_detectors.success" in added
            assert [e.attributes["gen_ai.evaluation.name"] for e in ours] == ["tool_errors_detectors"]
        else:
            assert not added and not ours
        stored[key] = dataclasses.replace(
            span,
            attributes={k: v for k, v in span.attributes.items() if k not in added},
            events=tuple(e for e in span.events if e not in ours),
        )
    assert stored == expected  # ids, attributes, events, times, resource: all as received
    logs = fx.logs(_encoding(mode))
    if logs:
        log_traces = {r.trace_id for r in logs if r.trace_id}
        stored = logs_from_arrow(
            _select_arrow(collector, f"SELECT {LOG_SELECT} FROM logs WHERE trace_id IN {_in(log_traces)}")
        )
        assert Counter(map(repr, stored)) == Counter(map(repr, map(as_stored, logs)))


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.name)
def test_runs_and_tool_calls_equal_what_reconstruct_returns(replayed, fx):
    mode, collector = replayed
    encoding = _encoding(mode)
    runs = _expected_runs(fx, encoding)
    trace_ids = {s.trace_id for s in fx.spans(encoding)}
    stored_runs = _select(
        collector,
        "SELECT trace_id, span_id, agent_name, service_name, status, tools_called, expected_tools, "
        f"parent_run_span_id, input, output FROM agent_runs WHERE trace_id IN {_in(trace_ids)} "
        "ORDER BY start_time, span_id",
    )
    by_key = {(r[0], r[1]): r for r in stored_runs}
    assert len(by_key) == len(stored_runs) == len(runs)  # no run twice, none missing
    for run in runs:
        row = by_key[(run.trace_id, run.span_id)]
        assert row[2:8] == (
            run.agent_name,
            run.service_name,
            run.status,
            run.tools_called,
            list(run.expected_tools) if run.expected_tools is not None else None,
            run.parent_run_span_id,
        )
        assert _stored_text(row[8], run.input) == _json_or_text(run.input)
        assert _stored_text(row[9], run.output) == _json_or_text(run.output)

    expected_calls = [
        (run.trace_id, run.span_id, seq, call) for run in runs for seq, call in enumerate(run.tool_calls)
    ]
    stored_calls = _stored_calls(collector, trace_ids)
    assert len(stored_calls) == len(expected_calls)
    stored_by_key = {(r[0], r[1], r[2]): r for r in stored_calls}
    for trace_id, run_span_id, seq, call in expected_calls:
        row = stored_by_key[(trace_id, run_span_id, seq)]
        args = call.input_parameters if call.input_parameters is not None else call.raw_arguments
        assert row[3:6] == (call.span_id, call.call_id, call.name)
        assert (json.loads(row[6]) if row[6] is not None else None) == _json_or_text(args)
        assert _stored_text(row[7], call.output) == _json_or_text(call.output)
        assert row[8] == (call.status or "ok")
        if call.start_time_ns is not None:
            assert abs(row[9] * 1000 - call.start_time_ns) <= 500  # microseconds, rounded


def _numeric(value: Any) -> Any:
    """Arguments compared numerically (100 == 100.0), as the manifest asks."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {k: _numeric(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numeric(v) for v in value]
    return value


def _key(name: str, args: Any, outcome: str) -> str:
    return json.dumps([name, _numeric(args), outcome], sort_keys=True)


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.name)
def test_tool_calls_match_the_manifest_ground_truth(replayed, fx):
    mode, collector = replayed
    entry = fx.entry
    trace_ids = {s.trace_id for s in fx.spans(_encoding(mode))}
    stored = sorted(_stored_calls(collector, trace_ids), key=lambda r: (r[9] or 0, r[2]))
    args_known = fx.args_recorded()  # without content capture, no arguments: none may be invented
    if not fx.names_recorded():  # metadata-only spans: nothing names the calls, none may be invented
        assert stored == []
        return
    actual = [_key(r[5], json.loads(r[6]) if r[6] is not None else None, r[8]) for r in stored]
    expected = [  # values the capture itself dropped are compared as lost: kept out, never invented
        _key(name, fx.recorded_arguments(args) if args_known else None, outcome)
        for name, args, outcome in zip(
            entry["ground_truth_tools"],
            entry["ground_truth_args"],
            entry["ground_truth_outcomes"],
            strict=True,
        )
    ]
    assert len(actual) == len(expected), (actual, expected)
    # Calls that share an LLM turn label were parallel: compare those groups as multisets, in turn order.
    turns = entry["ground_truth_llm_turns"]
    start = 0
    while start < len(turns):
        end = start
        while end < len(turns) and turns[end] == turns[start]:
            end += 1
        assert Counter(actual[start:end]) == Counter(expected[start:end]), (turns[start], actual, expected)
        start = end


def test_the_replay_covered_every_fixture_and_its_logs(replayed):
    mode, collector = replayed
    all_spans = sum(len({s.key for s in fx.spans(_encoding(mode))}) for fx in FIXTURES)
    assert _select(collector, "SELECT count(*) FROM spans")[0][0] == all_spans
    with_logs = [fx for fx in FIXTURES if fx.logs_body("protobuf")]
    assert with_logs
    assert _select(collector, "SELECT count(*) FROM logs")[0][0] == sum(len(fx.logs()) for fx in with_logs)


@pytest.mark.parametrize("replayed", list(REOPEN_ROWS), indirect=True)
def test_the_replay_reopened_the_database_midway(replayed):
    """What the other tests of the "grpc" mode check held across several reopens (``REOPEN_ROWS``)."""
    mode, collector = replayed
    stored = (
        _select(collector, "SELECT count(*) FROM spans")[0][0]
        + _select(collector, "SELECT count(*) FROM logs")[0][0]
    )
    # about one reopen every REOPEN_ROWS records; fewer if reads held some off (then put off by 5 s)
    # on a loaded machine
    assert stored // REOPEN_ROWS[mode] >= 5 and collector.writer.stats.reopens >= 2
    assert (
        collector.writer.stats.reopen_failures == 0
        and collector.database.reopens == collector.writer.stats.reopens
    )
    metrics = collector.metrics_text()
    assert metric_samples(metrics)["agentotel_database_reopens_total"] == collector.writer.stats.reopens
    assert metric_samples(metrics)["agentotel_database_reopen_failures_total"] == 0


def test_the_real_sdk_exporters_over_grpc_and_http(tmp_path):
    """Spans and log records from the OpenTelemetry SDK, through its OTLP exporters, into rows."""
    from opentelemetry._logs import LogRecord
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import SpanKind, Status, StatusCode

    with running_collector(tmp_path / "sdk.duckdb") as collector:
        exporters = {
            "grpc": (
                GrpcSpanExporter(endpoint=collector.grpc_endpoint, insecure=True),
                GrpcLogExporter(endpoint=collector.grpc_endpoint, insecure=True),
            ),
            "http": (
                HttpSpanExporter(endpoint=f"{collector.http_endpoint}/v1/traces"),
                HttpLogExporter(endpoint=f"{collector.http_endpoint}/v1/logs"),
            ),
        }
        for transport, (span_exporter, log_exporter) in exporters.items():
            resource = Resource.create({"service.name": f"planner-{transport}"})
            tracer_provider = TracerProvider(resource=resource)
            tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
            logger_provider = LoggerProvider(resource=resource)
            logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
            tracer = tracer_provider.get_tracer("agent")
            logger = logger_provider.get_logger("agent")
            with tracer.start_as_current_span(
                "invoke_agent planner",
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "planner",
                    "agentotel.eval.expected_tools": ["search", "book"],
                },
            ) as root:
                with tracer.start_as_current_span(
                    "chat gpt-4o",
                    kind=SpanKind.CLIENT,
                    attributes={"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 12},
                ):
                    logger.emit(
                        LogRecord(
                            event_name="gen_ai.choice",
                            body={"index": 0, "finish_reason": "stop"},
                            attributes={"gen_ai.system": "openai"},
                        )
                    )
                with tracer.start_as_current_span(
                    "execute_tool search",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "search",
                        "gen_ai.tool.call.id": "call_1",
                        "gen_ai.tool.call.arguments": '{"q": "rome"}',
                    },
                ):
                    pass
                with tracer.start_as_current_span(
                    "execute_tool book",
                    attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book"},
                ) as failing:
                    failing.record_exception(TimeoutError("no rooms"))
                    failing.set_status(Status(StatusCode.ERROR, "no rooms"))
            assert tracer_provider.force_flush(10_000) and logger_provider.force_flush(10_000)
            trace_id = f"{root.get_span_context().trace_id:032x}"

            def run_row(trace_id: str = trace_id):
                return collector.query(
                    "SELECT agent_name, service_name, tools_called, expected_tools, status FROM agent_runs "
                    f"WHERE trace_id = '{trace_id}'"
                )["rows"]

            assert wait_until(run_row, what=f"the {transport} run") == [
                ["planner", f"planner-{transport}", ["search", "book"], ["search", "book"], "ok"]
            ]
            spans = collector.query(
                "SELECT name, kind, status_code, attributes, events FROM spans "
                f"WHERE trace_id = '{trace_id}' ORDER BY start_time"
            )["rows"]
            assert [s[0] for s in spans] == [
                "invoke_agent planner",
                "chat gpt-4o",
                "execute_tool search",
                "execute_tool book",
            ]
            assert spans[1][1] == "CLIENT" and spans[1][3]["gen_ai.usage.input_tokens"] == 12
            assert spans[0][3]["agentotel.eval.expected_tools"] == ["search", "book"]
            assert spans[3][2] == "ERROR" and spans[3][4][0]["name"] == "exception"
            assert spans[3][4][0]["attributes"]["exception.type"] == "TimeoutError"
            calls = collector.query(
                f"SELECT seq, tool_name, status FROM tool_calls WHERE trace_id = '{trace_id}' ORDER BY seq"
            )["rows"]
            assert calls == [[0, "search", "ok"], [1, "book", "error"]]
            logs = collector.query(
                f"SELECT event_name, body, span_id, service_name FROM logs WHERE trace_id = '{trace_id}'"
            )["rows"]
            chat_span_id = collector.query(
                f"SELECT span_id FROM spans WHERE trace_id = '{trace_id}' AND name = 'chat gpt-4o'"
            )["rows"][0][0]
            assert logs == [
                ["gen_ai.choice", {"index": 0, "finish_reason": "stop"}, chat_span_id, f"planner-{transport}"]
            ]
            tracer_provider.shutdown()
            logger_provider.shutdown()
