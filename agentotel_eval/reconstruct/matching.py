"""Requests to executions: which model request each execution answers, in what order, and the ToolCall.

Counting rule (docs/reconstruction.md): an execution span is the evidence that a call ran; the model's request
for it (LLM output), copies on other conventions and history are the same call. Requests are matched to
executions by call id, else by name in the latest LLM turn that asked for the tool, the arguments telling
parallel calls apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.arguments import Arguments, normalize_arguments
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.history import History, LaterTraces, result_failure
from agentotel_eval.reconstruct.llm import Request
from agentotel_eval.reconstruct.messages import ToolCallPart, ToolResultPart, parse_messages
from agentotel_eval.reconstruct.spans import WEAK_NAME_SOURCES, Execution
from agentotel_eval.reconstruct.tree import span_order
from agentotel_eval.reconstruct.values import (
    as_dict,
    as_list,
    display_key,
    numeric_equal,
    parse_json,
    text_of,
)
from agentotel_eval.test_case import ToolCall


@dataclass(slots=True)
class Call:
    """A call being assembled: its execution and/or the request that asked for it."""

    execution: Execution | None
    request: Request | None
    turn: str | None = None  # LLM span id that requested it
    turn_source: str | None = None
    result: ToolResultPart | None = None  # from history, when the execution did not record one

    @property
    def start(self) -> int:
        if self.execution is not None:
            return self.execution.span.start_ns
        assert self.request is not None
        return self.request.span.end_ns

    @property
    def span_id(self) -> str:
        return (self.execution.span if self.execution is not None else self.request.span).span_id  # type: ignore[union-attr]


def requests_of(llm_spans: Sequence[SpanRecord], ctx: TraceContext) -> list[Request]:
    """Requests of the run's LLM spans, skipping a nested LLM span that re-records its parent's inference."""
    out: list[Request] = []
    output = ctx.output
    if not ctx.llm_parent:  # no LLM span nested in another: nothing to skip
        for span in llm_spans:
            out.extend(output(span).requests)
        return out
    ids = {s.span_id for s in llm_spans}
    for span in llm_spans:
        above = ctx.llm_parent.get(span.span_id)
        if above in ids and output(ctx.tree.spans[above]).requests:
            continue
        out.extend(output(span).requests)
    return out


def arguments_of(item: Execution | Request, schema: Mapping[str, Any] | None) -> Arguments:
    """Normalised once per execution / request (the schema of a tool name is fixed within a run)."""
    if item.normalized is None:
        raw = item.raw_arguments if isinstance(item, Execution) else item.arguments
        item.normalized = normalize_arguments(raw, schema)
    return item.normalized


def _argumentsmatch_requests(
    execution: Execution, request: Request, schema: Mapping[str, Any] | None
) -> bool:
    mine = arguments_of(execution, schema)
    theirs = arguments_of(request, schema)
    if mine.params is not None and theirs.params is not None:
        return numeric_equal(mine.params, theirs.params)
    if mine.encoding == "scalar" and theirs.params is not None and len(theirs.params) == 1:
        scalar = parse_json(execution.raw_arguments)
        (value,) = theirs.params.values()
        return numeric_equal(scalar, value) or str(value) == str(scalar)
    return False


def match_requests(calls: list[Call], requests: list[Request], schemas: Mapping[str, Any]) -> list[Request]:
    """Pair executions with requests: by call id; else by name in the latest LLM turn that asked for the tool
    before the execution started, the arguments (then the output order) telling parallel calls apart.
    Return the requests left unmatched."""
    if not requests:
        return []
    used: set[int] = set()
    by_id: dict[str, list[int]] = {}
    for i, r in enumerate(requests):
        if r.call_id:
            by_id.setdefault(r.call_id, []).append(i)
    for call in calls:
        e = call.execution
        if e is not None and e.call_id:
            for i in by_id.get(e.call_id, ()):
                if i not in used:
                    used.add(i)
                    call.request = requests[i]
                    break
    for call in calls:
        e = call.execution
        if e is None or call.request is not None:
            continue
        pool = [
            i
            for i, r in enumerate(requests)
            if i not in used and r.name == e.name and not (e.call_id and r.call_id)
        ]
        if not pool:
            continue
        before = [i for i in pool if requests[i].span.start_ns <= e.span.start_ns] or pool
        before.sort(key=lambda i: (-requests[i].span.start_ns, requests[i].span.span_id, requests[i].index))
        latest = requests[before[0]].span.span_id  # the latest turn that asked for this tool
        turn = [i for i in before if requests[i].span.span_id == latest]
        if len(turn) == 1:
            pick = turn[0]
        else:  # parallel calls of one tool: the arguments tell them apart, else the output order
            schema = schemas.get(e.name)
            pick = next((i for i in turn if _argumentsmatch_requests(e, requests[i], schema)), turn[0])
        used.add(pick)
        call.request = requests[pick]
    ids = set(by_id)
    executed = {c.execution.call_id for c in calls if c.execution is not None and c.execution.call_id}
    for (
        call
    ) in calls:  # an execution id no request has (OpenLIT gives a failed tool a fresh UUID): same name and
        e = call.execution  # equal arguments (when it recorded any), asked for before it ran, with an id no
        if e is None or call.request is not None or not e.call_id or e.call_id in ids:  # execution answered
            continue
        schema = schemas.get(e.name)
        pool = [
            i
            for i, r in enumerate(requests)
            if i not in used
            and r.name == e.name
            and r.call_id
            and r.call_id not in executed
            and r.span.start_ns <= e.span.start_ns
            and (e.raw_arguments is None or _argumentsmatch_requests(e, r, schema))
        ]
        if pool:
            pick = max(pool, key=lambda i: (requests[i].span.start_ns, -requests[i].index))
            used.add(pick)
            call.request = requests[pick]
    for call in calls:  # a display name ("Delegate work to coworker") for the tool the model called by its
        e = (
            call.execution
        )  # identifier (delegate_work_to_coworker): one tool once case and separators are dropped
        if e is None or call.request is not None:
            continue
        key = display_key(e.name)
        pool = [
            i
            for i, r in enumerate(requests)
            if i not in used
            and r.name != e.name
            and display_key(r.name) == key
            and r.span.start_ns <= e.span.start_ns
        ]
        if pool:
            schema = schemas.get(requests[pool[0]].name)
            pick = next(
                (
                    i
                    for i in sorted(pool, key=lambda i: -requests[i].span.start_ns)
                    if _argumentsmatch_requests(e, requests[i], schema)
                ),
                max(pool, key=lambda i: (requests[i].span.start_ns, -requests[i].index)),
            )
            used.add(pick)
            call.request = requests[pick]
            e.sources["name"] = "display_name"
    for call in calls:  # a class name where the tool name belongs: the arguments find the request it ran
        e = call.execution
        if e is None or call.request is not None or e.sources.get("name") not in WEAK_NAME_SOURCES:
            continue
        pool = [
            i
            for i, r in enumerate(requests)
            if i not in used
            and r.span.start_ns <= e.span.start_ns
            and _argumentsmatch_requests(e, r, schemas.get(r.name))
        ]
        if pool:
            pick = max(pool, key=lambda i: (requests[i].span.start_ns, -requests[i].index))
            used.add(pick)
            call.request = requests[pick]
    return [r for i, r in enumerate(requests) if i not in used]


def fold_duplicate(record: Execution, call: Execution, why: str) -> None:
    """``record`` is a second record of ``call``'s execution: plumbing, and its failure, if it says one, the
    call's (``sources["status"]`` = ``<why>:<what said it>``)."""
    record.plumbing = "duplicate"
    if record.status == "error" and call.status != "error":
        call.status, call.error = "error", record.error
        call.sources["status"] = f"{why}:" + record.sources.get("status", "span_status")


