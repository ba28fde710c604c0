"""Reconstruction rules on small hand-built traces: one rule per test, each with the
trap it guards against."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from itertools import count

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import STATUS_ERROR, LogRecord, SpanEvent, SpanRecord
from agentotel_eval.reconstruct import AgentRun, is_run_span, reconstruct
from agentotel_eval.test_case import EvalTestCase
from tests.support.fixture_traces import fixtures

T1 = "ab" * 16
T2 = "cd" * 16
T3 = "ef" * 16
_ids = count(1)
WEATHER_DEF = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def sid() -> str:
    return f"{next(_ids):016x}"


def span(
    name: str,
    start: int,
    end: int,
    parent: SpanRecord | str | None = None,
    trace: str = T1,
    *,
    attrs: dict | None = None,
    events: tuple[SpanEvent, ...] = (),
    status: int = 0,
    message: str = "",
    span_id: str | None = None,
) -> SpanRecord:
    parent_id = parent.span_id if isinstance(parent, SpanRecord) else parent
    return SpanRecord(
        trace,
        span_id or sid(),
        parent_id,
        name,
        1,
        start,
        end,
        status,
        message,
        dict(attrs or {}),
        events,
        (),
        {"service.name": "svc"},
    )


def agent(name: str, start: int, end: int, parent=None, trace: str = T1, **attrs) -> SpanRecord:
    return span(
        f"invoke_agent {name}",
        start,
        end,
        parent,
        trace,
        attrs={sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: name, **attrs},
    )


def chat(
    start: int,
    end: int,
    parent=None,
    trace: str = T1,
    *,
    calls=(),
    text: str | None = None,
    history=(),
    definitions=(WEATHER_DEF,),
) -> SpanRecord:
    parts = [{"type": "tool_call", "id": cid, "name": n, "arguments": a} for n, a, cid in calls]
    if text:
        parts.append({"type": "text", "content": text})
    attrs = {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.GEN_AI_INPUT_MESSAGES: json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}, *history]
        ),
        sc.GEN_AI_OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "parts": parts}]),
    }
    if definitions:
        attrs[sc.GEN_AI_TOOL_DEFINITIONS] = json.dumps(list(definitions))
    return span("chat m", start, end, parent, trace, attrs=attrs)


def tool(
    name: str,
    start: int,
    end: int,
    parent=None,
    trace: str = T1,
    *,
    args=None,
    result=None,
    call_id: str | None = None,
    error: str | None = None,
) -> SpanRecord:
    attrs = {sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: name}
    if args is not None:
        attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = json.dumps(args)
    if result is not None:
        attrs[sc.GEN_AI_TOOL_CALL_RESULT] = result
    if call_id is not None:
        attrs[sc.GEN_AI_TOOL_CALL_ID] = call_id
    events: tuple[SpanEvent, ...] = ()
    if error:
        events = (
            SpanEvent(
                sc.EXCEPTION_EVENT, end, {sc.EXCEPTION_TYPE: "app.ToolError", sc.EXCEPTION_MESSAGE: error}
            ),
        )
    return span(
        f"execute_tool {name}",
        start,
        end,
        parent,
        trace,
        attrs=attrs,
        events=events,
        status=STATUS_ERROR if error else 0,
    )


def one(spans, logs=()) -> AgentRun:
    runs = reconstruct(spans, logs)
    assert len(runs) == 1, [(r.span_name, r.tools_called) for r in runs]
    return runs[0]


# --- run detection ------------------------------------------------------------------------------------------


def test_traced_decorator_shapes():
    """What our own @traced emits: invoke_agent + execute_tool spans with GenAI attributes."""
    root = agent(
        "helper",
        0,
        100,
        **{
            sc.GEN_AI_INPUT_MESSAGES: json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Weather in Rome?"}]}]
            ),
            sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}]
            ),
            sc.AGENTOTEL_EXPECTED_TOOLS: ["get_weather", "book_hotel"],
        },
    )
    ok = tool(
        "get_weather", 10, 20, root, args={"city": "Rome"}, result=json.dumps("Rome: sunny"), call_id="c1"
    )
    bad = tool("book_hotel", 30, 40, root, args={"city": "Rome", "nights": 2}, call_id="c2", error="no rooms")
    run = one([bad, ok, root])
    assert (run.agent_name, run.input, run.output) == ("helper", "Weather in Rome?", "Sunny.")
    assert run.expected_tools == ("get_weather", "book_hotel")
    assert [(c.name, dict(c.input_parameters), c.output, c.status, c.call_id) for c in run.tool_calls] == [
        ("get_weather", {"city": "Rome"}, "Rome: sunny", "ok", "c1"),
        ("book_hotel", {"city": "Rome", "nights": 2}, None, "error", "c2"),
    ]
    assert run.tool_calls[1].error == "ToolError: no rooms"
    assert run.tool_calls[1].sources["status"] == "span_status"
    case = run.to_test_case()
    assert isinstance(case, EvalTestCase) and case.input == "Weather in Rome?"
    assert [t.name for t in case.expected_tools] == ["get_weather", "book_hotel"]


def test_expected_tools_as_a_json_string():
    root = agent("a", 0, 10, **{sc.AGENTOTEL_EXPECTED_TOOLS: '["x", "y"]'})
    assert one([root, tool("x", 1, 2, root)]).expected_tools == ("x", "y")


def test_wrapper_layers_make_one_run_with_the_outer_span():
    """@traced agent around a framework agent, around a workflow: no extra empty runs."""
    outer = agent("mine", 0, 100, **{sc.AGENTOTEL_EXPECTED_TOOLS: ["get_weather"]})
    workflow = span("Agent workflow", 1, 99, outer, attrs={sc.OI_SPAN_KIND: "AGENT"})
    middle = span("Agent workflow", 2, 98, workflow, attrs={sc.OI_SPAN_KIND: "CHAIN"})
    inner = span(
        "travel_agent", 3, 97, middle, attrs={sc.OI_SPAN_KIND: "AGENT", sc.OI_AGENT_NAME: "travel_agent"}
    )
    llm = chat(4, 10, inner, calls=[("get_weather", '{"city": "Oslo"}', "c1")])
    run = one(
        [
            outer,
            workflow,
            middle,
            inner,
            llm,
            tool("get_weather", 11, 12, inner, args={"city": "Oslo"}, call_id="c1"),
        ]
    )
    assert run.span_id == outer.span_id
    assert run.expected_tools == ("get_weather",)
    assert run.agent_name == "mine"
    assert run.extra["chain"] == [outer.span_id, workflow.span_id, inner.span_id]


def test_two_runs_under_one_application_span_stay_two_runs():
    app = span("handle_request", 0, 100)
    first, second = agent("a", 1, 40, app), agent("a", 50, 90, app)
    runs = reconstruct([app, first, second, tool("x", 2, 3, first), tool("y", 51, 52, second)])
    assert [(r.span_id, r.tools_called) for r in runs] == [(first.span_id, ["x"]), (second.span_id, ["y"])]


def test_trace_root_fallback_when_no_run_marker():
    app = span("handle_request", 0, 100)
    run = one(
        [
            app,
            chat(1, 5, app, calls=[("get_weather", '{"city": "Rome"}', "c1")]),
            tool("get_weather", 6, 7, app, args={"city": "Rome"}, call_id="c1"),
        ]
    )
    assert (run.span_id, run.convention, run.tools_called) == (app.span_id, "root", ["get_weather"])


def test_no_run_without_markers_or_tool_calls():
    app = span("handle_request", 0, 100)
    assert reconstruct([app, chat(1, 5, app, text="hello", definitions=())]) == []


def test_an_application_span_whose_model_was_offered_tools_is_a_run_even_with_no_call():
    app = span("travel_agent", 0, 100)
    (run,) = reconstruct([app, chat(1, 5, app, text="No tool needed.")])
    assert (run.span_id, run.convention, run.tools_called, run.output) == (
        app.span_id,
        "root",
        [],
        "No tool needed.",
    )
    lone = chat(1, 5, None, T2, text="hello")  # a model call that is its own trace: no agent around it
    assert reconstruct([lone]) == []


def test_nested_agent_in_a_tool_owns_its_calls():
    outer = agent("travel", 0, 100)
    ask = tool("ask_weather", 10, 60, outer, args={"q": "Cairo?"}, call_id="c1")
    sub = agent("weather", 11, 59, ask)
    runs = reconstruct(
        [
            outer,
            chat(1, 9, outer, calls=[("ask_weather", '{"q": "Cairo?"}', "c1")]),
            ask,
            sub,
            chat(12, 20, sub, calls=[("get_weather", '{"city": "Cairo"}', "s1")]),
            tool("get_weather", 21, 22, sub, args={"city": "Cairo"}, call_id="s1"),
            tool("convert", 70, 71, outer),
        ]
    )
    assert [(r.agent_name, r.tools_called, r.parent_run_span_id) for r in runs] == [
        ("travel", ["ask_weather", "convert"], None),
        ("weather", ["get_weather"], outer.span_id),
    ]


def test_agent_loop_inside_a_tool_without_run_marker_is_an_implicit_run():
    outer = agent("travel", 0, 100)
    ask = tool("ask_weather", 10, 60, outer, args={"q": "Cairo?"})
    graph = span("weather_graph", 11, 59, ask)
    runs = reconstruct(
        [
            outer,
            ask,
            graph,
            chat(12, 20, graph, calls=[("get_weather", '{"city": "Cairo"}', "s1")]),
            tool("get_weather", 21, 22, graph, args={"city": "Cairo"}, call_id="s1"),
        ]
    )
    assert [(r.agent_name, r.convention, r.tools_called) for r in runs] == [
        ("travel", "gen_ai", ["ask_weather"]),
        ("weather_graph", "implicit", ["get_weather"]),
    ]


def test_a_tool_that_only_calls_an_llm_is_not_an_agent():
    outer = agent("travel", 0, 100)
    summarise = tool("summarise", 10, 60, outer)
    run = one([outer, summarise, chat(11, 20, summarise, text="a summary")])
    assert run.tools_called == ["summarise"]


def test_a_parent_loop_is_cut_and_nothing_is_lost():
    """Corrupt parent ids (a -> b -> a) must not hang or drop spans."""
    a_id, b_id = sid(), sid()
    a = agent("a", 0, 100, b_id)
    a = SpanRecord(T1, a_id, b_id, a.name, 1, 0, 100, attributes=a.attributes, resource=a.resource)
    b = span("loop", 1, 99, a_id, span_id=b_id)
    run = one([a, b, tool("x", 2, 3, b)])
    assert (run.span_id, run.tools_called) == (a_id, ["x"])


def test_a_tool_span_inside_a_tool_span_is_part_of_that_call():
    """A helper the tool used, or the same call recorded by a second instrumentation: one call, not two."""
    root = agent("a", 0, 100)
    outer = tool("get_weather", 10, 30, root, args={"city": "Rome"}, call_id="c1")
    helper = tool("normalize_city", 12, 14, outer, args={"city": "rome"})
    same = span("get_weather", 15, 29, outer, attrs={sc.OI_SPAN_KIND: "TOOL", sc.OI_TOOL_NAME: "get_weather"})
    run = one(
        [root, chat(1, 9, root, calls=[("get_weather", '{"city": "Rome"}', "c1")]), outer, helper, same]
    )
    assert run.tools_called == ["get_weather"]
    assert run.extra["nested_tool_spans"] == [helper.span_id, same.span_id]


def test_is_run_span():
    assert is_run_span(agent("a", 0, 1))
    assert is_run_span(span("w", 0, 1, attrs={sc.TRACELOOP_SPAN_KIND: "workflow"}))
    assert is_run_span(span("w", 0, 1, attrs={sc.LANGFUSE_OBSERVATION_TYPE: "agent"}))
    assert not is_run_span(tool("x", 0, 1))
    assert not is_run_span(span("create_agent a", 0, 1, attrs={sc.GEN_AI_OPERATION_NAME: "create_agent"}))


# --- counting: requests vs executions -----------------------------------------------------------------------


def test_request_and_execution_are_one_call_and_history_is_not_a_call():
    root = agent("a", 0, 100)
    first = chat(1, 10, root, calls=[("get_weather", '{"city": "Rome"}', "c1")])
    history = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": '{"city": "Rome"}'}
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "sunny"}]},
    ]
    last = chat(30, 40, root, text="Sunny in Rome.", history=history)
    run = one([root, first, tool("get_weather", 11, 20, root, args={"city": "Rome"}, call_id="c1"), last])
    assert run.tools_called == ["get_weather"]
    assert run.output == "Sunny in Rome."


def test_history_alone_is_never_a_call():
    history = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": '{"city": "Rome"}'}
            ],
        }
    ]
    assert reconstruct([chat(0, 10, text="done", history=history)]) == []


def test_placeholder_call_ids_fall_back_to_name_arguments_and_order():
    """ADK writes "<not specified>": never an identity; match by arguments, parallel calls stay apart."""
    root = agent("a", 0, 100)
    llm = chat(
        1,
        10,
        root,
        calls=[("get_weather", '{"city": "Tokyo"}', "c1"), ("get_weather", '{"city": "Lima"}', "c2")],
    )
    lima = tool("get_weather", 11, 20, root, args={"city": "Lima"}, call_id="<not specified>")
    tokyo = tool("get_weather", 12, 21, root, args={"city": "Tokyo"}, call_id="<not specified>")
    run = one([root, llm, lima, tokyo])
    assert [(c.input_parameters["city"], c.call_id, c.sources["call_id"]) for c in run.tool_calls] == [
        ("Tokyo", "c1", "request:gen_ai"),
        ("Lima", "c2", "request:gen_ai"),
    ]


def test_parallel_calls_keep_the_order_of_the_model_output():
    """Calls are ordered by start time, but one turn's parallel calls keep that turn's output order."""
    root = agent("a", 0, 100)
    llm = chat(1, 10, root, calls=[("a", "{}", "c1"), ("b", "{}", "c2"), ("c", "{}", "c3")])
    run = one(
        [
            root,
            llm,
            tool("c", 11, 12, root, call_id="c3"),
            tool("a", 13, 14, root, call_id="c1"),
            tool("b", 15, 16, root, call_id="c2"),
            chat(20, 30, root, calls=[("d", "{}", "c4")]),
            tool("d", 31, 32, root, call_id="c4"),
        ]
    )
    assert run.tools_called == ["a", "b", "c", "d"]
    assert [c.llm_turn for c in run.tool_calls] == [llm.span_id] * 3 + [run.tool_calls[3].llm_turn]


def test_requests_without_any_execution_are_the_calls_with_results_from_history():
    app = span("loop", 0, 100)
    first = chat(1, 10, app, calls=[("get_weather", '{"city": "Rome"}', "c1")])
    history = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": '{"city": "Rome"}'}
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "Rome: sunny"}]},
    ]
    run = one([app, first, chat(20, 30, app, text="Sunny.", history=history)])
    (call,) = run.tool_calls
    assert (call.name, dict(call.input_parameters), call.output, call.status) == (
        "get_weather",
        {"city": "Rome"},
        "Rome: sunny",
        "ok",
    )
    assert call.span_id == first.span_id and call.start_time_ns == first.end_ns
    assert call.sources["name"] == "request:gen_ai" and call.sources["result"] == "history"


def test_unexecuted_requests_are_not_calls_when_the_framework_traces_executions():
    root = agent("a", 0, 100)
    llm = chat(1, 10, root, calls=[("get_weather", '{"city": "Rome"}', "c1"), ("book", "{}", "c2")])
    run = one([root, llm, tool("get_weather", 11, 20, root, call_id="c1")])
    assert run.tools_called == ["get_weather"]
    assert run.extra["unexecuted_requests"] == ["book"]


def test_same_inference_recorded_by_two_nested_instrumentations_counts_once():
    app = span("loop", 0, 100)
    outer = chat(1, 20, app, calls=[("get_weather", '{"city": "Rome"}', "c1")])
    inner = chat(2, 19, outer, calls=[("get_weather", '{"city": "Rome"}', "c1")])
    assert one([app, outer, inner]).tools_called == ["get_weather"]


def test_pydantic_ai_output_tool_is_not_a_call():
    app = span("loop", 0, 100)
    llm = chat(1, 10, app, calls=[("get_weather", "{}", "c1"), ("final_result", '{"answer": 1}', "c2")])
    llm.attributes[sc.PYDANTIC_AI_MODEL_REQUEST_PARAMETERS] = json.dumps(
        {"output_tools": [{"name": "final_result"}]}
    )
    assert one([app, llm]).tools_called == ["get_weather"]


def test_requested_calls_from_legacy_log_records():
    """openai-v2 (semconv 1.30): spans carry no content, the gen_ai.choice log record does."""
    app = span("handle_request", 0, 100)
    llm = span("chat gpt", 1, 10, app, attrs={sc.GEN_AI_OPERATION_NAME: "chat"})
    choice = {
        "index": 0,
        "finish_reason": "tool_calls",
        "message": {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
    }
    logs = [
        LogRecord(0, 5, T1, llm.span_id, event_name=sc.EVENT_USER_MESSAGE, body={"content": "Paris?"}),
        LogRecord(0, 9, T1, llm.span_id, event_name=sc.EVENT_CHOICE, body=choice),
    ]
    run = one([app, llm], logs)
    assert (run.tools_called, run.input) == (["get_weather"], "Paris?")
    assert run.tool_calls[0].sources["arguments"] == "request:gen_ai.log"


def test_multi_trace_plain_client_loop():
    """No application span: each chat completion is its own trace; each trace with calls is its own run."""

    def oi_llm(trace, start, calls=(), text=None):
        attrs = {
            sc.OI_SPAN_KIND: "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Plan a trip",
        }
        for i, (name, args, cid) in enumerate(calls):
            prefix = f"llm.output_messages.0.message.tool_calls.{i}.tool_call"
            attrs |= {
                f"{prefix}.function.name": name,
                f"{prefix}.function.arguments": args,
                f"{prefix}.id": cid,
            }
        if text:
            attrs["llm.output_messages.0.message.content"] = text
        return span("ChatCompletion", start, start + 5, None, trace, attrs=attrs)

    spans = [
        oi_llm(T2, 20, [("get_weather", '{"city": "Rome"}', "c2")]),
        oi_llm(T3, 40, text="Done."),
        oi_llm(T1, 0, [("search_flights", '{"to": "Rome"}', "c1"), ("book_hotel", '{"nights": 3}', "c0")]),
    ]
    runs = reconstruct(spans)
    assert [(r.trace_id, r.convention, r.tools_called) for r in runs] == [
        (T1, "root", ["search_flights", "book_hotel"]),
        (T2, "root", ["get_weather"]),
    ]
    per_trace = [r for s in spans for r in reconstruct([s])]
    assert sorted(per_trace, key=lambda r: r.start_time_ns) == runs  # the collector calls it trace by trace
    assert all(r.input == "Plan a trip" for r in runs)


def test_multi_trace_loop_results_come_from_the_next_trace_when_reconstructed_together():
    def oi_llm(trace, start, calls=(), history=()):
        attrs = {
            sc.OI_SPAN_KIND: "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Weather in Atlantis, else Athens",
        }
        for k, (cid, content) in enumerate(history, start=1):
            attrs |= {
                f"llm.input_messages.{k}.message.role": "tool",
                f"llm.input_messages.{k}.message.tool_call_id": cid,
                f"llm.input_messages.{k}.message.content": content,
            }
        for i, (name, args, cid) in enumerate(calls):
            prefix = f"llm.output_messages.0.message.tool_calls.{i}.tool_call"
            attrs |= {
                f"{prefix}.function.name": name,
                f"{prefix}.function.arguments": args,
                f"{prefix}.id": cid,
            }
        return span("ChatCompletion", start, start + 5, None, trace, attrs=attrs)

    spans = [
        oi_llm(T1, 0, [("get_weather", '{"city": "Atlantis"}', "c1")]),
        oi_llm(
            T2, 20, [("get_weather", '{"city": "Athens"}', "c2")], [("c1", "Error: Unknown city: Atlantis")]
        ),
        oi_llm(T3, 40, history=[("c1", "Error: Unknown city: Atlantis"), ("c2", "Athens: 29C")]),
    ]
    together = [(c.name, c.output, c.status) for r in reconstruct(spans) for c in r.tool_calls]
    assert together == [
        ("get_weather", "Error: Unknown city: Atlantis", "error"),
        ("get_weather", "Athens: 29C", "ok"),
    ]
    alone = [
        (c.output, c.status, c.sources["status"])
        for s in spans
        for r in reconstruct([s])
        for c in r.tool_calls
    ]
    assert alone == [(None, "ok", "default"), (None, "ok", "default")]  # each trace alone cannot know


# --- plumbing, status ---------------------------------------------------------------------------------------


def scoped(spans: list[SpanRecord], scope: str) -> list[SpanRecord]:
    """The spans as one instrumentation (its scope name) emitted them."""
    return [dataclasses.replace(s, scope_name=scope) for s in spans]


def test_handoffs_and_framework_plumbing_are_not_calls():
    root = agent("triage", 0, 100)
    llm = chat(1, 10, root, calls=[("transfer_to_weather_agent", "{}", "h1")])
    handoff = span("handoff to weather_agent", 11, 12, root, attrs={sc.OI_SPAN_KIND: "TOOL"})
    run = one(scoped([root, llm, handoff], "openinference.instrumentation.openai_agents"))
    assert run.tool_calls == ()
    assert [(h.name, h.to_agent, h.from_agent, h.span_id) for h in run.handoffs] == [
        ("transfer_to_weather_agent", "weather_agent", "triage", handoff.span_id)
    ]
    merged = span(
        "execute_tool (merged)",
        13,
        14,
        root,
        attrs={sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: "(merged tools)"},
    )
    adk = one(scoped([root, merged, tool("x", 15, 16, root)], "gcp.vertex.agent"))
    assert adk.tools_called == ["x"] and adk.extra["plumbing_spans"] == [merged.span_id]


def test_handoff_seen_only_as_a_span_takes_the_model_facing_name_from_later_history():
    """OpenLLMetry openai-agents records no LLM output: the handoff is a `triage → unknown.handoff` span and
    the transfer_to_* call appears only in the next LLM call's input."""
    workflow = span("Agent Workflow", 0, 100, attrs={sc.TRACELOOP_SPAN_KIND: "workflow"})
    triage = span(
        "triage.agent",
        1,
        40,
        workflow,
        attrs={
            sc.TRACELOOP_SPAN_KIND: "agent",
            sc.GEN_AI_AGENT_NAME: "triage",
            sc.GEN_AI_OPERATION_NAME: "invoke_agent",
        },
    )
    ask = span("openai.response", 2, 10, triage, attrs={sc.GEN_AI_OPERATION_NAME: "chat"})
    hand = span(
        "triage → unknown.handoff",
        11,
        12,
        triage,
        attrs={
            sc.TRACELOOP_SPAN_KIND: "handoff",
            sc.GEN_AI_OPERATION_NAME: "handoff",
            sc.GEN_AI_HANDOFF_FROM_AGENT: "triage",
        },
    )
    weather = span(
        "weather.agent",
        41,
        90,
        workflow,
        attrs={
            sc.TRACELOOP_SPAN_KIND: "agent",
            sc.GEN_AI_AGENT_NAME: "weather",
            sc.GEN_AI_OPERATION_NAME: "invoke_agent",
        },
    )
    history = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "h1", "name": "transfer_to_weather", "arguments": {}}],
        }
    ]
    answer = chat(42, 50, weather, text="Sunny.", history=history)
    triage_run, weather_run = reconstruct(
        scoped([workflow, triage, ask, hand, weather, answer], "opentelemetry.instrumentation.openai_agents")
    )
    assert [(h.name, h.to_agent, h.span_id) for h in triage_run.handoffs] == [
        ("transfer_to_weather", "weather", hand.span_id)
    ]
    assert triage_run.tool_calls == () and weather_run.handoffs == ()


