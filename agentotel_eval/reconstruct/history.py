"""Tool results fed back to the model (history): read lazily, only for calls that need a
result or a status."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.messages import ToolCallPart, ToolResultPart
from agentotel_eval.reconstruct.tree import span_order
from agentotel_eval.reconstruct.values import looks_like_error_text, text_of


class History:
    """Tool results fed back to the model, by call id, read lazily from the run's latest LLM input.

    Only an LLM call that started after the tool call ended can carry its result, so nothing is parsed when
    the run's last LLM call came before it (a run that ended on the call, a one-span plain-loop trace).
    """

    __slots__ = ("_calls", "_ctx", "_last", "_llm_spans", "_results")

    def __init__(self, llm_spans: Sequence[SpanRecord], ctx: TraceContext) -> None:
        self._ctx = ctx
        self._llm_spans = llm_spans
        self._last: SpanRecord | None = None  # found on the first question: most runs never ask
        self._results: dict[str, ToolResultPart] | None = None
        self._calls: list[ToolCallPart] = []

    def calls(self, after_ns: int) -> list[ToolCallPart]:
        """The model's earlier tool calls as the latest LLM input repeats them (names and ids the execution
        spans may lack), when that input came after ``after_ns``."""
        return self._calls if self._load(after_ns) is not None else []

    def result(self, call_id: str, after_ns: int) -> ToolResultPart | None:
        results = self._load(after_ns)
        return results.get(call_id) if results is not None else None

    def _load(self, after_ns: int) -> dict[str, ToolResultPart] | None:
        """The results by call id, read once; None when no LLM call started after ``after_ns``."""
        last = self._last
        if last is None:
            if not self._llm_spans:
                return None
            last = self._last = max(self._llm_spans, key=span_order)
        if last.start_ns < after_ns:
            return None
        if self._results is None:
            self._results = {}
            # the latest LLM call that records its input holds every earlier result; a content-less second
            # record of the same model call (an SDK's own span under an instrumentation's) is passed over
            for span in sorted(self._llm_spans, key=span_order, reverse=True):
                messages = self._ctx.input(span)
                if messages:
                    for message in messages:
                        self._calls.extend(message.tool_calls)
                        for part in message.tool_results:
                            if part.call_id and part.call_id not in self._results:
                                self._results[part.call_id] = part
                    break
        return self._results


class LaterTraces:
    """Tool results fed back in the OTHER traces reconstructed together, by call id.

    A plain client loop with no application span makes each LLM call its own trace: a call requested in one
    trace gets its result fed back in the next. A request-only call with no result of its own is completed
    from the input of the first LLM call of another trace that started after it (inputs read lazily, once per
    span). Looked up while the calls are built, so no run or call is rebuilt afterwards.
    """

    __slots__ = ("_contexts", "_llm", "_seen", "_text_failures")

    def __init__(self, contexts: Sequence[TraceContext]) -> None:
        self._text_failures = all(ctx.text_failures for ctx in contexts)
        self._contexts = contexts
        self._llm: list[tuple[SpanRecord, TraceContext]] | None = None
        self._seen: dict[str, dict[str, ToolResultPart]] = {}

    def result(self, trace_id: str, call_id: str, after_ns: int) -> ToolResultPart | None:
        if self._llm is None:
            self._llm = sorted(
                (
                    (ctx.tree.spans[span_id], ctx)
                    for ctx in self._contexts
                    for span_id, role in ctx.roles.items()
                    if role.llm
                ),
                key=lambda item: span_order(item[0]),
            )
        for span, ctx in self._llm:
            if span.trace_id == trace_id or span.start_ns < after_ns:
                continue
            results = self._seen.get(span.span_id)
            if results is None:
                results = self._seen[span.span_id] = {
                    part.call_id: part for m in ctx.input(span) for part in m.tool_results if part.call_id
                }
            part = results.get(call_id)
            if part is not None:
                return part
        return None

    def completion(
        self, trace_id: str, call_id: str, after_ns: int
    ) -> tuple[Any, str, str | None, str] | None:
        """(output, status, error, status source) of a request-only call, from a later trace's history."""
        part = self.result(trace_id, call_id, after_ns)
        if part is None:
            return None
        output = text_of(part.content) if isinstance(part.content, list) else part.content
        failed = result_failure(part, self._text_failures)
        if failed is not None:
            return output, "error", failed[0], failed[1]
        return output, "ok", None, "history"


def result_failure(part: ToolResultPart, text_failures: bool = True) -> tuple[str, str] | None:
    """(error, what said so) when a result fed back to the model (or recorded by a step) says its call failed:
    its own failure status, else an error report as its text (``looks_like_error_text``, the test a tool
    span's own result gets: a text signal, off with ``text_failures=False``); None when it says
    nothing of the kind."""
    content = text_of(part.content) if isinstance(part.content, list) else part.content
    if part.status == "error":
        return text_of(content) or "error", part.source
    if text_failures and looks_like_error_text(content):
        return content.strip(), "result_text"
    return None
