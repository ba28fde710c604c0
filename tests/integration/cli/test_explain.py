"""``agentotel-eval explain``: offline on OTLP files, and on what a running (then stopped) collector stored;
the ``agent_runs.diagnostics`` rows it prints from; and ``[[conventions]]`` read by a real
collector over OTLP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

from agentotel_eval.cli import main
from agentotel_eval.collector.config import ConfigError, load_config
from agentotel_eval.reconstruct import reconstruct
from tests.support.collector_harness import post_otlp, running_collector, wait_until
from tests.support.fixture_traces import TRACES_DIR, fixtures

ROOT = Path(__file__).resolve().parents[3]
BY_NAME = {f.name: f for f in fixtures()}
# one fixture per trap the report has to show: plumbing, a discarded schema, redacted values, a folded second
# record of a failure, a convention with a vocabulary of its own, log records moved to their LLM call
EXPLAINED = (
    "smolagents__oi-genai__single",
    "llama-index__oi-hidden__single",
    "crewai__builtin__error",
    "vercel-ai-sdk__default__error",
    "anthropic-loop__openllmetry-events__single",
)


def explain(*args: str, capsys) -> tuple[int, str, str]:
    code = main(["explain", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("encoding", ["pb", "json"])
def test_explain_a_file_offline(encoding, capsys):
    fx = BY_NAME["smolagents__oi-genai__single"]
    code, out, _ = explain("--file", str(TRACES_DIR / f"{fx.name}.{encoding}"), capsys=capsys)
    assert code == 0
    assert "run " in out and "travel_agent" in out and "calls (1):" in out
    assert '1. get_weather({"city": "Paris"}) -> ok' in out
    assert "discarded arguments from gen_ai: schema" in out
    assert "'FinalAnswerTool': plumbing: the framework's answer tool" in out
    assert "spans no run read (2)" in out and "'Step 1'" in out
    assert "tool errors found by the detectors: none" in out


def test_explain_names_redactions_duplicates_conventions_and_moved_logs(capsys):
    outs = {}
    for name in EXPLAINED:
        fx = BY_NAME[name]
        logs = ["--logs", str(TRACES_DIR / f"{name}.logs.pb")] if fx.logs_path("protobuf") else []
        code, outs[name], _ = explain("--file", str(fx.pb_path), *logs, capsys=capsys)
        assert code == 0
    assert "discarded arguments from openinference: redacted" in outs["llama-index__oi-hidden__single"]
    assert "get_weather(-) -> ok" in outs["llama-index__oi-hidden__single"]  # not captured, never the marker
    crew = outs["crewai__builtin__error"]
    assert "'tool failure': duplicate: a second record of the call before it" in crew
    assert crew.count("get_weather(") == 2 and "-> error (Unknown city: Atlantis)" in crew
    vercel = outs["vercel-ai-sdk__default__error"]
    assert "convention vercel-ai" in vercel and "from name: vercel-ai, arguments: vercel-ai" in vercel
    assert "llm:gen_ai" in outs["anthropic-loop__openllmetry-events__single"]


def test_explain_refuses_bad_input_clearly(tmp_path, capsys):
    assert explain(capsys=capsys)[0] == 2
    code, _, err = explain("not-a-trace", capsys=capsys)
    assert code == 2 and "not a trace id" in err
    junk = tmp_path / "junk.pb"
    junk.write_bytes(b"\x00\xffnot protobuf")
    code, _, err = explain("--file", str(junk), capsys=capsys)
    assert code == 2 and "ExportTraceServiceRequest" in err
    code, _, err = explain("--file", str(tmp_path / "missing.pb"), capsys=capsys)
    assert code == 2 and "no such file" in err


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", "explain", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )


def test_explain_a_stored_trace_through_the_collector_then_from_the_file(tmp_path):
    db = tmp_path / "explain.duckdb"
    sent = [BY_NAME[n] for n in ("crewai__builtin__error", "smolagents__oi-genai__delegate")]
    with running_collector(db) as collector:
        for fx in sent:
            assert post_otlp(collector.http_endpoint, "traces", fx.body("protobuf")).status == 200
        wait_until(
            lambda: collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0] == 3,
            timeout=30,
            what="the runs",
        )
        rows = collector.query("SELECT span_id, diagnostics FROM agent_runs ORDER BY span_id")["rows"]
        trace_id = sent[1].spans()[0].trace_id
        live = _cli(trace_id, "--db", str(db))
    expected = {r.span_id: r.diagnostics for fx in sent for r in reconstruct(fx.spans())}
    assert {span_id: _value(d) for span_id, d in rows} == json.loads(json.dumps(expected))
    assert live.returncode == 0, live.stderr
    assert "2 run(s)" in live.stdout and "inside run" in live.stdout
    assert "requested in LLM span" in live.stdout and "'FinalAnswerTool': plumbing" in live.stdout
    stopped = _cli(trace_id, "--db", str(db))
    assert stopped.returncode == 0 and stopped.stdout == live.stdout
    missing = _cli("f" * 32, "--db", str(db))
    assert missing.returncode == 1 and "is not in" in missing.stderr


def test_a_trace_id_prefix_names_the_trace_or_lists_the_ones_it_matches(tmp_path):
    """The pages and pytest's failure messages show 8-digit ids: explain takes them, and says when one is not
    enough."""
    db = tmp_path / "prefix.duckdb"
    ids = ["abcdef01" + "1" * 24, "abcdef01" + "2" * 24, "abcdef02" + "3" * 24]
    now = time.time_ns()
    spans = [
        {
            "traceId": t,
            "spanId": f"{i + 1:016x}",
            "name": "invoke_agent a",
            "kind": 1,
            "startTimeUnixNano": str(now),
            "endTimeUnixNano": str(now + 1000),
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}],
        }
        for i, t in enumerate(ids)
    ]
    body = json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}).encode()
    with running_collector(db) as collector:
        assert post_otlp(collector.http_endpoint, "traces", body, "json").status == 200
        wait_until(
            lambda: collector.query("SELECT count(*) FROM spans")["rows"][0][0] == 3,
            timeout=30,
            what="the spans",
        )
        unique, several = _cli("ABCDEF02", "--db", str(db)), _cli("abcdef01", "--db", str(db))
        none, short = _cli("abcdef09", "--db", str(db)), _cli("abcdef0", "--db", str(db))
    assert unique.returncode == 0 and unique.stdout.startswith(f"trace {ids[2]}:"), unique.stderr
    assert several.returncode == 1 and f"{ids[0]}, {ids[1]}; give more digits" in several.stderr
    assert none.returncode == 1 and "no trace" in none.stderr and "starts with abcdef09" in none.stderr
    assert short.returncode == 2 and "a unique prefix of at least 8" in short.stderr
    # the same from a file, offline
    export = tmp_path / "trace.json"
    export.write_bytes(body)
    assert _cli("--file", str(export), "abcdef02").stdout.startswith(f"trace {ids[2]}:")
    assert "give more digits" in _cli("--file", str(export), "abcdef01").stderr


# -- [[conventions]] in the collector's config, over OTLP ----------------------------------------------------

CONVENTIONS_TOML = textwrap.dedent("""
    [[conventions]]
    name = "acme"                                     # shown in diagnostics
    # "tool": a span is one executed call; "run": a span is an agent run
    role = "tool"
    when = { attribute = "acme.kind", equals = "tool" } # or when = { span_name = "acme.tool.*" } (a glob)
    tool_name = "acme.tool.name"                       # attribute keys; a key a span lacks is simply not used
    arguments = "acme.tool.args"                       # a JSON string or a map
    result = "acme.tool.result"
    call_id = "acme.tool.call_id"
    error = "acme.tool.failed"                         # a bool attribute; ERROR span status counts anyway

    [[conventions]]
    name = "acme-agent"
    role = "run"
    when = { attribute = "acme.kind", equals = "agent" }
    agent_name = "acme.agent.name"
    input = "acme.agent.input"
    output = "acme.agent.output"