@pytest.mark.parametrize(
    ("name", "attrs", "target"),
    [
        ("handoff to weather", {sc.OI_SPAN_KIND: "TOOL"}, "weather"),
        ("handoff from triage to weather", {sc.GEN_AI_OPERATION_NAME: "handoff"}, "weather"),
        (
            "triage → weather.handoff",
            {sc.TRACELOOP_SPAN_KIND: "handoff", sc.GEN_AI_HANDOFF_TO_AGENT: "weather"},
            "weather",
        ),
    ],
)
def test_handoff_span_shapes(name, attrs, target):
    root = agent("triage", 0, 100)
    run = one([root, span(name, 1, 2, root, attrs=attrs), tool("x", 3, 4, root)])
    assert run.tools_called == ["x"]
    assert [h.to_agent for h in run.handoffs] == [target]


def test_openllmetry_langchain_call_id_inside_the_arguments():
    root = agent("a", 0, 100)
    llm = chat(
        1,
        10,
        root,
        calls=[("get_weather", '{"city": "Rome"}', "c7"), ("get_weather", '{"city": "Oslo"}', "c8")],
    )
    args = {"input_str": "{'city': 'Oslo'}", "inputs": {"city": "Oslo"}, "kwargs": {"tool_call_id": "c8"}}
    t = span(
        "execute_tool get_weather",
        11,
        12,
        root,
        attrs={
            sc.GEN_AI_OPERATION_NAME: "execute_tool",
            sc.GEN_AI_TOOL_NAME: "get_weather",
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(args),
        },
    )
    (call,) = one([root, llm, t]).tool_calls
    assert (call.call_id, dict(call.input_parameters), call.llm_turn) == ("c8", {"city": "Oslo"}, llm.span_id)


