"""Every recorded real-framework trace, replayed from protobuf and from JSON, against its ground truth.

Ground truth (manifest.jsonl) comes from the tools' own execution log, not from the spans. Calls that share a
``ground_truth_llm_turns`` label were parallel calls of one model response: their relative order is free.
"""

from __future__ import annotations

from collections import Counter
from itertools import groupby

import pytest

from agentotel_eval.reconstruct import AgentRun, reconstruct
from agentotel_eval.test_case import EvalTestCase
from tests.support.fixture_traces import TRACES_DIR, Fixture, fixtures

FIXTURES = fixtures()
ENCODINGS = ("protobuf", "json")

# Families whose captures hold no message content at all: ADK's default conventions, instrumentations with
# content capture off (AutoGen's built-in tracing, Semantic Kernel without sensitive diagnostics, Haystack
# without content tracing, the Vercel AI SDK with recordInputs/recordOutputs off), the Anthropic SDK's
# metadata-only mode, OpenInference with hidden inputs and outputs.
NO_CONTENT = (
    "google-adk__default__",
    "autogen__builtin__",
    "semantic-kernel__diag__",
    "haystack__otel__",
    "vercel-ai-sdk__nocontent__",
    "anthropic-loop__sdk-native__",
    "llama-index__oi-hidden__",
    "llama-index__otel__",  # (only reprs cut at 200 characters)
    "agent-framework__nosensitive__",
    "langgraph__langsmith-otel-hidden__",
    "raw-openai__openlit-raw-nocontent__",
    "raw-openai__langtrace-raw-nocontent__",
)
# Families that record no user request on any span (CrewAI's OpenInference wrappers: the agent span's input
# holds the agent and its tools, not the task).
NO_USER_INPUT = (*NO_CONTENT, "crewai__openinference__")
# Families that never record the model's final answer on any span (OpenLLMetry openai-agents keeps only the
# input messages of each openai.response span; Langtrace over a streamed loop records the
# streamed answer as "").
NO_FINAL_ANSWER = (*NO_CONTENT, "openai-agents__traceloop__", "raw-openai__langtrace-raw-stream__")
# Families whose LLM and run spans carry no tool definitions (OpenInference openai-agents and AutoGen;
# openai-v2 without content; the Anthropic SDK's own spans; OpenLLMetry's event mode, which puts them in a
# user-message event; LlamaIndex, whose LLM spans do not record them; CrewAI's OpenInference wrappers, only on
# the agent's input; OpenInference's Haystack agent step, whose input names no tools).
NO_DEFINITIONS = (
    "openai-agents__openinference__",
    "openai-agents-mcp__openinference__",
    "agent-framework__v136__",
    "raw-openai__openlit-raw__",
    "openai-agents__traceloop__",
    "raw-openai__openai-v2-legacy__",
    "anthropic-loop__sdk-native",
    "anthropic-loop__openllmetry-events__",
    "autogen__",
    "llama-index__",
    "crewai__openinference__",
    "langgraphjs__traceloop__",
    "haystack__openinference-pipeline__",
    *NO_CONTENT,
)
# Families with no LLM span at all: AutoGen's built-in tracing, LlamaIndex's own OpenTelemetry (dispatcher
# spans with no GenAI attributes), CrewAI's OpenInference wrappers (the LLM call is not wrapped),
# OpenInference's Haystack instrumentor around an agent run on its own (one step holding the conversation): no
# call has a requesting LLM turn.
NO_LLM_SPANS = (
    "autogen__builtin__",
    "llama-index__otel__",
    "crewai__openinference__",
    "haystack__openinference-pipeline__",
)
PLAIN_MULTI_TRACE_ROOTS = {"ChatCompletion", "openai.chat"}


