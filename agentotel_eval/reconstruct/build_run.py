"""One run's spans -> an AgentRun: its ordered ToolCalls, handoffs, tool definitions, input and output.

A request with no execution counts as a call only when the run has no execution span at all (plain client
loops), or when a later LLM input carries its result (the call ran, its span is missing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import STATUS_ERROR, SpanRecord
from agentotel_eval.reconstruct.arguments import normalize_arguments
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.diagnostics import run_diagnostics
from agentotel_eval.reconstruct.frameworks import Plumbing
from agentotel_eval.reconstruct.handoffs import collect_handoffs
from agentotel_eval.reconstruct.history import History, LaterTraces
from agentotel_eval.reconstruct.llm import Request
from agentotel_eval.reconstruct.logged_calls import arguments_from_logs
from agentotel_eval.reconstruct.matching import (
    Call,
    arguments_of,
    assign_turns,
    build_tool_call,
    call_id_of,
    call_order_key,
    display_key,
    fold_duplicate,
    fold_twin_records,
    ids_from_history,
    match_requests,
    name_from_history,
    output_tool_names,
    requests_of,
)
from agentotel_eval.reconstruct.messages import ToolResultPart
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.reconstruct.run_fields import (
    agent_name_of,
    expected_tools_of,
    expected_trajectory_of,
    offered_by_turn,
    offered_definitions,
    run_context_of,
    run_input_of,
    run_output_of,
    run_status_of,
)
from agentotel_eval.reconstruct.runs import Scope
from agentotel_eval.reconstruct.spans import Execution, read_execution
from agentotel_eval.reconstruct.step_results import results_from_steps
from agentotel_eval.reconstruct.streamed import streamed_requests
from agentotel_eval.reconstruct.transcripts import Transcript, find_transcript
from agentotel_eval.reconstruct.tree import span_order
from agentotel_eval.reconstruct.values import numeric_equal, short_type_name
from agentotel_eval.test_case import ToolCall


def _split_plumbing_requests(
    requests: list[Request], plumbing: Plumbing, handed_off: set[str]
) -> tuple[list[Request], list[Request]]:
    """(the handoff requests, the calls): framework plumbing the model asked for is recorded apart, and so are
    the tools that this run's executions show handing off (``handed_off``: a LangGraph handoff
    tool's ``Command``)."""
    handoffs: list[Request] = []
    calls: list[Request] = []
    for r in requests:
        kind = "handoff" if r.name in handed_off else plumbing.kind(r.name)
        if kind is None:
            calls.append(r)
        elif kind == "handoff":
            handoffs.append(r)
    return handoffs, calls


def _fold_repeated_records(real: list[Execution], llm_spans: list[SpanRecord]) -> list[Execution]:
    """Drop a zero-length tool span that repeats the execution just before it (same tool, same arguments, no
    model call between them): a framework's second record of one call (CrewAI's ``tool failure`` beside its
    ``call tool``). Its failure, if it says one, is the call's."""
    out: list[Execution] = []
    for e in real:
        span = e.span
        previous = out[-1] if out else None
        if (
            previous is not None
            and span.start_ns == span.end_ns
            and e.name == previous.name
            and e.raw_arguments == previous.raw_arguments
            and not (e.call_id and previous.call_id and e.call_id != previous.call_id)
            and not any(previous.span.start_ns < s.start_ns <= span.start_ns for s in llm_spans)
        ):
            fold_duplicate(e, previous, "repeated_record")
            continue
        out.append(e)
    return out


def _undo_copied_failures(real: list[Execution], ctx: TraceContext) -> None:
    """An ERROR status with no exception of its own, on a call that recorded its result, whose message repeats
    an earlier span's exception: a status copied from another span (OpenInference's Vercel processor marks
    every span after a trace's first error), not this call's failure. The explicit result wins."""
    for e in real:
        span = e.span
        if (
            e.status != "error"
            or e.sources.get("status") != "span_status"
            or e.result is None
            or not span.status_message
            or any(ev.name == sc.EXCEPTION_EVENT for ev in span.events)
        ):
            continue
        for other in ctx.tree.spans.values():
            if (
                other is not span
                and other.start_ns < span.start_ns
                and other.status_message == span.status_message
                and any(ev.name == sc.EXCEPTION_EVENT for ev in other.events)
            ):
                e.status, e.error = "ok", None
                e.sources["status"] = "result_over_copied_status"
                break


