"""Schema, migrations and views of the DuckDB store."""

from __future__ import annotations

import duckdb
import pytest

from agentotel_eval.store import schema
from agentotel_eval.store.opening import open_store
from agentotel_eval.store.schema import Migration, SchemaError, current_version, migrate


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    return {row[0]: row[1] for row in con.execute(f"DESCRIBE {table}").fetchall()}


def test_fresh_database_has_every_contract_column_with_its_type(tmp_path):
    con = open_store(tmp_path / "a.duckdb")
    spans = _columns(con, "spans")
    for name in (
        "trace_id",
        "span_id",
        "parent_span_id",
        "name",
        "kind",
        "status_code",
        "status_message",
        "service_name",
        "scope_name",
    ):
        assert spans[name] == "VARCHAR"
    for name in ("start_time", "end_time"):
        assert spans[name] == "TIMESTAMP WITH TIME ZONE"
    for name in ("attributes", "resource_attributes", "events"):
        assert spans[name] == "JSON"
    runs = _columns(con, "agent_runs")
    assert runs["tools_called"] == "VARCHAR[]" and runs["expected_tools"] == "VARCHAR[]"
    for name in ("trace_id", "span_id", "agent_name", "service_name", "input", "output", "status"):
        assert runs[name] == "VARCHAR"
    calls = _columns(con, "tool_calls")
    assert calls["arguments"] == "JSON" and calls["seq"] == "INTEGER"
    assert calls["start_time"] == "TIMESTAMP WITH TIME ZONE"
    for name in ("trace_id", "run_span_id", "span_id", "call_id", "tool_name", "result", "status", "source"):
        assert calls[name] == "VARCHAR"
    logs = _columns(con, "logs")
    for name in ("body", "attributes", "resource_attributes"):
        assert logs[name] == "JSON"
    assert logs["time"] == "TIMESTAMP WITH TIME ZONE"
    evaluations = _columns(con, "evaluations")
    assert evaluations["score"] == "DOUBLE" and evaluations["success"] == "BOOLEAN"
    assert evaluations["details"] == "JSON" and evaluations["created_at"] == "TIMESTAMP WITH TIME ZONE"
    for name in ("threshold", "cost_usd"):
        assert evaluations[name] == "DOUBLE"
    for name, columns in (
        ("spans", schema.SPAN_COLUMNS),
        ("logs", schema.LOG_COLUMNS),
        ("agent_runs", schema.AGENT_RUN_COLUMNS),
        ("tool_calls", schema.TOOL_CALL_COLUMNS),
        ("evaluations", schema.EVALUATION_COLUMNS),
    ):
        # set by the writer, one value a commit (a write transaction for runs, calls and scores)
        stamped = {"ingested_at"} if name in ("spans", "logs") else {"committed_at"}
        assert set(columns) | stamped == set(_columns(con, name)), name
    assert spans["ingested_at"] == logs["ingested_at"] == "TIMESTAMP WITH TIME ZONE"
    assert current_version(con) == schema.SCHEMA_VERSION
    con.close()


def test_reopening_applies_nothing_and_keeps_data(tmp_path):
    path = tmp_path / "a.duckdb"
    con = open_store(path)
    con.execute("INSERT INTO evaluations (trace_id, run_span_id, metric) VALUES ('t', 's', 'm')")
    con.close()
    con = open_store(path)
    assert migrate(con) == []
    assert con.execute("SELECT count(*) FROM evaluations").fetchone() == (1,)
    assert con.execute("SELECT count(*) FROM schema_version").fetchone() == (len(schema.MIGRATIONS),)
    con.close()


def test_a_version_1_database_is_upgraded_keeping_its_evaluations(tmp_path):
    con = duckdb.connect(str(tmp_path / "v1.duckdb"))
    assert migrate(con, schema.MIGRATIONS[:1]) == [1]
    con.execute(
        "INSERT INTO evaluations (trace_id, run_span_id, metric, score, created_at) "
        "VALUES ('t', 's', 'tool_correctness', 0.5, '2026-01-01 00:00:00+00')"
    )
    assert migrate(con) == [m.version for m in schema.MIGRATIONS[1:]]
    row = con.execute("SELECT metric, score, source, updated_at = created_at FROM evaluations").fetchone()
    assert row == ("tool_correctness", 0.5, "agentotel-eval", True)


