"""The columnar row conversions give what a plain, row-by-row conversion gives."""

from __future__ import annotations

import json
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.frozen import FrozenDict, FrozenList
from agentotel_eval.jsontext import json_default
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.reconstruct.model import AgentRun, Handoff
from agentotel_eval.store import rows
from agentotel_eval.store.rows import runs_to_arrow, to_json
from agentotel_eval.test_case import ToolCall
from tests.support.fixture_traces import fixtures


def _plain_json(value: Any) -> str:
    """The reference: the stdlib's own encoder with the options ``to_json`` documents."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=json_default)


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, None, True], "é": 'ü\n"q"'},
        FrozenDict({"city": "Paris", "n": FrozenList([1, 2])}),
        ("tuple", 1),
        "just text",
        7,
        None,
        b"\x00\x01",
        {"nested": {"deep": [{"x": 1e300}]}},
    ],
)
def test_to_json_is_what_the_stdlib_encoder_gives(value):
    assert to_json(value) == _plain_json(value)


def test_to_json_still_spells_out_non_finite_floats():
    assert json.loads(to_json({"v": [math.nan, math.inf, -math.inf]})) == {
        "v": ["NaN", "Infinity", "-Infinity"]
    }


def _reference_rows(runs: list[AgentRun], updated_at_ns: int) -> tuple[list[dict], list[dict]]:
    """The straightforward row-at-a-time conversion the column builder replaces."""

    def s(v):
        return v if v is None or isinstance(v, str) else str(v)

    def t(v):
        return v if v is None or isinstance(v, str) else _plain_json(v)

    run_rows, call_rows = [], []
    for run in runs:
        run_rows.append(
            {
                "trace_id": run.trace_id,
                "span_id": run.span_id,
                "agent_name": s(run.agent_name),
                "service_name": s(run.service_name),
                "input": t(run.input),
                "output": t(run.output),
                "start_time": run.start_time_ns or None,
                "end_time": run.end_time_ns or None,
                "status": s(run.status),
                "tools_called": [c.name for c in run.tool_calls],
                "expected_tools": None
                if run.expected_tools is None
                else [str(x) for x in run.expected_tools],
                "parent_run_span_id": s(run.parent_run_span_id),
                "span_name": s(run.span_name or None),
                "convention": s(run.convention or None),
                "error": s(run.error),
                "handoffs": _plain_json(
                    [
                        {k: getattr(h, k) for k in h.__dataclass_fields__ if getattr(h, k) is not None}
                        for h in run.handoffs
                    ]
                ),
                "tool_call_count": len(run.tool_calls),
                "updated_at": updated_at_ns,
                "diagnostics": _plain_json(run.diagnostics) if run.diagnostics else None,
                "trace_root": None,
            }
        )
        for seq, call in enumerate(run.tool_calls):
            args = call.input_parameters if call.input_parameters is not None else call.raw_arguments
            sources = call.sources or {}
            source = next(
                (
                    sources[k]
                    for k in ("call", "name", "span")
                    if isinstance(sources.get(k), str) and sources[k]
                ),
                "span" if call.span_id else "llm",
            )
            call_rows.append(
                {
                    "trace_id": run.trace_id,
                    "run_span_id": run.span_id,
                    "seq": seq,
                    "span_id": s(call.span_id),
                    "call_id": s(call.call_id),
                    "tool_name": call.name,
                    "arguments": None if args is None else _plain_json(args),
                    "result": t(call.output),
                    "status": call.status or "ok",
                    "source": source,
                    "start_time": call.start_time_ns
                    if call.start_time_ns is not None
                    else (run.start_time_ns or None),
                    "error": s(call.error),
                    "llm_turn": s(call.llm_turn),
                    "agent_name": s(run.agent_name),
                    "sources": None if call.sources is None else _plain_json(call.sources),
                    "updated_at": updated_at_ns,
                }
            )
    return run_rows, call_rows


def _as_rows(table) -> list[dict]:
    columns = {
        name: (column.cast("int64") if "time" in name or name == "updated_at" else column).to_pylist()
        for name, column in zip(table.column_names, table.columns, strict=True)
    }
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def _odd_run() -> AgentRun:
    return AgentRun(
        trace_id="t" * 32,
        span_id="r" * 16,
        agent_name=42,
        start_time_ns=0,
        end_time_ns=5,
        status="error",  # type: ignore[arg-type]
        error="boom",
        service_name=None,
        input={"q": "x"},
        output=["a", 1],  # type: ignore[arg-type]
        tool_calls=(
            ToolCall(
                "a",
                {"k": 1},
                output={"n": 0},
                status="ok",
                call_id=7,
                span_id="s" * 16,  # type: ignore[arg-type]
                sources={"name": "gen_ai"},
            ),
            ToolCall("b", raw_arguments="not json", status="error", error="E", sources={"call": "traceloop"}),
            ToolCall("c", start_time_ns=3),
        ),
        handoffs=(Handoff("transfer_to_b", to_agent="b", start_time_ns=2),),
        expected_tools=("a", 7),  # type: ignore[arg-type]
        convention="",
    )


def test_runs_to_arrow_gives_the_row_by_row_conversion_for_every_fixture_run():
    runs = [run for fx in fixtures() for run in reconstruct(fx.spans(), fx.logs())]
    runs.append(_odd_run())
    runs.append(
        AgentRun(trace_id="u" * 32, span_id="v" * 16, agent_name=None, start_time_ns=1, end_time_ns=2)
    )
    assert sum(len(r.tool_calls) for r in runs) > 100
    for batch in (runs, runs[:1], [], tuple(runs[5:9]), iter(runs[9:20])):
        batch = list(batch)
        run_table, call_table = runs_to_arrow(iter(batch), 11)
        expected_runs, expected_calls = _reference_rows(batch, 11)
        assert _as_rows(run_table) == expected_runs
        assert _as_rows(call_table) == expected_calls


def _reference_evaluations(rows_: list) -> list[dict]:
    """evaluations_to_arrow as it was: a comprehension per column over the rows' attributes."""

    def finite(v):
        return v if v is None or math.isfinite(v) else None

    return [
        {
            "trace_id": r.trace_id,
            "run_span_id": r.run_span_id,
            "metric": r.metric,
            "score": finite(r.score),
            "threshold": finite(r.threshold),
            "success": r.success,
            "reason": r.reason,
            "details": None if r.details is None else to_json(dict(r.details)),
            "status": r.status,
            "model": r.model,
            "cost_usd": finite(r.cost_usd),
            "created_at": r.created_at_ns or None,
            "evaluator": r.evaluator,
            "evaluator_version": r.evaluator_version,
            "latency_s": finite(r.latency_s),
            "source": r.source,
            "updated_at": (r.updated_at_ns or r.created_at_ns) or None,
        }
        for r in rows_
    ]


