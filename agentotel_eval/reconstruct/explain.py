"""``explain``'s text: a trace's runs, their calls with the evidence behind each field, and the spans ignored.

Pure: it renders plain run records (``run_record`` of an AgentRun, or the same fields read back from
``agent_runs`` / ``tool_calls``) and the trace's span names; the command around it does the reading.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.trajectory.text import trajectory_lines

_FIELDS = ("name", "arguments", "result", "status", "call_id", "llm_turn")


def run_record(run: AgentRun) -> dict[str, Any]:
    """The fields of a run that ``explain`` prints, as plain data (what the database rows hold). A run whose
    span carries a trajectory spec is scored against it here: ``trajectory`` is the result's details, or why
    the spec could not be read."""
    return {
        "trace_id": run.trace_id,
        "span_id": run.span_id,
        "agent_name": run.agent_name,
        "span_name": run.span_name,
        "convention": run.convention,
        "status": run.status,
        "error": run.error,
        "input": run.input,
        "output": run.output,
        "parent_run_span_id": run.parent_run_span_id,
        "handoffs": [{"name": h.name, "to_agent": h.to_agent} for h in run.handoffs],
        "calls": [
            {
                "name": c.name,
                "arguments": c.input_parameters if c.input_parameters is not None else c.raw_arguments,
                "result": c.output,
                "status": c.status,
                "error": c.error,
                "span_id": c.span_id,
                "sources": dict(c.sources or {}),
            }
            for c in run.tool_calls
        ],
        "diagnostics": run.diagnostics,
        "trajectory": _trajectory(run),
        "tool_errors": _tool_errors(run),
    }


def _tool_errors(run: AgentRun) -> dict[str, Any]:
    """The deterministic detectors' findings on the run, and what they could not check."""
    from agentotel_eval.metrics.registry import TOOL_ERRORS_DETECTORS

    log = TOOL_ERRORS_DETECTORS.build().measure(run.to_test_case()).evaluation_log
    return {
        "detectors": list(log.get("detectors") or ()),
        "could_not_run": list(log.get("could_not_run") or ()),
        "informational": list(log.get("informational") or ()),
    }


def _trajectory(run: AgentRun) -> dict[str, Any] | str | None:
    if run.expected_trajectory is None:
        return None
    from agentotel_eval.trajectory import SpecError, parse_spec, score_trajectory

    try:
        spec = parse_spec(run.expected_trajectory, "expected_trajectory")
    except SpecError as exc:
        return str(exc)
    return score_trajectory(spec, run.tool_calls, 1.0 if spec.threshold is None else spec.threshold).details


def explain_lines(
    trace_id: str, runs: Sequence[Mapping[str, Any]], span_names: Mapping[str, str]
) -> list[str]:
    """The report for one trace: ``span_names`` is every span of it (id -> name), to list what no run read."""
    lines = [f"trace {trace_id}: {len(runs)} run(s), {len(span_names)} span(s)"]
    seen: set[str] = set()
    for run in runs:
        lines.extend(_run_lines(run, span_names))
        diagnostics = run.get("diagnostics") or {}
        seen.update(diagnostics.get("spans") or {})
        seen.update(entry["span_id"] for entry in diagnostics.get("ignored") or ())
        seen.add(run["span_id"])
    others = [span_id for span_id in span_names if span_id not in seen]
    if others:
        lines.append("")
        lines.append(f"spans no run read ({len(others)}): no run, tool or LLM convention marks them")
        lines.extend(f"  {span_id}  {span_names[span_id]!r}" for span_id in others[:50])
        if len(others) > 50:
            lines.append(f"  ... and {len(others) - 50} more")
    return lines


