"""Records <-> rows: what is stored is what was received, exactly."""

from __future__ import annotations

import json

import pytest

from agentotel_eval.otlp.records import LogRecord, SpanEvent, SpanLink, SpanRecord
from agentotel_eval.reconstruct.model import AgentRun, Handoff
from agentotel_eval.store import schema
from agentotel_eval.store.opening import open_store
from agentotel_eval.store.rows import (
    LOG_SELECT,
    SPAN_SELECT,
    EvaluationRow,
    evaluations_to_arrow,
    log_id,
    logs_from_arrow,
    logs_to_arrow,
    runs_to_arrow,
    spans_from_arrow,
    spans_to_arrow,
    to_json,
)
from agentotel_eval.test_case import ToolCall
from tests.support.fixture_traces import as_stored, fixtures


def _insert(con, table, columns, batch):
    con.register("b", batch)
    con.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(columns)} FROM b")
    con.unregister("b")


@pytest.fixture()
def con(tmp_path):
    c = open_store(tmp_path / "rows.duckdb")
    yield c
    c.close()


def test_every_fixture_span_and_log_round_trips_exactly(con):
    expected_spans: dict[tuple[str, str], SpanRecord] = {}
    expected_logs: list[LogRecord] = []
    for fx in fixtures():
        spans = fx.spans("json")
        _insert(con, "spans", schema.SPAN_COLUMNS, spans_to_arrow(spans))
        expected_spans.update({s.key: s for s in spans})
        logs = fx.logs("json")
        if logs:
            _insert(con, "logs", schema.LOG_COLUMNS, logs_to_arrow(logs))
            expected_logs += logs
    stored = {
        s.key: s for s in spans_from_arrow(con.sql(f"SELECT {SPAN_SELECT} FROM spans").to_arrow_table())
    }
    assert stored == expected_spans
    stored_logs = logs_from_arrow(con.sql(f"SELECT {LOG_SELECT} FROM logs").to_arrow_table())
    assert sorted(stored_logs, key=repr) == sorted(map(as_stored, expected_logs), key=repr)
    assert expected_logs, "the fixtures carry log records"


def test_spans_and_logs_read_as_arrow_are_the_records_stored(con):
    """The assembly's read path (Arrow rows converted column by column) gives the records back exactly; its
    narrow select leaves the fields only a forwarded copy needs at their defaults."""
    import dataclasses

    from agentotel_eval.store.rows import SPAN_SELECT_ASSEMBLY, logs_from_arrow, spans_from_arrow

    expected: dict[tuple[str, str], SpanRecord] = {}
    expected_logs: list[LogRecord] = []
    for fx in fixtures():
        spans = fx.spans("protobuf")
        _insert(con, "spans", schema.SPAN_COLUMNS, spans_to_arrow(spans))
        expected.update({s.key: s for s in spans})
        expected_logs += fx.logs("protobuf")
    if expected_logs:
        _insert(con, "logs", schema.LOG_COLUMNS, logs_to_arrow(expected_logs))
    whole = spans_from_arrow(con.sql(f"SELECT {SPAN_SELECT} FROM spans").to_arrow_table())
    assert {s.key: s for s in whole} == expected
    narrow = spans_from_arrow(con.sql(f"SELECT {SPAN_SELECT_ASSEMBLY} FROM spans").to_arrow_table())
    assert {s.key: s for s in narrow} == {
        k: dataclasses.replace(s, links=(), scope_version="", trace_state="", flags=0)
        for k, s in expected.items()
    }
    logs = logs_from_arrow(con.sql(f"SELECT {LOG_SELECT} FROM logs").to_arrow_table())
    assert sorted(logs, key=repr) == sorted(map(as_stored, expected_logs), key=repr) and expected_logs


