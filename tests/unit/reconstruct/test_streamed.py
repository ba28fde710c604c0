"""Calls of streamed responses recorded only as text (Langtrace over a ``stream=True`` loop: the argument
deltas joined as the answer, names and ids only in the next request). The recorded trace is checked against
its ground truth in test_fixtures; here the rule meets variants: other tool names and values, parallel calls,
failures, tools whose parameters overlap, a JSON answer that is no call."""

from __future__ import annotations

import json

import pytest

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import STATUS_ERROR, SpanEvent
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.reconstruct.streamed import fitting_tool, trailing_objects
from tests.support.fixture_traces import fixtures
from tests.unit.reconstruct.test_rules import span

SYSTEM = {"role": "system", "content": "You are a travel assistant."}


def _tool(name: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {
                "type": "object",
                "properties": {p: {"type": t} for p, t in properties.items()},
                "required": required,
            },
        },
    }


WEATHER = _tool("weather_lookup", {"city": "string"}, ["city"])
HOTEL = _tool("reserve_room", {"city": "string", "nights": "integer"}, ["city", "nights"])
FX = _tool("fx_convert", {"amount": "number", "from": "string", "to": "string"}, ["amount", "from", "to"])


def _chat(start: int, parent, prompt: list, answer: str, tools=(WEATHER, HOTEL, FX)):
    """A Langtrace chat span of a streamed call: the prompt and the joined content deltas as events."""
    return span(
        "openai.chat.completions.create",
        start,
        start + 5,
        parent,
        attrs={
            sc.GEN_AI_OPERATION_NAME: "chat",
            "gen_ai.request.stream": "True",
            "gen_ai.request.tools": [json.dumps(list(tools))],
        },
        events=(
            SpanEvent("gen_ai.content.prompt", start, {"gen_ai.prompt": json.dumps(prompt)}),
            SpanEvent(
                "gen_ai.content.completion",
                start + 5,
                {"gen_ai.completion": json.dumps([{"role": "assistant", "content": answer}])},
            ),
        ),
    )


def _reduced(n: int) -> list:
    return [{"id": "", "type": ""} for _ in range(n)]


def _result(call_id: str, content: str, **extra) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content, **extra}


def _loop(turns: list[tuple[list[dict], list[str]]], final: str = "", failed: bool = False):
    """An app span around one chat span per turn; each turn: the argument objects streamed, and the tool
    results fed back for them."""
    root = span("travel_agent", 0, 1000)
    if failed:
        root.status_code, root.status_message = STATUS_ERROR, "boom"
    prompt = [SYSTEM, {"role": "user", "content": "Plan it."}]
    spans = [root]
    for k, (objects, results) in enumerate(turns):
        spans.append(_chat(10 + 100 * k, root, list(prompt), "".join(json.dumps(o) for o in objects)))
        prompt += [_reduced(len(objects)), *[_result(f"c{k}_{i}", r) for i, r in enumerate(results)]]
    if not failed:
        spans.append(_chat(10 + 100 * len(turns), root, list(prompt), final))
    return spans


def test_trailing_objects_and_fitting_tools():
    assert trailing_objects('{"a": 1}{"b": [2, "}"]}') == [{"a": 1}, {"b": [2, "}"]}]
    assert trailing_objects('Let me look. {"city": "Rome"}\n') == [{"city": "Rome"}]
    assert trailing_objects('{"a": 1} and then text') == [] and trailing_objects("[1, 2]") == []
    assert trailing_objects('{"a": 1}{"b": ') == [] and trailing_objects("") == []
    schemas = {d["function"]["name"]: d["function"]["parameters"] for d in (WEATHER, HOTEL, FX)}
    assert fitting_tool({"city": "Oslo"}, schemas) == "weather_lookup"  # reserve_room requires nights too
    assert fitting_tool({"city": "Oslo", "nights": 2}, schemas) == "reserve_room"
    assert fitting_tool({"town": "Oslo"}, schemas) is None
    twins = {"a": schemas["weather_lookup"], "b": schemas["weather_lookup"]}
    assert fitting_tool({"city": "Oslo"}, twins) is None  # two tools fit exactly: no name is invented


