"""Tool results fed back to the model (history): read lazily, only for calls that need a result or a status."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agentotel_eval.frozen import FrozenDict
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.llm import read_input
from agentotel_eval.reconstruct.messages import ToolResultPart
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.reconstruct.tree import span_order
from agentotel_eval.reconstruct.values import looks_like_error_text, text_of


class History:
    """Tool results fed back to the model, by call id, read lazily from the run's latest LLM input.

    Only an LLM call that started after the tool call ended can carry its result, so nothing is parsed when
    the run's last LLM call came before it (a run that ended on the call, a one-span plain-loop trace).
    """

    __slots__ = ("_ctx", "_last", "_results")

    def __init__(self, llm_spans: Sequence[SpanRecord], ctx: TraceContext) -> None:
        self._ctx = ctx
        self._last = max(llm_spans, key=span_order) if llm_spans else None
        self._results: dict[str, ToolResultPart] | None = None

    def result(self, call_id: str, after_ns: int) -> ToolResultPart | None:
        if self._last is None or self._last.start_ns < after_ns:
            return None
        if self._results is None:
            self._results = {}
            for message in read_input(self._last, self._ctx.logs(self._last)):  # holds every earlier result
                for part in message.tool_results:
                    if part.call_id and part.call_id not in self._results:
                        self._results[part.call_id] = part
        return self._results.get(call_id)


def complete_from_later_traces(runs: list[AgentRun], contexts: Sequence[TraceContext]) -> list[AgentRun]:
    """A plain client loop with no application span makes each LLM call its own trace: a call requested in one
    trace gets its result fed back in the next. When several traces are reconstructed together, complete such
    request-only calls (no result yet) from the history of LLM calls in other traces, by call id."""
    pending = [
        (i, j) for i, run in enumerate(runs) for j, call in enumerate(run.tool_calls)
        if call.call_id and call.output is None and call.sources and call.sources.get("name", "").startswith("request:")
    ]
    if not pending:
        return runs
    llm = sorted(
        ((ctx.tree.spans[span_id], ctx) for ctx in contexts for span_id, role in ctx.roles.items() if role.llm),
        key=lambda item: span_order(item[0]),
    )
    seen: dict[str, dict[str, ToolResultPart]] = {}
    out = list(runs)
    for i, j in pending:
        call = out[i].tool_calls[j]
        for span, ctx in llm:
            if span.trace_id == call.trace_id or span.start_ns < (call.start_time_ns or 0):
                continue
            results = seen.get(span.span_id)
            if results is None:
                results = seen[span.span_id] = {
                    part.call_id: part for m in read_input(span, ctx.logs(span)) for part in m.tool_results if part.call_id
                }
            part = results.get(call.call_id or "")
            if part is None:
                continue
            output = text_of(part.content) if isinstance(part.content, list) else part.content
            sources = dict(call.sources or {})
            sources["result"] = "history"
            status, error = "ok", None
            if part.status == "error":
                status, error, sources["status"] = "error", text_of(output) or "error", "history"
            elif looks_like_error_text(output):
                status, error, sources["status"] = "error", output.strip(), "result_text"
            else:
                sources["status"] = "history"
            calls = list(out[i].tool_calls)
            calls[j] = replace(call, output=output, status=status, error=error, sources=FrozenDict(sources))
            out[i] = replace(out[i], tool_calls=tuple(calls))
            break
    return out
