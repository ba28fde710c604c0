"""Interim reconstruction (execution spans only), so the collector can be built against the interface.

To be replaced by the full convention-aware reconstruction (issue 4). The signatures are the contract.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.test_case import ToolCall


def is_run_span(span: SpanRecord) -> bool:
    """Whether this span delimits an agent run by its own attributes (the trace-root fallback aside)."""
    attrs = span.attributes
    return (
        attrs.get(sc.GEN_AI_OPERATION_NAME) in sc.RUN_OPERATIONS
        or attrs.get(sc.OI_SPAN_KIND) == sc.OI_KIND_AGENT
        or attrs.get(sc.TRACELOOP_SPAN_KIND) in ("agent", "workflow")
        or attrs.get(sc.LANGFUSE_OBSERVATION_TYPE) == "agent"
    )


def reconstruct(spans: Iterable[SpanRecord], logs: Iterable[LogRecord] = ()) -> list[AgentRun]:
    """All agent runs found in these spans (any number of traces), ordered by start time."""
    by_trace: dict[str, dict[str, SpanRecord]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, {})[span.span_id] = span
    runs: list[AgentRun] = []
    for trace_id, trace in by_trace.items():
        ordered = sorted(trace.values(), key=lambda s: s.start_ns)
        run_spans = [s for s in ordered if is_run_span(s)] or [s for s in ordered if s.parent_span_id not in trace][:1]
        if not run_spans:
            continue
        run = run_spans[0]
        calls = tuple(
            ToolCall(
                str(s.attributes.get(sc.GEN_AI_TOOL_NAME)),
                status="error" if s.is_error else "ok",
                trace_id=trace_id,
                span_id=s.span_id,
                start_time_ns=s.start_ns,
            )
            for s in ordered
            if s.attributes.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_EXECUTE_TOOL
        )
        expected = run.attributes.get(sc.AGENTOTEL_EXPECTED_TOOLS)
        runs.append(
            AgentRun(
                trace_id=trace_id,
                span_id=run.span_id,
                agent_name=run.attributes.get(sc.GEN_AI_AGENT_NAME) or run.name,
                start_time_ns=run.start_ns,
                end_time_ns=run.end_ns,
                status="error" if run.is_error else "ok",
                service_name=run.service_name,
                tool_calls=calls,
                expected_tools=tuple(expected) if isinstance(expected, list) else None,
                span_name=run.name,
            )
        )
    return sorted(runs, key=lambda r: r.start_time_ns)