_floats = st.none() | st.floats() | st.sampled_from([0.5, 1, True])
_row = st.builds(
    rows.EvaluationRow,
    trace_id=st.sampled_from(["t" * 32, "\ud800"]),
    run_span_id=st.just("s" * 16),
    metric=st.sampled_from(["tool_correctness", "x"]),
    score=_floats,
    threshold=_floats,
    success=st.none() | st.booleans(),
    reason=st.none() | st.text(max_size=5),
    details=st.none() | st.sampled_from([{"a": [1, None]}, {"n": math.nan}, FrozenDict({"c": "é"})]),
    status=st.sampled_from(["ok", "pending"]),
    model=st.none() | st.just("m"),
    cost_usd=_floats,
    created_at_ns=st.sampled_from([0, 5]),
    evaluator=st.none() | st.just("E"),
    evaluator_version=st.none() | st.just("1"),
    latency_s=_floats,
    source=st.just("src"),
    updated_at_ns=st.sampled_from([0, 7]),
)


@settings(max_examples=200, deadline=None)
@given(batch=st.lists(_row, max_size=6))
def test_evaluations_to_arrow_gives_the_row_by_row_conversion(batch):
    table = rows.evaluations_to_arrow(batch)
    assert table.schema == rows.EVALUATION_SCHEMA and table.num_rows == len(batch)
    expected = _reference_evaluations(batch)
    for row in expected:  # what the append path does to text Arrow cannot carry
        row["trace_id"] = rows.safe_text(row["trace_id"])
    columns = {
        name: (column.cast("int64") if pa.types.is_timestamp(column.type) else column).to_pylist()
        for name, column in zip(table.column_names, table.columns, strict=True)
    }
    assert [
        dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)
    ] == expected
