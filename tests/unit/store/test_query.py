"""The sealed read-only query surface: allowed forms, every forbidden form, limits, JSON
conversion, formats."""

from __future__ import annotations

import csv
import io
import json

import pytest

from agentotel_eval.store.formats import render
from agentotel_eval.store.opening import open_read_only, open_store
from agentotel_eval.store.query import (
    QueryError,
    QueryForbidden,
    QueryResult,
    QueryTimeout,
    check_sql,
    run_query,
)
from agentotel_eval.store.sealed import cursor as sealed_cursor


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("q") / "q.duckdb"
    con = open_store(path)
    con.execute(
        """INSERT INTO agent_runs (trace_id, span_id, agent_name, start_time, tools_called, expected_tools,
                                  handoffs)
           VALUES ('t1', 'r1', 'planner', '2025-03-04 05:06:07.123456+00', ['search', 'book'], NULL,
                   '[{"name": "transfer_to_b"}]')"""
    )
    con.close()
    return path


@pytest.fixture()
def con(db):
    c = open_read_only(db)
    yield c
    c.close()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "  select * from agent_runs  ",
        "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
        "DESCRIBE spans",
        "SHOW tables",
        "SUMMARIZE agent_runs",
        "EXPLAIN SELECT * FROM spans",
        "FROM agent_runs",
        "SELECT 1;",
    ],
)
def test_reading_statements_are_allowed(con, sql):
    assert run_query(sealed_cursor(con), sql).columns


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("COPY agent_runs TO '/tmp/out.csv'", "COPY"),
        ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH"),
        ("INSTALL httpfs", "INSTALL/LOAD"),
        ("LOAD httpfs", "INSTALL/LOAD"),
        ("SET enable_external_access = true", "SET"),
        ("SET threads = 1", "SET"),
        ("RESET threads", "SET"),
        ("PRAGMA enable_profiling", "PRAGMA"),
        ("CREATE TABLE x (a INT)", "CREATE"),
        ("CREATE VIEW v AS SELECT 1", "CREATE"),
        ("INSERT INTO agent_runs (trace_id, span_id) VALUES ('a', 'b')", "INSERT"),
        ("UPDATE agent_runs SET agent_name = 'x'", "UPDATE"),
        ("DELETE FROM agent_runs", "DELETE"),
        ("DROP TABLE agent_runs", "DROP"),
        ("ALTER TABLE agent_runs ADD COLUMN x INT", "ALTER"),
        ("EXPORT DATABASE '/tmp/dump'", "EXPORT"),
        ("CALL checkpoint()", "CALL"),
        ("CHECKPOINT", "CALL"),
        ("BEGIN TRANSACTION", "transaction control"),
        ("DETACH other", "DETACH"),
        ("EXPLAIN ANALYZE DELETE FROM agent_runs", "DELETE"),
    ],
)
def test_every_statement_that_is_not_a_read_is_refused_by_name(sql, named):
    with pytest.raises(QueryForbidden, match=f"^{named} statements are not allowed"):
        check_sql(sql)


@pytest.mark.parametrize(
    "sql",
    ["SELECT 1; SELECT 2", "SELECT 1; DELETE FROM agent_runs", "SELECT 1; COPY agent_runs TO 'x.csv'"],
)
def test_multiple_statements_are_refused(con, sql):
    with pytest.raises(QueryForbidden, match="2 statements given"):
        run_query(sealed_cursor(con), sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_csv_auto('/etc/hostname')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_blob('/etc/passwd')",
        "SELECT * FROM read_json('/etc/passwd')",
        "SELECT * FROM read_parquet('/tmp/x.parquet')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_csv('https://example.com/x.csv')",
    ],
)
def test_file_and_network_access_from_a_select_is_refused(con, sql):
    with pytest.raises(QueryForbidden, match="cannot read or write files"):
        run_query(sealed_cursor(con), sql)


def test_state_changing_functions_inside_a_select_are_refused(con):
    with pytest.raises(QueryForbidden, match="checkpoint"):
        run_query(sealed_cursor(con), "SELECT * FROM checkpoint()")


def test_the_read_only_transaction_stops_writes_that_look_like_reads(tmp_path):
    # On a writable instance (the collector's own), a write hidden behind EXPLAIN ANALYZE still cannot run.
    writable = open_store(tmp_path / "w.duckdb")
    cursor = sealed_cursor(writable)
    cursor.execute("BEGIN TRANSACTION READ ONLY")
    with pytest.raises(Exception, match="read-only"):
        cursor.execute("INSERT INTO evaluations (trace_id, run_span_id, metric) VALUES ('a', 'b', 'c')")
    cursor.execute("ROLLBACK")
    with pytest.raises(QueryForbidden):
        run_query(
            sealed_cursor(writable),
            "EXPLAIN ANALYZE INSERT INTO evaluations (trace_id, run_span_id, metric) VALUES ('a', 'b', 'c')",
        )
    assert writable.execute("SELECT count(*) FROM evaluations").fetchone() == (0,)
    writable.close()


