"""Readers of the instrumentation libraries' conventions, on small hand-built traces shaped as each library
writes them: MLflow's span types and JSON-encoded values, LangSmith's prompt/completion on tool spans,
Langtrace's tool calls inside message content, OpenLIT's per-step agent spans, content-off tool attributes and
root-only failures. The recorded traces of each are checked against their ground truth in test_fixtures."""

from __future__ import annotations

import json

import pytest

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import STATUS_ERROR, SpanEvent
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.reconstruct.declared import ConventionError, conventions_from_config
from tests.unit.reconstruct.test_rules import WEATHER_DEF, agent, chat, span, tool


def _json(value) -> str:
    return json.dumps(value)


def test_mlflow_span_types_and_json_encoded_values():
    root = span(
        "travel_agent",
        0,
        100,
        attrs={
            "mlflow.spanType": '"AGENT"',
            "mlflow.spanInputs": _json({"prompt": "Weather in Rome?"}),
            "mlflow.spanOutputs": '"Sunny in Rome."',
        },
    )
    answer = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                        }
                    ],
                }
            }
        ]
    }
    llm = span(
        "Completions",
        1,
        5,
        root,
        attrs={
            "mlflow.spanType": '"CHAT_MODEL"',
            "mlflow.spanOutputs": _json(answer),
            "mlflow.spanInputs": _json({"messages": [{"role": "user", "content": "Weather in Rome?"}]}),
        },
    )
    # under LangGraph the tool span has no function-name attribute: it is named after the tool
    call = span(
        "get_weather",
        6,
        7,
        root,
        attrs={
            "mlflow.spanType": '"TOOL"',
            "mlflow.spanInputs": '{"city": "Rome"}',
            "mlflow.spanOutputs": '"Rome: 27C sunny"',
            "tool_call_id": '"c1"',
        },
    )
    (run,) = reconstruct([root, llm, call])
    (made,) = run.tool_calls
    assert (run.input, run.output) == ("Weather in Rome?", "Sunny in Rome.")
    assert (made.name, made.input_parameters, made.output, made.call_id) == (
        "get_weather",
        {"city": "Rome"},
        "Rome: 27C sunny",
        "c1",
    )
    assert made.sources["name"] == "span_name" and made.sources["arguments"] == "mlflow"


def test_a_declared_convention_reads_json_encoded_values():
    (rule,) = conventions_from_config(
        [
            {
                "name": "acme",
                "role": "tool",
                "values": "json",
                "when": {"attribute": "acme.kind", "equals": "TOOL"},
                "tool_name": "acme.name",
                "arguments": "acme.in",
            }
        ]
    )
    root = agent("a", 0, 100)
    t = span("x", 1, 2, root, attrs={"acme.kind": '"TOOL"', "acme.name": '"lookup"', "acme.in": '{"q": 1}'})
    (run,) = reconstruct([root, t], conventions=[rule])
    assert [(c.name, c.input_parameters) for c in run.tool_calls] == [("lookup", {"q": 1})]
    bad = {"name": "acme", "role": "tool", "values": "yaml", "when": {"attribute": "k"}, "tool_name": "n"}
    with pytest.raises(ConventionError, match="'values' must be"):
        conventions_from_config([bad])


def test_langsmith_tool_spans_keep_arguments_in_the_prompt_and_hide_them_when_told():
    root = agent("a", 0, 100)
    result = {
        "output": {
            "content": "Athens: 29C",
            "type": "tool",
            "name": "get_weather",
            "tool_call_id": "c1",
            "status": "success",
        }
    }
    t = tool("get_weather", 1, 2, root, call_id="c1")
    t.attributes.update({sc.GEN_AI_PROMPT: '{"city": "Athens"}', sc.GEN_AI_COMPLETION: _json(result)})
    (run,) = reconstruct([root, t])
    (call,) = run.tool_calls
    assert (call.input_parameters, call.output, call.sources["arguments"]) == (
        {"city": "Athens"},
        "Athens: 29C",
        "langsmith",
    )
    hidden = tool("get_weather", 1, 2, root, call_id="c1")
    hidden.attributes.update(
        {
            sc.GEN_AI_PROMPT: "{}",
            sc.GEN_AI_COMPLETION: "{}",
            "langsmith.metadata.LANGSMITH_HIDE_INPUTS": "true",
            "langsmith.metadata.LANGSMITH_HIDE_OUTPUTS": "true",
        }
    )
    (call,) = reconstruct([root, hidden])[0].tool_calls
    assert (call.input_parameters, call.output) == (None, None)


