"""The shortcuts the reconstruction takes for speed give what the general path gives.

Each fast path skips work only where the answer is already known (a first character that cannot start an error
report or a JSON value, an empty nested list, logs of one span that are not tied in time); these tests pin the
edge cases around each skip, so a later change to one side cannot silently part them.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.otlp.records import STATUS_OK, STATUS_UNSET, LogRecord, SpanRecord
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.reconstruct.messages import openinference_messages, traceloop_messages, unwrap_tool_result
from agentotel_eval.reconstruct.spans import classify, read_execution
from agentotel_eval.reconstruct.tree import build_trees
from agentotel_eval.reconstruct.values import looks_like_error_text, parse_literal

T = "ab" * 16
ERROR_TEXT = re.compile(
    r"^\s*(?:(?:error|exception)\s*:|traceback \(most recent call last\)|an error occurred\b)", re.I
)
TAILS = (
    "rror: boom",
    "xception: boom",
    "raceback (most recent call last)",
    "n error occurred here",
    "",
    "RROR:x",
)


def test_error_text_shortcut_agrees_with_the_pattern_for_every_first_character():
    # every code point of the Basic Multilingual Plane plus some astral ones, in front of each
    # error phrase's tail
    for code in [*range(0x3000), *range(0xFF00, 0xFFFF), 0x1F600, 0x10FFFF]:
        for tail in TAILS:
            text = chr(code) + tail
            assert looks_like_error_text(text) == (ERROR_TEXT.match(text) is not None), repr(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "\u00a0Error: x",
        "\u2003Exception: y",
        "Error:",
        "error :x",
        "Traceback (most recent call last)",
        "An error occurred",
        "an errorist",
        "E",
        "x Error: y",
        "\terror: z",
    ],
)
def test_error_text_edge_cases(text):
    assert looks_like_error_text(text) == (ERROR_TEXT.match(text) is not None)
    assert looks_like_error_text(None) is False and looks_like_error_text(["Error: x"]) is False


@pytest.mark.parametrize(
    "text",
    [
        "3",
        "-1.5",
        "true",
        "null",
        "NaN",
        "Infinity",
        "-Infinity",
        '"quoted"',
        "[1, 2]",
        '{"a": 1}',
        "None",
        "True",
        "{'a': 1}",
        "(1, 2)",
        "Rome",
        "2025-07-01",
        "tru",
    ],
)
def test_parse_literal_only_skips_json_where_json_cannot_start(text):
    try:
        expected = json.loads(text)
    except ValueError:
        expected = parse_literal(text)  # the Python-literal fallback (or the text itself)
    assert parse_literal(text) == expected or (
        expected != expected and parse_literal(text) != parse_literal(text)
    )


def _tool_span(result, status=STATUS_OK, **attrs):
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f", **attrs}
    if result is not None:
        attributes["gen_ai.tool.call.result"] = result
    return SpanRecord(T, "2" * 16, "1" * 16, "execute_tool f", 1, 10, 20, status, attributes=attributes)


@pytest.mark.parametrize(
    "result",
    [
        "Paris: 18C",
        "Error: no such city",
        ' {"a": 1}',
        "\n[1, 2]",
        '"quoted text"',
        '{"type": "tool", "data": {"content": "x", "tool_call_id": "c9", "status": "error"}}',
        "",
        "  ",
        '[{"text": "a"}, {"text": "b"}]',
        "{not json",
        "42",
    ],
)
@pytest.mark.parametrize("status", [STATUS_OK, STATUS_UNSET])
def test_plain_text_results_read_like_unwrapped_ones(result, status):
    span = _tool_span(result, status)
    execution = read_execution(span, classify(span))
    unwrapped = unwrap_tool_result(result)
    content = unwrapped.content
    if isinstance(content, list) and content and all(isinstance(b, dict) and "text" in b for b in content):
        content = "\n".join(b["text"] for b in content)
    assert execution.result == content
    assert execution.result_call_id == unwrapped.call_id
    if unwrapped.status == "error":
        assert execution.status == "error" and execution.sources["status"] == "tool_message"
    # an error report as the result fails the call whether the span said OK or nothing (MCP's tools report
    # failures as results); with text signals off only the recorded status and the tool message's status count
    text_error = isinstance(content, str) and ERROR_TEXT.match(content) is not None
    assert (execution.status == "error") == (unwrapped.status == "error" or text_error)
    if text_error and unwrapped.status != "error":
        assert execution.sources["status"] == "result_text"
        assert read_execution(span, classify(span), text_failures=False).status == "ok"


def test_openinference_messages_nested_lists_start_at_zero():
    p = "llm.input_messages"
    attrs = {
        "openinference.span.kind": "LLM",
        f"{p}.0.message.role": "user",
        f"{p}.0.message.content": "hi",
        # blocks and calls that do not start at index 0 are not read (the list is empty)
        f"{p}.0.message.contents.1.message_content.text": "ignored",
        f"{p}.0.message.tool_calls.1.tool_call.function.name": "ignored",
        f"{p}.1.message.role": "assistant",
        # a block with no text still continues the list
        f"{p}.1.message.contents.0.message_content.type": "image",
        f"{p}.1.message.contents.1.message_content.text": "second block",
        f"{p}.1.message.tool_calls.0.tool_call.id": "c1",  # no name: skipped, but the list goes on
        f"{p}.1.message.tool_calls.1.tool_call.function.name": "get_weather",
        f"{p}.1.message.tool_calls.1.tool_call.function.arguments": '{"city": "Rome"}',
        f"{p}.1.message.tool_calls.1.tool_call.id": "c2",
        f"{p}.2.message.role": "tool",
        f"{p}.2.message.content": "18C",
        f"{p}.2.message.tool_call_id": "c2",
        f"{p}.3.message.function_call_name": "legacy",
        f"{p}.3.message.function_call_arguments_json": "{}",
        f"{p}.5.message.role": "user",  # after a gap: not read
    }
    messages = openinference_messages(attrs, p)
    assert [m.role for m in messages] == ["user", "assistant", "tool", ""]
    assert messages[0].texts == ["hi"] and messages[0].tool_calls == []
    assert messages[1].texts == ["second block"]
    assert [(c.name, c.arguments, c.call_id) for c in messages[1].tool_calls] == [
        ("get_weather", '{"city": "Rome"}', "c2")
    ]
    assert [(r.call_id, r.content) for r in messages[2].tool_results] == [("c2", "18C")]
    assert [(c.name, c.arguments) for c in messages[3].tool_calls] == [("legacy", "{}")]
    assert openinference_messages({"other": 1}, p) == []
    assert openinference_messages({"openinference.span.kind": "LLM"}, p) == []


def test_traceloop_messages_tool_calls_start_at_zero():
    p = "gen_ai.completion"
    attrs = {
        f"{p}.0.role": "assistant",
        f"{p}.0.tool_calls.0.id": "c0",  # no name: skipped, the list goes on
        f"{p}.0.tool_calls.1.name": "get_weather",
        f"{p}.0.tool_calls.1.arguments": "{}",
        f"{p}.0.tool_calls.1.id": "c1",
        f"{p}.1.finish_reason": "stop",
        f"{p}.1.tool_calls.1.name": "ignored",
    }
    messages = traceloop_messages(attrs, p)
    assert [(c.name, c.call_id) for c in messages[0].tool_calls] == [("get_weather", "c1")]
    assert messages[1].role == "assistant" and messages[1].tool_calls == []


def _log(span_id, time_ns, body, name="gen_ai.choice"):
    return LogRecord(time_ns, 0, T, span_id, event_name=name, body=body)


def test_logs_of_a_span_tied_in_time_are_ordered_by_content_and_deduplicated():
    span = SpanRecord(T, "1" * 16, None, "chat", 1, 0, 100, attributes={"gen_ai.operation.name": "chat"})
    a = _log("1" * 16, 50, {"index": 0, "message": {"content": "b"}})
    b = _log("1" * 16, 50, {"index": 0, "message": {"content": "a"}})
    c = _log("1" * 16, 40, "later text, earlier time")
    copy_of_a = _log("1" * 16, 50, {"index": 0, "message": {"content": "b"}})
    orders = []
    for logs in ([a, b, c, copy_of_a], [copy_of_a, c, b, a], [b, a, a, c]):
        (tree,) = build_trees([span], logs)
        orders.append([repr(log.body) for log in tree.logs["1" * 16]])
    assert orders[0] == orders[1] == orders[2]
    assert orders[0] == [repr(c.body), repr(b.body), repr(a.body)]  # time, then repr of the content


def test_a_request_only_call_completed_from_a_later_trace_keeps_its_sources_order():
    def chat(trace, span_id, start, inputs, outputs):
        return SpanRecord(
            trace,
            span_id,
            None,
            "chat m",
            3,
            start,
            start + 5,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(inputs),
                "gen_ai.output.messages": json.dumps(outputs),
            },
        )

    user = {"role": "user", "parts": [{"type": "text", "content": "weather in Rome?"}]}
    call = {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Rome"}}
    first = chat("1" * 32, "1" * 16, 0, [user], [{"role": "assistant", "parts": [call]}])
    second = chat(
        "2" * 32,
        "2" * 16,
        10,
        [
            user,
            {"role": "assistant", "parts": [call]},
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "c1", "response": "Error: no weather today"}],
            },
        ],
        [{"role": "assistant", "parts": [{"type": "text", "content": "Sorry."}]}],
    )
    (run,) = reconstruct([second, first])
    (tool_call,) = run.tool_calls
    assert (tool_call.output, tool_call.status, tool_call.error) == (
        "Error: no weather today",
        "error",
        "Error: no weather today",
    )
    assert list(tool_call.sources) == ["name", "arguments", "status", "call_id", "llm_turn", "result"]
    assert (
        dict(tool_call.sources)["status"] == "result_text" and dict(tool_call.sources)["result"] == "history"
    )
    alone = reconstruct([first])[0].tool_calls[0]
    assert alone.output is None and alone.status == "ok" and dict(alone.sources)["status"] == "default"


_MARKER_KEYS = (
    "gen_ai.operation.name",
    "openinference.span.kind",
    "traceloop.span.kind",
    "langfuse.observation.type",
    "agentotel.kind",
    "llm.request.type",
    "gen_ai.tool.name",
    "tool.name",
    "gen_ai.handoff.from_agent",
    "gen_ai.handoff.to_agent",
)
_MARKER_VALUES = (
    "invoke_agent",
    "invoke_workflow",
    "chat",
    "generate_content",
    "text_completion",
    "execute_tool",
    "handoff",
    "AGENT",
    "LLM",
    "TOOL",
    "CHAIN",
    "agent",
    "workflow",
    "tool",
    "task",
    "completion",
    "generation",
    "llm",
    "",
    "Chat",
    1,
    True,
    1.0,
    None,
    float("nan"),
    ["chat"],
    {"k": "v"},
)


@settings(max_examples=600, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from((*_MARKER_KEYS, "other", "gen_ai.agent.name")),
        st.sampled_from(_MARKER_VALUES),
        max_size=6,
    )
)
def test_roles_looked_up_by_their_markers_are_the_rules(attrs):
    """The memo answers a span as the rules answer it alone: were a marker the rules read missing from its
    key, a span remembered before with the same key and another role would answer for this one."""
    from agentotel_eval.reconstruct import spans as module

    span = SpanRecord(T, "1" * 16, None, "s", 1, 0, 1, attributes=attrs)
    memo = module._ROLE_BY_MARKERS
    earlier = dict(memo)  # the roles of the spans the earlier examples remembered
    memo.clear()
    expected = classify(span)  # worked out by the rules
    memo.clear()
    memo.update(earlier)
    assert classify(span) == expected and classify(span) is classify(
        span
    )  # looked up, perhaps an earlier span's
    assert module.roles_of({"1" * 16: span}) == (
        {} if expected.run is expected.tool is expected.llm is None else {"1" * 16: expected}
    )