def _run_lines(run: Mapping[str, Any], span_names: Mapping[str, str]) -> Iterable[str]:
    diagnostics = run.get("diagnostics") or {}
    yield ""
    nested = f", inside run {run['parent_run_span_id']}" if run.get("parent_run_span_id") else ""
    missing = diagnostics.get("no_agent_span")
    name = run.get("agent_name") or ("(no agent span)" if missing else "?")
    yield (
        f"run {run['span_id']} {name!s}: span {run.get('span_name')!r}, "
        f"convention {run.get('convention') or '?'}, status {run.get('status')}{nested}"
    )
    if isinstance(missing, Mapping):
        parent = missing.get("missing_parent")
        why = (
            (
                f"its parent span {parent} never arrived (an exporter that drops spans, "
                f"e.g. the SDK's \"Queue "
                'full, dropping Span", loses the agent span)'
            )
            if parent
            else "the trace has none (a plain client loop)"
        )
        yield (
            f"  no agent span: the run is anchored on {missing.get('anchor_name')!r}, a "
            f"model or tool call; {why}"
        )
    if run.get("error"):
        yield f"  error: {run['error']}"
    yield f"  input:  {_short(run.get('input'))}"
    yield f"  output: {_short(run.get('output'))}"
    if diagnostics.get("frameworks"):
        yield f"  frameworks: {', '.join(diagnostics['frameworks'])}"
    read = diagnostics.get("spans") or {}
    if read:
        counts: dict[str, int] = {}
        for how in read.values():
            counts[how] = counts.get(how, 0) + 1
        yield "  spans read: " + ", ".join(f"{n} {how}" for how, n in sorted(counts.items()))
    calls = run.get("calls") or []
    evidence = diagnostics.get("calls") or []
    yield f"  calls ({len(calls)}):"
    for i, call in enumerate(calls, 1):
        status = call.get("status") or "ok"
        failed = f" ({call['error']})" if status == "error" and call.get("error") else ""
        yield f"    {i}. {call['name']}({_short(call.get('arguments'), 80)}) -> {status}{failed}"
        sources = call.get("sources") or {}
        said = [f"{field}: {sources[field]}" for field in _FIELDS if sources.get(field)]
        if said:
            yield "       from " + ", ".join(said)
        extra = evidence[i - 1] if i - 1 < len(evidence) else {}
        where = [
            f"{label} {extra[key]}"
            for key, label in (
                ("execution_span", "execution span"),
                ("request_span", "requested in LLM span"),
            )
            if extra.get(key)
        ]
        if where:
            yield "       " + ", ".join(where)
        for discarded in extra.get("discarded") or ():
            field, _, rest = discarded.partition(":")
            source, _, why = rest.partition(":")
            yield f"       discarded {field} from {source}: {why}"
    for request in diagnostics.get("requests_without_execution") or ():
        yield (
            f"  requested, never executed: {request['name']} (call id {request.get('call_id')}, LLM span "
            f"{request.get('llm_span')})"
        )
    for span_id in diagnostics.get("executions_without_request") or ():
        yield (
            f"  executed without a request in the LLM output: span {span_id} {span_names.get(span_id, '')!r}"
        )
    for handoff in run.get("handoffs") or ():
        yield f"  handoff: {handoff.get('name')} -> {handoff.get('to_agent') or '?'}"
    if diagnostics.get("calls_not_recorded"):
        yield f"  note: {diagnostics['calls_not_recorded']}"
    trajectory = run.get("trajectory")
    if isinstance(trajectory, Mapping) and trajectory.get("steps") is not None:
        yield from (f"  {line}" for line in trajectory_lines(trajectory))
    elif isinstance(trajectory, str):  # the spec could not be read: why
        yield f"  trajectory: not scored: {trajectory}"
    yield from _tool_error_lines(run.get("tool_errors"))
    ignored = diagnostics.get("ignored") or []
    if ignored:
        yield f"  ignored spans ({len(ignored)}):"
        for entry in ignored:
            yield f"    {entry['span_id']}  {entry['name']!r}: {entry['why']}"


def _tool_error_lines(tool_errors: Any) -> Iterable[str]:
    if not isinstance(tool_errors, Mapping):
        return
    findings = [f for f in tool_errors.get("detectors") or () if isinstance(f, Mapping)]
    sure = [f for f in findings if not f.get("uncertain")]
    unsure = [f for f in findings if f.get("uncertain")]
    yield (
        f"  tool errors found by the detectors ({len(sure)}):"
        if sure
        else "  tool errors found by the detectors: none"
    )
    for f in sure:
        yield from _finding_lines(f)
    if unsure:
        yield f"  possible errors the detectors are not sure of, for the judge ({len(unsure)}):"
        for f in unsure:
            yield from _finding_lines(f, f" (confidence {f.get('confidence')})")
    for note in tool_errors.get("informational") or ():
        if isinstance(note, Mapping):
            yield f"  note (low severity, not scored): {_short(note.get('description'), 200)}"
    for note in tool_errors.get("could_not_run") or ():
        yield f"  could not run: {note}"


def _finding_lines(f: Mapping[str, Any], suffix: str = "") -> Iterable[str]:
    kind = "/".join(filter(None, (f.get("type"), f.get("subtype"))))
    yield f"    {kind} [{f.get('rule') or '-'}]: {_short(f.get('description'), 200)}{suffix}"
    if f.get("evidence"):
        yield f"       evidence: {_short(f.get('evidence'), 160)}"


def _short(value: Any, width: int = 160) -> str:
    if value is None:
        return "-"
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    )
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
