"""The examples in examples/ run as scripts against a real collector, which rebuilds and scores what they did.

Each example is a subprocess exporting with the standard OpenTelemetry SDK, configured only through
OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_PROTOCOL. What the tools really ran follows from the
scripted models, so the collector's tool calls are checked against it exactly. examples/agentotel.toml is
loaded with the collector's own loader, then run with its database, ports, judge and forward target
redirected to test servers; its judge table, commented out, is run as a user who uncomments it would.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentotel_eval.collector.config import CollectorConfig, load_config
from agentotel_eval.collector.config_scoring import parse_expectations
from tests.support.collector_harness import running_collector, wait_until
from tests.support.llm_stub import LLMStub, Reply
from tests.support.otlp_sink import OtlpSink

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PYDANTIC_AI = EXAMPLES / "pydantic_ai_agent.py"
OPENAI_LOOP = EXAMPLES / "openai_tool_loop.py"
TRACED = EXAMPLES / "traced_agent.py"
CONFIG = EXAMPLES / "agentotel.toml"

REFUND_QUESTION = "Order A-1042 arrived broken, can I get my money back?"
REFUND_TOOLS = ["lookup_order", "check_refund_policy", "issue_refund"]
TRIP_QUESTION = "Plan a trip from Berlin to Rome on 2025-07-01 for 3 nights"
TRIP_TOOLS = ["search_flights", "get_weather", "book_hotel"]
TRAVEL_QUESTION = "What's the weather in Paris, and how far is it from Lyon?"
TRAVEL_TOOLS = ["get_weather", "get_coordinates", "get_coordinates", "distance_km"]
CLEAN_VERDICT = {
    "detected": False,
    "confidence": 0.1,
    "reason": "the agent followed the refund policy",
    "error_types": [],
    "errors": [],
    "error_severity": "none",
}


# --- helpers ----------------------------------------------------------------------------------------------


def example_env(endpoint: str, protocol: str = "grpc", **extra: str) -> dict[str, str]:
    """This environment without its OTEL_* / OPENAI_* settings, exporting to ``endpoint`` and nothing else."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    return env | {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol} | extra


def endpoint_of(collector: Any, protocol: str) -> str:
    return f"http://{collector.grpc_endpoint}" if protocol == "grpc" else collector.http_endpoint


@contextmanager
def examples_running(*runs: tuple[Path, list[str], dict[str, str]]) -> Iterator[list[str]]:
    """Run examples (script, arguments, environment) concurrently; yields their stdout once all succeeded."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), *args],
            env=env,
            cwd=REPO,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for script, args, env in runs
    ]
    outputs = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=60)
            assert proc.returncode == 0, stderr
            assert "Failed to export" not in stderr, stderr  # every span reached the collector
            outputs.append(stdout.strip())
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    yield outputs


def rows(collector: Any, sql: str, *params: Any) -> list[list[Any]]:
    return collector.query(sql, params=params)["rows"]


def runs_of(collector: Any, agent: str, count: int) -> list[dict[str, Any]]:
    """The agent's runs once there are ``count`` of them (and no more), oldest first."""
    columns = [
        "trace_id",
        "span_id",
        "agent_name",
        "service_name",
        "input",
        "output",
        "tools_called",
        "expected_tools",
        "status",
        "convention",
    ]
    sql = f"SELECT {', '.join(columns)} FROM agent_runs WHERE agent_name = ? ORDER BY start_time"
    found = wait_until(
        lambda: len(r := rows(collector, sql, agent)) >= count and r,
        timeout=15,
        what=f"{count} run(s) of {agent}",
    )
    assert len(found) == count, found
    return [dict(zip(columns, row, strict=True)) for row in found]