""")


def _in_house_agent(endpoint: str) -> str:
    """A hand-made in-house instrumentation: the real OpenTelemetry SDK, our own
    attribute names, OTLP/HTTP."""
    provider = TracerProvider(resource=Resource.create({"service.name": "acme-planner"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    tracer = provider.get_tracer("acme.agents")
    with tracer.start_as_current_span(
        "acme.run",
        attributes={
            "acme.kind": "agent",
            "acme.agent.name": "planner",
            "acme.agent.input": "Plan two days in Rome",
            "acme.agent.output": "Booked.",
        },
    ) as root:
        with tracer.start_as_current_span(
            "acme.tool.search",
            attributes={
                "acme.kind": "tool",
                "acme.tool.name": "search_hotels",
                "acme.tool.args": '{"city": "Rome", "n": 2}',
                "acme.tool.result": "2 hotels",
                "acme.tool.call_id": "k-1",
            },
        ):
            time.sleep(0.001)  # spans of distinct start times: the order under test
        with tracer.start_as_current_span(
            "acme.tool.book",
            attributes={
                "acme.kind": "tool",
                "acme.tool.name": "book_hotel",
                "acme.tool.args": '{"hotel": "H1"}',
                "acme.tool.failed": True,
            },
        ):
            time.sleep(0.001)  # spans of distinct start times: the order under test
        with tracer.start_as_current_span(
            "acme.tool.book",
            attributes={
                "acme.kind": "tool",
                "acme.tool.name": "book_hotel",
                "acme.tool.args": '{"hotel": "H2"}',
            },
        ) as span:
            span.set_status(Status(StatusCode.ERROR, "card declined"))
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    return trace_id


@pytest.mark.parametrize("process", [True, False], ids=["assembler-process", "assembler-thread"])
def test_declared_conventions_read_an_in_house_trace_sent_over_otlp(tmp_path, process):
    config_file = tmp_path / "agentotel.toml"
    config_file.write_text(CONVENTIONS_TOML + "\n[receiver]\ndecode_workers = 1\n")
    config = load_config(config_file)
    assert [c.name for c in config.conventions] == ["acme", "acme-agent"]
    with running_collector(
        tmp_path / "acme.duckdb",
        conventions=config.conventions,
        receiver={"decode_workers": 1},
        assembler={"process": process},
    ) as collector:
        trace_id = _in_house_agent(collector.http_endpoint)
        wait_until(
            lambda: collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0] == 1,
            timeout=30,
            what="the in-house run",
        )
        (run,) = collector.query(
            "SELECT agent_name, input, output, convention, service_name FROM agent_runs "
            f"WHERE trace_id = '{trace_id}'"
        )["rows"]
        calls = collector.query(
            "SELECT tool_name, arguments, status, call_id, error, sources FROM tool_calls "
            f"WHERE trace_id = '{trace_id}' ORDER BY seq"
        )["rows"]
    assert run == ["planner", "Plan two days in Rome", "Booked.", "acme-agent", "acme-planner"]
    assert [(c[0], _value(c[1]), c[2], c[3]) for c in calls] == [
        ("search_hotels", {"city": "Rome", "n": 2}, "ok", "k-1"),
        ("book_hotel", {"hotel": "H1"}, "error", None),
        ("book_hotel", {"hotel": "H2"}, "error", None),
    ]
    assert _value(calls[1][5])["status"] == "acme" and calls[2][4] == "card declined"
    # explain shows what the detectors found on the stored run, and what they could not check
    explained = _cli(trace_id, "--db", str(tmp_path / "acme.duckdb"))
    assert explained.returncode == 0, explained.stderr
    assert "tool errors found by the detectors (1):" in explained.stdout
    assert (
        "error_handling/false_success [error_handling.false_success]: the final answer states 'Booked'"
        in explained.stdout
    )
    assert (
        "could not run: invalid_function could not run: the tools offered to the model are not recorded"
        in explained.stdout
    )


def _value(json_column):
    return json.loads(json_column) if isinstance(json_column, str) else json_column


def test_a_bad_convention_fails_at_start_naming_it(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(CONVENTIONS_TOML.replace('role = "run"', 'role = "agent"'))
    with pytest.raises(ConfigError) as raised:
        load_config(bad)
    assert "conventions" in str(raised.value) and "'acme-agent'" in str(raised.value)
    assert "'role' must be one of tool, run, llm" in str(raised.value)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    serve = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentotel_eval.cli",
            "serve",
            "--config",
            str(bad),
            "--db",
            str(tmp_path / "never.duckdb"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    assert serve.returncode != 0 and "'acme-agent'" in serve.stderr
    assert not (tmp_path / "never.duckdb").exists()


def test_explain_lines_a_run_up_against_its_trajectory_spec(tmp_path, capsys):
    """The spec travels on the run span: explain scores it from a file, and prints the stored result of a
    trace the collector scored, the same way."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor as Simple
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentotel_eval.tracing import traced

    spec = {
        "steps": [
            {"id": "found", "tool": "search_hotels", "args": {"city": {"$regex": "[A-Z][a-z]+"}}},
            {"tool": "book_hotel", "args": {"hotel": {"$ref": "found.result.0"}}},
        ]
    }
    db = tmp_path / "trajectory.duckdb"
    with running_collector(db) as collector:
        memory = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "hotels"}))
        provider.add_span_processor(Simple(memory))
        provider.add_span_processor(Simple(OTLPSpanExporter(endpoint=f"{collector.http_endpoint}/v1/traces")))

        @traced(kind="tool", tracer_provider=provider)
        def search_hotels(city: str) -> list:
            return ["Casa Roma", "Grand Roma"]

        @traced(kind="tool", tracer_provider=provider)
        def book_hotel(hotel: str) -> str:
            return "BK-1"

        @traced(kind="agent", expected_trajectory=spec, tracer_provider=provider)
        def booker() -> str:
            search_hotels("rome")
            book_hotel("Hotel Invented")
            return "booked"

        booker()
        provider.shutdown()
        trace_id = format(memory.get_finished_spans()[0].context.trace_id, "032x")
        wait_until(
            lambda: (
                collector.query("SELECT count(*) FROM evaluations WHERE metric = 'trajectory'")["rows"][0][0]
                == 1
            ),
            what="the trajectory row",
        )
    path = tmp_path / "trace.pb"
    path.write_bytes(encode_spans(memory.get_finished_spans()).SerializeToString())
    code, from_file, _ = explain("--file", str(path), capsys=capsys)
    assert code == 0
    lines = from_file.splitlines()
    at = next(i for i, line in enumerate(lines) if "trajectory 0.00 (0 of 2 required weight" in line)
    assert lines[at + 1].split()[:3] == ["missing", "steps[0]", "search_hotels"]
    assert "nearest #1 search_hotels: city: FAILED" in lines[at + 1]
    assert "nearest #2 book_hotel: hotel: FAILED" in lines[at + 2]
    stored = _cli(trace_id, "--db", str(db))
    assert stored.returncode == 0, stored.stderr
    assert [line for line in stored.stdout.splitlines() if "trajectory" in line or "nearest" in line] == [
        line for line in lines if "trajectory" in line or "nearest" in line
    ]


def test_observations_are_printed_as_notes_apart_from_the_findings(capsys):
    path = TRACES_DIR / "langchain__openinference__parallel_then_seq.pb"
    code, out, _ = explain("--file", str(path), capsys=capsys)
    assert code == 0
    assert "tool errors found by the detectors: none" in out
    assert "note (low severity, not scored): call #3 book_hotel: no value of its result appears" in out
