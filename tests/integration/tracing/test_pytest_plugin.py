"""The pytest plugin in a temporary pytest project (pytester, in a subprocess: each run starts with no
OpenTelemetry provider of its own): @traced and pydantic-ai agents captured and asserted on, the failure
messages, the results file, and an application's own provider left in place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

AGENTS = """
import json
from agentotel_eval.tracing import traced

@traced(kind="tool")
def search_hotels(city: str) -> list:
    return [{"hotel": f"Casa {city}", "price": 88}, {"hotel": f"Grand {city}", "price": 240}]

@traced(kind="tool")
def book_hotel(hotel: str) -> dict:
    return {"hotel": hotel, "confirmation": "BK-1"}

@traced(kind="tool")
def get_weather(city: str) -> str:
    raise ValueError(f"unknown city: {city}")

PLANS = {
    "good": [("search_hotels", {"city": "Paris"}), ("book_hotel", {"hotel": "Casa Paris"})],
    "backwards": [("book_hotel", {"hotel": "Casa Paris"}), ("search_hotels", {"city": "Paris"})],
    "forgetful": [("search_hotels", {"city": "Paris"})],
    "stubborn": [("get_weather", {"city": "Atlantis"}), ("get_weather", {"city": "Atlantis"})],
}
TOOLS = {"search_hotels": search_hotels, "book_hotel": book_hotel, "get_weather": get_weather}

@traced(kind="agent")
def travel_agent(plan: str) -> str:
    for name, args in PLANS[plan]:
        try:
            TOOLS[name](**args)
        except ValueError:
            pass
    return "done"

@traced(kind="tool")
def delegate(plan: str) -> str:
    return travel_agent(plan)

@traced(kind="agent")
def concierge(plan: str) -> str:
    return delegate(plan)
"""

TESTS = """
import pytest
from agentotel_eval import ToolCall
from agents import travel_agent, concierge

def test_correct_run(agentotel):
    with agentotel.capture() as runs:
        travel_agent("good")
    run = runs.one()
    assert run.tools_called == ["search_hotels", "book_hotel"]
    assert run.tool_calls[0].input_parameters == {"city": "Paris"}
    assert run.to_test_case().tools_called[1].output == {"hotel": "Casa Paris", "confirmation": "BK-1"}
    agentotel.assert_tool_correctness(run, ["search_hotels", "book_hotel"], exact=True, ordering=True)
    agentotel.assert_tool_correctness(
        run, [ToolCall("search_hotels", {"city": "Paris"})], params=["input_parameters"]
    )
    with pytest.raises(AssertionError, match="tool_correctness of travel_agent"):
        agentotel.assert_tool_correctness(run, [ToolCall("search_hotels", {"city": "Rome"})],
                                          params=["input_parameters"])
    agentotel.assert_no_tool_errors(run)

def test_wrong_order(agentotel):
    with agentotel.capture() as runs:
        travel_agent("backwards")
    agentotel.assert_tool_correctness(runs.one(), ["search_hotels", "book_hotel"], ordering=True)

def test_missing_call(agentotel):
    with agentotel.capture() as runs:
        travel_agent("forgetful")
    agentotel.assert_tool_correctness(runs.one(), ["search_hotels", "book_hotel"])

def test_repeated_failure(agentotel):
    with agentotel.capture() as runs:
        travel_agent("stubborn")
    agentotel.assert_no_tool_errors(runs.one())

def test_nothing_traced(agentotel):
    with agentotel.capture() as runs:
        pass
    runs.one()

def test_nested_runs(agentotel):
    with agentotel.capture() as runs:
        concierge("good")
    assert len(runs) == 2
    assert runs.by_agent("travel_agent").one().tools_called == ["search_hotels", "book_hotel"]
    assert runs.top_level().one().agent_name == "concierge"
    runs.one()