def test_error_text_fed_back_by_a_plain_loop_is_an_error():
    app = span("loop", 0, 100)
    first = chat(1, 10, app, calls=[("get_weather", '{"city": "Atlantis"}', "c1")])
    history = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": "{}"}],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c1", "response": "Error: Unknown city"}],
        },
    ]
    (call,) = one([app, first, chat(20, 30, app, text="Sorry.", history=history)]).tool_calls
    assert (call.status, call.error, call.sources["status"]) == (
        "error",
        "Error: Unknown city",
        "result_text",
    )


@pytest.mark.parametrize(
    "result", ["Error: boom", "Error executing tool get_weather: Unknown city: Atlantis"]
)
@pytest.mark.parametrize("status", [0, 1])
def test_an_error_report_as_the_result_fails_the_call_unless_text_signals_are_off(status, result):
    """A tool that reports its failure as its result (MCP's isError text, a loop's "Error: ...") failed,
    whether the span said OK or nothing; ``text_failures=False`` trusts the recorded status alone."""
    root = agent("a", 0, 100)
    t = tool("x", 1, 2, root, result=result)
    t = SpanRecord(**{**{f: getattr(t, f) for f in t.__dataclass_fields__}, "status_code": status})
    (call,) = one([root, t]).tool_calls
    assert (call.status, call.error, call.sources["status"]) == ("error", result, "result_text")
    (run,) = reconstruct([root, t], text_failures=False)
    assert run.tool_calls[0].status == "ok"