def test_columns_are_queryable_as_users_expect(con):
    fx = next(f for f in fixtures() if f.name == "pydantic-ai__native-v5__sequence")
    spans = fx.spans()
    _insert(con, "spans", schema.SPAN_COLUMNS, spans_to_arrow(spans))
    tool = next(s for s in spans if s.name == "execute_tool search_flights")
    row = con.execute(
        "SELECT kind, status_code, service_name, attributes->>'gen_ai.tool.name', epoch_ns(start_time), "
        "start_time_unix_nano FROM spans WHERE span_id = ?",
        [tool.span_id],
    ).fetchone()
    assert row[0] == "INTERNAL" and row[1] == "UNSET" and row[2] == "travel-bot-pydantic-ai"
    assert row[3] == "search_flights"
    assert row[4] == (tool.start_ns + 500) // 1000 * 1000  # TIMESTAMPTZ keeps (rounded) microseconds...
    assert row[5] == tool.start_ns  # ...and the exact time is kept beside it


def test_values_json_cannot_hold_are_stored_rather_than_failing_the_batch(con):
    span = SpanRecord(
        "a" * 32,
        "b" * 16,
        None,
        "odd \ud800 name",
        attributes={"nan": float("nan"), "inf": float("-inf"), "raw": b"\x00\x01", "text": "lone \udc00"},
        events=(SpanEvent("e", 5, {"x": float("inf")}),),
        links=(SpanLink("c" * 32, "d" * 16, {}),),
    )
    _insert(con, "spans", schema.SPAN_COLUMNS, spans_to_arrow([span]))
    name, attrs, events, links = con.execute("SELECT name, attributes, events, links FROM spans").fetchone()
    assert name == "odd ? name"
    assert json.loads(attrs) == {"nan": "NaN", "inf": "-Infinity", "raw": "AAE=", "text": "lone ?"}
    assert json.loads(events) == [{"name": "e", "time_unix_nano": 5, "attributes": {"x": "Infinity"}}]
    assert json.loads(links) == [{"trace_id": "c" * 32, "span_id": "d" * 16, "attributes": {}}]


def test_to_json_is_compact_and_keeps_unicode():
    assert to_json({"a": [1, 2.5, None], "é": "ü"}) == '{"a":[1,2.5,null],"é":"ü"}'


def test_log_id_identifies_content_not_identity():
    base = LogRecord(10, 11, "a" * 32, "b" * 16, 9, "", "gen_ai.choice", {"index": 0}, {"k": 1})
    same = LogRecord(10, 11, "a" * 32, "b" * 16, 9, "", "gen_ai.choice", {"index": 0}, {"k": 1})
    other = LogRecord(10, 11, "a" * 32, "b" * 16, 9, "", "gen_ai.choice", {"index": 1}, {"k": 1})
    ids = logs_to_arrow([base, same, other]).column("log_id").to_pylist()
    assert ids[0] == ids[1] != ids[2]
    assert ids[0] == log_id(base, to_json(base.body), to_json(base.attributes), to_json(base.resource))


def test_a_log_without_a_time_keeps_it_unset_but_is_placed_at_its_observed_time(con):
    record = LogRecord(0, 1_700_000_000_123_456_789, None, None, 0, "", "", "hello")
    _insert(con, "logs", schema.LOG_COLUMNS, logs_to_arrow([record]))
    ((time_ns, severity),) = con.execute("SELECT epoch_ns(time), severity FROM logs").fetchall()
    assert time_ns == 1_700_000_000_123_457_000  # rounded to microseconds
    assert severity == "UNSPECIFIED"
    assert logs_from_arrow(con.sql(f"SELECT {LOG_SELECT} FROM logs").to_arrow_table()) == [record]


