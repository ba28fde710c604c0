"""Reconstruction entry points: spans (+ logs) of any number of traces -> agent runs with ordered tool calls.

Pure and deterministic: the same spans in any order, in any batches, with duplicates, give the same runs.
The collector calls ``reconstruct`` per trace when the trace is quiet and again when a late span arrives;
given several traces at once (a plain client loop whose LLM calls are separate traces), a request-only call's
result is also looked up in the later traces' history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.build_run import build_run
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.conversations import split_conversations
from agentotel_eval.reconstruct.declared import BUILTIN, Convention, Conventions
from agentotel_eval.reconstruct.handoffs import name_handoffs
from agentotel_eval.reconstruct.history import LaterTraces
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.reconstruct.runs import Scope, TraceRuns, find_runs, transcript_runs
from agentotel_eval.reconstruct.spans import classify, roles_of
from agentotel_eval.reconstruct.tree import build_trees, rehome_event_logs


def is_run_span(span: SpanRecord, conventions: Conventions = BUILTIN) -> bool:
    """Whether this span delimits an agent run by its own attributes (the trace-root fallback aside)."""
    return classify(span, conventions).run is not None


@dataclass(frozen=True, slots=True)
class FedBack:
    """What the LLM calls of some traces were sent back of earlier turns: the call ids of the tool results in
    their inputs, each with the tool name the input's history gives it (None when it names none),
    and the user texts."""

    results: dict[str, str | None]
    user_texts: frozenset[str]


def results_fed_back(
    spans: Iterable[SpanRecord],
    logs: Iterable[LogRecord] = (),
    conventions: Sequence[Convention] | Conventions = (),
) -> FedBack:
    """The tool results these spans' LLM calls were sent (the tool messages in their inputs): the calls whose
    results a trace can give to the trace that asked for them (a plain client loop makes each LLM call its own
    trace; see ``reconstruct`` given several traces)."""
    declared = conventions if isinstance(conventions, Conventions) else BUILTIN.plus(tuple(conventions))
    results: dict[str, str | None] = {}
    users: set[str] = set()
    for tree in build_trees(spans, logs):
        roles = roles_of(tree.spans, declared)
        llm_ids = {span_id for span_id, role in roles.items() if role.llm is not None}
        if not llm_ids:
            continue
        if tree.logs:
            rehome_event_logs(tree, llm_ids.__contains__)
        ctx = TraceContext(tree, roles)
        for span_id in llm_ids:
            messages = ctx.input(tree.spans[span_id])
            named = {c.call_id: c.name for m in messages for c in m.tool_calls if c.call_id}
            for message in messages:
                if message.role == "user" and message.texts:
                    users.add(message.text.strip())  # type: ignore[union-attr]
                for part in message.tool_results:
                    if part.call_id:
                        results[part.call_id] = named.get(part.call_id) or results.get(part.call_id)
    return FedBack(results, frozenset(users))


def reconstruct(
    spans: Iterable[SpanRecord],
    logs: Iterable[LogRecord] = (),
    conventions: Sequence[Convention] | Conventions = (),
    *,
    text_failures: bool = True,
) -> list[AgentRun]:
    """All agent runs found in these spans (any number of traces), ordered by start time.

    ``conventions``: declared conventions (``conventions_from_config``), read before the built-in ones.
    ``text_failures``: whether a tool result that reads as an error report (``"Error: ..."``, MCP's ``"Error
    executing tool ..."``) makes its call a failed one where no ERROR status says so (``sources["status"]`` is
    then ``result_text``); off, only recorded statuses and structured results decide.
    """
    declared = conventions if isinstance(conventions, Conventions) else BUILTIN.plus(tuple(conventions))
    found: list[tuple[TraceContext, TraceRuns]] = []
    for tree in build_trees(spans, logs):
        roles = roles_of(tree.spans, declared)  # the run, tool and LLM spans
        if tree.logs:
            llm_ids = {span_id for span_id, role in roles.items() if role.llm is not None}
            rehome_event_logs(tree, llm_ids.__contains__)
        ctx = TraceContext(tree, roles, text_failures=text_failures)
        trace_runs = find_runs(tree, roles, ctx.requests_tools, ctx.offers_tools, ctx.recorded_call)
        if not trace_runs.runs:
            trace_runs = transcript_runs(tree, roles) or trace_runs
        ctx.llm_parent = trace_runs.llm_parent
        if trace_runs.runs:
            split_conversations(trace_runs, ctx)
        found.append((ctx, trace_runs))
    later = LaterTraces([ctx for ctx, _ in found]) if len(found) > 1 else None
    runs: list[AgentRun] = []
    for ctx, trace_runs in found:
        parent_run = trace_runs.parent_run
        nested: dict[int, list[Scope]] = {}
        if len(trace_runs.runs) > 1:
            for scope in trace_runs.runs:
                above = parent_run.get(id(scope))
                if above is not None:
                    nested.setdefault(id(above), []).append(scope)
        tree_runs = [
            build_run(scope, parent_run.get(id(scope)), ctx, later, nested.get(id(scope), ()))
            for scope in trace_runs.runs
        ]
        runs.extend(name_handoffs(tree_runs, ctx))
    if len(runs) > 1:
        runs.sort(key=lambda r: (r.start_time_ns, r.trace_id, r.span_id))
    return runs
