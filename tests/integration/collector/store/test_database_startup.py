"""The collector started on a file that is already there: a database of an older schema is migrated and served
with every row it held; anything else is refused by ``agentotel-eval serve`` and ``query`` in one line, the
file left byte for byte as it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from agentotel_eval.otlp.encode import encode_traces
from agentotel_eval.store import schema
from agentotel_eval.store.opening import open_read_only
from agentotel_eval.store.schema import current_version
from tests.integration.collector.test_service_process import agent_trace, wait_for_collector
from tests.support.collector_harness import http_request, post_otlp, running_collector, wait_until
from tests.support.database_files import OLD_ROWS, REFUSED, TRACE, Refused, build, old_database, snapshot

ROOT = Path(__file__).resolve().parents[4]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", *args],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        cwd=cwd,
    )


def serve(db: Path, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentotel_eval.cli",
            "serve",
            "--db",
            str(db),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )


def query(endpoint: str, sql: str) -> list[list[object]]:
    """Through ``POST /v1/query``, as a client of the collector reads."""
    answer = http_request(
        endpoint, "POST", "/v1/query", json.dumps({"sql": sql}).encode(), {"Content-Type": "application/json"}
    )
    assert answer.status == 200, answer.body
    rows: list[list[object]] = json.loads(answer.body)["rows"]
    return rows


def rows_of(con: duckdb.DuckDBPyConnection, table: str, columns: list[str]) -> list[tuple[object, ...]]:
    return con.execute(
        f"SELECT {', '.join(columns)} FROM {table} WHERE trace_id = ? ORDER BY ALL", [TRACE]
    ).fetchall()


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_database_is_migrated_at_start_keeping_every_row_and_is_served(tmp_path, version):
    path = tmp_path / "old.duckdb"
    old_database(path, version)
    con = duckdb.connect(str(path), read_only=True)
    old_columns = {
        table: [row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()] for table in OLD_ROWS
    }
    before = {table: rows_of(con, table, columns) for table, columns in old_columns.items()}
    con.close()
    assert all(before.values())

    with running_collector(path) as collector:
        endpoint = collector.http_endpoint
        assert query(endpoint, "SELECT max(version) FROM schema_version") == [[schema.SCHEMA_VERSION]]
        assert query(endpoint, "SELECT agent_name, tools_called, expected_tools FROM agent_runs") == [
            ["planner", ["search", "book"], ["search"]],
        ]
        # the views, recreated at the open, answer on the old rows
        assert query(endpoint, "SELECT agent_name, metric, score FROM run_evaluations") == [
            ["planner", "tool_correctness", 0.5],
        ]
        spans = agent_trace(7, time.time_ns())
        assert post_otlp(endpoint, "traces", encode_traces(spans).SerializeToString()).status == 200
        new_trace = spans[0].trace_id
        wait_until(
            lambda: (
                query(endpoint, f"SELECT count(*) FROM agent_runs WHERE trace_id = '{new_trace}'") == [[1]]
            ),
            timeout=30,
            what="the new run",
        )
        assert query(
            endpoint, f"SELECT count(*) FROM spans WHERE ingested_at IS NOT NULL AND trace_id = '{new_trace}'"
        ) == [[2]]
        assert query(endpoint, "SELECT count(*) FROM spans") == [[4]]

    con = open_read_only(path)
    try:
        assert current_version(con) == schema.SCHEMA_VERSION
        for table, columns in old_columns.items():
            assert rows_of(con, table, columns) == before[table], table
        for table, expected in (
            ("spans", schema.SPAN_COLUMNS),
            ("logs", schema.LOG_COLUMNS),
            ("agent_runs", schema.AGENT_RUN_COLUMNS),
            ("tool_calls", schema.TOOL_CALL_COLUMNS),
            ("evaluations", schema.EVALUATION_COLUMNS),
        ):
            stamped = {"ingested_at"} if table in ("spans", "logs") else {"committed_at"}
            assert {row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()} == set(expected) | stamped
        # what the migrations the file had not had gave its old rows
        assert rows_of(con, "agent_runs", ["diagnostics"]) == [(None,)]
        # rows written before committed_at existed take their build time (a lake flush copies them); a run
        # written since is stamped when its write committed, after it was built
        assert con.execute(
            "SELECT trace_id = ?, committed_at = updated_at, committed_at >= updated_at "
            "FROM agent_runs ORDER BY 1",
            [new_trace],
        ).fetchall() == [(False, True, True), (True, False, True)]
        if version < 3:
            assert rows_of(con, "spans", ["ingested_at"]) == [(None,), (None,)]
        if version < 2:
            assert rows_of(con, "evaluations", ["source", "updated_at = created_at", "evaluator"]) == [
                ("agentotel-eval", True, None),
            ]
    finally:
        con.close()


def test_serve_migrates_an_older_database_and_query_then_reads_it_without_a_note(tmp_path):
    path = tmp_path / "old.duckdb"
    old_database(path, 1)
    proc = serve(path, tmp_path)
    try:
        info = wait_for_collector(proc, path)
        assert query(f"http://{info.http}", "SELECT max(version), count(*) FROM schema_version") == [
            [schema.SCHEMA_VERSION, schema.SCHEMA_VERSION],
        ]
        assert query(f"http://{info.http}", "SELECT metric, score, source FROM evaluations") == [
            ["tool_correctness", 0.5, "agentotel-eval"],
        ]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    result = cli(
        "query", "SELECT count(*) AS n FROM spans", "--db", str(path), "--format", "json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"n": 2}] and "note:" not in result.stderr


def test_serve_on_a_new_path_still_creates_a_fresh_database(tmp_path):
    path = tmp_path / "not-yet" / "fresh.duckdb"
    proc = serve(path, tmp_path)
    try:
        info = wait_for_collector(proc, path)
        assert query(f"http://{info.http}", "SELECT max(version) FROM schema_version") == [
            [schema.SCHEMA_VERSION]
        ]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err


def test_query_reads_an_older_database_as_it_is_and_says_how_to_upgrade_it(tmp_path):
    directory = tmp_path / "db"
    directory.mkdir()
    path = directory / "old.duckdb"
    old_database(path, 1)
    before = snapshot(directory)
    result = cli(
        "query",
        "SELECT agent_name, tools_called FROM agent_runs",
        "--db",
        str(path),
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"agent_name": "planner", "tools_called": ["search", "book"]}]
    note = (
        f"note: {path} has schema version 1, older than this agentotel-eval's ({schema.SCHEMA_VERSION}): "
        f"columns added since are missing until a collector opens it once (agentotel-eval serve --db {path})"
    )
    assert result.stderr.strip() == note
    newer_column = cli("query", "SELECT source FROM evaluations", "--db", str(path), cwd=tmp_path)
    assert newer_column.returncode == 1 and note in newer_column.stderr and '"source"' in newer_column.stderr
    assert snapshot(directory) == before


def test_query_on_an_empty_duckdb_database_says_to_start_a_collector(tmp_path):
    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    result = cli("query", "SELECT 1", "--db", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {path} has no agentotel-eval tables yet (it is an empty DuckDB database): "
        f"start a collector on it once (agentotel-eval serve --db {path})\n"
    )


@pytest.mark.parametrize("case", REFUSED, ids=[case.name for case in REFUSED])
def test_serve_and_query_refuse_a_file_that_is_not_ours_in_one_line_and_leave_it_as_it_was(
    tmp_path, case: Refused
):
    directory = tmp_path / "db"
    path = build(case, directory).resolve()
    before = snapshot(directory)
    started = cli("serve", "--db", str(path), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", cwd=tmp_path)
    queried = cli("query", "SELECT count(*) FROM spans", "--db", str(path), cwd=tmp_path)
    for result, code, prefix in (
        (started, 1, "error: cannot start the collector: "),
        (queried, 2, "error: "),
    ):
        assert result.returncode == code, result.stderr
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(prefix + str(path)), result.stderr
        for words in case.says:
            assert words in lines[0], lines[0]
    assert snapshot(directory) == before