def test_langtrace_tool_calls_inside_message_content_and_nested_tool_lists():
    app = span("travel_agent", 0, 100)
    definitions = [
        _json(
            [
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                    },
                }
            ]
        )
    ]
    completion = [
        {
            "role": "assistant",
            "content": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        }
    ]
    first = span(
        "openai.chat.completions.create",
        1,
        5,
        app,
        attrs={sc.GEN_AI_OPERATION_NAME: "chat", "gen_ai.request.tools": _json(definitions)},
        events=(
            SpanEvent(
                sc.EVENT_CONTENT_PROMPT, 1, {sc.GEN_AI_PROMPT: _json([{"role": "user", "content": "Oslo?"}])}
            ),
            SpanEvent(sc.EVENT_CONTENT_COMPLETION, 5, {sc.GEN_AI_COMPLETION: _json(completion)}),
        ),
    )
    prompt = [
        {"role": "user", "content": "Oslo?"},
        [{"id": "", "type": ""}],
        {"role": "tool", "tool_call_id": "c1", "content": "Oslo: 6C rain"},
    ]
    second = span(
        "openai.chat.completions.create",
        10,
        15,
        app,
        attrs={sc.GEN_AI_OPERATION_NAME: "chat"},
        events=(SpanEvent(sc.EVENT_CONTENT_PROMPT, 10, {sc.GEN_AI_PROMPT: _json(prompt)}),),
    )
    (run,) = reconstruct([app, first, second])
    assert [(c.name, c.input_parameters, c.output) for c in run.tool_calls] == [
        ("get_weather", {"city": "Oslo"}, "Oslo: 6C rain")
    ]
    assert [d.name for d in run.tool_definitions] == ["get_weather"]


def test_openlit_without_content_names_parallel_calls_in_comma_joined_attributes():
    app = span("travel_agent", 0, 100)
    llm = span(
        "chat gpt-4o-mini",
        1,
        5,
        app,
        attrs={
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.GEN_AI_TOOL_NAME: "get_weather, get_weather, convert_currency",
            sc.GEN_AI_TOOL_CALL_ID: "c1, c2, c3",
            "gen_ai.tool.args": '{"city": "Tokyo"}, {"city": "Lima"}, {"amount": 100, "to": "EUR"}',
        },
    )
    (run,) = reconstruct([app, llm])
    assert [(c.name, c.call_id, c.input_parameters) for c in run.tool_calls] == [
        ("get_weather", "c1", {"city": "Tokyo"}),
        ("get_weather", "c2", {"city": "Lima"}),
        ("convert_currency", "c3", {"amount": 100, "to": "EUR"}),
    ]


def test_openlit_step_spans_are_one_run_and_a_fresh_failure_id_still_finds_its_request():
    outer = agent("travel_agent", 0, 100)
    step1 = agent("agent", 1, 10, outer)
    ask = chat(2, 9, step1, calls=[("get_weather", '{"city": "Atlantis"}', "call_1")])
    failed = tool(
        "get_weather",
        11,
        12,
        outer,
        args={"city": "Atlantis"},
        call_id="0f3e0c6a-uuid-of-the-failure",
        error="Unknown city: Atlantis",
    )
    step2 = agent("agent", 13, 20, outer)
    final = chat(14, 19, step2, text="Atlantis is not a city I know.")
    runs = reconstruct([outer, step1, ask, failed, step2, final])
    assert [(r.agent_name, r.tools_called) for r in runs] == [("travel_agent", ["get_weather"])]
    (call,) = runs[0].tool_calls
    assert (call.status, call.llm_turn, call.sources["llm_turn"]) == ("error", ask.span_id, "request:gen_ai")
    assert runs[0].output == "Atlantis is not a city I know."


@pytest.mark.parametrize("tool_name", ["get_weather", "lookup_city_forecast"])
def test_openlit_without_content_a_failed_call_takes_its_arguments_from_the_request(tool_name):
    """Content off: the failed tool span has a fresh UUID and no arguments; the model's request recorded both
    the model's id and the arguments (OpenLIT's comma-joined attributes). Parallel calls of one tool: the one
    that ran under its own id is matched by it, the failure takes the request no execution answered."""
    outer = agent("travel_agent", 0, 100)
    step = agent("agent", 1, 10, outer)
    ask = span(
        "chat gpt-4o-mini",
        2,
        9,
        step,
        attrs={
            sc.GEN_AI_OPERATION_NAME: "chat",
            sc.GEN_AI_TOOL_NAME: f"{tool_name}, {tool_name}",
            sc.GEN_AI_TOOL_CALL_ID: "call_0, call_1",
            "gen_ai.tool.args": '{"city": "Oslo"}, {"city": "Atlantis"}',
        },
    )
    ok = tool(tool_name, 11, 12, outer, call_id="call_0")
    failed = tool(tool_name, 11, 13, outer, call_id="7d1c5a2e-fresh-uuid", error="Unknown city: Atlantis")
    (run,) = reconstruct([outer, step, ask, ok, failed, agent("agent", 14, 20, outer)])
    assert sorted((c.input_parameters["city"], c.status, c.call_id) for c in run.tool_calls) == [
        ("Atlantis", "error", "7d1c5a2e-fresh-uuid"),
        ("Oslo", "ok", "call_0"),
    ]
    assert {c.sources["arguments"] for c in run.tool_calls} == {"request:gen_ai.tool"}
    # a recorded argument that differs from the request's is another call: never given the request's
    other = tool(tool_name, 11, 13, outer, args={"city": "Paris"}, call_id="7d1c5a2e-fresh-uuid", error="x")
    (run,) = reconstruct([outer, step, ask, ok, other])
    assert [c.input_parameters["city"] for c in run.tool_calls if c.status == "error"] == ["Paris"]