def test_forward_migration_runs_once_in_order(tmp_path):
    con = duckdb.connect(str(tmp_path / "m.duckdb"))
    steps = (
        *schema.MIGRATIONS,
        Migration(
            schema.SCHEMA_VERSION + 1, "add a column", ("ALTER TABLE agent_runs ADD COLUMN note VARCHAR",)
        ),
    )
    assert migrate(con, steps) == [step.version for step in steps]
    assert "note" in _columns(con, "agent_runs")
    assert migrate(con, steps) == []


def test_a_failed_migration_leaves_the_previous_version(tmp_path):
    con = duckdb.connect(str(tmp_path / "m.duckdb"))
    migrate(con)
    broken = (
        *schema.MIGRATIONS,
        Migration(
            schema.SCHEMA_VERSION + 1,
            "broken",
            (
                "ALTER TABLE agent_runs ADD COLUMN x VARCHAR",
                "THIS IS NOT SQL",
            ),
        ),
    )
    with pytest.raises(duckdb.Error):
        migrate(con, broken)
    assert current_version(con) == schema.SCHEMA_VERSION
    assert "x" not in _columns(con, "agent_runs")


def test_a_database_newer_than_the_code_is_refused(tmp_path):
    path = tmp_path / "new.duckdb"
    con = open_store(path)
    con.close()
    raw = duckdb.connect(str(path))
    raw.execute("INSERT INTO schema_version (version, description) VALUES (999, 'from the future')")
    raw.close()
    with pytest.raises(SchemaError, match="999"):
        open_store(path)


def test_views_answer_on_real_rows(tmp_path):
    con = open_store(tmp_path / "v.duckdb")
    con.execute(
        """INSERT INTO agent_runs (trace_id, span_id, agent_name, start_time, end_time, status,
                                  tool_call_count)
           VALUES ('t1', 'r1', 'planner', '2025-01-01 10:00:00+00', '2025-01-01 10:00:02+00', 'ok', 2),
                  ('t2', 'r2', 'planner', '2025-01-01 11:00:00+00', '2025-01-01 11:00:01+00', 'error', 1)"""
    )
    con.execute(
        """INSERT INTO evaluations (trace_id, run_span_id, metric, score, success, status, created_at) VALUES
           ('t1', 'r1', 'tool_correctness', 0.0, false, 'ok', '2025-01-01 10:00:03+00'),
           ('t1', 'r1', 'tool_correctness', 1.0, true, 'ok', '2025-01-01 10:00:05+00'),
           ('t2', 'r2', 'tool_correctness', 0.0, false, 'ok', '2025-01-01 11:00:03+00')"""
    )
    con.execute(
        """INSERT INTO tool_calls (trace_id, run_span_id, seq, tool_name, status, agent_name) VALUES
           ('t1', 'r1', 0, 'search', 'ok', 'planner'), ('t1', 'r1', 1, 'search', 'error', 'planner'),
           ('t2', 'r2', 0, 'book', 'ok', 'planner')"""
    )
    latest = con.execute("SELECT trace_id, score FROM latest_evaluations ORDER BY trace_id").fetchall()
    assert latest == [("t1", 1.0), ("t2", 0.0)]  # the later evaluation of t1 wins
    rate = con.execute(
        "SELECT agent_name, day::VARCHAR, runs, passed, pass_rate FROM agent_pass_rate_daily"
    ).fetchall()
    assert rate == [("planner", "2025-01-01", 2, 1, 0.5)]
    errors = dict(con.execute("SELECT tool_name, error_rate FROM tool_error_rates").fetchall())
    assert errors == {"search": 0.5, "book": 0.0}
    daily = con.execute("SELECT runs, failed_runs, avg_tool_calls FROM agent_runs_daily").fetchall()
    assert daily == [(2, 1, 1.5)]
