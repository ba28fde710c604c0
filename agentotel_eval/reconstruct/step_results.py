"""Results a framework step recorded in its output, for calls that have no tool span and whose results the
model's history does not show: a pipeline-level instrumentation (OpenInference's Haystack components) traces
the chat generator, whose output holds the calls, and the component that ran the tools as a plain step whose
output holds the results (``ToolCallResult(...)`` reprs, or ``{"tool_call_result": ...}`` objects) with the
call each answers: its id, else its tool name and arguments."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.matching import Call, arguments_of
from agentotel_eval.reconstruct.messages import ToolResultPart
from agentotel_eval.reconstruct.reprs import ReprResult, parse_result_reprs
from agentotel_eval.reconstruct.tree import span_order
from agentotel_eval.reconstruct.values import numeric_equal, parse_json

SOURCE = "step_output"
_MARKERS = ("ToolCallResult(", "tool_call_result")


def results_from_steps(
    calls: Sequence[Call], anchor: SpanRecord, schemas: Mapping[str, Any], ctx: TraceContext
) -> None:
    """Give each request-only call in ``calls`` the result a step under ``anchor`` recorded for it, if any."""
    waiting = [c for c in calls if c.execution is None and c.result is None and c.request is not None]
    if not waiting:
        return
    for step in _steps(anchor, ctx):
        for found in _results(step.attributes.get(sc.OI_OUTPUT_VALUE)):
            call = _answered(waiting, found, step, schemas)
            if call is None:
                continue
            waiting.remove(call)
            call.result = ToolResultPart(
                found.call_id, found.result, "error" if found.error else None, found.name, SOURCE
            )
            if not waiting:
                return


def _steps(anchor: SpanRecord, ctx: TraceContext) -> list[SpanRecord]:
    """The run's span and the spans under it that are neither model calls nor tool executions and whose output
    names a result (the step that ran the tools, or the agent step whose output is the whole conversation)."""
    out: list[SpanRecord] = []
    stack = [anchor]
    while stack:
        span = stack.pop()
        stack.extend(ctx.tree.children.get(span.span_id, ()))
        role = ctx.roles.get(span.span_id)
        if role is not None and (role.llm or role.tool):
            continue
        value = span.attributes.get(sc.OI_OUTPUT_VALUE)
        if isinstance(value, str) and any(m in value for m in _MARKERS):
            out.append(span)
    out.sort(key=span_order)
    return out


def _results(value: Any) -> Iterator[ReprResult]:
    """The results in a step's JSON output, in order: reprs inside strings, and serialised result objects."""
    stack: list[Any] = [parse_json(value)]
    found: list[ReprResult] = []
    while stack:
        item = stack.pop(0)
        if isinstance(item, str):
            found.extend(parse_result_reprs(item))
        elif isinstance(item, list):
            stack[:0] = item
        elif isinstance(item, dict):
            done = item.get("tool_call_result")
            if isinstance(done, dict):
                origin = done["origin"] if isinstance(done.get("origin"), dict) else {}
                name, arguments, call_id = origin.get("tool_name"), origin.get("arguments"), origin.get("id")
                found.append(
                    ReprResult(
                        name if isinstance(name, str) else None,
                        arguments if isinstance(arguments, dict) else None,
                        call_id if isinstance(call_id, str) and call_id else None,
                        done.get("result"),
                        done.get("error") is True,
                    )
                )
            else:
                stack[:0] = list(item.values())
    yield from found


def _answered(
    waiting: list[Call], found: ReprResult, step: SpanRecord, schemas: Mapping[str, Any]
) -> Call | None:
    """The first waiting call, asked for before the step ended, that ``found`` answers: by call id when both
    have one, else by tool name and equal arguments."""
    for call in waiting:
        r = call.request
        assert r is not None
        if r.span.end_ns > step.end_ns:
            continue
        if found.call_id and r.call_id:
            if found.call_id == r.call_id:
                return call
            continue
        if found.name != r.name or found.arguments is None:
            continue
        mine = arguments_of(r, schemas.get(r.name))
        if mine.params is not None and numeric_equal(mine.params, found.arguments):
            return call
    return None
