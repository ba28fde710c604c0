"""Calls recorded only in a conversation a step wrote out whole (OpenInference's Haystack instrumentor around
an agent run on its own: no LLM span, no tool span), and results read back from the agent step around the
model calls. The recorded trace is checked against its ground truth in test_fixtures; here the rule meets
variants of it: other tool names, arguments and error texts, results in another order or without call ids,
OpenAI-shaped messages."""

from __future__ import annotations

import json

import pytest

from agentotel_eval import semconv as sc
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.reconstruct.messages import parse_messages
from agentotel_eval.reconstruct.reprs import ReprCall, ReprResult, parse_message_repr
from tests.support.fixture_traces import fixtures
from tests.unit.reconstruct.test_rules import span

USER = (
    "ChatMessage(_role=<ChatRole.USER: 'user'>, _content=[TextContent(text={text!r})], "
    "_name=None, _meta={{}})"
)


def _user(text: str) -> str:
    return USER.format(text=text)


def _asked(*calls: tuple[str, dict, str | None]) -> str:
    parts = ", ".join(
        f"ToolCall(tool_name={n!r}, arguments={a!r}, id={i!r}, extra=None)" for n, a, i in calls
    )
    return (
        f"ChatMessage(_role=<ChatRole.ASSISTANT: 'assistant'>, _content=[{parts}], _name=None, "
        "_meta={'model': 'm', 'finish_reason': 'tool_calls', 'usage': {'prompt_tokens': 1}})"
    )


def _answered(result: str, name: str, args: dict, call_id: str | None, error: bool = False) -> str:
    return (
        f"ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult(result={result!r}, "
        f"origin=ToolCall(tool_name={name!r}, arguments={args!r}, id={call_id!r}, extra=None), "
        f"error={error})], _name=None, _meta={{}})"
    )


def _said(text: str) -> str:
    return (
        f"ChatMessage(_role=<ChatRole.ASSISTANT: 'assistant'>, _content=[TextContent(text={text!r})], "
        "_name=None, _meta={'finish_reason': 'stop'})"
    )


def _agent_step(messages: list[str], prompt: str, start: int = 1, end: int = 99, parent=None, **attrs):
    return span(
        "Agent.run",
        start,
        end,
        parent,
        attrs={
            sc.OI_SPAN_KIND: "CHAIN",
            sc.OI_INPUT_VALUE: json.dumps({"messages": [_user(prompt)]}),
            sc.OI_OUTPUT_VALUE: json.dumps({"messages": messages, "step_count": 2}),
            **attrs,
        },
    )


def test_a_message_repr_is_read_as_data():
    message = parse_message_repr(_asked(("lookup", {"q": "x(1)", "n": 2}, "c1")))
    assert message is not None and message.role == "assistant"
    assert message.calls == (ReprCall("lookup", {"q": "x(1)", "n": 2}, "c1"),)
    tool = parse_message_repr(_answered("Error: no", "lookup", {"q": "x"}, None, True))
    assert tool is not None and tool.results == (ReprResult("lookup", {"q": "x"}, None, "Error: no", True),)
    assert parse_message_repr(_user("hi")).texts == ("hi",)
    # cut, foreign or code: nothing, and nothing runs
    assert parse_message_repr(_asked(("lookup", {}, "c1"))[:40]) is None
    assert parse_message_repr("ChatMessage(_role=__import__('os').system('true'), _content=[])") is None
    assert parse_message_repr({"role": "user"}) is None
    # inside the JSON a step records, the reprs are messages like any other
    (user, asked) = parse_messages(
        json.dumps({"messages": [_user("hi"), _asked(("lookup", {"q": 1}, "c1"))]})
    )
    assert (user.role, user.texts, asked.role, asked.tool_calls[0].name) == (
        "user",
        ["hi"],
        "assistant",
        "lookup",
    )