def test_openlit_a_delegating_tool_whose_sub_agent_is_recorded_as_steps_is_a_run():
    """OpenLIT under LangGraph records the sub-agent a tool runs as step spans (an ``invoke_agent`` around
    each model call) and its tools directly under the delegating tool span: the sub-agent's
    calls are its own run's."""
    outer = agent("travel_agent", 0, 100)
    step1 = agent("agent", 1, 8, outer)
    ask = chat(2, 7, step1, calls=[("ask_assistant", '{"question": "Paris?"}', "d0")])
    delegate = tool("ask_assistant", 10, 40, outer, args={"question": "Paris?"}, call_id="d0", result="18C")
    sub1 = agent("agent", 11, 18, delegate)
    sub_ask = chat(12, 17, sub1, calls=[("get_weather", '{"city": "Paris"}', "s0")])
    sub_ran = tool("get_weather", 19, 20, delegate, args={"city": "Paris"}, call_id="s0", result="18C")
    sub2 = agent("agent", 21, 30, delegate)
    sub_answer = chat(22, 29, sub2, text="18C")
    step2 = agent("agent", 41, 50, outer)
    answer = chat(42, 49, step2, text="Paris is 18C.")
    outer_run, sub_run = reconstruct(
        [outer, step1, ask, delegate, sub1, sub_ask, sub_ran, sub2, sub_answer, step2, answer]
    )
    assert (outer_run.tools_called, outer_run.output) == (["ask_assistant"], "Paris is 18C.")
    assert (sub_run.tools_called, sub_run.parent_run_span_id, sub_run.span_id) == (
        ["get_weather"],
        outer.span_id,
        delegate.span_id,
    )
    assert sub_run.tool_calls[0].llm_turn == sub_ask.span_id
    # a tool that only called a model (no tool of its own ran inside it) is no agent: its
    # model call is internal
    plain = tool("summarise", 10, 40, outer, call_id="d0")
    summary_step = agent("agent", 11, 18, plain)
    (run,) = reconstruct(
        [
            outer,
            step1,
            chat(2, 7, step1, calls=[("summarise", "{}", "d0")]),
            plain,
            summary_step,
            chat(12, 17, summary_step, text="short"),
        ]
    )
    assert run.tools_called == ["summarise"]


def test_a_sub_agent_running_its_own_tools_stays_a_run_of_its_own():
    outer = agent("travel_agent", 0, 100)
    sub = agent("weather", 1, 20, outer)
    ask = chat(2, 5, sub, calls=[("get_weather", '{"city": "Cairo"}', "s1")])
    ran = tool("get_weather", 6, 7, sub, args={"city": "Cairo"}, call_id="s1")
    convert = tool("convert", 30, 31, outer)
    runs = reconstruct([outer, sub, ask, ran, chat(8, 9, sub, text="Hot."), convert])
    assert [(r.agent_name, r.tools_called) for r in runs] == [
        ("travel_agent", ["convert"]),
        ("weather", ["get_weather"]),
    ]


def test_a_run_that_died_on_its_last_requested_call_failed_that_call():
    app = span(
        "travel_agent", 0, 100, status=STATUS_ERROR, message="UnknownCityError: Unknown city: Atlantis"
    )
    ask = chat(1, 5, app, calls=[("get_weather", '{"city": "Atlantis"}', "c1")])
    (run,) = reconstruct([app, ask])
    (call,) = run.tool_calls
    assert (run.status, call.status, call.sources["status"]) == ("error", "error", "run_error")
    assert call.error == "UnknownCityError: Unknown city: Atlantis"
    healthy = span("travel_agent", 0, 100)
    (call,) = reconstruct([healthy, chat(1, 5, healthy, calls=[("get_weather", '{"city": "Rome"}', "c1")])])[
        0
    ].tool_calls
    assert (call.status, call.sources["status"]) == ("ok", "default")