def test_adk_transfer_to_agent_names_its_target_in_the_arguments():
    root = agent("root", 0, 100)
    run = one(
        scoped(
            [
                root,
                tool("transfer_to_agent", 1, 2, root, args={"agent_name": "billing"}),
                tool("x", 3, 4, root),
            ],
            "gcp.vertex.agent",
        )
    )
    assert run.tools_called == ["x"]
    assert [(h.name, h.to_agent) for h in run.handoffs] == [("transfer_to_agent", "billing")]


@pytest.mark.parametrize(
    ("attrs", "status", "expected"),
    [
        ({sc.GEN_AI_TOOL_STATUS: "error"}, 0, "error"),
        ({sc.LANGFUSE_OBSERVATION_LEVEL: "ERROR", sc.LANGFUSE_OBSERVATION_STATUS_MESSAGE: "bad"}, 0, "error"),
        (
            {
                sc.GEN_AI_TOOL_CALL_RESULT: json.dumps(
                    {"type": "tool", "data": {"content": "x", "status": "error"}}
                )
            },
            0,
            "error",
        ),
        ({}, STATUS_ERROR, "error"),
        ({sc.GEN_AI_TOOL_STATUS: "success"}, 0, "ok"),
    ],
)
def test_call_status_sources(attrs, status, expected):
    root = agent("a", 0, 100)
    t = span(
        "execute_tool x",
        1,
        2,
        root,
        attrs={sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: "x", **attrs},
        status=status,
    )
    assert one([root, t]).tool_calls[0].status == expected


