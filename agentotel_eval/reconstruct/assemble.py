"""One run's spans -> an AgentRun: its ordered ToolCalls, handoffs, tool definitions, input and output.

A request with no execution counts as a call only when the run has no execution span at all (plain client
loops), or when a later LLM input carries its result (the call ran, its span is missing).
"""

from __future__ import annotations

from typing import Any

from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.handoffs import collect_handoffs
from agentotel_eval.reconstruct.history import History, LaterTraces
from agentotel_eval.reconstruct.llm import Request
from agentotel_eval.reconstruct.matching import (
    Call,
    arguments_of,
    assign_turns,
    build_tool_call,
    call_id_of,
    call_order_key,
    match_requests,
    output_tool_names,
    requests_of,
)
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.reconstruct.run_fields import (
    agent_name_of,
    expected_tools_of,
    offered_definitions,
    run_input_of,
    run_output_of,
    run_status_of,
)
from agentotel_eval.reconstruct.runs import Scope
from agentotel_eval.reconstruct.spans import TRANSFER_PREFIX, Execution, read_execution
from agentotel_eval.reconstruct.tree import span_order
from agentotel_eval.test_case import ToolCall


def _split_handoff_requests(requests: list[Request]) -> tuple[list[Request], list[Request]]:
    """(the ``transfer_to_*`` requests, the others): handoffs are plumbing, recorded apart from the calls."""
    handoffs = [r for r in requests if r.name.startswith(TRANSFER_PREFIX)]
    return handoffs, [r for r in requests if not r.name.startswith(TRANSFER_PREFIX)]


def assemble_run(scope: Scope, parent: Scope | None, ctx: TraceContext, later: LaterTraces | None = None) -> AgentRun:
    """The AgentRun of one run scope (``parent``: the nearest enclosing run, for ``parent_run_span_id``)."""
    chain = scope.chain
    llm_spans = sorted(scope.llm_spans, key=span_order) if len(scope.llm_spans) > 1 else scope.llm_spans
    tool_spans = sorted(scope.tool_spans, key=span_order) if len(scope.tool_spans) > 1 else scope.tool_spans
    roles = ctx.roles
    # (plain loops rather than comprehensions below: a comprehension is a function call of its own, and these
    # lists are short, often empty; the guards skip building what a run without tool or LLM spans does not need)
    executions: list[Execution] = []
    real: list[Execution] = []  # the executions that are calls, not plumbing
    for s in tool_spans:
        e = read_execution(s, roles[s.span_id])
        executions.append(e)
        if e.plumbing is None:
            real.append(e)
    requests = requests_of(llm_spans, ctx) if llm_spans else []
    handoff_requests: list[Request] = []
    for r in requests:
        if r.name.startswith(TRANSFER_PREFIX):  # a handoff asked for: split the requests (rare)
            handoff_requests, requests = _split_handoff_requests(requests)
            break
    definitions = offered_definitions(chain, llm_spans, executions, ctx)
    schemas: dict[str, Any] = {}
    for d in definitions:
        if d.parameters:
            schemas[d.name] = d.parameters
    for e in real:
        if e.schema and e.name not in schemas:
            schemas[e.name] = e.schema

    for e in real:
        if e.call_id is None and isinstance(e.raw_arguments, str) and "tool_call_id" in e.raw_arguments:
            embedded = arguments_of(e, schemas.get(e.name)).call_id  # OpenLLMetry LangChain: kwargs.tool_call_id
            if embedded:
                e.call_id, e.sources["call_id"] = embedded, e.sources.get("arguments", "arguments")
    history = History(llm_spans, ctx)
    calls: list[Call] = []
    for e in real:
        calls.append(Call(e, None))
    unmatched = match_requests(calls, requests, schemas)
    extra: dict[str, Any] = {"chain": [chain[0].span_id] if len(chain) == 1 else [s.span_id for s in chain]}
    if not unmatched:
        counted = unmatched
    elif executions:
        counted = [r for r in unmatched if r.call_id and history.result(r.call_id, r.span.end_ns) is not None]
        dropped = [r for r in unmatched if not any(r is c for c in counted)]
        if dropped:
            extra["unexecuted_requests"] = [r.name for r in dropped]
    else:
        output_tools = output_tool_names(llm_spans)
        counted = [r for r in unmatched if r.name not in output_tools]
    if counted:
        calls.extend([Call(None, r) for r in counted])
    if calls:
        assign_turns(calls, llm_spans)
    for call in calls:
        execution = call.execution
        if execution is None or execution.result is None:
            call_id = call_id_of(call)
            if call_id:
                done = execution.span.end_ns if execution is not None else call.start
                call.result = history.result(call_id, done)
    if len(calls) > 1:
        calls.sort(key=call_order_key(calls))
    trace_id = ctx.tree.trace_id
    tool_calls: tuple[ToolCall, ...] = ()
    if calls:
        built = []
        for c in calls:
            built.append(build_tool_call(c, schemas, trace_id, later))
        tool_calls = tuple(built)
    if len(real) < len(executions):
        plumbing = [e for e in executions if e.plumbing == "internal"]
        if plumbing:
            extra["plumbing_spans"] = [e.span.span_id for e in plumbing]
    if scope.container_span_id:
        extra["container_span_id"] = scope.container_span_id
    if scope.internal:
        nested = [s.span_id for s in sorted(scope.internal, key=span_order) if roles[s.span_id].tool]
        if nested:
            extra["nested_tool_spans"] = nested  # inside another tool span: that tool's internals, not calls

    agent_name = agent_name_of(scope, llm_spans, tool_spans)
    run_input, input_source = run_input_of(chain, llm_spans, ctx)
    run_output, output_source = run_output_of(chain, llm_spans, ctx)
    run_input = run_input.strip() or None if run_input else None
    run_output = run_output.strip() or None if run_output else None
    extra["input_source"], extra["output_source"] = input_source, output_source
    status, error = run_status_of(chain)
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
        collect_handoffs(executions, handoff_requests, agent_name) if handoff_requests or len(real) < len(executions)
        else (),
        tuple(definitions),
        expected_tools_of(chain),
        parent.anchor.span_id if parent is not None else None,
        scope.convention,
        anchor.name,
        extra,
    )