@pytest.mark.parametrize("inner", [0, 1, 3])
def test_a_run_that_died_on_a_call_its_model_turn_recorded_with_nested_spans(inner):
    """Langtrace over LangGraph records one model turn as nested chat-model spans (``invoke`` > ``generate`` >
    ``asdict``...), the request on the outermost; the last of them to start is not the turn that asked."""
    app = span(
        "travel_agent", 0, 100, status=STATUS_ERROR, message="UnknownCityError: Unknown city: Atlantis"
    )
    earlier = chat(1, 5, app, calls=[("get_weather", '{"city": "Rome"}', "c0")], text=None)
    fed = [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c0", "response": "Rome: 27C"}]}]
    ask = chat(10, 40, app, calls=[("lookup_city", '{"city": "Atlantis"}', "c1")], history=fed)
    nested = [chat(11 + k, 39 - k, ask if k == 0 else None, history=fed) for k in range(inner)]
    parent = ask
    for n in nested:  # each nested in the one before
        n.parent_span_id = parent.span_id
        parent = n
    (run,) = reconstruct([app, earlier, ask, *nested])
    assert [(c.name, c.status, c.sources["status"]) for c in run.tool_calls] == [
        ("get_weather", "ok", "history"),
        ("lookup_city", "error", "run_error"),
    ]


def test_a_tool_span_named_after_its_call_method_and_dspy_s_finish():
    from agentotel_eval import semconv as sc2
    from tests.unit.reconstruct.test_rules import scoped

    root = span("ReAct.forward", 0, 100, attrs={sc2.OI_SPAN_KIND: "AGENT"})
    weather = span(
        "get_weather.__call__",
        1,
        2,
        root,
        attrs={sc2.OI_SPAN_KIND: "TOOL", sc2.OI_INPUT_VALUE: '{"city": "Paris"}'},
    )
    finish = span("finish.__call__", 3, 4, root, attrs={sc2.OI_SPAN_KIND: "TOOL", sc2.OI_INPUT_VALUE: "{}"})
    (run,) = reconstruct(scoped([root, weather, finish], "openinference.instrumentation.dspy"))
    assert run.tools_called == ["get_weather"]  # finish ends DSPy's loop: plumbing, only under DSPy
    (plain,) = reconstruct([root, weather, finish])
    assert plain.tools_called == ["get_weather", "finish"]


def test_a_declared_convention_reads_a_field_from_a_span_event():
    rules = conventions_from_config(
        [
            {
                "name": "acme-llm",
                "role": "llm",
                "when": {"attribute": "acme.kind", "equals": "llm"},
                "tool_calls": "event:acme.answer:acme.calls",
            },
            {"name": "acme-app", "role": "run", "when": {"span_name": "app"}},
        ]
    )
    app = span("app", 0, 100)
    calls = [{"id": "c1", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}]
    llm = span(
        "model",
        1,
        5,
        app,
        attrs={"acme.kind": "llm"},
        events=(SpanEvent("acme.answer", 5, {"acme.calls": _json(calls)}),),
    )
    (run,) = reconstruct([app, llm], conventions=rules)
    assert [(c.name, c.input_parameters, c.call_id) for c in run.tool_calls] == [("lookup", {"q": "x"}, "c1")]
    bad = {"name": "b", "role": "llm", "when": {"attribute": "k"}, "tool_calls": "event:only-a-name"}
    with pytest.raises(ConventionError, match="event:<event name>:<attribute>"):
        conventions_from_config([bad])


_TASK = {"task": "Weather in Rome", "coworker": "Weather expert"}
_DELEGATE_DEF = {
    "type": "function",
    "name": "delegate_work_to_coworker",
    "parameters": {
        "type": "object",
        "properties": {"task": {"type": "string"}, "coworker": {"type": "string"}},
    },
}


def _oi_tool(name: str, start: int, end: int, parent, args=_TASK):
    return span(
        name,
        start,
        end,
        parent,
        attrs={
            sc.OI_SPAN_KIND: "TOOL",
            sc.OI_TOOL_NAME: name,
            "input.value": _json(args),
            "output.value": "Rome: 27C",
        },
    )


def _delegating_run():
    root = agent("crew", 0, 100)
    asked = chat(
        1, 9, root, calls=[("delegate_work_to_coworker", _json(_TASK), None)], definitions=(_DELEGATE_DEF,)
    )
    return root, [root, asked, chat(60, 70, root, text="27C", definitions=(_DELEGATE_DEF,))]


@pytest.mark.parametrize("shape", ["display", "siblings", "class_outside", "display_outside"])
def test_a_delegation_recorded_under_a_display_name_and_a_class_name_is_one_call(shape):
    """The model calls delegate_work_to_coworker; the spans say "Delegate work to coworker", sometimes beside
    (or around, or inside) a second record under the tool's class name with the same arguments."""
    root, spans = _delegating_run()
    if shape == "display":
        spans.append(_oi_tool("Delegate work to coworker", 10, 50, root))
    elif shape == "siblings":
        spans += [
            _oi_tool("DelegateWorkTool", 10, 50, root),
            _oi_tool("Delegate work to coworker", 11, 49, root),
        ]
    else:
        outer_name, inner_name = (
            ("DelegateWorkTool", "Delegate work to coworker")
            if shape == "class_outside"
            else ("Delegate work to coworker", "DelegateWorkTool")
        )
        outer = _oi_tool(outer_name, 10, 50, root)
        spans += [outer, _oi_tool(inner_name, 11, 49, outer)]
    (run,) = reconstruct(spans)
    (call,) = run.tool_calls
    assert (call.name, call.input_parameters, call.output) == (
        "delegate_work_to_coworker",
        _TASK,
        "Rome: 27C",
    )
    assert call.sources["name"].startswith("request:")


def test_same_arguments_at_the_same_time_under_two_requested_names_stay_two_calls():
    root = agent("a", 0, 100)
    args = _json({"city": "Rome"})
    asked = chat(1, 9, root, calls=[("get_weather", args, "c1"), ("get_time", args, "c2")], definitions=())
    weather, clock = (
        tool("get_weather", 10, 50, root, args={"city": "Rome"}),
        tool("get_time", 11, 49, root, args={"city": "Rome"}),
    )
    (run,) = reconstruct([root, asked, weather, clock])
    assert run.tools_called == ["get_weather", "get_time"]
    # with no request recorded (content off) nothing tells a second record from a second call: both stay
    (run,) = reconstruct([root, weather, clock])
    assert run.tools_called == ["get_weather", "get_time"]


def _component(name: str, start: int, end: int, parent=None, kind: str = "CHAIN", **attrs):
    return span(name, start, end, parent, attrs={sc.OI_SPAN_KIND: kind, **attrs})


def _tool_message(result: str, city: str, call_id: str, error: bool) -> str:
    return (
        "ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result="
        + repr(result)
        + f", origin=ToolCall(tool_name='get_weather', arguments={{'city': {city!r}}}, id={call_id!r}, "
        + f"extra=None), error={error})], _name=None, _meta={{}})"
    )


def test_a_pipeline_instrumentation_with_calls_only_in_the_generator_and_results_in_a_step_output():
    """OpenInference's Haystack components: the chat generator (an LLM span) holds the calls, with no id; the
    component that ran them is a plain step whose JSON output holds each result as a repr naming its call."""
    root = _component("Pipeline.run", 0, 100)
    loop = _component("Agent.run", 1, 99, root)
    prefix = "llm.output_messages.0.message.tool_calls"
    asked = _component(
        "OpenAIChatGenerator.run",
        2,
        10,
        loop,
        kind="LLM",
        **{
            f"{prefix}.0.tool_call.function.name": "get_weather",
            f"{prefix}.0.tool_call.function.arguments": _json({"city": "Atlantis"}),
            f"{prefix}.1.tool_call.function.name": "get_weather",
            f"{prefix}.1.tool_call.function.arguments": _json({"city": "Athens"}),
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Weather?",
        },
    )
    # the step lists the results in the other order: each is matched to its call by name and arguments
    ran = _component(
        "ToolInvoker.run",
        11,
        20,
        loop,
        **{
            sc.OI_OUTPUT_VALUE: _json(
                {
                    "tool_messages": [
                        _tool_message('Athens: 29C "sunny"', "Athens", "call_2", False),
                        _tool_message("No city named Atlantis", "Atlantis", "call_1", True),
                    ],
                    "state": "State(...)",
                }
            )
        },
    )
    answered = _component(
        "OpenAIChatGenerator.run",
        21,
        30,
        loop,
        kind="LLM",
        **{
            "llm.output_messages.0.message.content": "Athens is sunny.",
            "llm.output_messages.0.message.role": "assistant",
        },
    )
    (run,) = reconstruct([root, loop, asked, ran, answered])
    got = [(c.name, c.input_parameters, c.output, c.status, c.call_id) for c in run.tool_calls]
    assert got == [
        ("get_weather", {"city": "Atlantis"}, "No city named Atlantis", "error", "call_1"),
        ("get_weather", {"city": "Athens"}, 'Athens: 29C "sunny"', "ok", "call_2"),
    ]
    assert {c.sources["status"] for c in run.tool_calls} == {"step_output"}
    # a step that answers nothing asked (another tool, other arguments) gives no result
    ran.attributes[sc.OI_OUTPUT_VALUE] = _json(
        {"tool_messages": [_tool_message("x", "Paris", "call_9", True)]}
    )
    (run,) = reconstruct([root, loop, asked, ran, answered])
    assert [(c.output, c.status) for c in run.tool_calls] == [(None, "ok"), (None, "ok")]


def test_looking_for_a_twin_keeps_an_unrequested_calls_arguments_bound_to_its_schema():
    """The twin check normalises an execution's arguments; it must do so with the tool's schema, as the call
    is then built from that same normalisation (a bare "abc" is lookup's q)."""
    definitions = (
        {
            "type": "function",
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
        WEATHER_DEF,
    )
    root = agent("a", 0, 100)
    asked = chat(1, 9, root, calls=[("get_weather", '{"city": "Rome"}', "c1")], definitions=definitions)
    weather = tool("get_weather", 10, 20, root, args={"city": "Rome"}, call_id="c1", result="sunny")
    unasked = span(
        "lookup",
        12,
        18,
        root,
        attrs={
            sc.GEN_AI_OPERATION_NAME: "execute_tool",
            sc.GEN_AI_TOOL_NAME: "lookup",
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: '"abc"',
        },
    )
    (run,) = reconstruct([root, asked, weather, unasked])
    assert [(c.name, c.input_parameters) for c in run.tool_calls] == [
        ("get_weather", {"city": "Rome"}),
        ("lookup", {"q": "abc"}),
    ]


def _oi_agents_tool(name: str, start: int, parent, args: dict | None, output: str | None):
    """A tool span of OpenInference's OpenAI Agents instrumentor: no call id, arguments
    and result as values."""
    attrs = {sc.OI_SPAN_KIND: "TOOL", sc.OI_TOOL_NAME: name}
    attrs[sc.OI_INPUT_VALUE] = _json(args) if args is not None else "__REDACTED__"
    attrs[sc.OI_OUTPUT_VALUE] = output if output is not None else "__REDACTED__"
    return span(name, start, start + 5, parent, attrs=attrs)


@pytest.mark.parametrize(
    ("tool_name", "output", "status", "text"),
    [
        (
            "get_weather",
            {"type": "text", "text": "Error executing tool get_weather: Unknown city: Atlantis"},
            "error",
            "Error executing tool get_weather: Unknown city: Atlantis",
        ),
        (
            "forecast.lookup",
            {"type": "text", "text": "Error executing tool forecast.lookup: timeout"},
            "error",
            "Error executing tool forecast.lookup: timeout",
        ),
        ("get_weather", {"type": "text", "text": "Rome: 27C"}, "ok", "Rome: 27C"),
        (
            "get_weather",
            {"content": [{"type": "text", "text": "No forecast for Atlantis"}], "isError": True},
            "error",
            "No forecast for Atlantis",
        ),
        (
            "get_weather",
            {"content": [{"type": "text", "text": "Rome: 27C"}], "isError": False, "structuredContent": None},
            "ok",
            "Rome: 27C",
        ),
    ],
)
def test_an_mcp_result_as_a_content_part_or_a_call_result(tool_name, output, status, text):
    """The OpenAI Agents SDK records an MCP tool's result as one text content part (a raised tool's is MCP's
    "Error executing tool ..."); other instrumentations record the CallToolResult with
    its ``isError`` flag."""
    root = span("Agent workflow", 0, 100, attrs={sc.OI_SPAN_KIND: "AGENT"})
    (run,) = reconstruct([root, _oi_agents_tool(tool_name, 10, root, {"city": "x"}, _json(output))])
    (call,) = run.tool_calls
    assert (call.status, call.output) == (status, text)
    if status == "error":
        assert call.error == text
    (run,) = reconstruct(
        [root, _oi_agents_tool(tool_name, 10, root, {"city": "x"}, _json(output))], text_failures=False
    )
    assert run.tool_calls[0].status == (
        "error" if output.get("isError") else "ok"
    )  # the flag is no text signal


def test_hidden_outputs_a_call_takes_its_id_and_failure_from_the_next_request():
    """OpenInference's hidden outputs: no request recorded, the tool span's result hidden and no call id on
    it; the next model call's input repeats each call (name, arguments, id) and the tool
    message fed back for it."""
    root = span("travel_agent", 0, 100, attrs={sc.OI_SPAN_KIND: "AGENT"})
    atl = _oi_agents_tool("get_weather", 10, root, {"city": "Atlantis"}, None)
    oslo = _oi_agents_tool("get_weather", 11, root, {"city": "Oslo"}, None)
    calls = [
        {
            "id": "c2",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        },
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Atlantis"}'},
        },
    ]
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c2", "content": '{"type": "text", "text": "Oslo: 3C"}'},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "Error executing tool get_weather: Unknown city: Atlantis",
        },
    ]
    model = span(
        "generation",
        20,
        30,
        root,
        attrs={sc.OI_SPAN_KIND: "LLM", sc.OI_INPUT_VALUE: _json(history), sc.OI_OUTPUT_VALUE: "__REDACTED__"},
    )
    first = span(
        "generation",
        1,
        9,
        root,
        attrs={
            sc.OI_SPAN_KIND: "LLM",
            sc.OI_INPUT_VALUE: _json(history[:1]),
            sc.OI_OUTPUT_VALUE: "__REDACTED__",
        },
    )
    (run,) = reconstruct([root, first, atl, oslo, model])
    got = [(c.input_parameters["city"], c.call_id, c.status) for c in run.tool_calls]
    assert got == [("Atlantis", "c1", "error"), ("Oslo", "c2", "ok")]
    assert run.tool_calls[0].sources["call_id"] == "history"
    # arguments hidden too: nothing tells the two calls apart, nothing is given to either
    (run,) = reconstruct([root, first, _oi_agents_tool("get_weather", 10, root, None, None), model])
    assert [(c.call_id, c.status, c.input_parameters) for c in run.tool_calls] == [(None, "ok", None)]


