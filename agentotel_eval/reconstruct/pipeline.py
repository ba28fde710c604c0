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
from agentotel_eval.reconstruct.history import LaterTraces
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.reconstruct.runs import TraceRuns, find_runs
from agentotel_eval.reconstruct.spans import roles_of, run_convention
from agentotel_eval.reconstruct.tree import build_trees


def is_run_span(span: SpanRecord) -> bool:
    """Whether this span delimits an agent run by its own attributes (the trace-root fallback aside)."""
    return run_convention(span.attributes) is not None


def reconstruct(spans: Iterable[SpanRecord], logs: Iterable[LogRecord] = ()) -> list[AgentRun]:
    """All agent runs found in these spans (any number of traces), ordered by start time."""
    found: list[tuple[TraceContext, TraceRuns]] = []
    for tree in build_trees(spans, logs):
        roles = roles_of(tree.spans)  # the run, tool and LLM spans
        ctx = TraceContext(tree, roles)
        trace_runs = find_runs(tree, roles, ctx.requests_tools)
        ctx.llm_parent = trace_runs.llm_parent
        found.append((ctx, trace_runs))
    later = LaterTraces([ctx for ctx, _ in found]) if len(found) > 1 else None
    runs: list[AgentRun] = []
    for ctx, trace_runs in found:
        parent_run = trace_runs.parent_run
        tree_runs = [assemble_run(scope, parent_run.get(id(scope)), ctx, later) for scope in trace_runs.runs]
        runs.extend(name_handoffs(tree_runs, ctx))
    if len(runs) > 1:
        runs.sort(key=lambda r: (r.start_time_ns, r.trace_id, r.span_id))
    return runs