def _nested_failures(real: list[Execution], internal: list[SpanRecord], ctx: TraceContext) -> None:
    """A call whose own span says OK but a tool span nested in it (the same call recorded by a second
    instrumentation, or the tool object the framework's step ran) failed: the call failed."""
    by_span = {e.span.span_id: e for e in real}
    for span in internal:
        if span.status_code != STATUS_ERROR and not any(ev.name == sc.EXCEPTION_EVENT for ev in span.events):
            continue
        role = ctx.roles.get(span.span_id)
        if role is None or role.tool is None:
            continue
        above = ctx.tree.parent(span)
        hops = 0
        while above is not None and above.span_id not in by_span and hops < 64:
            above, hops = ctx.tree.parent(above), hops + 1
        e = by_span.get(above.span_id) if above is not None else None
        if e is not None and e.status != "error":
            e.status = "error"
            e.error = span.status_message or next(
                (
                    str(ev.attributes.get(sc.EXCEPTION_MESSAGE))
                    for ev in span.events
                    if ev.name == sc.EXCEPTION_EVENT
                ),
                "error",
            )
            e.sources["status"] = "nested_span"


def _names_from_nested(
    real: list[Execution],
    internal: list[SpanRecord],
    requests: list[Request],
    schemas: Mapping[str, Any],
    ctx: TraceContext,
) -> None:
    """A call recorded under a name the model never called (a tool's class name) with the same call recorded
    inside it under a name it did (the display name, by a second instrumentation): the
    inner record names it."""
    asked = {display_key(r.name) for r in requests}
    strangers = {e.span.span_id: e for e in real if display_key(e.name) not in asked}
    if not strangers:
        return
    for span in internal:
        role = ctx.roles.get(span.span_id)
        if role is None or role.tool is None:
            continue
        above, hops = ctx.tree.parent(span), 0
        while above is not None and above.span_id not in strangers and hops < 8:
            above, hops = ctx.tree.parent(above), hops + 1
        e = strangers.get(above.span_id) if above is not None else None
        if e is None:
            continue
        inner = read_execution(span, role, ctx.plumbing, text_failures=ctx.text_failures)
        if display_key(inner.name) not in asked:
            continue
        # compared as the inner name's tool would read them; ``e`` is not normalised for good (arguments_of
        # keeps the first normalisation) until it is known to bear that name
        schema = schemas.get(inner.name)
        mine, theirs = normalize_arguments(e.raw_arguments, schema), arguments_of(inner, schema)
        if (
            mine.params is not None
            and theirs.params is not None
            and numeric_equal(mine.params, theirs.params)
        ):
            e.name, e.sources["name"] = inner.name, "nested_span"
            del strangers[e.span.span_id]


def _agents_called(requests: list[Request], nested: Sequence[Scope], ctx: TraceContext) -> list[Call]:
    """Requests that an agent nested in this run answered: the model called an agent as a tool and the
    framework ran it with no tool span (smolagents' managed agents): the nested run named like the request,
    started after it, is its execution; its output is the call's result and its status the call's."""
    out: list[Call] = []
    taken: set[int] = set()
    for r in requests:
        for child in nested:
            anchor = child.anchor
            if id(child) in taken or anchor.start_ns < r.span.start_ns or r.name not in _agent_names(anchor):
                continue
            taken.add(id(child))
            text, _ = run_output_of(child.chain, child.llm_spans, ctx)
            status, error = run_status_of(child.chain)
            call = Call(None, r)
            call.result = ToolResultPart(
                r.call_id, error if status == "error" else text, "error" if status == "error" else None
            )
            out.append(call)
            break
    return out


def _agent_names(span: SpanRecord) -> tuple[str, ...]:
    """The names a run span gives its agent: its agent-name attributes, its span name without a run suffix."""
    names = [
        v
        for key in (sc.GEN_AI_AGENT_NAME, sc.OI_AGENT_NAME)
        if isinstance(v := span.attributes.get(key), str)
    ]
    name = span.name
    for prefix in ("invoke_agent ",):
        name = name.removeprefix(prefix)
    for suffix in (".run", ".agent"):
        name = name.removesuffix(suffix)
    return (*names, name)


def _typed_error(error: str, tool_spans: Sequence[SpanRecord]) -> str:
    """The run's error with the exception type a failed tool span recorded for the same message: the run
    failed because that tool raised ("Unknown city: X" -> "UnknownCityError: Unknown city: X")."""
    for span in tool_spans:
        if span.status_code != STATUS_ERROR:
            continue
        error_type = span.attributes.get(sc.ERROR_TYPE)  # GenAI: the exception's type as error.type
        if (
            isinstance(error_type, str)
            and error_type
            and span.status_message == error
            and error_type not in error
        ):
            return f"{short_type_name(error_type)}: {error}"
        for event in span.events:
            if (
                event.name == sc.EXCEPTION_EVENT
                and str(event.attributes.get(sc.EXCEPTION_MESSAGE) or "") == error
            ):
                etype = short_type_name(event.attributes.get(sc.EXCEPTION_TYPE))
                return f"{etype}: {error}" if etype and etype not in error else error
    return error