def fold_twin_records(
    calls: list[Call], unmatched: Sequence[Request], schemas: Mapping[str, Any]
) -> list[Call]:
    """An execution no request asked for that ran at the same time as a requested call, with the same
    arguments: the same call recorded a second time under another name (a tool's class name beside its display
    name). Kept apart when a request still waits for a tool of its name, so two calls the
    model made stay two."""
    waiting = {display_key(r.name) for r in unmatched}
    matched = [c.execution for c in calls if c.execution is not None and c.request is not None]
    if not matched:
        return calls
    out: list[Call] = []
    for call in calls:
        e = call.execution
        if e is not None and call.request is None and display_key(e.name) not in waiting:
            mine = arguments_of(e, schemas.get(e.name))  # (each with its tool's schema: the result is kept)
            twin = next(
                (
                    m
                    for m in matched
                    if m.span.start_ns <= e.span.end_ns
                    and e.span.start_ns <= m.span.end_ns
                    and mine.params
                    and (theirs := arguments_of(m, schemas.get(m.name))).params is not None
                    and numeric_equal(mine.params, theirs.params)
                ),
                None,
            )
            if twin is not None:
                fold_duplicate(e, twin, "twin_record")
                continue
        out.append(call)
    return out


def name_from_history(calls: list[Call], history: History, ctx: TraceContext) -> None:
    """An execution that carries only a class name and matched no request: the model's call with the same
    arguments names it (and gives its call id), as a later LLM input repeats it or, failing that, as another
    span of the trace recorded the model's message (a LangChain runnable's output)."""
    pending = [
        c.execution
        for c in calls
        if c.execution is not None
        and c.request is None
        and c.execution.sources.get("name") in WEAK_NAME_SOURCES
    ]
    if not pending:
        return
    taken: set[tuple[str | None, str]] = set()
    recorded: list[ToolCallPart] | None = None
    for e in pending:
        mine = arguments_of(e, None)
        if mine.params is None:
            continue
        found = _same_arguments(history.calls(e.span.end_ns), mine.params, taken)
        source = "history"
        if found is None:
            if recorded is None:
                recorded = _recorded_model_calls(ctx)
            found, source = _same_arguments(recorded, mine.params, taken), "message"
        if found is not None:
            taken.add((found.call_id, found.name))
            e.name, e.sources["name"] = found.name, source
            if found.call_id and not e.call_id:
                e.call_id, e.sources["call_id"] = found.call_id, source


