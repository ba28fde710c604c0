"""Calls of a streamed model response that the instrumentation recorded only as text.

An instrumentation that joins a streamed response's content deltas (Langtrace over ``stream=True``) records
the tool calls' argument deltas as the answer's text, ``{"city": "Tokyo"}{"city": "Lima"}``, and neither their
names nor their ids; the next request shows the model's turn reduced to placeholders and the tool messages
that answered it, with their call ids. So: an LLM call that records no tool call, whose text ends in
consecutive JSON objects, asked for as many calls as the next LLM call of the run received new tool results
for (each call takes the id of its result, in order). Each call's name is the one its tool message or the
history gives, else the one offered tool whose parameters the arguments fit (every required parameter present,
no parameter it does not declare). With no later LLM call, the objects are calls only when the run ended in an
error right after (the tool raised).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.llm import Request
from agentotel_eval.reconstruct.messages import Message, ToolResultPart
from agentotel_eval.reconstruct.tree import span_order

SOURCE = "streamed"
_DECODER = json.JSONDecoder()
_MAX_STARTS = (
    64  # braces tried as the start of the trailing objects (a long text is not parsed from every one)
)


def streamed_requests(
    llm_spans: Sequence[SpanRecord], ctx: TraceContext, schemas: Mapping[str, Any], run_failed: bool
) -> list[Request]:
    """The calls each of these LLM spans (one run's, any order) asked for in a streamed
    answer recorded as text."""
    ordered = sorted(llm_spans, key=span_order) if len(llm_spans) > 1 else list(llm_spans)
    out: list[Request] = []
    for at, span in enumerate(ordered):
        output = ctx.output(span)
        if output.requests or not output.text:
            continue
        objects = trailing_objects(output.text)
        if not objects:
            continue
        later = ordered[at + 1] if at + 1 < len(ordered) else None
        if later is None:
            if run_failed:  # the run ended right after: the tool it asked for raised
                out.extend(_named(objects, [None] * len(objects), schemas, span))
            continue
        answers = _new_results(ctx.input(span), ctx.input(later))
        if len(answers) == len(objects):
            out.extend(_named(objects, answers, schemas, span, _history_names(ctx.input(later))))
    for request in out:  # the span asked for these: its text was their arguments, not an answer
        output = ctx.output(request.span)
        if output.text is not None:
            output.text = None
        output.requests.append(request)
    return out


def trailing_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects that end ``text`` one after another (``{...}{...}``), in order; empty when the text
    does not end in one."""
    end = len(text.rstrip())
    if end == 0 or text[end - 1] != "}":
        return []
    start = text.find("{")
    for _ in range(_MAX_STARTS):  # the earliest brace from which the rest is nothing but objects
        if start < 0:
            break
        objects = _objects_from(text, start, end)
        if objects is not None:
            return objects
        start = text.find("{", start + 1)
    return []


def _objects_from(text: str, at: int, end: int) -> list[dict[str, Any]] | None:
    objects: list[dict[str, Any]] = []
    while at < end:
        try:
            value, at = _DECODER.raw_decode(text, at)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        objects.append(value)
        while at < end and text[at] in " \n\t,":
            at += 1
    return objects or None


def _new_results(before: Sequence[Message], after: Sequence[Message]) -> list[ToolResultPart | None]:
    """The tool results the later input holds that the earlier one did not: the answers
    to the calls between."""
    seen = {part.call_id for message in before for part in message.tool_results if part.call_id}
    out: list[ToolResultPart | None] = []
    for message in after:
        for part in message.tool_results:
            if part.call_id and part.call_id not in seen:
                seen.add(part.call_id)
                out.append(part)
    return out


def _history_names(messages: Sequence[Message]) -> dict[str, str]:
    """Call id -> tool name, as the model's earlier turns in an input name their calls."""
    return {call.call_id: call.name for message in messages for call in message.tool_calls if call.call_id}


def _named(
    objects: list[dict[str, Any]],
    answers: Sequence[ToolResultPart | None],
    schemas: Mapping[str, Any],
    span: SpanRecord,
    named: Mapping[str, str] | None = None,
) -> list[Request]:
    out: list[Request] = []
    for index, (arguments, answer) in enumerate(zip(objects, answers, strict=True)):
        call_id = answer.call_id if answer is not None else None
        name = (
            (answer.name if answer is not None else None)
            or (named or {}).get(call_id or "")
            or fitting_tool(arguments, schemas)
        )
        if name:
            out.append(Request(name, arguments, call_id, index, span, SOURCE))
    return out


def fitting_tool(arguments: Mapping[str, Any], schemas: Mapping[str, Any]) -> str | None:
    """The one tool whose parameters ``arguments`` fit: every required one present, none it does not declare
    (when several fit, the one declaring exactly these); None when no tool, or more than one, fits."""
    keys = set(arguments)
    fits: list[tuple[str, bool]] = []
    for name, schema in schemas.items():
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if not isinstance(properties, Mapping):
            continue
        required = schema.get("required") or ()
        if keys <= set(properties) and set(required) <= keys:
            fits.append((name, keys == set(properties)))
    if len(fits) > 1:
        fits = [f for f in fits if f[1]]
    return fits[0][0] if len(fits) == 1 else None