def _failed_with_run(
    tool_calls: tuple[ToolCall, ...], last_llm: SpanRecord, error: str | None
) -> tuple[ToolCall, ...]:
    """The run ended in an error right after its last LLM call asked for tools that left no trace (no span, no
    result fed back): the exception that ended the run was theirs (OpenLIT records a tool that raised only as
    the root span's error)."""
    out = []
    for call in tool_calls:
        if (
            call.span_id == last_llm.span_id
            and call.output is None
            and call.status == "ok"
            and (call.sources or {}).get("status") == "default"
        ):
            call = dataclasses.replace(
                call,
                status="error",
                error=error or "error",
                sources={**(call.sources or {}), "status": "run_error"},
            )
        out.append(call)
    return tuple(out)


def build_run(
    scope: Scope,
    parent: Scope | None,
    ctx: TraceContext,
    later: LaterTraces | None = None,
    nested: Sequence[Scope] = (),
) -> AgentRun:
    """The AgentRun of one run scope (``parent``: the nearest enclosing run, for ``parent_run_span_id``;
    ``nested``: the runs directly inside it)."""
    chain = scope.chain
    llm_spans = sorted(scope.llm_spans, key=span_order) if len(scope.llm_spans) > 1 else scope.llm_spans
    tool_spans = sorted(scope.tool_spans, key=span_order) if len(scope.tool_spans) > 1 else scope.tool_spans
    roles = ctx.roles
    plumbing = ctx.plumbing
    # (plain loops rather than comprehensions below: a comprehension is a function call of its own, and these
    # lists are short, often empty; the guards skip building what a run without tool or LLM
    # spans does not need)
    executions: list[Execution] = []
    real: list[Execution] = []  # the executions that are calls, not plumbing
    for s in tool_spans:
        e = read_execution(s, roles[s.span_id], plumbing, text_failures=ctx.text_failures)
        executions.append(e)
        if e.plumbing is None:
            real.append(e)
    if len(real) > 1:
        real = _fold_repeated_records(real, llm_spans)
    if real and ctx.tree.logs:
        arguments_from_logs(real, ctx)
    if scope.internal and real:
        _nested_failures(real, scope.internal, ctx)
    for e in real:
        if e.status == "error" and e.result is not None:  # (rare: a failed call that still has a result)
            _undo_copied_failures(real, ctx)
            break
    requests = requests_of(llm_spans, ctx) if llm_spans else []
    transcript: Transcript | None = None
    if not llm_spans and not tool_spans:  # nothing but a step's recorded conversation can hold the calls
        transcript = find_transcript(ctx.tree, chain[0], ctx.roles)
        if transcript is not None:
            requests = transcript.requests
    handoff_requests: list[Request] = []
    handed_off = (
        {e.name for e in executions if e.plumbing == "handoff" and e.handoff_to}
        if len(real) < len(executions)
        else set()
    )
    if (plumbing.frameworks or handed_off) and requests:
        handoff_requests, requests = _split_plumbing_requests(requests, plumbing, handed_off)
    definitions = offered_definitions(chain, llm_spans, executions, ctx)
    schemas: dict[str, Any] = {}
    for d in definitions:
        if d.parameters:
            schemas[d.name] = d.parameters
    for e in real:
        if e.schema and e.name not in schemas:
            schemas[e.name] = e.schema
    if (
        llm_spans and not real and not transcript
    ):  # a plain loop: a streamed answer may hold calls as its text
        streamed = streamed_requests(llm_spans, ctx, schemas, run_status_of(chain)[0] == "error")
        if streamed:
            requests = [*requests, *streamed]

    for e in real:
        if e.call_id is None and isinstance(e.raw_arguments, str) and "tool_call_id" in e.raw_arguments:
            embedded = arguments_of(
                e, schemas.get(e.name)
            ).call_id  # OpenLLMetry LangChain: kwargs.tool_call_id
            if embedded:
                e.call_id, e.sources["call_id"] = embedded, e.sources.get("arguments", "arguments")
    history = History(llm_spans, ctx)
    calls: list[Call] = []
    for e in real:
        calls.append(Call(e, None))
    if scope.internal and requests:
        _names_from_nested(real, scope.internal, requests, schemas, ctx)
    unmatched = match_requests(calls, requests, schemas)
    name_from_history(calls, history, ctx)
    if not requests and real:
        ids_from_history(calls, history, schemas)
    if requests and len(calls) > 1:
        calls = fold_twin_records(calls, unmatched, schemas)
        if len(calls) < len(real):
            real = [e for e in real if e.plumbing is None]
    extra: dict[str, Any] = {"chain": [chain[0].span_id] if len(chain) == 1 else [s.span_id for s in chain]}
    dropped: list[Request] = []
    if not unmatched:
        counted = unmatched
    elif executions:
        counted = [r for r in unmatched if r.call_id and history.result(r.call_id, r.span.end_ns) is not None]
        dropped = [r for r in unmatched if not any(r is c for c in counted)]
        if dropped and nested:
            ran = _agents_called(dropped, nested, ctx)
            if ran:
                calls.extend(ran)
                dropped = [r for r in dropped if not any(r is c.request for c in ran)]
        if dropped:
            extra["unexecuted_requests"] = [r.name for r in dropped]
    else:
        output_tools = output_tool_names(llm_spans)
        counted = [r for r in unmatched if r.name not in output_tools]
    if counted:
        calls.extend([Call(None, r) for r in counted])
    if calls:
        assign_turns(calls, llm_spans)
    if (
        transcript is not None
    ):  # no model call was recorded: no turn to name; the conversation gives the results
        for call in calls:
            if call.request is not None:
                call.turn = call.turn_source = None
                call.result = transcript.results.get(call.request.index)
    for (
        call
    ) in calls:  # the result fed back to the model: a missing result, or a failure the span did not say
        execution = call.execution
        if (
            execution is None
            or execution.result is None
            or (execution.status == "ok" and plumbing.unreliable_ok)
        ):
            call_id = call_id_of(call)
            if call_id:
                done = execution.span.end_ns if execution is not None else call.start
                fed_back = history.result(call_id, done)
                if fed_back is not None:
                    call.result = fed_back
    if (
        calls and not executions and llm_spans
    ):  # calls only in the model's messages: a step may hold the results
        results_from_steps(calls, chain[0], schemas, ctx)
    if len(calls) > 1:
        calls.sort(key=call_order_key(calls))
    trace_id = ctx.tree.trace_id
    tool_calls: tuple[ToolCall, ...] = ()
    if calls:
        built = []
        for c in calls:
            built.append(build_tool_call(c, schemas, trace_id, later, ctx.text_failures))
        tool_calls = tuple(built)
    if len(real) < len(executions):
        internal = [e for e in executions if e.plumbing in ("internal", "answer", "duplicate")]
        if internal:
            extra["plumbing_spans"] = [e.span.span_id for e in internal]
    if scope.container_span_id:
        extra["container_span_id"] = scope.container_span_id
    if scope.internal:
        inside = [s.span_id for s in sorted(scope.internal, key=span_order) if roles[s.span_id].tool]
        if inside:
            extra["nested_tool_spans"] = inside  # inside another tool span: that tool's internals, not calls

    diagnostics = run_diagnostics(
        scope, ctx, executions, calls, tool_calls, dropped, handoff_requests, plumbing.names
    )
    if len(llm_spans) > 1:
        by_turn = offered_by_turn(llm_spans, ctx)
        if by_turn:
            diagnostics["offered_by_turn"] = by_turn
    agent_name = agent_name_of(scope, llm_spans, tool_spans, ctx)
    run_input, input_source = run_input_of(chain, llm_spans, ctx)
    run_output, output_source = run_output_of(chain, llm_spans, ctx)
    system_prompt, assistant_texts = run_context_of(llm_spans, ctx)
    run_input = run_input.strip() or None if run_input else None
    run_output = run_output.strip() or None if run_output else None
    if run_output in assistant_texts:  # an LLM call that ended after the answering one (a nested agent's)
        assistant_texts = tuple(t for t in assistant_texts if t != run_output)
    extra["input_source"], extra["output_source"] = input_source, output_source
    status, error = run_status_of(chain)
    if status == "error" and error and tool_spans:
        error = _typed_error(error, tool_spans)
    if (
        status == "error" and tool_calls and llm_spans
    ):  # the last model turn: an LLM span not nested in another
        last_turn = llm_spans[
            -1
        ]  # (one inference can be recorded by several nested spans: LangChain's runnables)
        if ctx.llm_parent:
            last_turn = max(
                (s for s in llm_spans if s.span_id not in ctx.llm_parent), key=span_order, default=last_turn
            )
        tool_calls = _failed_with_run(tool_calls, last_turn, error)
    anchor = chain[0]
    service_name = None
    for span in chain:
        service_name = span.service_name
        if service_name:
            break
    return AgentRun(
        trace_id,
        anchor.span_id,
        agent_name,
        anchor.start_ns,
        max([s.end_ns for s in chain]) if len(chain) > 1 else anchor.end_ns,
        status,
        error,
        service_name or None,
        run_input,
        run_output,
        tool_calls,
        collect_handoffs(executions, handoff_requests, agent_name, plumbing)
        if handoff_requests or len(real) < len(executions)
        else (),
        tuple(definitions),
        expected_tools_of(chain),
        expected_trajectory_of(chain),
        parent.anchor.span_id if parent is not None else None,
        scope.convention,
        anchor.name,
        extra,
        diagnostics,
        system_prompt,
        assistant_texts,
    )
