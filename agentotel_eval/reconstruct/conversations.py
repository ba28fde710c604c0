"""Plain client loops that run a second agent inside a tool: one application span, no tool spans, and the LLM
calls of two conversations side by side. Each conversation is its own run.

LLM calls belong to one conversation when they open with the same first user message (each call re-sends the
history, which starts with it). The conversation of the earliest call is the outer run; one that starts while
the outer one waits on a tool result is an agent it called, nested in it.
"""

from __future__ import annotations

from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.runs import Scope, TraceRuns
from agentotel_eval.reconstruct.tree import span_order


def split_conversations(trace_runs: TraceRuns, ctx: TraceContext) -> None:
    """Split each fallback run of LLM calls only into a run per conversation (in place)."""
    added: list[Scope] = []
    for scope in trace_runs.runs:
        if scope.convention != "root" or scope.tool_spans or len(scope.llm_spans) < 3:
            continue  # (an agent called inside a tool makes at least one call between two of the outer run's)
        calls = sorted((s for s in scope.llm_spans if s.span_id not in ctx.llm_parent), key=span_order)
        answers = [s for s in calls if not ctx.output(s).requests]
        if len(answers) < 2 and (not answers or answers[-1] is calls[-1]):
            continue  # one conversation answers once, at its end: reading every input would be for nothing
        groups: dict[str, list[SpanRecord]] = {}
        group_of: dict[str, str] = {}
        for span in sorted(scope.llm_spans, key=span_order):
            key = _opening(ctx, span)
            if (
                key is None
            ):  # a content-less second record of a call (an SDK's span under an instrumentation's)
                key = group_of.get(ctx.llm_parent.get(span.span_id, ""))
            if key is None:
                return  # a call whose input is not recorded: the conversations cannot be told apart
            group_of[span.span_id] = key
            groups.setdefault(key, []).append(span)
        if len(groups) < 2:
            continue
        outer, *inner = groups.values()
        scope.llm_spans = outer
        for spans in inner:
            nested = Scope(spans[0], "run", "conversation", None, [spans[0]])
            nested.llm_spans = spans
            trace_runs.parent_run[id(nested)] = scope
            added.append(nested)
    if added:
        trace_runs.runs.extend(added)
        trace_runs.runs.sort(key=lambda s: span_order(s.anchor))


def _opening(ctx: TraceContext, span: SpanRecord) -> str | None:
    """The first user message of the conversation this LLM call continues (its text), or None."""
    for message in ctx.input(span):
        if message.role == "user":
            return message.text or ""
    return None
