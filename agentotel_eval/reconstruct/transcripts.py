"""Calls recorded only in a conversation that a step wrote out whole.

A pipeline-level instrumentation can trace an agent as one plain step (OpenInference's Haystack instrumentor
with the agent run on its own: an ``Agent.run`` CHAIN span, no LLM or tool span) whose output is the
conversation it ended with: the assistant messages with their tool calls and the tool messages with their
results. With no LLM or tool span to read, those messages are the calls: each assistant tool call in
conversation order, its result and failure from the tool message that answers it (by call id, else the next
one after the call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.llm import Request
from agentotel_eval.reconstruct.messages import Message, ToolResultPart, parse_messages
from agentotel_eval.reconstruct.tree import TraceTree, span_order

SOURCE = "transcript"
#: where a step records what it returned (the conventions that have a plain output value)
_OUTPUT_KEYS = (
    sc.OI_OUTPUT_VALUE,
    sc.TRACELOOP_ENTITY_OUTPUT,
    sc.LANGFUSE_OBSERVATION_OUTPUT,
    sc.AGENTOTEL_OUTPUT,
)
#: a recorded conversation with a tool call names one (a repr's ``ToolCall(``, a message's ``tool_calls``)
_MARKERS = ("ToolCall(", "tool_call")
_MAX_SPANS = 10_000  # spans looked at under one run, at most


def holds_transcript(span: SpanRecord) -> bool:
    """Whether the span's output may be a conversation with tool calls (a text test: nothing is parsed)."""
    attrs = span.attributes
    for key in _OUTPUT_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and any(marker in value for marker in _MARKERS):
            return True
    return False


@dataclass(slots=True)
class Transcript:
    """The calls of one recorded conversation: the requests, in conversation order, and the results answering
    them (by request index)."""

    span: SpanRecord
    requests: list[Request] = field(default_factory=list)
    results: dict[int, ToolResultPart] = field(default_factory=dict)


def find_transcript(tree: TraceTree, anchor: SpanRecord, roles: Mapping[str, Any]) -> Transcript | None:
    """The conversation with the most tool calls that a span at or under ``anchor`` (no LLM or tool span)
    recorded as its output; the latest such span on a tie (a wrapper repeats what the agent step returned)."""
    best: Transcript | None = None
    stack = [anchor]
    seen = 0
    while stack and seen < _MAX_SPANS:
        span = stack.pop()
        seen += 1
        stack.extend(tree.children.get(span.span_id, ()))
        if span.span_id in roles or not holds_transcript(span):
            continue
        found = read_transcript(span)
        if found.requests and (
            best is None
            or (len(found.requests), span_order(span)) > (len(best.requests), span_order(best.span))
        ):
            best = found
    return best


def read_transcript(span: SpanRecord) -> Transcript:
    """The calls the conversation in ``span``'s output records, each answered by the tool message that names
    its call id, else by the next unanswered tool message after it."""
    out = Transcript(span)
    waiting: list[int] = []  # requests not answered yet, in order
    by_id: dict[str, int] = {}
    for message in _messages(span):
        for part in message.tool_calls:
            at = len(out.requests)
            out.requests.append(Request(part.name, part.arguments, part.call_id, at, span, SOURCE))
            waiting.append(at)
            if part.call_id:
                by_id[part.call_id] = at
        for result in message.tool_results:
            index = by_id.get(result.call_id) if result.call_id else None
            if index is None or index not in waiting:
                index = waiting[0] if waiting and not result.call_id else None
            if index is None:
                continue
            waiting.remove(index)
            out.results[index] = ToolResultPart(
                result.call_id, result.content, result.status, result.name, SOURCE
            )
    return out


def _messages(span: SpanRecord) -> Sequence[Message]:
    attrs = span.attributes
    for key in _OUTPUT_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and any(marker in value for marker in _MARKERS):
            return parse_messages(value)
    return ()
