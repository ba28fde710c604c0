"""What a run holds besides its calls: its final answer where a capture records it outside the usual messages,
its system prompt (or that none was recorded), and the model's text between calls."""

from __future__ import annotations

import json

from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.reconstruct.run_fields import printed_text
from tests.support.fixture_traces import fixtures

TRACE = "ab" * 16


def _span(
    span_id: str, name: str, attributes: dict, parent: str | None = None, start: int = 1, events: tuple = ()
) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=1,
        start_ns=start,
        end_ns=start + 10,
        attributes=attributes,
        events=events,
    )


def test_a_final_answer_recorded_as_plain_text_or_a_printed_object_is_read() -> None:
    (fx,) = [f for f in fixtures() if f.name == "raw-openai__openlit-raw-nocontent__sequence"]
    (run,) = [r for r in reconstruct(fx.spans(), fx.logs()) if r.tool_calls]
    assert (
        run.output == "Flight LH230 found, Rome is sunny, hotel booked (HTL-ROME-3)."
    )  # content capture off
    printed = (
        "StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>, "
        "blocks=[TextBlock(block_type='text', text='It\\'s 18C in Paris. ')]), raw={}))"
    )
    assert printed_text(printed) == "It's 18C in Paris."
    assert printed_text("StopEvent(result=AgentOutput(blocks=[TextBlock(text='cut short...") is None


def test_the_system_prompt_is_known_recorded_as_none_or_unknown() -> None:
    def run_with(messages: list | None) -> object:
        attrs = {"gen_ai.operation.name": "chat"}
        if messages is not None:
            attrs["gen_ai.input.messages"] = json.dumps(messages)
        spans = [
            _span(
                "a" * 16,
                "invoke_agent bot",
                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bot"},
            ),
            _span("b" * 16, "chat m", attrs, parent="a" * 16, start=2),
            _span(
                "c" * 16,
                "execute_tool f",
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"},
                parent="a" * 16,
                start=3,
            ),
        ]
        (run,) = reconstruct(spans)
        return run

    user = {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    system = {"role": "system", "parts": [{"type": "text", "content": "Team: weather_agent"}]}
    assert run_with([system, user]).system_prompt == "Team: weather_agent"
    assert run_with([user]).system_prompt == ""  # recorded: there was none
    assert run_with(None).system_prompt is None  # not recorded: nobody can say


def test_the_models_text_between_calls_is_kept() -> None:
    for fx in fixtures():
        for run in reconstruct(fx.spans(), fx.logs()):
            assert (
                run.output not in run.assistant_texts or not run.output
            )  # the final answer is not among them
    with_context = [r for fx in fixtures() for r in reconstruct(fx.spans(), fx.logs()) if r.system_prompt]
    assert len(with_context) > 20
