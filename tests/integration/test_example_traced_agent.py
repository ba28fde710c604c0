"""examples/traced_agent.py answers about the cities the question names, offline and the same every time."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

import pytest

from tests.integration.test_examples import (
    TRACED,
    calls_of,
    endpoint_of,
    example_env,
    examples_running,
    runs_of,
)
from tests.support.collector_harness import running_collector, wait_until


@pytest.fixture(scope="module")
def agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("traced_agent_example", TRACED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no configure(): the spans go to OpenTelemetry's no-op provider
    return module


@pytest.mark.parametrize(
    ("question", "cities"),
    [
        ("What's the weather in Berlin?", ["Berlin"]),
        ("What's the weather in Paris, and how far is it from Lyon?", ["Paris", "Lyon"]),
        ("how far is lyon from BERLIN?", ["Lyon", "Berlin"]),
        ("What's the weather in Oslo?", ["Oslo"]),
        ("Is it raining in Berlin or in Berlin?", ["Berlin"]),
        ("What's the weather like?", []),
    ],
)
def test_the_cities_come_from_the_question(agent, question, cities):
    assert agent.cities_in(question) == cities


def _calls(agent: ModuleType, question: str) -> tuple[list[tuple[str, dict]], str]:
    """The tool calls the scripted model asks for, in order, and its answer."""
    messages: list[dict] = [{"role": "user", "content": question}]
    calls = []
    while (reply := agent.plan_next_step(messages)).get("tool_calls"):
        messages.append(reply)
        for call in reply["tool_calls"]:
            name, args = call["function"]["name"], json.loads(call["function"]["arguments"])
            calls.append((name, args))
            result = agent.TOOLS[name](**args, tool_call_id=call["id"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    return calls, reply["content"]


def test_the_weather_in_berlin_is_berlin_s(agent):
    calls, answer = _calls(agent, "What's the weather in Berlin?")
    assert calls == [("get_weather", {"city": "Berlin"})]
    assert '"city": "Berlin"' in answer and "Paris" not in answer
    assert agent.travel_assistant("What's the weather in Berlin?") == answer


def test_a_distance_between_the_cities_named(agent):
    calls, answer = _calls(agent, "How far is Berlin from Paris?")
    assert [name for name, _ in calls] == ["get_coordinates", "get_coordinates", "distance_km"]
    assert [args["city"] for _, args in calls[:2]] == ["Berlin", "Paris"]
    assert answer.endswith("877.1]")


def test_the_default_question_is_answered_as_before(agent):
    calls, answer = _calls(agent, "What's the weather in Paris, and how far is it from Lyon?")
    assert [(name, args.get("city")) for name, args in calls] == [
        ("get_weather", "Paris"),
        ("get_coordinates", "Paris"),
        ("get_coordinates", "Lyon"),
        ("distance_km", None),
    ]
    assert answer.endswith("392.5]")


@pytest.mark.parametrize("question", ["How far is Oslo from Berlin?", "What's the weather like?"])
def test_what_it_cannot_look_up_it_says_without_calling_a_tool(agent, question):
    calls, answer = _calls(agent, question)
    assert calls == []
    assert answer.startswith("I can tell the weather in a city you name")


def test_the_collector_records_the_city_asked_about(tmp_path):
    with running_collector(tmp_path / "berlin.duckdb") as collector:
        env = example_env(endpoint_of(collector, "grpc"))
        with examples_running((TRACED, ["What's the weather in Berlin?"], env)) as (answer,):
            assert "Berlin" in answer and "Paris" not in answer
        (run,) = runs_of(collector, "travel-assistant", 1)
        assert calls_of(collector, run) == [("get_weather", {"city": "Berlin"}, "ok", "call_0")]
        # the expectation is the question's (set from inside the run), so a correct run scores 1
        wait_until(
            lambda: (
                collector.query("SELECT count(*) FROM evaluations WHERE metric = 'tool_correctness'")["rows"][
                    0
                ][0]
                == 1
            ),
            what="the score",
        )
        assert collector.query(
            "SELECT r.expected_tools, e.score FROM agent_runs r JOIN evaluations e ON "
            "e.run_span_id = r.span_id AND e.metric = 'tool_correctness'"
        )["rows"] == [[["get_weather"], 1.0]]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What's the weather in Berlin?", ["get_weather"]),
        (
            "What's the weather in Paris, and how far is it from Lyon?",
            ["get_weather", "get_coordinates", "get_coordinates", "distance_km"],
        ),
        ("How far is Berlin from Paris?", ["get_coordinates", "get_coordinates", "distance_km"]),
        ("How far is Oslo from Berlin?", []),
    ],
)
def test_each_question_states_its_own_expectation(agent, question, expected):
    assert agent.expected_tools_for(question) == expected
    calls, _answer = _calls(agent, question)
    assert [name for name, _ in calls] == expected  # what it states is what a correct run does


def test_the_default_question_passes_its_own_check_in_every_mode(tmp_path):
    with running_collector(tmp_path / "default.duckdb") as collector:
        env = example_env(endpoint_of(collector, "grpc"))
        with examples_running((TRACED, [], env)) as (answer,):
            assert answer.endswith("392.5]")  # the answer is printed: the last line
        runs_of(collector, "travel-assistant", 1)
        sql = (
            "SELECT metric, score, success FROM evaluations WHERE metric LIKE 'tool_correctness%' "
            "ORDER BY metric"
        )
        wait_until(lambda: len(collector.query(sql)["rows"]) == 3, what="the three scores")
        assert collector.query(sql)["rows"] == [
            ["tool_correctness", 1.0, True],
            ["tool_correctness_exact", 1.0, True],
            ["tool_correctness_ordering", 1.0, True],
        ]