def test_bare_scalar_arguments_are_named_from_the_offered_definition():
    root = agent("a", 0, 100)
    llm = chat(1, 10, root, text="calling", definitions=(WEATHER_DEF,))
    t = span(
        "get_weather",
        11,
        12,
        root,
        attrs={sc.OI_SPAN_KIND: "TOOL", sc.OI_TOOL_NAME: "get_weather", sc.OI_INPUT_VALUE: "Rome"},
    )
    (call,) = one([root, llm, t]).tool_calls
    assert (dict(call.input_parameters), call.raw_arguments, call.sources["arguments"]) == (
        {"city": "Rome"},
        "Rome",
        "openinference+schema",
    )


def test_errored_run_status_and_message():
    root = agent("a", 0, 100)
    root = span(root.name, 0, 100, attrs=root.attributes, status=STATUS_ERROR, message="Boom: it broke")
    run = one([root, tool("x", 1, 2, root)])
    assert (run.status, run.error) == ("error", "Boom: it broke")


# --- robustness ---------------------------------------------------------------------------------------------

_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_GARBAGE = (
    _JSONISH
    | _JSONISH.map(lambda v: json.dumps(v, default=str))
    | st.sampled_from(
        [
            "{",
            "[1,",
            '{"parts": 3}',
            '[{"role": "assistant", "parts": [{"type": "tool_call"}]}]',
            "<not specified>",
        ]
    )
)


