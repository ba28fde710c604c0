"""``agentotel-eval query``: through the running collector, and on the file when it is stopped."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentotel_eval.access import discovery
from tests.support.collector_harness import post_otlp, running_collector, wait_until
from tests.support.fixture_traces import fixtures

ROOT = Path(__file__).resolve().parents[3]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", "query", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd or ROOT,
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return tmp_path_factory.mktemp("cli") / "cli.duckdb"


@pytest.fixture(scope="module")
def running(db):
    fx = next(f for f in fixtures() if f.name == "pydantic-ai__native-v5__sequence")
    with running_collector(db) as collector:
        post_otlp(collector.http_endpoint, "traces", fx.body("protobuf"))
        wait_until(
            lambda: collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0] == 1, what="the run"
        )
        yield collector


SQL = "SELECT agent_name, tools_called, start_time FROM agent_runs"


def test_with_the_collector_running_the_query_goes_through_it(running, db):
    before = running.query_counts.get("ok", 0)
    result = cli(SQL, "--db", str(db), "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)  # ONE JSON array of row objects
    assert isinstance(rows, list) and len(rows) == 1
    assert rows[0]["agent_name"] == "travel_agent"
    assert isinstance(rows[0]["tools_called"], list)
    assert rows[0]["start_time"].endswith("+00:00") and "T" in rows[0]["start_time"]  # ISO 8601
    assert running.query_counts["ok"] == before + 1  # served by the collector, which holds the file


def test_json_columns_come_back_parsed(running, db):
    result = cli(
        "SELECT attributes, resource_attributes FROM spans WHERE name LIKE 'execute_tool%' LIMIT 1",
        "--db",
        str(db),
        "--format",
        "json",
    )
    (row,) = json.loads(result.stdout)
    assert row["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert row["resource_attributes"]["service.name"] == "travel-bot-pydantic-ai"


def test_csv_and_table_output(running, db):
    result = cli(
        "SELECT agent_name, 'a,b' AS quoted, tools_called FROM agent_runs", "--db", str(db), "--format", "csv"
    )
    header, row = csv.reader(io.StringIO(result.stdout))
    assert header == ["agent_name", "quoted", "tools_called"]
    assert row[:2] == ["travel_agent", "a,b"] and isinstance(json.loads(row[2]), list)
    table = cli("SELECT agent_name FROM agent_runs", "--db", str(db))
    assert table.returncode == 0
    assert table.stdout.splitlines()[0] == "agent_name" and table.stdout.strip().endswith("(1 row)")


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("DELETE FROM spans", "DELETE statements are not allowed"),
        ("COPY spans TO 'out.csv'", "COPY statements are not allowed"),
        ("SELECT * FROM read_text('/etc/passwd')", "cannot read or write files"),
        ("SELECT 1; SELECT 2", "2 statements given"),
        ("SELEC 1", "syntax error"),
    ],
)
def test_refusals_through_the_collector_are_clear(running, db, sql, message):
    result = cli(sql, "--db", str(db))
    assert result.returncode == 1
    assert message in result.stderr and result.stdout == ""


def test_the_row_limit_is_reported(running, db):
    result = cli("SELECT * FROM range(50)", "--db", str(db), "--format", "json", "--limit", "7")
    assert len(json.loads(result.stdout)) == 7
    assert "truncated at 7 rows" in result.stderr


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("limit", 0, "'limit' must be a positive integer"),
        ("timeout", "5", "'timeout' must be a positive number of seconds"),
    ],
)
def test_a_malformed_query_body_is_answered_400_with_what_is_wrong(running, field, value, message):
    import urllib.error
    import urllib.request

    body = json.dumps({"sql": "SELECT 1", field: value}).encode()
    request = urllib.request.Request(
        f"{running.http_endpoint}/v1/query",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(request, timeout=10)
    assert answer.value.code == 400
    assert json.loads(answer.value.read()) == {"error": message, "kind": "invalid"}


def test_with_the_collector_stopped_the_file_is_read_directly(tmp_path):
    db = tmp_path / "stopped.duckdb"
    fx = next(f for f in fixtures() if f.name == "strands__default__sequence")
    with running_collector(db) as collector:
        post_otlp(collector.http_endpoint, "traces", fx.body("json"), "json")
        wait_until(
            lambda: collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0] == 1, what="the run"
        )
    assert not discovery.sidecar_path(db).exists()  # a clean stop removes the discovery file
    result = cli("SELECT count(*) AS n FROM spans", "--db", str(db), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"n": len(fx.spans())}]
    refused = cli("INSERT INTO spans (trace_id, span_id) VALUES ('a', 'b')", "--db", str(db))
    assert refused.returncode == 1 and "INSERT statements are not allowed" in refused.stderr, refused.stderr


def test_a_stale_discovery_file_is_ignored(tmp_path):
    db = tmp_path / "stale.duckdb"
    with running_collector(db):
        pass
    discovery.write_sidecar(
        db, discovery.CollectorInfo(pid=os.getpid(), http="127.0.0.1:9", db=str(db), token="x")
    )
    result = cli("SELECT count(*) AS n FROM spans", "--db", str(db), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"n": 0}]


def test_a_missing_database_is_a_clear_error(tmp_path):
    result = cli("SELECT 1", "--db", str(tmp_path / "nope.duckdb"))
    assert result.returncode == 2 and "no database at" in result.stderr


def test_a_database_the_collector_could_not_open_again_answers_503_to_retry(running, monkeypatch):
    """After a reopen failed (``collector.store.database``), ``/v1/query`` says to retry,
    as an export is told."""
    import urllib.error
    import urllib.request

    from agentotel_eval.collector.store.database import DatabaseClosed

    def closed():
        raise DatabaseClosed("the database x could not be opened again")

    monkeypatch.setattr(running.database, "cursor", closed)
    request = urllib.request.Request(
        f"{running.http_endpoint}/v1/query",
        data=json.dumps({"sql": "SELECT 1"}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(request, timeout=10)
    assert answer.value.code == 503 and answer.value.headers["Retry-After"] == "1"
    body = json.loads(answer.value.read())
    assert body["kind"] == "unavailable" and "could not be opened again" in body["error"]
    assert running.query_counts["unavailable"] == 1


def test_query_from_another_directory_finds_the_collector_running_on_the_machine(tmp_path, monkeypatch):
    """No database here and no --db: the one collector this machine runs answers (and the command says so);
    with two, the command says how to choose; --url names one; with none, the error says
    how to point at one."""
    monkeypatch.setenv(discovery.RUNTIME_DIR_ENV, str(tmp_path / "runtime"))  # this test's collectors only
    monkeypatch.delenv(discovery.DB_ENV, raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first, second = tmp_path / "a" / "first.duckdb", tmp_path / "b" / "second.duckdb"
    first.parent.mkdir()
    second.parent.mkdir()
    with running_collector(first) as one:
        found = cli("SELECT count(*) AS n FROM spans", "--format", "json", cwd=elsewhere)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout) == [{"n": 0}]
        assert f"reading the collector at http://{one.http_endpoint.split('://')[-1]}" in found.stderr
        assert str(first.resolve()) in found.stderr
        with running_collector(second) as two:
            several = cli("SELECT 1", cwd=elsewhere)
            assert several.returncode == 2 and "2 collectors run on this machine" in several.stderr
            assert str(first.resolve()) in several.stderr and str(second.resolve()) in several.stderr
            named = cli("SELECT 42 AS n", "--url", two.http_endpoint, "--format", "json", cwd=elsewhere)
            assert named.returncode == 0 and json.loads(named.stdout) == [{"n": 42}], named.stderr
    gone = cli("SELECT 1", cwd=elsewhere)
    assert gone.returncode == 2 and "--db PATH, --url URL or $AGENTOTEL_DB" in gone.stderr
    assert not list((tmp_path / "runtime").glob("*.json"))  # a stopped collector leaves no record
    nobody = cli("SELECT 1", "--url", "http://127.0.0.1:9", cwd=elsewhere)
    assert (
        nobody.returncode == 2
        and "no agentotel-eval collector answers at http://127.0.0.1:9" in nobody.stderr
    )