def _canonical(value):
    """Numbers compare by value (the model sent 100, the framework passed 100.0)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_canonical(v) for v in value)
    return repr(value)


def _replay(fixture: Fixture, encoding: str) -> list[AgentRun]:
    return reconstruct(fixture.spans(encoding), fixture.logs(encoding))


def _trace_calls(runs: list[AgentRun]):
    return sorted((c for r in runs for c in r.tool_calls), key=lambda c: (c.start_time_ns, c.span_id))


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_calls_match_ground_truth(fixture: Fixture, encoding: str):
    entry = fixture.entry
    runs = _replay(fixture, encoding)
    calls = _trace_calls(runs)
    if not fixture.names_recorded():  # metadata-only spans: nothing names the tools, nothing may be invented
        assert calls == []
        return
    truth = list(
        zip(
            entry["ground_truth_tools"],
            entry["ground_truth_args"],
            entry["ground_truth_outcomes"],
            entry["ground_truth_llm_turns"],
            strict=True,
        )
    )
    assert len(calls) == len(truth), [c.name for c in calls]
    args_known = fixture.args_recorded()
    position = 0
    for _, group in groupby(truth, key=lambda t: t[3]):
        expected = list(group)
        actual = calls[position : position + len(expected)]
        position += len(expected)
        assert Counter((c.name, c.status) for c in actual) == Counter((t[0], t[2]) for t in expected)
        if args_known:
            # values the capture itself dropped are compared as lost: kept out, never invented
            assert Counter((c.name, _canonical(dict(c.input_parameters or {}))) for c in actual) == Counter(
                (t[0], _canonical(fixture.recorded_arguments(t[1]))) for t in expected
            )
        else:  # nothing to read them from: the reconstruction must not invent arguments
            assert all(c.input_parameters is None for c in actual)
    if "ground_truth_handoffs" in entry:
        assert [h.name for r in runs for h in r.handoffs] == entry["ground_truth_handoffs"]
    else:
        assert not any(r.handoffs for r in runs)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_protobuf_and_json_give_the_same_runs(fixture: Fixture):
    assert _replay(fixture, "protobuf") == _replay(fixture, "json")


# Captures of an application that called a model without tools on record (none offered, none asked for:
# OpenLIT with content off records no definitions): nothing says an agent ran, so there is no run to score.
NO_AGENT_EVIDENCE = ("raw-openai__openlit-raw-nocontent__no_tool",)


def _expected_run_count(fixture: Fixture) -> int:
    entry = fixture.entry
    if fixture.name.startswith(NO_AGENT_EVIDENCE):
        return 0
    if set(entry["root_span_names"]) <= PLAIN_MULTI_TRACE_ROOTS:
        # no application span: each LLM call is its own trace and run; the final answer's trace holds no call
        return len(set(entry["ground_truth_llm_turns"]))
    if entry["scenario"] in ("delegate", "handoff"):
        return 2
    return 1


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_run_structure(fixture: Fixture):
    entry = fixture.entry
    name = fixture.name
    runs = _replay(fixture, "protobuf")
    assert len(runs) == _expected_run_count(fixture), [(r.span_name, r.tools_called) for r in runs]
    for run in runs:
        assert run.trace_id and run.span_id and run.start_time_ns <= run.end_time_ns
        # a run anchored on a model call (a plain client loop) has no agent span, and no invented agent name
        assert run.agent_name or run.diagnostics["no_agent_span"]["anchor"] == run.span_id
        assert run.service_name
        for call in run.tool_calls:
            assert call.trace_id == run.trace_id and call.span_id and call.status in ("ok", "error")
            assert call.llm_turn or name.startswith(NO_LLM_SPANS), f"{call.name}: no requesting LLM turn"
            assert call.sources and call.sources.get("name")
        if not name.startswith(NO_USER_INPUT):
            assert run.input, f"{run.span_name}: no user input"
        ended_normally = run.status == "ok" and not run.handoffs
        plain_loop_turn = (
            run.convention == "root" and set(entry["root_span_names"]) <= PLAIN_MULTI_TRACE_ROOTS
        )
        if ended_normally and not plain_loop_turn and not name.startswith(NO_FINAL_ANSWER):
            assert run.output, f"{run.span_name}: no final output"
        if not name.startswith(NO_DEFINITIONS):
            offered = {d.name for d in run.tool_definitions}
            assert offered, f"{run.span_name}: no tool definitions"
            assert set(run.tools_called) <= offered
        case = run.to_test_case()
        assert isinstance(case, EvalTestCase)
        assert [c.name for c in case.tools_called or []] == run.tools_called
    if entry["run_error"]:
        assert [r.status for r in runs] == ["error"]
        assert entry["run_error"].split(":")[0] in (runs[0].error or "")


@pytest.mark.parametrize(
    "fixture", [f for f in FIXTURES if f.entry["scenario"] == "delegate"], ids=lambda f: f.name
)
def test_agent_as_tool_is_a_nested_run_that_owns_its_calls(fixture: Fixture):
    outer, inner = _replay(fixture, "protobuf")
    entry = fixture.entry
    sub = [
        t
        for t, turn in zip(entry["ground_truth_tools"], entry["ground_truth_llm_turns"], strict=True)
        if turn.startswith("delegate_sub")
    ]
    assert outer.tools_called == [t for t in entry["ground_truth_tools"] if t not in sub]
    assert inner.tools_called == sub
    assert inner.parent_run_span_id == outer.span_id
    named = [
        s for s in fixture.spans() if s.span_id == inner.span_id and "weather_assistant" in repr(s.attributes)
    ]
    if named:  # (Haystack's tracer, CrewAI's built-in one and hidden OpenInference inputs do not name it)
        assert inner.agent_name == "weather_assistant"
    assert outer.parent_run_span_id is None
    assert outer.start_time_ns < inner.start_time_ns < inner.end_time_ns <= outer.end_time_ns


@pytest.mark.parametrize(
    "fixture", [f for f in FIXTURES if f.entry["scenario"] == "handoff"], ids=lambda f: f.name
)
def test_handoff_target_is_its_own_run_and_the_handoff_is_recorded_apart(fixture: Fixture):
    triage, weather = _replay(fixture, "protobuf")
    assert (triage.agent_name, triage.tools_called) == ("triage_agent", [])
    assert [(h.name, h.to_agent, h.from_agent) for h in triage.handoffs] == [
        ("transfer_to_weather_agent", "weather_agent", "triage_agent")
    ]
    assert (weather.agent_name, weather.tools_called, weather.handoffs) == (
        "weather_agent",
        ["get_weather"],
        (),
    )
    assert weather.output == "Nairobi is 24C and sunny."
    assert triage.input == weather.input == "Route me to the weather specialist: weather in Nairobi?"


def test_fixture_directory_is_complete():
    names = {p.name for p in TRACES_DIR.iterdir()}
    for fixture in FIXTURES:
        assert fixture.entry["file"] in names and fixture.entry["pb_file"] in names
    assert len(FIXTURES) == 180