def _command(goto, tool_name: str, call_id: str) -> dict:
    """What LangGraph.js serialises for a handoff tool's ``Command`` (the swarm's and supervisor's)."""
    message = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain_core", "messages", "ToolMessage"],
        "kwargs": {
            "content": f"Successfully transferred to {goto}",
            "name": tool_name,
            "tool_call_id": call_id,
        },
    }
    return {"lg_name": "Command", "update": {"messages": [message], "activeAgent": goto}, "goto": [goto]}


@pytest.mark.parametrize("tool_name", ["transfer_to_weather_agent", "escalate", "route"])
def test_a_tool_returning_a_graph_command_is_a_handoff_whatever_its_name(tool_name):
    """LangGraph's handoff tools (swarm, supervisor) return a ``Command`` that moves control to another agent:
    a handoff, recorded apart with its target, under OpenInference (``{"output": <Command>}``) as under
    OpenLLMetry-JS (the span named after the tool's class; the tool message inside the command names it)."""
    root = span("LangGraph", 0, 100, attrs={sc.OI_SPAN_KIND: "CHAIN"})
    prefix = "llm.output_messages.0.message.tool_calls.0.tool_call"
    ask = span(
        "ChatOpenAI",
        1,
        9,
        root,
        attrs={
            sc.OI_SPAN_KIND: "LLM",
            f"{prefix}.id": "h1",
            f"{prefix}.function.name": tool_name,
            f"{prefix}.function.arguments": "{}",
        },
    )
    oi = span(
        tool_name,
        10,
        11,
        root,
        attrs={
            sc.OI_SPAN_KIND: "TOOL",
            sc.OI_TOOL_NAME: tool_name,
            sc.OI_INPUT_VALUE: "{}",
            sc.OI_OUTPUT_VALUE: _json({"output": _command("weather_agent", tool_name, "h1")}),
        },
    )
    ran = span(
        "get_weather",
        20,
        21,
        root,
        attrs={
            sc.OI_SPAN_KIND: "TOOL",
            sc.OI_TOOL_NAME: "get_weather",
            sc.OI_INPUT_VALUE: '{"city": "Nairobi"}',
            sc.OI_OUTPUT_VALUE: "Nairobi: 24C",
        },
    )
    (run,) = reconstruct([root, ask, oi, ran])
    assert run.tools_called == ["get_weather"]
    assert [(h.name, h.to_agent) for h in run.handoffs] == [(tool_name, "weather_agent")]
    traceloop = span(
        "execute_tool DynamicStructuredTool",
        10,
        11,
        root,
        attrs={
            sc.GEN_AI_OPERATION_NAME: "execute_tool",
            sc.TRACELOOP_SPAN_KIND: "tool",
            sc.TRACELOOP_ENTITY_NAME: "DynamicStructuredTool",
            sc.TRACELOOP_ENTITY_INPUT: '{"args": ["{}"]}',
            sc.TRACELOOP_ENTITY_OUTPUT: _json(_command("weather_agent", tool_name, "h1")),
        },
    )
    (run,) = reconstruct([root, ask, traceloop, ran])
    assert run.tools_called == ["get_weather"]
    assert [(h.name, h.to_agent) for h in run.handoffs] == [(tool_name, "weather_agent")]
    # Python's repr of a Command says the same
    python = span(
        tool_name,
        10,
        11,
        root,
        attrs={
            sc.OI_SPAN_KIND: "TOOL",
            sc.OI_TOOL_NAME: tool_name,
            sc.OI_OUTPUT_VALUE: "Command(graph='__parent__', update={'x': 1}, goto='weather_agent')",
        },
    )
    (run,) = reconstruct([root, ask, python, ran])
    assert run.tools_called == ["get_weather"] and run.handoffs[0].to_agent == "weather_agent"