def test_the_recorded_haystack_agent_step_is_a_run_whose_calls_are_its_conversation():
    (fx,) = [f for f in fixtures() if f.name == "haystack__openinference-pipeline__parallel"]
    (run,) = reconstruct(fx.spans())
    assert (run.span_name, run.convention) == ("Agent.run", "transcript")
    assert run.input == "Weather in Tokyo and Lima, and convert 100 USD to EUR."
    assert run.output == "Tokyo and Lima are mild; 100 USD is 92 EUR."
    got = [(c.name, c.input_parameters, c.output, c.status, c.call_id, c.llm_turn) for c in run.tool_calls]
    assert got == [
        ("get_weather", {"city": "Tokyo"}, "Tokyo: 20C clear", "ok", "call_parallel_0_0", None),
        ("get_weather", {"city": "Lima"}, "Lima: 17C overcast", "ok", "call_parallel_0_1", None),
        (
            "convert_currency",
            {"amount": 100, "from_currency": "USD", "to_currency": "EUR"},
            "92.0 EUR",
            "ok",
            "call_parallel_0_2",
            None,
        ),
    ]
    assert {c.sources["name"] for c in run.tool_calls} == {"request:transcript"}
    assert {c.sources["result"] for c in run.tool_calls} == {"transcript"}


@pytest.mark.parametrize("tool_name", ["weather_lookup", "transfer_to_savings", "search web"])
def test_a_conversation_of_calls_with_failures_in_any_order(tool_name):
    """Results are found by call id whatever their order; ``error=True`` and an error
    text both fail a call."""
    messages = [
        _user("Weather in Atlantis, Oslo and Lima?"),
        _asked(
            (tool_name, {"city": "Atlantis"}, "k1"),
            (tool_name, {"city": "Oslo"}, "k2"),
            (tool_name, {"city": "Lima"}, "k3"),
        ),
        _answered("Lima: 17C", tool_name, {"city": "Lima"}, "k3"),
        _answered("No such place: Atlantis", tool_name, {"city": "Atlantis"}, "k1", error=True),
        _answered("Error: the weather service timed out", tool_name, {"city": "Oslo"}, "k2"),
        _said("Lima is 17C; the others failed."),
    ]
    root = span(
        "Pipeline.run",
        0,
        100,
        attrs={sc.OI_SPAN_KIND: "CHAIN", sc.OI_OUTPUT_VALUE: json.dumps({"agent": {"messages": messages}})},
    )
    step = _agent_step(messages, "Weather in Atlantis, Oslo and Lima?", parent=root)
    (run,) = reconstruct([root, step])
    assert run.span_id == step.span_id
    got = [(c.name, c.input_parameters["city"], c.status, c.output) for c in run.tool_calls]
    assert got == [
        (tool_name, "Atlantis", "error", "No such place: Atlantis"),
        (tool_name, "Oslo", "error", "Error: the weather service timed out"),
        (tool_name, "Lima", "ok", "Lima: 17C"),
    ]
    assert [c.sources["status"] for c in run.tool_calls] == ["transcript", "result_text", "transcript"]
    (run,) = reconstruct(
        [root, step], text_failures=False
    )  # the text signal off: only the recorded flag decides
    assert [c.status for c in run.tool_calls] == ["error", "ok", "ok"]


def test_results_without_call_ids_answer_the_calls_in_order():
    messages = [
        _user("Rome then Paris"),
        _asked(("get_weather", {"city": "Rome"}, None)),
        _answered("Rome: 27C", "get_weather", {"city": "Rome"}, None),
        _asked(("get_weather", {"city": "Paris"}, None)),
        _answered("Paris: 18C", "get_weather", {"city": "Paris"}, None, error=True),
        _said("Done."),
    ]
    (run,) = reconstruct([_agent_step(messages, "Rome then Paris", start=0)])
    assert [(c.input_parameters, c.output, c.status) for c in run.tool_calls] == [
        ({"city": "Rome"}, "Rome: 27C", "ok"),
        ({"city": "Paris"}, "Paris: 18C", "error"),
    ]