def test_syntax_errors_and_empty_queries_are_clear(con):
    with pytest.raises(QueryError, match="syntax error"):
        run_query(sealed_cursor(con), "SELEC 1")
    with pytest.raises(QueryError, match="empty query"):
        run_query(sealed_cursor(con), "   ")


def test_the_row_limit_truncates_and_says_so(con):
    result = run_query(sealed_cursor(con), "SELECT * FROM range(25)", row_limit=10)
    assert len(result.rows) == 10 and result.truncated
    result = run_query(sealed_cursor(con), "SELECT * FROM range(10)", row_limit=10)
    assert len(result.rows) == 10 and not result.truncated


def test_a_slow_query_is_interrupted_at_the_time_limit(con):
    cursor = sealed_cursor(con)
    with pytest.raises(QueryTimeout, match=r"0\.3s"):
        run_query(
            cursor,
            "SELECT count(*) FROM range(100000000000) a, range(100000) b WHERE a.range + b.range = -1",
            timeout=0.3,
        )
    assert run_query(cursor, "SELECT 42 AS x").rows == [[42]]  # the cursor stays usable


def test_values_come_back_json_ready(con):
    result = run_query(
        sealed_cursor(con),
        "SELECT agent_name, tools_called, expected_tools, handoffs, start_time, 1.50::DECIMAL(4,2) AS d, "
        "{'a': '[1]'::JSON} AS s, 'nan'::DOUBLE AS n, '\\x01'::BLOB AS b, INTERVAL 90 SECOND "
        "AS i FROM agent_runs",
    )
    record = result.records()[0]
    assert record == {
        "agent_name": "planner",
        "tools_called": ["search", "book"],
        "expected_tools": None,
        "handoffs": [{"name": "transfer_to_b"}],
        "start_time": "2025-03-04T05:06:07.123456+00:00",
        "d": 1.5,
        "s": {"a": [1]},
        "n": None,
        "b": "AQ==",
        "i": 90.0,
    }
    json.dumps(result.to_dict())  # everything is serialisable


def test_result_survives_the_http_round_trip(con):
    result = run_query(sealed_cursor(con), "SELECT agent_name, tools_called FROM agent_runs")
    again = QueryResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.records() == result.records()


def test_formats(con):
    result = run_query(sealed_cursor(con), "SELECT agent_name, tools_called, expected_tools FROM agent_runs")
    assert json.loads(render(result, "json")) == [
        {"agent_name": "planner", "tools_called": ["search", "book"], "expected_tools": None}
    ]
    rows = list(csv.reader(io.StringIO(render(result, "csv"))))
    assert rows == [["agent_name", "tools_called", "expected_tools"], ["planner", '["search","book"]', ""]]
    table = render(result, "table").splitlines()
    assert table[0].split() == ["agent_name", "tools_called", "expected_tools"]
    assert table[2].split() == ["planner", '["search","book"]', "NULL"]
    assert table[-1] == "(1 row)"


def test_parameters_are_bound_values_never_sql(con):
    result = run_query(
        sealed_cursor(con),
        "SELECT agent_name FROM agent_runs WHERE agent_name = ? AND ? = 1",
        params=["planner", 1],
    )
    assert result.rows == [["planner"]]
    quoted = run_query(
        sealed_cursor(con), "SELECT count(*) FROM agent_runs WHERE agent_name = ?", params=["x' OR '1'='1"]
    )
    assert quoted.rows == [[0]]
    # a parameter cannot smuggle a second statement or a write: it is a value
    assert run_query(sealed_cursor(con), "SELECT ?", params=["1; DROP TABLE spans"]).rows == [
        ["1; DROP TABLE spans"]
    ]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"a": 1}, "must be a list"),
        ("abc", "must be a list"),
        ([[1, 2]], "strings, numbers, booleans or null"),
        ([{"x": 1}], "strings, numbers, booleans or null"),
    ],
)
def test_parameters_that_are_not_plain_values_are_refused(con, params, message):
    with pytest.raises(QueryError, match=message):
        run_query(sealed_cursor(con), "SELECT ?", params=params)


def test_a_wrong_number_of_parameters_is_a_query_error(con):
    with pytest.raises(QueryError):
        run_query(sealed_cursor(con), "SELECT ?, ?", params=[1])