def test_a_tool_named_like_a_handoff_that_returns_a_value_is_a_call():
    root = span("LangGraph", 0, 100, attrs={sc.OI_SPAN_KIND: "CHAIN"})
    ran = span(
        "transfer_to_savings",
        10,
        11,
        root,
        attrs={
            sc.OI_SPAN_KIND: "TOOL",
            sc.OI_TOOL_NAME: "transfer_to_savings",
            sc.OI_INPUT_VALUE: '{"amount": 5}',
            sc.OI_OUTPUT_VALUE: _json({"output": {"status": "Command accepted", "goto": "ledger"}}),
        },
    )
    (run,) = reconstruct([root, ran])
    assert run.tools_called == ["transfer_to_savings"] and run.handoffs == ()


def _li_step(name: str, start: int, end: int, parent, tool: str, args: dict, call_id: str | None):
    """A LlamaIndex own-OpenTelemetry span that runs a tool call (its input event: the ``ToolCall`` repr)."""
    repr_ = f"ToolCall(tool_name={tool!r}, tool_kwargs={args!r}, tool_id={call_id!r})"
    return span(
        name,
        start,
        end,
        parent,
        attrs={"llamaindex.step.input_event": "ToolCall", "llamaindex.step.input_summary": repr_},
    )


@pytest.mark.parametrize("inner_tool", ["get_weather", "lookup"])
def test_calls_with_ids_of_their_own_inside_a_tool_are_a_sub_agent_s(inner_tool):
    """LlamaIndex's own OpenTelemetry records no model call as such: a sub-agent a tool ran shows as tool
    spans inside the tool's, with call ids a model gave them. They are the sub-agent's calls, not the tool's
    internals; the same call recorded twice (same id) or a helper (no id) stays one call."""
    root = span("FunctionAgent.run", 0, 100)
    outer = _li_step(
        "BaseWorkflowAgent.call_tool", 10, 60, root, "ask_assistant", {"question": "Paris?"}, "d0"
    )
    again = _li_step("FunctionTool.acall", 11, 59, outer, "ask_assistant", {"question": "Paris?"}, "d0")
    sub = span("FunctionAgent.run", 12, 58, again)
    inner = _li_step("BaseWorkflowAgent.call_tool", 20, 30, sub, inner_tool, {"city": "Paris"}, "s0")
    inner_again = _li_step("FunctionTool.acall", 21, 29, inner, inner_tool, {"city": "Paris"}, "s0")
    after = _li_step("BaseWorkflowAgent.call_tool", 70, 80, root, "convert", {"amount": 5}, "d1")
    outer_run, sub_run = reconstruct([root, outer, again, sub, inner, inner_again, after])
    assert outer_run.tools_called == ["ask_assistant", "convert"]
    assert (sub_run.span_id, sub_run.parent_run_span_id, sub_run.tools_called) == (
        sub.span_id,
        root.span_id,
        [inner_tool],
    )
    helper = _li_step("FunctionTool.acall", 21, 29, again, "cache_lookup", {"k": 1}, None)
    (run,) = reconstruct([root, outer, again, helper, after])
    assert run.tools_called == ["ask_assistant", "convert"]


