"""Handoffs: framework plumbing that moves control to another agent, recorded apart from the tool calls."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from agentotel_eval.reconstruct.arguments import normalize_arguments
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.frameworks import Plumbing
from agentotel_eval.reconstruct.llm import Request
from agentotel_eval.reconstruct.model import AgentRun, Handoff
from agentotel_eval.reconstruct.spans import Execution
from agentotel_eval.reconstruct.tree import span_order


def collect_handoffs(
    executions: Sequence[Execution], requests: Sequence[Request], agent: str | None, plumbing: Plumbing
) -> tuple[Handoff, ...]:
    spans = [e for e in executions if e.plumbing == "handoff"]
    if not spans and not requests:
        return ()
    out: list[Handoff] = []
    used: set[int] = set()
    for e in spans:
        match = next(
            (
                i
                for i, r in enumerate(requests)
                if i not in used
                and (
                    (e.call_id and r.call_id == e.call_id)
                    or (e.handoff_to and r.name in plumbing.handoff_name(e.handoff_to))
                    or r.name == e.name
                )
            ),
            None,
        )
        name = e.name
        if match is not None:
            used.add(match)
            name = requests[match].name  # the model-facing tool name, e.g. transfer_to_weather_agent
        out.append(Handoff(name, e.handoff_to, agent, e.span.span_id, e.span.start_ns))
    for i, r in enumerate(requests):
        if i not in used:
            target = plumbing.handoff_target(r.name, normalize_arguments(r.arguments).params)
            out.append(Handoff(r.name, target, agent, r.span.span_id, r.span.end_ns))
    out.sort(key=lambda h: (h.start_time_ns or 0, h.span_id or "", h.name))
    return tuple(out)


_MODEL_FACING = re.compile(r"^[A-Za-z0-9_.\-]+$")


def name_handoffs(runs: list[AgentRun], ctx: TraceContext) -> list[AgentRun]:
    """Give handoffs seen only as a framework span (OpenLLMetry ``A → unknown.handoff``) the tool call the
    model made, found in the history of the first LLM call after it (the
    ``transfer_to_*`` call it answered)."""
    for run in runs:  # (a loop for the usual case: no run has a handoff)
        if run.handoffs:
            break
    else:
        return runs
    plumbing = ctx.plumbing
    pending = [
        (i, j)
        for i, run in enumerate(runs)
        if run.handoffs
        for j, h in enumerate(run.handoffs)
        if not _MODEL_FACING.match(h.name)
    ]
    if not pending:
        return runs
    llm_spans = sorted((ctx.tree.spans[i] for i, role in ctx.roles.items() if role.llm), key=span_order)
    used: set[str] = set()
    out = list(runs)
    for i, j in pending:
        handoff = out[i].handoffs[j]
        start = handoff.start_time_ns or 0
        later = [s for s in llm_spans if s.start_ns >= start]
        for span in later:
            messages = ctx.input(span)
            if not messages:
                continue
            found = next(
                (
                    c
                    for m in messages
                    for c in m.tool_calls
                    if plumbing.kind(c.name) == "handoff"
                    and (c.call_id or c.name) not in used
                    and (handoff.to_agent is None or c.name in plumbing.handoff_name(handoff.to_agent))
                ),
                None,
            )
            if found is not None:
                used.add(found.call_id or found.name)
                target = handoff.to_agent or plumbing.handoff_target(
                    found.name, normalize_arguments(found.arguments).params
                )
                renamed = replace(handoff, name=found.name, to_agent=target)
                handoffs = list(out[i].handoffs)
                handoffs[j] = renamed
                out[i] = replace(out[i], handoffs=tuple(handoffs))
            break
    return out
