"""Stored runs as test cases: a row of ``agent_runs`` with its ``tool_calls`` rows and the expected tools its
scores used becomes the ``EvalTestCase`` that ``agentotel-eval eval`` and ``evaluate()`` score as the
collector did. Pure: plain rows in (``agentotel_eval.access.queries.read_stored_cases``
reads them), cases out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentotel_eval.test_case import EvalTestCase, ToolCall


def case_of(
    run: dict[str, Any],
    calls: Sequence[dict[str, Any]],
    expectation: tuple[list[str], str] | None,
    trajectory: tuple[Any, str] | None = None,
) -> EvalTestCase:
    """The ``EvalTestCase`` of one stored run; ``trajectory``: the written spec its trajectory score used, and
    where that spec came from."""
    tool_calls = [
        ToolCall(
            name=c["tool_name"],
            input_parameters=c["arguments"] if isinstance(c["arguments"], dict) else None,
            output=_result(c["result"]),
            status=c["status"],
            error=c["error"],
            call_id=c["call_id"],
            trace_id=c["trace_id"],
            span_id=c["span_id"],
            llm_turn=c["llm_turn"],
            raw_arguments=None if isinstance(c["arguments"], dict) else c["arguments"],
        )
        for c in calls
    ]
    expected, source = expectation if expectation is not None else ([], "")
    metadata = {
        "trace_id": run["trace_id"],
        "span_id": run["span_id"],
        "agent_name": run["agent_name"],
        "service_name": run["service_name"],
        "start_time": run["start_time"],
        "status": run["status"],
    }
    if run.get("parent_run_span_id"):
        metadata["parent_run_span_id"] = run["parent_run_span_id"]
    metadata["expected_tools_from"] = source or None
    if trajectory is not None:
        metadata["expected_trajectory_from"] = trajectory[1]
    return EvalTestCase(
        input=run["input"] or "",
        actual_output=run["output"],
        tools_called=tool_calls,
        expected_tools=[ToolCall(name=name) for name in expected] if expectation is not None else None,
        tool_calls=tool_calls,
        name=f"{run['agent_name'] or 'run'} {run['trace_id']}/{run['span_id']}",
        metadata=metadata,
        expected_trajectory=trajectory[0] if trajectory is not None else None,
    )


def _result(value: Any) -> Any:
    """A stored result is text: JSON when it parses as a structure, else the text itself."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, dict | list) else value
    return value


def expectations_of(run: dict[str, Any], scores: Sequence[dict[str, Any]]) -> tuple[list[str], str] | None:
    """A run's expected tools: those its tool-correctness score used (a rule or the dataset may have supplied
    them), else its span's own."""
    for row in scores:
        if isinstance(row.get("expected"), list):
            return [str(n) for n in row["expected"]], str(row.get("source") or "score")
    if run.get("expected_tools") is not None:
        return list(run["expected_tools"]), "span_attribute"
    return None