"""


@pytest.fixture()
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(agents=AGENTS, test_agents=TESTS)
    return pytester


def test_the_plugin_captures_asserts_and_explains(project: pytest.Pytester, tmp_path: Path) -> None:
    results_path = tmp_path / "out" / "results.jsonl"
    result = project.runpytest_subprocess("-p", "no:cacheprovider", f"--agentotel-results={results_path}")
    result.assert_outcomes(passed=1, failed=5)
    out = result.stdout.str()
    # the wrong order: the calls lined up, the one out of order marked, the metric's reason
    result.stdout.re_match_lines(
        [
            r".*tool_correctness_ordering of travel_agent .*: 0\.50 < 1\.00",
            r".*expected\s+search_hotels\s+book_hotel",
            r".*called\s+book_hotel\s+search_hotels",
            r".*out of order\s+out of order",
        ],
        consecutive=False,
    )
    result.stdout.re_match_lines(
        [
            r".*expected\s+search_hotels\s+book_hotel",
            r".*called\s+search_hotels",
            r"E\s+missing$",
            r".*Missing: book_hotel",
        ],
        consecutive=False,
    )
    assert "repeated_failure" in out or "failed 2 times in a row" in out
    assert "get_weather: ValueError: unknown city: Atlantis" in out
    assert "expected one agent run, captured none (no span at all)" in out
    assert "expected one agent run, captured 2:" in out and "runs.by_agent(name)" in out
    lines = [json.loads(line) for line in results_path.read_text().splitlines()]
    by_test = {}
    for line in lines:
        by_test.setdefault(line["test"].split("::")[-1], []).append((line["metric"], line["success"]))
    assert by_test["test_correct_run"] == [
        ("tool_correctness_exact_ordering", True),
        ("tool_correctness", True),
        ("tool_correctness", False),
        ("tool_errors_detectors", True),
    ]
    assert by_test["test_wrong_order"] == [("tool_correctness_ordering", False)]
    assert by_test["test_repeated_failure"] == [("tool_errors_detectors", False)]
    assert all(line["trace_id"] and line["span_id"] and line["agent"] == "travel_agent" for line in lines)


def test_an_applications_provider_is_used_and_kept(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        agents=AGENTS,
        test_app="""
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from agents import travel_agent

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

def test_capture_beside_the_app(agentotel):
    with agentotel.capture() as runs:
        travel_agent("good")
    assert runs.one().tools_called == ["search_hotels", "book_hotel"]
    assert trace.get_tracer_provider() is provider
    assert len(exporter.get_finished_spans()) == 3  # the application's exporter still got every span
    with agentotel.capture() as again:
        travel_agent("forgetful")
    assert again.one().tools_called == ["search_hotels"]  # a second capture sees only its own spans
    travel_agent("good")
    assert len(exporter.get_finished_spans()) == 8

def test_without_a_provider_one_is_lent_and_taken_back(agentotel):
    pass
""",
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)
    pytester.makepyfile(
        test_lent="""
from opentelemetry import trace
from agents import travel_agent

def test_lent(agentotel):
    before = trace.get_tracer_provider()
    with agentotel.capture() as runs:
        travel_agent("good")
        lent = trace.get_tracer_provider()
    assert runs.one().tools_called == ["search_hotels", "book_hotel"]
    assert lent is not before and trace.get_tracer_provider() is not lent
    # the application may still install its own provider afterwards
    from opentelemetry.sdk.trace import TracerProvider
    mine = TracerProvider()
    trace.set_tracer_provider(mine)
    assert trace.get_tracer_provider() is mine
"""
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_lent.py").assert_outcomes(passed=1)


def test_a_pydantic_ai_agent_on_its_own_instrumentation(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_pydantic="""
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

def script(messages, info):
    returned = [
        p.tool_name for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    ]
    if "get_forecast" not in returned:
        return ModelResponse(parts=[ToolCallPart("get_forecast", {"city": "Lyon"})])
    if "convert_temperature" not in returned:
        return ModelResponse(parts=[ToolCallPart("convert_temperature", {"celsius": 21})])
    return ModelResponse(parts=[TextPart("21 C, 69.8 F")])

agent = Agent(FunctionModel(script), name="weather_bot")

@agent.tool_plain
def get_forecast(city: str) -> dict:
    return {"city": city, "celsius": 21}

@agent.tool_plain
def convert_temperature(celsius: float) -> float:
    return celsius * 9 / 5 + 32

Agent.instrument_all()

def test_weather_bot(agentotel):
    with agentotel.capture() as runs:
        agent.run_sync("Weather in Lyon, in Fahrenheit?")
    run = runs.one()
    assert run.agent_name == "weather_bot"
    assert run.tools_called == ["get_forecast", "convert_temperature"]
    assert run.tool_calls[0].input_parameters == {"city": "Lyon"}
    agentotel.assert_tool_correctness(run, ["get_forecast", "convert_temperature"], exact=True, ordering=True)

def test_weather_bot_wrong_expectation(agentotel):
    with agentotel.capture() as runs:
        agent.run_sync("Weather in Lyon, in Fahrenheit?")
    agentotel.assert_tool_correctness(runs.one(), ["convert_temperature", "get_forecast"], ordering=True)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.re_match_lines([r".*tool_correctness_ordering of weather_bot .*: 0\.50 < 1\.00"])


