"""How a run was rebuilt, as plain data stored with it (``agent_runs.diagnostics``) and
printed by ``explain``.

For one run: the spans read and the convention each was read with; the spans ignored and why; for each call,
the evidence that supplied each field and the values discarded as not values; the model's requests that no
execution answered, and executions that no request asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.llm import Request
from agentotel_eval.reconstruct.matching import Call
from agentotel_eval.reconstruct.runs import Scope
from agentotel_eval.reconstruct.spans import Execution
from agentotel_eval.test_case import ToolCall

#: why an execution span is not a call, by its plumbing kind
_PLUMBING_WHY = {
    "handoff": "plumbing: a handoff to another agent",
    "answer": "plumbing: the framework's answer tool",
    "internal": "plumbing: a framework span that is not one call (merged tools, no tool name)",
    "duplicate": "duplicate: a second record of the call before it",
}


def run_diagnostics(
    scope: Scope,
    ctx: TraceContext,
    executions: Sequence[Execution],
    calls: Sequence[Call],
    tool_calls: Sequence[ToolCall],
    unexecuted: Sequence[Request],
    handoff_requests: Sequence[Request],
    plumbing_names: Sequence[str],
) -> dict[str, Any]:
    """The diagnostics record of one run (JSON-ready)."""
    roles = ctx.roles
    read: dict[str, str] = {}
    for span in (*scope.chain, *scope.llm_spans, *scope.tool_spans):
        role = roles.get(span.span_id)
        if role is not None:
            kind = "run" if role.run else "llm" if role.llm else "tool"
            read[span.span_id] = f"{kind}:{role.run or role.llm or role.tool}"
        else:
            read[span.span_id] = (
                "run:root"  # the trace's root, anchoring a run of evidence outside any run span
            )
    ignored: list[dict[str, str]] = []
    for e in executions:
        if e.plumbing is not None:
            ignored.append(_span_entry(e.span, _PLUMBING_WHY.get(e.plumbing, "plumbing")))
    for span in scope.chain[1:]:
        ignored.append(_span_entry(span, "wrapper: the same run as the span around it"))
    for span in scope.internal:
        role = roles.get(span.span_id)
        what = "a tool" if role is not None and role.tool else "an LLM call"
        ignored.append(_span_entry(span, f"nested: {what} inside a tool's execution, that tool's internals"))
    for span in scope.llm_spans:
        if span.span_id in ctx.llm_parent:
            ignored.append(_span_entry(span, "duplicate: a second record of the LLM call around it"))
    out: dict[str, Any] = {"spans": read}
    anchor = scope.chain[0]
    role = roles.get(anchor.span_id)
    if role is not None and not role.run and (role.llm or role.tool):
        # no agent span: an exporter that dropped it (the SDK's "Queue full, dropping Span"), or a plain
        # client loop that never made one; the run is the calls themselves, with no agent name to show
        out["no_agent_span"] = {
            "anchor": anchor.span_id,
            "anchor_name": anchor.name,
            "missing_parent": anchor.parent_span_id if ctx.tree.is_orphan(anchor) else None,
        }
    if ignored:
        out["ignored"] = ignored
    evidence: list[dict[str, Any]] = []
    for call, built in zip(calls, tool_calls, strict=True):
        entry: dict[str, Any] = {"name": built.name, "evidence": dict(built.sources or {})}
        if call.execution is not None:
            entry["execution_span"] = call.execution.span.span_id
            if call.execution.discarded:
                entry["discarded"] = list(call.execution.discarded)
        if call.request is not None:
            entry["request_span"] = call.request.span.span_id
        evidence.append(entry)
    if evidence:
        out["calls"] = evidence
    if unexecuted:
        out["requests_without_execution"] = [
            {"name": r.name, "call_id": r.call_id, "llm_span": r.span.span_id} for r in unexecuted
        ]
    lonely = [c.execution.span.span_id for c in calls if c.execution is not None and c.request is None]
    if lonely and any(ctx.output(s).requests for s in scope.llm_spans):
        out["executions_without_request"] = lonely
    if handoff_requests:
        out["handoff_requests"] = [r.name for r in handoff_requests]
    if plumbing_names:
        out["frameworks"] = list(plumbing_names)
    if not tool_calls and any(ctx.requests_tools(s) for s in scope.llm_spans):
        out["calls_not_recorded"] = "the model asked for tools, but the capture records no call (content off)"
    return out


def _span_entry(span: SpanRecord, why: str) -> dict[str, str]:
    return {"span_id": span.span_id, "name": span.name, "why": why}