@cache
def _fixture_records(name: str) -> tuple[list[SpanRecord], list[LogRecord]]:
    (fixture,) = [f for f in fixtures() if f.name == name]
    return fixture.spans("protobuf"), fixture.logs("protobuf")


@pytest.mark.parametrize("name", [f.name for f in fixtures()])
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
)
@given(data=st.data())
def test_malformed_attribute_values_never_crash(name, data):
    spans, logs = _fixture_records(name)
    mutated = []
    for s in spans:
        attrs = dict(s.attributes)
        for key in data.draw(st.lists(st.sampled_from(sorted(attrs) or ["x"]), max_size=4)):
            attrs[key] = data.draw(_GARBAGE)
        mutated.append(
            SpanRecord(**{**{f: getattr(s, f) for f in s.__dataclass_fields__}, "attributes": attrs})
        )
    runs = reconstruct(mutated, logs)
    assert isinstance(runs, list)
    for run in runs:
        run.to_test_case()


def test_a_run_whose_agent_span_was_dropped_invents_no_agent_and_says_so():
    """An exporter that drops the agent span ("Queue full, dropping Span") leaves a run anchored on its first
    LLM call: no agent named after that call, and explain says what happened."""
    from agentotel_eval.reconstruct.explain import explain_lines, run_record

    root = agent("travel", 0, 100)  # never arrives
    asked = chat(1, 9, root, calls=[("get_weather", '{"city": "Rome"}', "c1")])
    ran = tool("get_weather", 10, 20, root, args={"city": "Rome"}, call_id="c1", result="sunny")
    run = one([asked, ran, chat(21, 30, root, text="Sunny")])
    assert run.agent_name is None and run.tools_called == ["get_weather"]
    assert run.diagnostics["no_agent_span"] == {
        "anchor": asked.span_id,
        "anchor_name": "chat m",
        "missing_parent": root.span_id,
    }
    text = "\n".join(explain_lines(run.trace_id, [run_record(run)], {}))
    assert f"run {asked.span_id} (no agent span)" in text
    assert f"its parent span {root.span_id} never arrived" in text
    # with the agent span, nothing of this
    whole = one([root, asked, ran])
    assert whole.agent_name == "travel" and "no_agent_span" not in whole.diagnostics
