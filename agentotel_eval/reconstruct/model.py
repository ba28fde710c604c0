"""What reconstruction produces: agent runs, each with its ordered tool calls. Plain frozen data."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.test_case import (
    EvalTestCase,
    ToolCall,
    ToolDefinition,
    as_tool_calls,
)


@dataclass(frozen=True, slots=True)
class Handoff:
    """Framework plumbing that moved control to another agent (``transfer_to_*``, ``handoff to X``)."""

    name: str  # as recorded, e.g. "transfer_to_weather_agent"
    to_agent: str | None = None
    from_agent: str | None = None
    span_id: str | None = None
    start_time_ns: int | None = None


@dataclass(frozen=True, slots=True)
class AgentRun:
    """One agent run and the tool calls it made, in execution order.

    ``span_id`` is the span that delimits the run (an ``invoke_agent`` span, an OpenInference AGENT span, the
    trace root, ...). A nested agent (an agent called as a tool, a handoff target) is a run of its own with
    ``parent_run_span_id`` set; its calls belong to it, not to the outer run.
    """

    trace_id: str
    span_id: str
    agent_name: str | None
    start_time_ns: int
    end_time_ns: int
    status: str = "ok"  # ok | error
    error: str | None = None
    service_name: str | None = None
    input: str | None = None
    output: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    handoffs: tuple[Handoff, ...] = ()
    tool_definitions: tuple[ToolDefinition, ...] = ()
    expected_tools: tuple[str, ...] | None = None  # from the agentotel.eval.expected_tools attribute
    expected_trajectory: str | None = (
        None  # the agentotel.eval.expected_trajectory attribute (JSON, read when scored)
    )
    parent_run_span_id: str | None = None
    convention: str = ""  # what delimited the run: gen_ai | openinference | traceloop | langfuse | root
    span_name: str = ""
    extra: dict[str, object] = field(default_factory=dict, compare=False)
    diagnostics: dict[str, Any] = field(default_factory=dict, compare=False)  # how it was rebuilt (explain)
    #: the system prompt of the run's first recorded LLM request ("" when it had none; None: not recorded)
    system_prompt: str | None = field(default=None, compare=False)
    assistant_texts: tuple[str, ...] = field(default=(), compare=False)  # the model's text between calls

    @property
    def tools_called(self) -> list[str]:
        return [call.name for call in self.tool_calls]

    @property
    def key(self) -> tuple[str, str]:
        return (self.trace_id, self.span_id)

    def to_test_case(self, expected_tools: Sequence[ToolCall | str] | None = None) -> EvalTestCase:
        """The run as a test case: expected tools from the argument, else from the run span's attribute."""
        expected = expected_tools if expected_tools is not None else self.expected_tools
        return EvalTestCase(
            input=self.input or "",
            actual_output=self.output,
            tools_called=list(self.tool_calls),
            expected_tools=as_tool_calls(expected),
            tool_calls=list(self.tool_calls),
            available_tools=list(self.tool_definitions) or None,
            name=f"{self.agent_name or self.span_name} {self.trace_id}/{self.span_id}",
            metadata={**self._unmatched(), "context": self.context()},
        )

    def context(self) -> dict[str, Any]:
        """What the detectors read beside the calls: the service and agent (``[[tools]]`` scopes), when the
        run started (the day "tomorrow" in its input means), the system prompt and the model's
        text between calls."""
        out: dict[str, Any] = {"started": _iso(self.start_time_ns), "system_prompt": self.system_prompt}
        if self.assistant_texts:
            out["assistant_texts"] = list(self.assistant_texts)
        if self.service_name:
            out["service"] = self.service_name
        if self.agent_name:
            out["agent"] = self.agent_name
        return out

    def _unmatched(self) -> dict[str, Any]:
        """Calls the model requested that never ran, calls that ran with no request (by call index), and the
        tools each LLM turn offered when that changed between turns: what the invalid_function detector reads
        beside the calls."""
        diagnostics = self.diagnostics or {}
        out: dict[str, Any] = {}
        requested = diagnostics.get("requests_without_execution")
        if requested:
            out["requests_without_execution"] = [dict(r) for r in requested]
        lonely = set(diagnostics.get("executions_without_request") or ())
        if lonely:
            out["executions_without_request"] = [
                j for j, c in enumerate(self.tool_calls) if c.span_id in lonely
            ]
        by_turn = diagnostics.get("offered_by_turn")
        if by_turn:
            out["offered_by_turn"] = {turn: list(names) for turn, names in by_turn.items()}
        return {"reconstruction": out} if out else {}


def _iso(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat() if ns else ""