def _crewai_tool(name: str, start: int, end: int, parent, args: dict, result: str):
    tool_span = span(
        f"{name}.run",
        start,
        end,
        parent,
        attrs={
            sc.OI_SPAN_KIND: "TOOL",
            sc.OI_TOOL_NAME: name,
            sc.OI_INPUT_VALUE: _json(args),
            sc.OI_OUTPUT_VALUE: result,
        },
    )
    tool_span.scope_name = "openinference.instrumentation.crewai"
    return tool_span


@pytest.mark.parametrize(
    ("display", "offered"),
    [
        ("Delegate work to coworker", "delegate_work_to_coworker"),
        ("Ask question to coworker", "ask_question_to_coworker"),
        ("SearchTheWeb", "search_the_web"),
    ],
)
def test_crewai_a_coworker_s_calls_inside_a_delegation_and_the_names_the_model_knows(display, offered):
    """CrewAI's OpenInference wrappers record no model call: a coworker that a delegation tool ran shows as
    tool spans inside it. Another tool with other arguments inside a tool is another call, made by the agent
    that ran there; CrewAI offers a tool to the model under its snake-case name."""
    root = span("Crew.kickoff", 0, 100, attrs={sc.OI_SPAN_KIND: "CHAIN"})
    agent_span = span("Travel assistant._execute_core", 1, 99, root, attrs={sc.OI_SPAN_KIND: "AGENT"})
    delegation = _crewai_tool(
        display, 10, 50, agent_span, {"task": "Weather in Paris?", "coworker": "Weather"}, "Paris: 18C"
    )
    inner = _crewai_tool("get_weather", 20, 21, delegation, {"city": "Paris"}, "Paris: 18C")
    after = _crewai_tool("convert_currency", 60, 61, agent_span, {"amount": 5}, "4.6 EUR")
    outer, coworker = reconstruct([root, agent_span, delegation, inner, after])
    assert outer.tools_called == [offered, "convert_currency"]
    assert outer.tool_calls[0].sources["name"] == "openinference:model_name"
    assert (coworker.tools_called, coworker.parent_run_span_id, coworker.span_id) == (
        ["get_weather"],
        agent_span.span_id,
        delegation.span_id,
    )
    # the same call recorded again inside (same arguments) stays one call; outside CrewAI a name is kept as is
    twin = _crewai_tool(
        "delegate_work",
        20,
        21,
        delegation,
        {"task": "Weather in Paris?", "coworker": "Weather"},
        "Paris: 18C",
    )
    (run,) = reconstruct([root, agent_span, delegation, twin])
    assert run.tools_called == [offered]
    delegation.scope_name = twin.scope_name = "openinference.instrumentation.other"
    (run,) = reconstruct([root, agent_span, delegation, twin])
    assert run.tools_called == [display]