def calls_of(collector: Any, run: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(tool_name, arguments, status, call_id) of the run's tool calls, in execution order."""
    sql = (
        "SELECT tool_name, arguments, status, call_id FROM tool_calls "
        "WHERE trace_id = ? AND run_span_id = ? ORDER BY seq"
    )
    return [tuple(row) for row in rows(collector, sql, run["trace_id"], run["span_id"])]


def evaluations_of(collector: Any, run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """metric -> the run's evaluation row, once it is scored and any judge row has its answer."""
    columns = ["metric", "score", "success", "status", "reason", "details", "cost_usd"]
    sql = f"SELECT {', '.join(columns)} FROM evaluations WHERE trace_id = ? AND run_span_id = ?"

    def settled() -> dict[str, dict[str, Any]] | None:
        found = {
            r[0]: dict(zip(columns, r, strict=True))
            for r in rows(collector, sql, run["trace_id"], run["span_id"])
        }
        if "tool_errors_detectors" not in found or found.get("tool_errors", {}).get("status") == "pending":
            return None
        return found

    return wait_until(settled, timeout=30, what=f"the evaluations of {run['agent_name']}")


def uncommented(text: str, table: str = "[judge]") -> str:
    """The example config as a user turns a table on: the commented-out ``table`` uncommented."""
    lines = text.splitlines()
    start = end = lines.index(f"# {table}")
    while end < len(lines) and lines[end].startswith("# "):
        end += 1
    return "\n".join([*lines[:start], *(line[2:] for line in lines[start:end]), *lines[end:]]) + "\n"


def uncommented_judge(text: str) -> str:
    return uncommented(text, "[judge]")


def load_with_judge(tmp_path: Path) -> CollectorConfig:
    """The example config with its judge and its forwarding turned on, as their comments say."""
    path = tmp_path / "agentotel-with-judge.toml"
    path.write_text(uncommented(uncommented_judge(CONFIG.read_text()), "[forward]"))
    return load_config(path)


def load_fake_server() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fake_openai_server", EXAMPLES / "fake_openai_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- examples/pydantic_ai_agent.py ------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_pydantic_ai_agent_is_rebuilt_and_scored(tmp_path, protocol):
    rule = parse_expectations([{"name": "refunds", "agent": "support-agent", "expected_tools": REFUND_TOOLS}])
    with running_collector(tmp_path / "pai.duckdb", expectations=rule) as collector:
        env = example_env(endpoint_of(collector, protocol), protocol)
        with examples_running((PYDANTIC_AI, [REFUND_QUESTION], env)) as (output,):
            assert output == "Done: refund RF-A-1042 of $249.00 for your espresso machine."

        (run,) = runs_of(collector, "support-agent", 1)
        assert run["service_name"] == "pydantic-ai-support-example"
        assert run["tools_called"] == REFUND_TOOLS
        assert (run["input"], run["output"]) == (REFUND_QUESTION, output)
        assert (run["status"], run["convention"]) == ("ok", "gen_ai")  # pydantic-ai's own GenAI spans
        assert calls_of(collector, run) == [
            ("lookup_order", {"order_id": "A-1042"}, "ok", "call_lookup_order"),
            (
                "check_refund_policy",
                {"order_id": "A-1042", "reason": "damaged"},
                "ok",
                "call_check_refund_policy",
            ),
            ("issue_refund", {"order_id": "A-1042", "amount": 249.0}, "ok", "call_issue_refund"),
        ]
        ((result,),) = rows(
            collector,
            "SELECT result FROM tool_calls WHERE trace_id = ? AND tool_name = ?",
            run["trace_id"],
            "issue_refund",
        )
        assert json.loads(result)["refund_id"] == "RF-A-1042"

        stored = rows(collector, "SELECT name FROM spans WHERE trace_id = ?", run["trace_id"])
        names = sorted(name for (name,) in stored)
        assert names == sorted(
            [
                "invoke_agent support-agent",
                *["chat scripted-support-model"] * 4,
                *[f"execute_tool {tool}" for tool in REFUND_TOOLS],
            ]
        )

        evals = evaluations_of(collector, run)
        for metric in ("tool_correctness", "tool_correctness_exact", "tool_correctness_ordering"):
            details = evals[metric]["details"]
            assert (evals[metric]["score"], evals[metric]["success"]) == (1.0, True), evals[metric]
            assert (details["expectation"], details["expected"], details["called"]) == (
                "rule:refunds",
                REFUND_TOOLS,
                REFUND_TOOLS,
            )
        assert evals["tool_errors_detectors"]["success"] is True
        assert "tool_errors" not in evals  # no [judge] configured

        # the spans came over the transport the environment named, and only over it
        received = dict(
            re.findall(r'agentotel_spans_received_total\{transport="(\w+)"\} (\d+)', collector.metrics_text())
        )
        used, unused = ("grpc", "http") if protocol == "grpc" else ("http", "grpc")
        assert int(received[used]) == len(names) and int(received.get(unused, 0)) == 0


# --- examples/openai_tool_loop.py -------------------------------------------------------------------------


def test_openai_tool_loops_are_rebuilt_one_run_each(tmp_path):
    """Two loops at once on one fake server: each conversation gets its own replies, a tool that raises is an
    error call, and each loop is one OpenInference AGENT run whose TOOL spans are its calls."""
    fake = load_fake_server()
    questions = {
        "rome": TRIP_QUESTION,
        "bergen": "Plan a trip from Oslo to Bergen on 2025-09-01 for 0 nights",  # book_hotel raises
    }
    rule = parse_expectations([{"name": "trips", "agent": "trip-planner", "expected_tools": TRIP_TOOLS}])
    with (
        fake.FakeOpenAIServer() as server,
        running_collector(tmp_path / "oai.duckdb", expectations=rule) as collector,
    ):
        env = example_env(
            endpoint_of(collector, "grpc"), OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test"
        )
        with examples_running(*[(OPENAI_LOOP, [q], env) for q in questions.values()]) as outputs:
            answers = dict(zip(questions, outputs, strict=True))
        assert answers["rome"] == (
            "You fly LH207 on 2025-07-01 (129 EUR). Rome will be sunny at 27C. "
            "Hotel booked: Hotel Centrale Rome for 3 nights, confirmation HX-ROM-3."
        )
        assert answers["bergen"] == "I could not complete the booking: Error: nights must be at least 1"

        runs = {run["input"]: run for run in runs_of(collector, "trip-planner", 2)}
        assert set(runs) == set(questions.values())
        assert len({run["trace_id"] for run in runs.values()}) == 2  # the agent span: one trace per loop
        arguments = {
            "rome": ({"origin": "Berlin", "destination": "Rome", "date": "2025-07-01"}, "Rome", 3),
            "bergen": ({"origin": "Oslo", "destination": "Bergen", "date": "2025-09-01"}, "Bergen", 0),
        }
        for key, question in questions.items():
            run = runs[question]
            assert run["service_name"] == "openai-loop-example"
            assert (run["convention"], run["status"]) == ("openinference", "ok")  # the loop handled the error
            assert run["tools_called"] == TRIP_TOOLS
            assert run["output"] == answers[key]
            flight, city, nights = arguments[key]
            assert calls_of(collector, run) == [
                ("search_flights", flight, "ok", "call_search_flights"),
                ("get_weather", {"city": city}, "ok", "call_get_weather"),
                (
                    "book_hotel",
                    {"city": city, "nights": nights},
                    "error" if key == "bergen" else "ok",
                    "call_book_hotel",
                ),
            ]
            evals = evaluations_of(collector, run)
            assert (evals["tool_correctness"]["score"], evals["tool_correctness"]["success"]) == (1.0, True)
            assert evals["tool_correctness"]["details"]["expected"] == TRIP_TOOLS
            assert evals["tool_correctness_ordering"]["score"] == 1.0

        ((error, result),) = rows(
            collector,
            "SELECT error, result FROM tool_calls WHERE trace_id = ? AND status = 'error'",
            runs[questions["bergen"]]["trace_id"],
        )
        assert "nights must be at least 1" in error and result == "Error: nights must be at least 1"
        kinds = rows(
            collector,
            "SELECT attributes->>'openinference.span.kind' AS kind, count(*) FROM spans "
            "WHERE service_name = 'openai-loop-example' GROUP BY ALL ORDER BY kind",
        )
        assert kinds == [["AGENT", 2], ["LLM", 8], ["TOOL", 6]]


# --- examples/agentotel.toml ------------------------------------------------------------------------------


def test_example_config_loads_with_every_section(tmp_path):
    config = load_config(CONFIG)
    assert [(r.name, r.agent, r.service, r.expected_tools) for r in config.expectations] == [
        ("support-refunds", "support-agent", None, tuple(REFUND_TOOLS)),
        ("trip-planning", "trip-*", "openai-loop-*", tuple(TRIP_TOOLS)),
        ("travel-assistant", "travel-assistant", None, tuple(TRAVEL_TOOLS)),
    ]
    refunds, trips, _travel = config.expectations
    assert refunds.input_regex is not None and refunds.input_regex.search(REFUND_QUESTION)
    assert trips.input_regex is not None and trips.input_regex.search(TRIP_QUESTION)
    assert (refunds.modes, trips.modes) == (None, ("exact", "ordering"))

    # a relative dataset path is read from where the collector starts, the repository root
    assert (REPO / config.dataset).resolve() == (EXAMPLES / "expected.jsonl").resolve()
    lines = (EXAMPLES / "expected.jsonl").read_text().splitlines()
    assert lines and all(json.loads(line)["expected_tools"] for line in lines)

    assert (config.scoring.modes, config.scoring.threshold) == (("default", "exact", "ordering"), 0.5)
    assert config.forward is None and not config.sinks  # nothing listens on 6006 out of the box
    for table in ("[forward]", "[[sinks]]"):
        assert f"# {table}" in CONFIG.read_text()
    forwarding = load_with_judge(tmp_path).forward
    assert forwarding is not None and forwarding.url == "http://127.0.0.1:6006"
    assert forwarding.resolved_protocol() == "http/protobuf"
    (tmp_path / "sinks.toml").write_text(uncommented(CONFIG.read_text(), "[[sinks]]"))
    sink = load_config(tmp_path / "sinks.toml").sinks[0]
    assert (sink.kind, sink.url, sink.api_key_env) == ("phoenix", "http://127.0.0.1:6006", "PHOENIX_API_KEY")
    assert (config.grpc, config.http) == ("127.0.0.1:4317", "127.0.0.1:4318")
    assert config.retention_seconds == 30 * 86400


def test_example_config_leaves_the_judge_off_and_documents_how_to_turn_it_on(tmp_path):
    """Off: no model runs with the offline examples (the fake server only plans trips, and a judge pointed at
    it got no verdict). Uncommented, the table is a working judge of OpenAI's gpt-4o-mini."""
    assert load_config(CONFIG).judge is None
    judge = load_with_judge(tmp_path).judge
    assert judge is not None
    assert judge.model == "openai/gpt-4o-mini"
    assert judge.llm_kwargs == {}  # litellm's defaults: OpenAI's API, OPENAI_API_KEY
    assert (judge.sample_rate, judge.max_cost_usd_per_day, judge.threshold) == (0.25, 2.0, 0.7)
    assert judge.only_when == ("deterministic_failed", "tool_error")
    # the price the comment shows for a local model is a valid [judge] key, passed on to litellm
    (extra,) = [
        line.removeprefix("#").strip()
        for line in CONFIG.read_text().splitlines()
        if line.startswith("#") and line.removeprefix("#").strip().startswith("extra = {")
    ]
    text = f"[judge]\nmodel = 'openai/m'\napi_base = 'http://127.0.0.1:8080/v1'\n{extra}\n"
    (tmp_path / "priced.toml").write_text(text)
    priced = load_config(tmp_path / "priced.toml").judge
    price = tomllib.loads(text)["judge"]["extra"]
    assert set(price) == {"input_cost_per_token", "output_cost_per_token"}
    assert priced is not None and priced.llm_kwargs == {"api_base": "http://127.0.0.1:8080/v1", **price}


def test_example_config_validates_from_the_repository_root(monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    scoring = load_config(CONFIG).validate().scoring_config()
    assert scoring.dataset is not None
    entry = scoring.dataset.lookup("Where is my order   A-1042?")
    assert entry is not None
    assert (entry.expected_tools, entry.modes, entry.trajectory, entry.line) == (
        ("lookup_order",),
        None,
        None,
        1,
    )
    monkeypatch.chdir(tmp_path)  # elsewhere the relative dataset path names nothing, and validation says so
    with pytest.raises(ValueError, match=r"expected\.jsonl"):
        load_config(CONFIG).validate()


def _as_tested(config: CollectorConfig, stub: LLMStub, sink: OtlpSink) -> dict[str, Any]:
    """The example config's scoring sections, pointed at the test's judge stub and OTLP sink."""
    assert config.judge is not None and config.forward is not None
    return {
        "expectations": config.expectations,
        "scoring": config.scoring,
        "dataset": str(REPO / config.dataset),
        # sampling hashes each run's ids, so at 0.25 which runs are judged would vary from run to run; every
        # other judge setting (only_when, the budget, the model) is the file's. On the stub's 127.0.0.1 a
        # model costs nothing unless priced, as a local server's would: gpt-4o-mini's list price,
        # so the budget counts
        "judge": dataclasses.replace(
            config.judge,
            sample_rate=1.0,
            max_retries=0,
            api_base=stub.base_url,
            api_key="sk-test",
            extra={"input_cost_per_token": 0.15e-6, "output_cost_per_token": 0.60e-6},
        ),
        "forward": dataclasses.replace(config.forward, url=sink.http_endpoint),
    }


def test_example_config_scores_the_examples_and_forwards_them(tmp_path):
    config = load_with_judge(tmp_path)
    status_question = "Where is my order A-1042?"  # line 1 of the dataset
    late_refund = "Order B-2077: I changed my mind, I want a refund"  # the refund rule; outside the window
    with (
        OtlpSink() as sink,
        LLMStub(default=Reply.json(CLEAN_VERDICT)) as stub,
        running_collector(tmp_path / "cfg.duckdb", **_as_tested(config, stub, sink)) as collector,
    ):
        env = example_env(endpoint_of(collector, "grpc"))
        with examples_running(
            (PYDANTIC_AI, [REFUND_QUESTION, status_question, late_refund], env),
            (OPENAI_LOOP, [TRIP_QUESTION], env),  # no OPENAI_BASE_URL: the example starts its own fake server
            (TRACED, [TRAVEL_QUESTION], env),
        ) as (support_answers, trip_answer, _travel_answer):
            assert support_answers.splitlines()[2] == "Sorry, order B-2077 is outside the refund window."
            assert trip_answer.startswith("You fly LH")

        support = {run["input"]: run for run in runs_of(collector, "support-agent", 3)}
        runs = {
            "refund": support[REFUND_QUESTION],
            "status": support[status_question],
            "late": support[late_refund],
            "trip": runs_of(collector, "trip-planner", 1)[0],
            "travel": runs_of(collector, "travel-assistant", 1)[0],
        }
        assert {key: run["tools_called"] for key, run in runs.items()} == {
            "refund": REFUND_TOOLS,
            "status": ["lookup_order"],
            "late": ["lookup_order", "check_refund_policy"],
            "trip": TRIP_TOOLS,
            "travel": ["get_weather", "get_coordinates", "get_coordinates", "distance_km"],
        }
        evals = {key: evaluations_of(collector, run) for key, run in runs.items()}

        def expectation(key: str, metric: str = "tool_correctness") -> tuple[str, list[str]]:
            details = evals[key][metric]["details"]
            return details["expectation"], details["expected"]

        assert expectation("refund") == expectation("late") == ("rule:support-refunds", REFUND_TOOLS)
        # the rule's trajectory: the refund followed the policy's amount for the looked-up order; the late one
        # stopped at the policy (no refund): two of three steps
        refund, late = evals["refund"]["trajectory"], evals["late"]["trajectory"]
        assert (refund["score"], refund["success"]) == (1.0, True), refund["reason"]
        assert late["success"] is False and late["score"] == pytest.approx(
            0.8
        )  # F1 of recall 2/3, precision 1
        assert {s["path"]: s["status"] for s in late["details"]["steps"]}["steps[2]"] == "missing"
        assert "trajectory" not in evals["status"] and "trajectory" not in evals["trip"]
        assert expectation("status") == ("dataset:expected.jsonl:1", ["lookup_order"])
        assert expectation("trip", "tool_correctness_exact") == ("rule:trip-planning", TRIP_TOOLS)
        assert {m for m in evals["trip"] if m.startswith("tool_correctness")} == {
            "tool_correctness_exact",
            "tool_correctness_ordering",
        }  # the rule's modes, not [scoring]'s
        # @traced(expected_tools=...) on the run span wins over the travel-assistant rule
        assert expectation("travel") == ("span_attribute", TRAVEL_TOOLS)
        assert runs["travel"]["expected_tools"] == TRAVEL_TOOLS

        # only_when: the runs failing a deterministic check are judged (by the stub), the others not at all
        failed = {
            key
            for key, metrics in evals.items()
            if any(
                row["success"] is False
                for name, row in metrics.items()
                if name.startswith("tool_correctness")
            )
        }
        assert failed == {"late"}  # no issue_refund; the travel run calls what it expects
        for key in failed:
            judge = evals[key]["tool_errors"]
            assert (judge["status"], judge["success"]) == ("ok", True), judge
            assert judge["cost_usd"] > 0  # priced, so max_cost_usd_per_day has something to count
        assert all("tool_errors" not in evals[key] for key in runs.keys() - failed)
        (late_prompt,) = [r.prompt_text() for r in stub.requests if late_refund in r.prompt_text()]
        assert "check_refund_policy" in late_prompt and len(stub.requests) == len(failed)

        # every stored span went downstream, the run spans with their scores, then the judge's verdicts
        stored = {r[0] for r in rows(collector, "SELECT span_id FROM spans")}
        sink.wait_for(lambda s: stored <= {span.span_id for span in s.spans}, timeout=15)
        sink.wait_for(
            lambda s: len(s.spans_named("gen_ai.evaluation tool_errors")) == len(failed), timeout=15
        )
        forwarded = {span.span_id: span for span in sink.spans}
        for key, run in runs.items():
            metric = "tool_correctness_exact"
            assert (
                forwarded[run["span_id"]].attributes[f"agentotel.eval.{metric}.score"]
                == (evals[key][metric]["score"])
            ), key
        assert {s.parent_span_id for s in sink.spans_named("gen_ai.evaluation tool_errors")} == {
            runs[key]["span_id"] for key in failed
        }
