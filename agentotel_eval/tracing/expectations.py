"""Expected tools of an agent run: validated once, written on the run's span as ``agentotel.eval.expected_tools``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from opentelemetry import context as otel_context
from opentelemetry import trace

from agentotel_eval import semconv as sc
from agentotel_eval.tracing import state
from agentotel_eval.tracing.failures import report_failure, warn_once


def tool_names(tools: Iterable[Any]) -> tuple[str, ...]:
    """Tool names from strings or objects with a ``name`` (``ToolCall``); a clear TypeError for anything else."""
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise TypeError(f"expected tools must be a list of tool names, got {type(tools).__name__}: {tools!r}")
    names = []
    for tool in tools:
        name = tool if isinstance(tool, str) else getattr(tool, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"expected tools must be non-empty tool names (str or ToolCall), got {tool!r}")
        names.append(name)
    return tuple(names)


def set_expected_tools(tools: Iterable[Any]) -> bool:
    """Set the tools the current agent run is expected to call, from inside the run.

    The expectation goes on the nearest enclosing ``@traced(kind="agent")`` span (or, failing that, on the current
    span when it is another instrumentation's ``invoke_agent``/``invoke_workflow`` span) and replaces one given to
    the decorator. Returns whether a recording span received it: False when tracing is not configured or no run is
    active (the latter is logged once), so evaluation code can run untraced.
    """
    names = list(tool_names(tools))
    try:
        # what the decorator put there: the span it started (``Tracer.start_span``)
        span = cast("trace.Span | None", otel_context.get_value(state.AGENT_SPAN_KEY))
        if span is None:
            current = trace.get_current_span()
            attributes = getattr(current, "attributes", None) or {}
            if attributes.get(sc.GEN_AI_OPERATION_NAME) in sc.RUN_OPERATIONS:
                span = current
            elif current.is_recording():
                warn_once(
                    "set_expected_tools-no-run",
                    "set_expected_tools() was called outside any agent run (no @traced(kind='agent') span is "
                    "active); the expectation was not recorded",
                )
        if span is None or not span.is_recording():
            return False
        span.set_attribute(sc.AGENTOTEL_EXPECTED_TOOLS, names)
        return True
    except Exception as exc:
        report_failure("setting expected tools", exc)
        return False
