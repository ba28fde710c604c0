"""Rules of the second set of frameworks, one trap each: plumbing scoped to its framework, values that are not
values, every failure signal, declared conventions, and the diagnostics that explain a run."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import STATUS_ERROR, STATUS_OK, LogRecord, SpanEvent, SpanRecord
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.reconstruct.declared import ConventionError, conventions_from_config
from agentotel_eval.reconstruct.reprs import parse_call_repr
from agentotel_eval.reconstruct.values import error_object_message, is_redacted, looks_like_schema
from tests.unit.reconstruct.test_rules import agent, chat, one, scoped, span, tool


def oi_tool(name: str, start: int, end: int, parent: SpanRecord, **attrs) -> SpanRecord:
    return span(name, start, end, parent, attrs={sc.OI_SPAN_KIND: "TOOL", sc.OI_TOOL_NAME: name, **attrs})


# -- plumbing, only under the framework that defines it ------------------------------------------------------


@pytest.mark.parametrize(
    "scope", ["", "opentelemetry.instrumentation.genai.openai", "openinference.instrumentation.openai"]
)
@pytest.mark.parametrize(
    "name", ["transfer_to_savings", "search web", "final_answer", "handoff", "(merged tools)"]
)
def test_names_that_are_plumbing_elsewhere_are_calls_in_a_plain_trace(scope, name):
    root = agent("bank", 0, 100)
    llm = chat(1, 10, root, calls=[(name, "{}", "c1")])
    run = one(scoped([root, llm, tool(name, 11, 12, root, call_id="c1")], scope))
    assert run.tools_called == [name] and run.handoffs == ()
    assert "ignored" not in run.diagnostics


@pytest.mark.parametrize(
    ("scope", "name", "kind"),
    [
        ("openinference.instrumentation.openai_agents", "transfer_to_savings", "handoff"),
        ("semantic_kernel.functions.kernel_function", "Handoff-transfer_to_billing", "handoff"),
        ("openinference.instrumentation.llama_index", "handoff", "handoff"),
        ("openinference.instrumentation.smolagents", "final_answer", "answer"),
        ("gcp.vertex.agent", "(merged tools)", "merged"),
    ],
)
def test_each_framework_s_plumbing_is_recorded_apart(scope, name, kind):
    root = agent("a", 0, 100)
    run = one(
        scoped([root, tool(name, 1, 2, root, args={"to_agent": "billing"}), tool("real", 3, 4, root)], scope)
    )
    assert run.tools_called == ["real"]
    assert [e["name"] for e in run.diagnostics["ignored"]] == [f"execute_tool {name}"]
    if kind == "handoff":
        assert [h.to_agent for h in run.handoffs] == [
            "billing" if name != "transfer_to_savings" else "savings"
        ]
    else:
        assert run.handoffs == ()


def test_a_handoff_the_model_asked_for_is_not_a_call_of_an_openai_agents_run():
    root = agent("triage", 0, 100)
    llm = chat(1, 10, root, calls=[("transfer_to_billing", "{}", "h1")])
    run = one(scoped([root, llm], "openinference.instrumentation.openai_agents"))
    assert run.tools_called == [] and [h.name for h in run.handoffs] == ["transfer_to_billing"]
    plain = one([root, llm])  # the same request with no framework that defines it: a call the model made
    assert plain.tools_called == ["transfer_to_billing"] and plain.handoffs == ()


# -- values that are not values ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["__REDACTED__", "<redacted>", "[REDACTED]"])
def test_a_redaction_marker_is_not_captured_and_the_next_evidence_is_used(value):
    root = agent("a", 0, 100)
    llm = chat(1, 10, root, calls=[("get_weather", '{"city": "Rome"}', "c1")])
    t = oi_tool("get_weather", 11, 12, root, **{sc.OI_INPUT_VALUE: value, sc.OI_OUTPUT_VALUE: value})
    (call,) = one([root, llm, t]).tool_calls
    assert dict(call.input_parameters) == {"city": "Rome"} and call.sources["arguments"] == "request:gen_ai"
    assert call.output is None
    assert is_redacted(value) and not is_redacted("redacted reports")
    alone = one([root, t]).tool_calls[0]  # nothing else holds them: not captured, never the marker
    assert alone.input_parameters is None and alone.raw_arguments is None


def test_a_schema_where_arguments_belong_is_discarded():
    schema = {"city": {"type": "string", "description": "The city name."}}
    root = agent("a", 0, 100)
    t = span(
        "SimpleTool",
        1,
        2,
        root,
        attrs={
            sc.OI_SPAN_KIND: "TOOL",
            sc.GEN_AI_OPERATION_NAME: "execute_tool",
            sc.GEN_AI_TOOL_NAME: "get_weather",
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(schema),
            sc.OI_TOOL_PARAMETERS: json.dumps(schema),
            sc.OI_INPUT_VALUE: json.dumps(
                {"args": [], "sanitize_inputs_outputs": True, "kwargs": {"city": "Oslo"}}
            ),
        },
    )
    run = one([root, t])
    assert dict(run.tool_calls[0].input_parameters) == {"city": "Oslo"}
    assert run.diagnostics["calls"][0]["discarded"] == ["arguments:gen_ai:schema"]
    assert looks_like_schema({"type": "object", "properties": {}}) and looks_like_schema(json.dumps(schema))
    assert not looks_like_schema({"city": "Oslo"}) and not looks_like_schema(
        {"filter": {"type": "x", "n": 1}}
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"kwargs": {"city": "Oslo"}}, {"city": "Oslo"}),
        ({"args": [], "kwargs": {"city": "Oslo"}, "sanitize_inputs_outputs": True}, {"city": "Oslo"}),
        ({"args": ['{"city":"Oslo"}']}, {"city": "Oslo"}),
        ({"args": ["Oslo"], "kwargs": {}}, {"city": "Oslo"}),  # positional, named by the schema
    ],
)
def test_call_envelopes_are_unwrapped(raw, expected):
    root = agent("a", 0, 100)
    llm = chat(1, 10, root, text="calling")  # offers get_weather(city)
    t = oi_tool("get_weather", 11, 12, root, **{sc.OI_INPUT_VALUE: json.dumps(raw)})
    assert dict(one([root, llm, t]).tool_calls[0].input_parameters) == expected


def test_an_envelope_key_that_is_the_tool_s_own_parameter_is_kept():
    definition = {
        "type": "function",
        "name": "run",
        "parameters": {
            "type": "object",
            "properties": {"args": {"type": "array"}, "kwargs": {"type": "object"}},
        },
    }
    root = agent("a", 0, 100)
    llm = chat(1, 10, root, text="x", definitions=(definition,))
    t = oi_tool("run", 11, 12, root, **{sc.OI_INPUT_VALUE: json.dumps({"args": [1], "kwargs": {"k": 2}})})
    assert dict(one([root, llm, t]).tool_calls[0].input_parameters) == {"args": [1], "kwargs": {"k": 2}}


def test_a_class_name_takes_the_name_the_model_called():
    root = span("handle_request", 0, 100)
    llm = chat(1, 10, root, calls=[("get_weather", '{"city": "Oslo"}', "c1")])
    t = span(
        "execute_tool DynamicStructuredTool",
        11,
        12,
        root,
        attrs={
            sc.TRACELOOP_SPAN_KIND: "tool",
            sc.TRACELOOP_ENTITY_NAME: "DynamicStructuredTool",
            sc.TRACELOOP_ENTITY_INPUT: json.dumps({"args": ['{"city":"Oslo"}']}),
        },
    )
    (call,) = one([root, llm, t]).tool_calls
    assert (call.name, call.call_id, call.sources["name"]) == ("get_weather", "c1", "request:gen_ai")


def test_tool_call_reprs_are_read_never_evaluated():
    found = parse_call_repr("ToolCall(tool_name='search', tool_kwargs={'q': 'x', 'n': 2}, tool_id='call_1')")
    assert (found.name, found.arguments, found.call_id) == ("search", {"q": "x", "n": 2}, "call_1")
    cut = parse_call_repr("ToolCall(tool_name='search', tool_kwargs={'q': 'a very long que...")
    assert (cut.name, cut.arguments, cut.call_id) == ("search", None, None)
    assert parse_call_repr("ToolCall(tool_name=__import__('os').system('x'), tool_kwargs={})") is None
    assert parse_call_repr("AgentInput(input=[])") is None


# -- every failure signal ------------------------------------------------------------------------------------


def _status(spans, logs=()):
    (call,) = one(spans, logs).tool_calls
    return call.status, call.sources["status"]


def test_error_span_status_and_exception_event():
    root = agent("a", 0, 100)
    assert _status([root, tool("x", 1, 2, root, error="boom")]) == ("error", "span_status")
    event = SpanEvent(sc.EXCEPTION_EVENT, 2, {sc.EXCEPTION_TYPE: "E", sc.EXCEPTION_MESSAGE: "bad"})
    t = span(
        "execute_tool x",
        1,
        2,
        root,
        attrs={sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: "x"},
        events=(event,),
    )
    assert _status([root, t]) == ("error", "exception")


def test_a_nested_tool_span_of_the_same_call_that_failed():
    root = agent("a", 0, 100)
    outer = tool("x", 1, 10, root)
    inner = span(
        "FunctionTool.acall",
        2,
        3,
        outer,
        status=STATUS_ERROR,
        message="bad",
        attrs={sc.OI_SPAN_KIND: "TOOL", sc.OI_TOOL_NAME: "x"},
    )
    assert _status([root, outer, inner]) == ("error", "nested_span")


def test_is_error_in_the_next_llm_input_overrides_an_ok_autogen_tool_span():
    root = agent("a", 0, 100)
    llm = chat(1, 10, root, calls=[("x", '{"q": 1}', "c1")])
    t = span(
        "x",
        11,
        12,
        root,
        status=STATUS_OK,
        attrs={
            sc.OI_SPAN_KIND: "TOOL",
            sc.OI_TOOL_NAME: "x",
            sc.OI_INPUT_VALUE: '{"q": 1}',
            sc.OI_OUTPUT_VALUE: "no",
        },
    )
    later = span(
        "llm",
        13,
        20,
        root,
        attrs={
            sc.OI_SPAN_KIND: "LLM",
            "llm.input_messages.0.message.role": "function",
            "llm.input_messages.0.function.0": json.dumps(
                {"name": "x", "content": "no", "call_id": "c1", "is_error": True}
            ),
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "sorry",
        },
    )
    assert _status(scoped([root, llm, t, later], "openinference.instrumentation.autogen_agentchat")) == (
        "error",
        "history",
    )
    assert _status([root, llm, t, later]) == ("ok", "span_status")  # elsewhere an explicit OK stands


def test_tool_result_messages_that_say_error_for_request_only_calls():
    root = span("loop", 0, 100)
    ask = chat(1, 10, root, calls=[("x", "{}", "c1")])
    blocks = [
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "down", "is_error": True}],
        }
    ]
    answer = span(
        "chat",
        11,
        20,
        root,
        attrs={sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_INPUT_MESSAGES: json.dumps(blocks)},
    )
    assert _status([root, ask, answer]) == ("error", "history")
    text = [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "Error: down"}]}
    ]
    again = span(
        "chat",
        11,
        20,
        root,
        attrs={sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_INPUT_MESSAGES: json.dumps(text)},
    )
    assert _status([root, ask, again]) == ("error", "result_text")


@pytest.mark.parametrize(
    "result",
    [
        {"error": "Failed to invoke"},
        {"message": "Unknown city", "code": "FAILED"},
        {"message": "x", "details": {"why": 1}},
    ],
)
def test_a_result_that_is_an_error_object(result):
    root = agent("a", 0, 100)
    assert _status([root, tool("x", 1, 2, root, result=json.dumps(result))]) == ("error", "error_object")
    assert error_object_message({"message": "hello"}) is None and error_object_message({"city": "x"}) is None


def test_an_error_text_result_with_no_status_recorded():
    root = agent("a", 0, 100)
    assert _status([root, tool("x", 1, 2, root, result="Error: no such city")]) == ("error", "result_text")


def test_one_failure_recorded_twice_is_one_call():
    root = agent("a", 0, 100)
    first = tool("get_weather", 1, 5, root, args={"city": "X"}, error="Unknown city")
    again = span(
        "tool failure",
        6,
        6,
        root,
        status=STATUS_ERROR,
        attrs={
            sc.GEN_AI_OPERATION_NAME: "execute_tool",
            sc.GEN_AI_TOOL_NAME: "get_weather",
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"city": "X"}),
        },
    )
    run = one([root, first, again])
    assert run.tools_called == ["get_weather"] and run.tool_calls[0].status == "error"
    assert [e["why"].split(":")[0] for e in run.diagnostics["ignored"]] == ["duplicate"]
    retried = tool(
        "get_weather", 20, 25, root, args={"city": "X"}
    )  # after another model turn: a call of its own
    assert one([root, first, chat(10, 15, root, text="retry"), retried]).tools_called == ["get_weather"] * 2


def test_a_copied_error_status_does_not_override_a_recorded_result():
    root = agent("a", 0, 100)
    failed = tool("x", 1, 2, root, error="Unknown city: Atlantis")
    failed = dataclasses.replace(failed, status_message="Unknown city: Atlantis")
    fine = span(
        "execute_tool x",
        3,
        4,
        root,
        status=STATUS_ERROR,
        message="Unknown city: Atlantis",
        attrs={
            sc.GEN_AI_OPERATION_NAME: "execute_tool",
            sc.GEN_AI_TOOL_NAME: "x",
            sc.GEN_AI_TOOL_CALL_RESULT: "29C",
        },
    )
    assert [c.status for c in one([root, failed, fine]).tool_calls] == ["error", "ok"]


# -- evidence in other places --------------------------------------------------------------------------------


def test_event_logs_recorded_on_the_parent_span_go_to_their_llm_call():
    root = span("handle_request", 0, 100)
    llm = span("anthropic.chat", 10, 20, root, attrs={sc.GEN_AI_OPERATION_NAME: "chat"})
    logs = [
        LogRecord(
            15,
            15,
            root.trace_id,
            root.span_id,
            event_name="gen_ai.choice",
            body={
                "index": 0,
                "message": {"content": None},
                "finish_reason": "tool_call",
                "tool_calls": [
                    {"id": "c1", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
                ],
            },
        )
    ]
    (call,) = one([root, llm], logs).tool_calls
    assert (call.name, dict(call.input_parameters), call.call_id) == ("get_weather", {"city": "Oslo"}, "c1")


def test_a_content_less_second_record_of_an_llm_call_does_not_hide_the_history():
    root = span("handle_request", 0, 100)
    ask = chat(1, 10, root, calls=[("x", "{}", "c1")])
    history = [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "42"}]}]
    answer = chat(11, 30, root, text="done", history=history)
    bare = span("anthropic.messages.create", 12, 29, answer, attrs={sc.GEN_AI_OPERATION_NAME: "chat"})
    (call,) = one([root, ask, answer, bare]).tool_calls
    assert call.output == "42" and call.sources["result"] == "history"


def test_a_finish_reason_alone_makes_a_run_that_says_its_calls_were_not_recorded():
    root = span("handle_request", 0, 100)
    llm = span(
        "anthropic.messages.create",
        1,
        10,
        root,
        attrs={sc.GEN_AI_OPERATION_NAME: "chat", "anthropic.message.stop_reason": "tool_use"},
    )
    run = one([root, llm])
    assert run.tool_calls == () and "calls_not_recorded" in run.diagnostics


# -- declared conventions ------------------------------------------------------------------------------------

ACME = [
    {
        "name": "acme",
        "role": "tool",
        "when": {"attribute": "acme.kind", "equals": "tool"},
        "tool_name": "acme.tool.name",
        "arguments": "acme.tool.args",
        "result": "acme.tool.result",
        "call_id": "acme.tool.call_id",
        "error": "acme.tool.failed",
    },
    {
        "name": "acme-agent",
        "role": "run",
        "when": {"attribute": "acme.kind", "equals": "agent"},
        "agent_name": "acme.agent.name",
        "input": "acme.agent.input",
        "output": "acme.agent.output",
    },
]


def _acme_trace() -> list[SpanRecord]:
    root = span(
        "acme.run",
        0,
        100,
        attrs={
            "acme.kind": "agent",
            "acme.agent.name": "planner",
            "acme.agent.input": "plan a trip",
            "acme.agent.output": "done",
        },
    )
    ok = span(
        "acme.tool",
        1,
        2,
        root,
        attrs={
            "acme.kind": "tool",
            "acme.tool.name": "search",
            "acme.tool.args": json.dumps({"q": "Rome"}),
            "acme.tool.result": "3 hits",
            "acme.tool.call_id": "k1",
        },
    )
    failed = span(
        "acme.tool",
        3,
        4,
        root,
        attrs={
            "acme.kind": "tool",
            "acme.tool.name": "book",
            "acme.tool.args": {"hotel": "H"},
            "acme.tool.failed": True,
        },
    )
    return [root, ok, failed]


def test_declared_conventions_read_an_in_house_instrumentation():
    assert reconstruct(_acme_trace()) == []  # nothing the built-in conventions know
    (run,) = reconstruct(_acme_trace(), conventions=conventions_from_config(ACME))
    assert (run.agent_name, run.input, run.output, run.convention) == (
        "planner",
        "plan a trip",
        "done",
        "acme-agent",
    )
    assert [(c.name, dict(c.input_parameters), c.status, c.call_id) for c in run.tool_calls] == [
        ("search", {"q": "Rome"}, "ok", "k1"),
        ("book", {"hotel": "H"}, "error", None),
    ]
    assert run.tool_calls[1].sources["status"] == "acme"
    assert sorted(run.diagnostics["spans"].values()) == ["run:acme-agent", "tool:acme", "tool:acme"]


def test_a_span_name_glob_and_declared_rules_before_the_built_in_ones():
    rules = conventions_from_config(
        [{"name": "mine", "role": "tool", "when": {"span_name": "execute_tool *"}, "tool_name": "my.name"}]
    )
    root = agent("a", 0, 100)
    t = span(
        "execute_tool x",
        1,
        2,
        root,
        attrs={sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: "x", "my.name": "renamed"},
    )
    assert one([root, t]).tools_called == ["x"]
    (run,) = reconstruct([root, t], conventions=rules)
    assert run.tools_called == ["renamed"] and run.tool_calls[0].sources["name"] == "mine"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"role": "tool", "when": {"span_name": "x"}, "tool_name": "k"}, "'name' must be a non-empty string"),
        ({"name": "n", "role": "llm?", "when": {"span_name": "x"}}, "'role' must be one of"),
        ({"name": "n", "role": "tool", "tool_name": "k"}, "'when' must be a table"),
        (
            {"name": "n", "role": "tool", "when": {"attribute": "a", "span_name": "x"}, "tool_name": "k"},
            "exactly one",
        ),
        (
            {"name": "n", "role": "tool", "when": {"span_name": "x"}, "tool_name": "k", "agent_name": "a"},
            "unknown setting 'agent_name'",
        ),
        ({"name": "n", "role": "tool", "when": {"span_name": "x"}}, "needs 'tool_name'"),
        ({"name": "n", "role": "run", "when": {"span_name": "x"}, "input": 3}, "must be an attribute key"),
    ],
)
def test_a_bad_rule_is_refused_with_its_name(rule, message):
    with pytest.raises(ConventionError, match="conventions #2") as raised:
        conventions_from_config([ACME[0], rule])
    assert message in str(raised.value)


def test_an_agent_called_as_a_tool_with_no_tool_span_is_a_call_its_nested_run_executed():
    """smolagents' managed agents: the model calls the agent by name; the framework runs it as a nested AGENT
    span, with no TOOL span for the call."""
    root = span("travel_agent.run", 0, 100, attrs={sc.OI_SPAN_KIND: "AGENT"})
    ask = chat(1, 10, root, calls=[("weather_assistant", '{"task": "Cairo?"}', "c1")])
    sub = span(
        "weather_assistant.run", 11, 40, root, attrs={sc.OI_SPAN_KIND: "AGENT", sc.OI_OUTPUT_VALUE: "35C"}
    )
    sub_ask = chat(12, 15, sub, calls=[("get_weather", '{"city": "Cairo"}', "c2")])
    sub_tool = tool("get_weather", 16, 17, sub, call_id="c2")
    then = chat(41, 50, root, calls=[("convert", "{}", "c3")])
    other = tool("convert", 51, 52, root, call_id="c3")
    outer, inner = reconstruct([root, ask, sub, sub_ask, sub_tool, then, other])
    assert outer.tools_called == ["weather_assistant", "convert"] and inner.tools_called == ["get_weather"]
    managed = outer.tool_calls[0]
    assert (managed.output, managed.status, managed.call_id) == ("35C", "ok", "c1")
    assert inner.parent_run_span_id == outer.span_id
    named_otherwise = span(
        "planner.run", 11, 40, root, attrs={sc.OI_SPAN_KIND: "AGENT"}
    )  # not the agent called
    outer, _ = reconstruct(
        [root, ask, named_otherwise, chat(12, 15, named_otherwise, text="ok"), then, other]
    )
    assert outer.tools_called == ["convert"]
    assert outer.diagnostics["requests_without_execution"][0]["name"] == "weather_assistant"