def test_runs_and_calls_become_rows_numbered_within_each_run(con):
    run = AgentRun(
        trace_id="t" * 32,
        span_id="r" * 16,
        agent_name="planner",
        start_time_ns=1_000_000_000,
        end_time_ns=5_000_000_000,
        status="error",
        error="boom",
        service_name="svc",
        input="go",
        output={"a": 1},
        tool_calls=(
            ToolCall(
                "search",
                {"q": "x", "n": 2},
                output="found",
                status="ok",
                span_id="s" * 16,
                call_id="c1",
                start_time_ns=2_000_000_000,
                sources={"name": "gen_ai"},
            ),
            ToolCall("book", None, raw_arguments="not json", status="error", error="TimeoutError"),
            ToolCall("search", {"q": "x", "n": 2}, output={"n": 0}),
        ),
        handoffs=(Handoff("transfer_to_b", to_agent="b"),),
        expected_tools=("search", "book"),
        convention="gen_ai",
    )
    runs, calls = runs_to_arrow([run], updated_at_ns=9_000_000_000)
    _insert(con, "agent_runs", schema.AGENT_RUN_COLUMNS, runs)
    _insert(con, "tool_calls", schema.TOOL_CALL_COLUMNS, calls)
    row = con.execute(
        "SELECT agent_name, status, error, tools_called, expected_tools, output, handoffs, tool_call_count, "
        "epoch_ms(start_time) FROM agent_runs"
    ).fetchone()
    assert row[:5] == ("planner", "error", "boom", ["search", "book", "search"], ["search", "book"])
    assert json.loads(row[5]) == {"a": 1}
    assert json.loads(row[6]) == [{"name": "transfer_to_b", "to_agent": "b"}]
    assert row[7:] == (3, 1000)
    rows = con.execute(
        "SELECT seq, tool_name, arguments, result, status, source, call_id, epoch_ms(start_time), error "
        "FROM tool_calls ORDER BY seq"
    ).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(0, "search"), (1, "book"), (2, "search")]
    assert json.loads(rows[0][2]) == {"q": "x", "n": 2} and rows[0][3] == "found"
    assert rows[0][4:8] == ("ok", "gen_ai", "c1", 2000)
    assert json.loads(rows[1][2]) == "not json"  # only the raw form was known
    assert rows[1][4] == "error" and rows[1][8] == "TimeoutError"
    assert rows[1][5] == "llm" and rows[1][7] == 1000  # no execution span: the run's start stands in
    assert json.loads(rows[2][3]) == {"n": 0}
    assert rows[2][4] == "ok"  # unknown status is stored as ok


def test_non_text_values_in_text_columns_do_not_fail_the_write(con):
    run = AgentRun(
        trace_id="t" * 32,
        span_id="r" * 16,
        agent_name=42,
        start_time_ns=1,
        end_time_ns=2,
        expected_tools=("a", 7),
        tool_calls=(ToolCall("x", call_id=5, status="ok"),),
    )  # type: ignore[arg-type]
    runs, calls = runs_to_arrow([run], updated_at_ns=3)
    _insert(con, "agent_runs", schema.AGENT_RUN_COLUMNS, runs)
    _insert(con, "tool_calls", schema.TOOL_CALL_COLUMNS, calls)
    assert con.execute("SELECT agent_name, expected_tools FROM agent_runs").fetchone() == ("42", ["a", "7"])
    assert con.execute("SELECT call_id, agent_name FROM tool_calls").fetchone() == ("5", "42")


def test_an_expectation_free_run_stores_null_expected_tools(con):
    run = AgentRun(trace_id="t" * 32, span_id="r" * 16, agent_name=None, start_time_ns=1, end_time_ns=2)
    runs, calls = runs_to_arrow([run], updated_at_ns=3)
    _insert(con, "agent_runs", schema.AGENT_RUN_COLUMNS, runs)
    assert calls.num_rows == 0
    assert con.execute("SELECT expected_tools, tools_called FROM agent_runs").fetchone() == (None, [])


def test_evaluation_rows(con):
    rows = [
        EvaluationRow(
            "t",
            "r",
            "tool_correctness",
            0.5,
            0.7,
            False,
            "missed one",
            {"missing": ["x"]},
            model="gpt",
            cost_usd=0.001,
            created_at_ns=1_000_000,
        )
    ]
    _insert(con, "evaluations", schema.EVALUATION_COLUMNS, evaluations_to_arrow(rows))
    got = con.execute(
        "SELECT metric, score, success, details->>'$.missing[0]', status FROM evaluations"
    ).fetchone()
    assert got == ("tool_correctness", 0.5, False, "x", "ok")
