"""What an agent run is expected to do, validated once and written on the run's span: its expected tools
(``agentotel.eval.expected_tools``) or a trajectory spec as JSON (``agentotel.eval.expected_trajectory``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from opentelemetry import context as otel_context
from opentelemetry import trace

from agentotel_eval import semconv as sc
from agentotel_eval.tracing import state
from agentotel_eval.tracing.failures import report_failure, warn_once


def tool_names(tools: Iterable[Any]) -> tuple[str, ...]:
    """Tool names from strings or objects with a ``name`` (``ToolCall``); a clear
    TypeError for anything else."""
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise TypeError(f"expected tools must be a list of tool names, got {type(tools).__name__}: {tools!r}")
    names = []
    for tool in tools:
        name = tool if isinstance(tool, str) else getattr(tool, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"expected tools must be non-empty tool names (str or ToolCall), got {tool!r}")
        names.append(name)
    return tuple(names)


def trajectory_json(spec: Any) -> str:
    """A trajectory spec (a dict, a list of steps, JSON text or a ``TrajectorySpec``) read now, so a mistake
    is a ``SpecError`` at the call site (within the limits the collector holds a span's spec to), and returned
    as the JSON the span carries."""
    from agentotel_eval.trajectory import (
        spec as specs,  # the spec's reader is only needed when a spec is given
    )

    written = (
        spec.written if isinstance(spec, specs.TrajectorySpec) else spec
    )  # one read elsewhere: read again
    return specs.parse_spec(written, "expected_trajectory", specs.UNTRUSTED_LIMITS).to_json()


def set_expected_tools(tools: Iterable[Any]) -> bool:
    """Set the tools the current agent run is expected to call, from inside the run.

    The expectation goes on the nearest enclosing ``@traced(kind="agent")`` span (or, failing that, on the
    current span when it is another instrumentation's ``invoke_agent``/``invoke_workflow`` span) and replaces
    one given to the decorator. Returns whether a recording span received it: False when tracing is not
    configured or no run is active (the latter is logged once), so evaluation code can run untraced.
    """
    return _set_on_run(sc.AGENTOTEL_EXPECTED_TOOLS, list(tool_names(tools)), "set_expected_tools")


def set_expected_trajectory(spec: Any) -> bool:
    """Set the trajectory spec the current agent run is scored against, from inside the run.

    ``spec`` is what ``@traced(expected_trajectory=...)`` takes: a dict (``{"steps": [...], "extra": ...}``),
    a bare list of steps, JSON text or a ``TrajectorySpec``; a spec that cannot be read raises ``SpecError``
    here. It goes on the same span as ``set_expected_tools()`` and returns the same way.
    """
    return _set_on_run(sc.AGENTOTEL_EXPECTED_TRAJECTORY, trajectory_json(spec), "set_expected_trajectory")


def _set_on_run(attribute: str, value: Any, caller: str) -> bool:
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
                    f"{caller}-no-run",
                    f"{caller}() was called outside any agent run (no @traced(kind='agent') span is "
                    "active); the expectation was not recorded",
                )
        if span is None or not span.is_recording():
            return False
        span.set_attribute(attribute, value)
        return True
    except Exception as exc:
        report_failure(f"setting the expectation ({caller})", exc)
        return False
