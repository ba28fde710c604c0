"""Opening the store: a sealed instance whose only database is the file, one writer at a time."""

from __future__ import annotations

import duckdb
import pytest

from agentotel_eval.store.opening import open_read_only, open_store
from agentotel_eval.store.schema import SchemaError
from agentotel_eval.store.sealed import cursor as sealed_cursor
from agentotel_eval.store.sealed import in_use_here


def test_read_only_open_refuses_a_missing_file_and_writes(tmp_path):
    with pytest.raises(FileNotFoundError, match="serve --db"):
        open_read_only(tmp_path / "missing.duckdb")
    path = tmp_path / "r.duckdb"
    open_store(path).close()
    con = open_read_only(path)
    with pytest.raises(duckdb.Error):
        con.execute("INSERT INTO evaluations (trace_id, run_span_id, metric) VALUES ('t', 's', 'm')")
    with pytest.raises(duckdb.Error):
        con.execute("SET enable_external_access = true")


def test_the_sealed_writable_instance_still_takes_arrow_appends_but_no_file_access(tmp_path):
    import pyarrow as pa

    con = open_store(tmp_path / "sealed.duckdb")
    con.register("batch", pa.table({"trace_id": ["t"], "run_span_id": ["r"], "metric": ["m"]}))
    con.execute("INSERT INTO evaluations (trace_id, run_span_id, metric) SELECT * FROM batch")
    assert con.execute("SELECT count(*) FROM evaluations").fetchone() == (1,)
    reader = sealed_cursor(con)  # what queries use: the same instance
    (tmp_path / "secret.csv").write_text("a\n1\n")
    for sql in (
        f"SELECT * FROM read_csv('{tmp_path / 'secret.csv'}')",
        f"COPY evaluations TO '{tmp_path / 'out.csv'}'",
        f"ATTACH '{tmp_path / 'other.duckdb'}'",
    ):
        with pytest.raises(duckdb.PermissionException):
            reader.execute(sql)
    with pytest.raises(duckdb.Error, match="locked"):
        reader.execute("SET enable_external_access = true")
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "other.duckdb").exists()
    con.close()


def _append_rows(con: duckdb.DuckDBPyConnection, n: int) -> None:
    import pyarrow as pa

    con.register(
        "batch",
        pa.table(
            {
                "trace_id": [f"{i:032x}" for i in range(n)],
                "run_span_id": ["r"] * n,
                "metric": ["m"] * n,
                "reason": ["some text to store " * 4] * n,
            }
        ),
    )
    con.execute("INSERT INTO evaluations (trace_id, run_span_id, metric, reason) SELECT * FROM batch")
    con.unregister("batch")


@pytest.mark.parametrize("row_group_size", [2048, 0])
def test_a_commit_of_a_whole_row_group_goes_straight_into_the_file(tmp_path, row_group_size):
    path = tmp_path / "rg.duckdb"
    con = open_store(path, row_group_size=row_group_size)
    wal = tmp_path / "rg.duckdb.wal"
    before = wal.stat().st_size if wal.exists() else 0
    _append_rows(con, 4096)
    logged = (wal.stat().st_size if wal.exists() else 0) - before
    if row_group_size:
        assert logged < 32_000  # only where the new row groups went
    else:
        assert logged > 4096 * 80  # every row, into the write-ahead log
    assert sealed_cursor(con).execute("SELECT count(*) FROM evaluations").fetchone() == (
        4096,
    )  # cursors see the file
    con.close()
    reopened = open_read_only(path)
    assert reopened.execute("SELECT count(*), count(DISTINCT trace_id) FROM evaluations").fetchone() == (
        4096,
        4096,
    )
    reopened.close()


def test_a_second_writer_on_the_same_file_is_refused_with_a_clear_error(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "one.duckdb"
    con = open_store(path)
    try:
        with pytest.raises(SchemaError, match="cannot open"):
            open_store(path)  # in this process
        other = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from agentotel_eval.store.opening import open_store; open_store(sys.argv[1])",
                str(path),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.returncode != 0 and "SchemaError: cannot open" in other.stderr  # in another one
    finally:
        con.close()


def test_a_read_only_open_beside_the_writer_in_its_process_is_refused_and_keeps_the_writers_lock(tmp_path):
    # A plain second connect of the file opened and closed a handle of its own, and closing it dropped this
    # process's lock: another process could then open the file for writing while the collector wrote to it.
    import subprocess
    import sys

    import duckdb

    path = tmp_path / "one.duckdb"
    con = open_store(path)
    try:
        with pytest.raises(duckdb.Error) as refused:
            open_read_only(path)
        assert in_use_here(refused.value)
        intruder = subprocess.run(
            [
                sys.executable,
                "-c",
                "import duckdb, sys; duckdb.connect(sys.argv[1]); print('opened')",
                str(path),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (
            intruder.returncode != 0 and "opened" not in intruder.stdout and "lock" in intruder.stderr.lower()
        )
        assert con.execute("SELECT count(*) FROM spans").fetchone() == (0,)  # the writer is unharmed
    finally:
        con.close()
    reader = open_read_only(path)  # once the writer is gone
    assert reader.execute("SELECT count(*) FROM spans").fetchone() == (0,)
    reader.close()


def test_big_queries_spill_beside_the_database_file(tmp_path, monkeypatch):
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)  # not where the spill files belong
    path = tmp_path / "db" / "one.duckdb"
    path.parent.mkdir()
    con = open_store(path)
    assert con.execute("SELECT current_setting('temp_directory')").fetchone()[0] == f"{path}.tmp"
    con.close()
    reader = open_read_only(path)
    assert reader.execute("SELECT current_setting('temp_directory')").fetchone()[0] == f"{path}.tmp"
    reader.close()