def test_the_recorded_streamed_loop():
    (fx,) = [f for f in fixtures() if f.name == "raw-openai__langtrace-raw-stream__sequence"]
    (run,) = reconstruct(fx.spans())
    got = [(c.name, c.input_parameters, c.call_id, c.output, c.status) for c in run.tool_calls]
    assert got == [
        (
            "search_flights",
            {"origin": "Berlin", "destination": "Rome", "date": "2025-07-01"},
            "call_sequence_0_0",
            "LH207 Berlin->Rome on 2025-07-01, 120 EUR",
            "ok",
        ),
        ("get_weather", {"city": "Rome"}, "call_sequence_1_0", "Rome: 27C sunny", "ok"),
        ("book_hotel", {"city": "Rome", "nights": 3}, "call_sequence_2_0", "HTL-ROME-3", "ok"),
    ]
    assert {c.sources["name"] for c in run.tool_calls} == {"request:streamed"}
    assert run.output is None  # the streamed answers were calls; the last one recorded no text


def test_parallel_streamed_calls_with_a_failure_fed_back_as_text():
    spans = _loop(
        [
            (
                [{"city": "Oslo"}, {"city": "Atlantis"}, {"amount": 5, "from": "USD", "to": "EUR"}],
                ["Oslo: 3C", "Error: no city called Atlantis", "4.6 EUR"],
            ),
            ([{"city": "Oslo", "nights": 2}], ["HTL-OSLO-2"]),
        ],
        final="Done.",
    )
    (run,) = reconstruct(spans)
    got = [(c.name, c.call_id, c.status) for c in run.tool_calls]
    assert got == [
        ("weather_lookup", "c0_0", "ok"),
        ("weather_lookup", "c0_1", "error"),
        ("fx_convert", "c0_2", "ok"),
        ("reserve_room", "c1_0", "ok"),
    ]
    assert run.tool_calls[1].sources["status"] == "result_text" and run.output == "Done."
    # the parallel calls of one turn keep their streamed order and share their turn
    assert len({c.llm_turn for c in run.tool_calls[:3]}) == 1
    (run,) = reconstruct(spans, text_failures=False)
    assert [c.status for c in run.tool_calls] == ["ok"] * 4


def test_a_tool_message_or_the_history_names_a_call_no_schema_tells():
    """Two tools take the same parameters: the name comes from the tool message (or is not invented)."""
    twin = _tool("forecast", {"city": "string"}, ["city"])
    root = span("app", 0, 1000)
    first = _chat(10, root, [SYSTEM], '{"city": "Rome"}', tools=(WEATHER, twin))
    named = [SYSTEM, _reduced(1), _result("c1", "sunny", name="forecast")]
    (run,) = reconstruct([root, first, _chat(100, root, named, "ok", tools=(WEATHER, twin))])
    assert [(c.name, c.call_id) for c in run.tool_calls] == [("forecast", "c1")]
    history = [
        SYSTEM,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "forecast", "arguments": "{}"}}
            ],
        },
        _result("c1", "sunny"),
    ]
    (run,) = reconstruct([root, first, _chat(100, root, history, "ok", tools=(WEATHER, twin))])
    assert [c.name for c in run.tool_calls] == ["forecast"]
    unnamed = [SYSTEM, _reduced(1), _result("c1", "sunny")]
    (run,) = reconstruct([root, first, _chat(100, root, unnamed, "ok", tools=(WEATHER, twin))])
    assert run.tool_calls == ()


def test_a_json_answer_is_no_call():
    """A model answering in JSON (no tool result follows, the run ended well) asked for nothing."""
    root = span("app", 0, 1000)
    (run,) = reconstruct([root, _chat(10, root, [SYSTEM], '{"city": "Rome"}')])
    assert run.tool_calls == () and run.output == '{"city": "Rome"}'
    # as many results as objects, or nothing: a mismatch is not guessed at
    spans = _loop([([{"city": "Oslo"}, {"city": "Rome"}], ["Oslo: 3C"])], final="ok")
    (run,) = reconstruct(spans)
    assert run.tool_calls == ()


@pytest.mark.parametrize("arguments", [{"city": "Atlantis"}, {"city": "Atlantis", "nights": 4}])
def test_a_streamed_call_that_raised_and_ended_the_run(arguments):
    """No later request: the objects are calls only because the run failed right after; the
    call failed with it."""
    (run,) = reconstruct(_loop([([arguments], [])], failed=True))
    (call,) = run.tool_calls
    assert (call.input_parameters, call.status, call.sources["status"]) == (arguments, "error", "run_error")
    assert call.call_id is None