def test_an_openai_shaped_conversation_in_a_plain_step_is_read_the_same_way():
    messages = [
        {"role": "user", "content": "Book Rome for 2 nights"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "book_hotel", "arguments": '{"city": "Rome", "nights": 2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "HTL-ROME-2"},
        {"role": "assistant", "content": "Booked."},
    ]
    step = span(
        "agent_step",
        0,
        50,
        attrs={
            sc.OI_SPAN_KIND: "CHAIN",
            sc.OI_INPUT_VALUE: json.dumps(messages[:1]),
            sc.OI_OUTPUT_VALUE: json.dumps({"messages": messages}),
        },
    )
    (run,) = reconstruct([step])
    assert [(c.name, c.input_parameters, c.output) for c in run.tool_calls] == [
        ("book_hotel", {"city": "Rome", "nights": 2}, "HTL-ROME-2")
    ]
    assert (run.input, run.output) == ("Book Rome for 2 nights", "Booked.")


def test_a_conversation_is_only_read_where_nothing_else_records_the_calls():
    """A step's output in a run whose model spans record the calls is history: each call is counted once, from
    the model's request, the step giving its result."""
    messages = [
        _user("Rome?"),
        _asked(("get_weather", {"city": "Rome"}, "c1")),
        _answered("Rome: 27C", "get_weather", {"city": "Rome"}, "c1"),
        _said("27C."),
    ]
    step = _agent_step(messages, "Rome?", start=0, end=100)
    model = span(
        "OpenAIChatGenerator.run",
        1,
        10,
        step,
        attrs={
            sc.OI_SPAN_KIND: "LLM",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Rome"}',
        },
    )
    (alone,) = reconstruct([step])
    (run,) = reconstruct([step, model])
    assert (
        [(c.name, c.output) for c in alone.tool_calls]
        == [(c.name, c.output) for c in run.tool_calls]
        == [("get_weather", "Rome: 27C")]
    )
    assert (
        run.tool_calls[0].sources["name"] == "request:openinference"
        and run.tool_calls[0].llm_turn == model.span_id
    )
    # no tool call in the conversation: no run
    quiet = _agent_step([_user("hi"), _said("hello")], "hi", start=0)
    assert reconstruct([quiet]) == []


def test_the_agent_step_around_the_model_calls_gives_their_results_and_failures():
    """With the chat generator traced (no call ids on its requests, tool messages without content in its
    flattened input), the agent step that encloses it recorded each result beside the call it answers."""
    messages = [
        _user("Atlantis or Athens?"),
        _asked(("get_weather", {"city": "Atlantis"}, "c1")),
        _answered("Unknown city: Atlantis", "get_weather", {"city": "Atlantis"}, "c1", error=True),
        _asked(("get_weather", {"city": "Athens"}, "c2")),
        _answered("Athens: 29C", "get_weather", {"city": "Athens"}, "c2"),
        _said("Athens is 29C."),
    ]
    step = _agent_step(messages, "Atlantis or Athens?", start=0, end=100)
    prefix = "llm.output_messages.0.message"

    def generator(start: int, city: str | None):
        attrs = {
            sc.OI_SPAN_KIND: "LLM",
            f"{prefix}.role": "assistant",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Atlantis or Athens?",
        }
        if city:
            attrs |= {
                f"{prefix}.tool_calls.0.tool_call.function.name": "get_weather",
                f"{prefix}.tool_calls.0.tool_call.function.arguments": json.dumps({"city": city}),
            }
        else:
            attrs[f"{prefix}.content"] = "Athens is 29C."
        return span("OpenAIChatGenerator.run", start, start + 10, step, attrs=attrs)

    (run,) = reconstruct([step, generator(1, "Atlantis"), generator(20, "Athens"), generator(40, None)])
    assert [(c.input_parameters["city"], c.status, c.output) for c in run.tool_calls] == [
        ("Atlantis", "error", "Unknown city: Atlantis"),
        ("Athens", "ok", "Athens: 29C"),
    ]
    assert {c.sources["status"] for c in run.tool_calls} == {"step_output"}