def ids_from_history(calls: list[Call], history: History, schemas: Mapping[str, Any]) -> None:
    """An execution with no call id, no request and no result (the model's output hidden, the tool span's
    result too): the model's call with its name and equal arguments, as a later LLM input repeats it, gives
    its call id, and so the result fed back for it."""
    pending = [
        c.execution
        for c in calls
        if c.execution is not None
        and c.request is None
        and not c.execution.call_id
        and c.execution.result is None
    ]
    if not pending:
        return
    taken: set[tuple[str | None, str]] = {
        (c.execution.call_id, c.execution.name)
        for c in calls
        if c.execution is not None and c.execution.call_id
    }
    for e in pending:
        mine = arguments_of(e, schemas.get(e.name))  # (the normalisation the call is built from: cached)
        if mine.params is None:
            continue
        same_name = [p for p in history.calls(e.span.end_ns) if p.name == e.name and p.call_id]
        found = _same_arguments(same_name, mine.params, taken)
        if found is not None:
            taken.add((found.call_id, found.name))
            e.call_id, e.sources["call_id"] = found.call_id, "history"


def _same_arguments(
    parts: Sequence[ToolCallPart], params: Mapping[str, Any], taken: set[tuple[str | None, str]]
) -> ToolCallPart | None:
    for part in parts:
        if (part.call_id, part.name) in taken:
            continue
        theirs = normalize_arguments(part.arguments)
        if theirs.params is not None and numeric_equal(params, theirs.params):
            return part
    return None


def _recorded_model_calls(ctx: TraceContext) -> list[ToolCallPart]:
    """Tool calls in the assistant messages other spans of the trace output, in start
    order, one per call id."""
    out: list[ToolCallPart] = []
    seen: set[str] = set()
    for span in sorted(ctx.tree.spans.values(), key=span_order):
        for key in (sc.TRACELOOP_ENTITY_OUTPUT, sc.OI_OUTPUT_VALUE):
            raw = span.attributes.get(key)
            if isinstance(raw, str) and "tool_calls" in raw:
                for message in parse_messages(raw, "assistant"):
                    for part in message.tool_calls:
                        if part.call_id is None or part.call_id not in seen:
                            seen.add(part.call_id or "")
                            out.append(part)
    return out


def assign_turns(calls: list[Call], llm_spans: Sequence[SpanRecord]) -> None:
    """The requesting LLM span; for an execution with no matched request, the last LLM span started before it.

    (Start, not end: ADK runs tools inside its ``generate_content`` span.)
    """
    starts: list[tuple[int, str]] | None = None  # sorted on the first call with no request
    for call in calls:
        if call.request is not None:
            call.turn, call.turn_source = call.request.span.span_id, call.request.source
            continue
        if starts is None:
            starts = sorted((s.start_ns, s.span_id) for s in llm_spans)
        start = call.start
        previous = [span_id for begin, span_id in starts if begin <= start]
        if previous:
            call.turn, call.turn_source = previous[-1], "inferred"


def call_order_key(calls: list[Call]) -> Callable[[Call], tuple[int, str, int, int, int, str]]:
    """Start order; the calls of one LLM turn stay together, in the order of that turn's output."""
    group_start: dict[str, int] = {}
    for call in calls:
        turn = call.turn
        if turn is not None:
            start = call.start
            known = group_start.get(turn)
            group_start[turn] = start if known is None or start < known else known

    def key(call: Call) -> tuple[int, str, int, int, int, str]:
        # ``call.start`` and ``call.span_id`` spelled out: this runs for every call of every run
        execution, request, turn = call.execution, call.request, call.turn
        if execution is not None:
            span = execution.span
            start = span.start_ns
        else:
            span = request.span  # type: ignore[union-attr]
            start = span.end_ns
        index = request.index if request is not None else None
        return (
            group_start.get(turn, start) if turn else start,
            turn or "",
            0 if index is not None else 1,
            index or 0,
            start,
            span.span_id,
        )

    return key