def test_two_versions_results_files_gate_on_compare(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CI loop: the same tests on two versions of the agent, their results files compared, the regression
    gated on."""
    from tests.support.ui_data import cli

    pytester.makepyfile(
        agents=AGENTS,
        test_versions="""
import os
from agents import travel_agent

def test_books_a_hotel(agentotel):
    with agentotel.capture() as runs:
        travel_agent(os.environ["PLAN"])
    agentotel.assert_tool_correctness(runs.one(), ["search_hotels", "book_hotel"], ordering=True)

def test_searches(agentotel):
    with agentotel.capture() as runs:
        travel_agent("good")
    agentotel.assert_tool_correctness(runs.one(), ["search_hotels"])
""",
    )
    results = {}
    for version, plan in (("main", "good"), ("pr", "backwards")):
        results[version] = tmp_path / f"{version}.jsonl"
        monkeypatch.setenv("PLAN", plan)
        pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--agentotel-results={results[version]}")
    done = cli(
        "compare",
        "--baseline",
        str(results["main"]),
        "--candidate",
        str(results["pr"]),
        "--fail-on-regression",
        "0.05",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "regression: travel_agent tool_correctness_ordering pass rate fell 100.0 percentage points"
        in done.stderr
    )
    assert "passed before, fail now (1):" in done.stdout and "test_books_a_hotel" in done.stdout
    same = cli(
        "compare",
        "--baseline",
        str(results["main"]),
        "--candidate",
        str(results["main"]),
        "--fail-on-regression",
        "0.05",
    )
    assert same.returncode == 0, same.stdout + same.stderr


TRAJECTORY_TESTS = """
import json
import pytest
from agentotel_eval import SpecError, set_expected_trajectory
from agentotel_eval.tracing import traced
from agents import travel_agent, search_hotels, book_hotel

BOOKING = {"steps": [{"id": "found", "tool": "search_hotels", "args": {"city": {"$regex": "[A-Z][a-z]+"}}},
                     {"tool": "book_hotel", "args": {"hotel": {"$ref": "found.result.0.hotel"}}}],
           "extra": "forbid"}

@traced(kind="agent", expected_trajectory=BOOKING)
def declared_agent() -> str:
    book_hotel(search_hotels("Paris")[0]["hotel"])
    set_expected_trajectory([{"tool": "search_hotels"}, {"tool": "book_hotel"}])
    return "done"

def test_data_flow_and_order_hold(agentotel):
    with agentotel.capture() as runs:
        travel_agent("good")
    assert agentotel.assert_trajectory(runs.one(), BOOKING) == 1.0

def test_backwards_is_lined_up(agentotel):
    with agentotel.capture() as runs:
        travel_agent("backwards")
    agentotel.assert_trajectory(runs.one(), BOOKING)

def test_the_spec_travels_on_the_run_span(agentotel):
    with agentotel.capture() as runs:
        declared_agent()
    run = runs.one()
    expected = {"steps": [{"tool": "search_hotels"}, {"tool": "book_hotel"}]}
    assert json.loads(run.expected_trajectory) == expected
    assert agentotel.assert_trajectory(run, run.expected_trajectory) == 1.0

def test_a_bad_spec_is_refused_where_it_is_written():
    with pytest.raises(SpecError, match=r"steps\\[0\\]"):
        traced(kind="agent", expected_trajectory=[{"tol": "x"}])
    with pytest.raises(ValueError, match="kind='agent'"):
        traced(kind="tool", expected_trajectory=[{"tool": "x"}])
"""


def test_assert_trajectory_lines_the_spec_up_against_the_calls(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(agents=AGENTS, test_trajectory=TRAJECTORY_TESTS)
    results_path = tmp_path / "results.jsonl"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--agentotel-results={results_path}")
    result.assert_outcomes(passed=3, failed=1)
    # book_hotel came first, so the ordered spec keeps one of the two and the other call is extra (forbidden)
    result.stdout.re_match_lines(
        [
            r".*trajectory of travel_agent .*: 0\.50 < 1\.00",
            r".*trajectory 0\.50 \(1 of 2 required weight; extra calls forbidden\)",
            r".*ok\s+steps\[0\] search_hotels \[found\]\s+#2 search_hotels\s+city: ok",
            r".*missing\s+steps\[1\] book_hotel\s+nearest #1 book_hotel",
            r".*extra\s+#1 book_hotel \(forbidden\)",
            r".*violation\s+extra_forbidden: .*",
        ],
        consecutive=False,
    )
    lines = [json.loads(line) for line in results_path.read_text().splitlines()]
    assert [(line["metric"], line["success"]) for line in lines] == [
        ("trajectory", True),
        ("trajectory", False),
        ("trajectory", True),
    ]
