"""The collector started on a path: a new one gets a fresh database; a file there that is not ours is refused by
``agentotel-eval serve`` and ``query`` in one line, the file left byte for byte as it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from agentotel_eval.store import schema
from tests.collector_harness import http_request
from tests.database_files import REFUSED, Refused, build, snapshot
from tests.integration.test_collector_process import wait_for_collector

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "agentotel_eval.cli", *args],
                          capture_output=True, text=True, timeout=90, env=env, cwd=cwd)


def serve(db: Path, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "agentotel_eval.cli", "serve", "--db", str(db), "--grpc", "127.0.0.1:0",
         "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
    )


def query(endpoint: str, sql: str) -> list[list[object]]:
    """Through ``POST /v1/query``, as a client of the collector reads."""
    answer = http_request(endpoint, "POST", "/v1/query", json.dumps({"sql": sql}).encode(),
                          {"Content-Type": "application/json"})
    assert answer.status == 200, answer.body
    rows: list[list[object]] = json.loads(answer.body)["rows"]
    return rows


def test_serve_on_a_new_path_still_creates_a_fresh_database(tmp_path):
    path = tmp_path / "not-yet" / "fresh.duckdb"
    proc = serve(path, tmp_path)
    try:
        info = wait_for_collector(proc, path)
        assert query(f"http://{info.http}", "SELECT max(version) FROM schema_version") == [[schema.SCHEMA_VERSION]]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err


def test_query_on_an_empty_duckdb_database_says_to_start_a_collector(tmp_path):
    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    result = cli("query", "SELECT 1", "--db", str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (f"error: {path} has no agentotel-eval tables yet (it is an empty DuckDB database): "
                             f"start a collector on it once (agentotel-eval serve --db {path})\n")


@pytest.mark.parametrize("case", REFUSED, ids=[case.name for case in REFUSED])
def test_serve_and_query_refuse_a_file_that_is_not_ours_in_one_line_and_leave_it_as_it_was(tmp_path, case: Refused):
    directory = tmp_path / "db"
    path = build(case, directory).resolve()
    before = snapshot(directory)
    started = cli("serve", "--db", str(path), "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", cwd=tmp_path)
    queried = cli("query", "SELECT count(*) FROM spans", "--db", str(path), cwd=tmp_path)
    for result, code, prefix in ((started, 1, "error: cannot start the collector: "), (queried, 2, "error: ")):
        assert result.returncode == code, result.stderr
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(prefix + str(path)), result.stderr
        for words in case.says:
            assert words in lines[0], lines[0]
    assert snapshot(directory) == before
