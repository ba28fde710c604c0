"""Reconstruction entry points: spans (+ logs) of any number of traces -> agent runs with ordered tool calls.

Pure and deterministic: the same spans in any order, in any batches, with duplicates, give the same runs.
The collector calls ``reconstruct`` per trace when the trace is quiet and again when a late span arrives;
given several traces at once (a plain client loop whose LLM calls are separate traces), a request-only call's
result is also looked up in the later traces' history.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.assemble import assemble_run
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.handoffs import name_handoffs
from agentotel_eval.reconstruct.history import complete_from_later_traces
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.reconstruct.runs import find_runs
from agentotel_eval.reconstruct.spans import Role, classify, run_convention
from agentotel_eval.reconstruct.tree import build_trees


def is_run_span(span: SpanRecord) -> bool:
    """Whether this span delimits an agent run by its own attributes (the trace-root fallback aside)."""
    return run_convention(span.attributes) is not None


def reconstruct(spans: Iterable[SpanRecord], logs: Iterable[LogRecord] = ()) -> list[AgentRun]:
    """All agent runs found in these spans (any number of traces), ordered by start time."""
    runs: list[AgentRun] = []
    contexts: list[TraceContext] = []
    for tree in build_trees(spans, logs):
        roles: dict[str, Role] = {}
        for span_id, span in tree.spans.items():
            role = classify(span)
            if role.run or role.tool or role.llm:
                roles[span_id] = role
        ctx = TraceContext(tree, roles)
        found = find_runs(tree, roles, ctx.requests_tools)
        ctx.llm_parent = found.llm_parent
        tree_runs = [assemble_run(scope, found.parent_run.get(id(scope)), ctx) for scope in found.runs]
        runs.extend(name_handoffs(tree_runs, ctx))
        contexts.append(ctx)
    if len(contexts) > 1:
        runs = complete_from_later_traces(runs, contexts)
    runs.sort(key=lambda r: (r.start_time_ns, r.trace_id, r.span_id))
    return runs