def call_id_of(call: Call) -> str | None:
    if call.execution is not None and call.execution.call_id:
        return call.execution.call_id
    return call.request.call_id if call.request is not None else None


def build_tool_call(
    call: Call,
    schemas: Mapping[str, Any],
    trace_id: str,
    later: LaterTraces | None = None,
    text_failures: bool = True,
) -> ToolCall:
    """The ToolCall of a matched call; ``later``: other traces reconstructed together, whose history can hold
    the result of a request-only call (a plain client loop split into one trace per LLM call)."""
    e, r = call.execution, call.request
    params: dict[str, Any] | None = None
    raw: Any = None
    output: Any = None
    status = "ok"
    error: str | None = None
    if e is not None:
        found = (
            e.sources
        )  # sources are listed in a fixed order: name, arguments, status, result, call_id, llm_turn
        name = e.name
        sources: dict[str, str] = {"name": found.get("name", "")}
        if r is not None and r.name != name and found.get("name") in (*WEAK_NAME_SOURCES, "display_name"):
            name = r.name  # the name the model called, over a class name or a framework's label
            sources["name"] = f"request:{r.source}"
        schema = schemas.get(name) or e.schema  # the same schema the matching used
        if e.raw_arguments is not None:
            raw = e.raw_arguments
            normalized = arguments_of(e, schema)
            if normalized.params is not None:
                params = normalized.params
                source = found.get("arguments", "")
                sources["arguments"] = source + "+schema" if normalized.encoding == "scalar" else source
    else:
        assert r is not None
        name = r.name
        sources = {"name": f"request:{r.source}"}
        schema = schemas.get(name)
    if params is None and r is not None:
        normalized = arguments_of(r, schema)
        if normalized.params is not None:
            params = normalized.params
            sources["arguments"] = f"request:{r.source}"
        if raw is None:
            raw = r.arguments
    result = call.result
    if e is not None:
        status, error = e.status, e.error
        sources["status"] = found.get("status", "span_status")
        if e.result is not None:
            output = e.result
            sources["result"] = found.get("result", "")
        # the model was told it failed: a failure status, or (for a call whose span recorded no result, as for
        # tool spans' own results) an error report as the text fed back
        failed = (
            result_failure(result, text_failures and e.result is None) if status == "ok" and result else None
        )
        if failed is not None:
            status, (error, sources["status"]) = "error", failed
    if output is None and result is not None:
        output = text_of(result.content) if isinstance(result.content, list) else result.content
        sources["result"] = result.source
    if e is None:
        failed = (
            result_failure(result, text_failures) if result is not None else None
        )  # a loop feeding back "Error:"
        if failed is not None:
            status, (error, sources["status"]) = "error", failed
        else:
            sources["status"] = result.source if result is not None else "default"
    call_id = None
    if e is not None and e.call_id:
        call_id = e.call_id
        sources["call_id"] = found.get("call_id", "")
    elif r is not None and r.call_id:
        call_id = r.call_id
        sources["call_id"] = f"request:{r.source}"
    elif result is not None and result.call_id:
        call_id = result.call_id
        sources["call_id"] = result.source
    turn_source = call.turn_source
    if turn_source:
        sources["llm_turn"] = turn_source if turn_source == "inferred" else f"request:{turn_source}"
    if e is not None:
        span, start = e.span, e.span.start_ns
    else:
        assert r is not None
        span, start = r.span, r.span.end_ns
        if later is not None and output is None and call_id:
            completed = later.completion(trace_id, call_id, start)
            if completed is not None:
                output, status, error, status_source = completed
                sources["result"] = "history"
                sources["status"] = status_source
    return ToolCall(
        name,
        params,
        output,
        status=status,
        error=error,
        call_id=call_id,
        trace_id=trace_id,
        span_id=span.span_id,
        llm_turn=call.turn,
        start_time_ns=start,
        raw_arguments=raw,
        sources=sources,
    )


def output_tool_names(llm_spans: Sequence[SpanRecord]) -> frozenset[str]:
    """pydantic-ai structured output is a tool call (``final_result``) that is not a tool of the agent."""
    names: set[str] = set()
    for span in llm_spans:
        params = as_dict(span.attributes.get(sc.PYDANTIC_AI_MODEL_REQUEST_PARAMETERS))
        for tool in (as_list(params.get("output_tools")) or ()) if params else ():
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                names.add(tool["name"])
    return frozenset(names)
