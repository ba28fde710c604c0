"""Opening a file that is already at the path: ours (of this schema or an older one) is used, anything else is
refused with a one-line reason and left byte for byte as it was, with nothing written beside it."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pytest

from agentotel_eval.collector.store.database import Database
from agentotel_eval.store import schema
from agentotel_eval.store.identity import check_store
from agentotel_eval.store.opening import open_read_only, open_store
from agentotel_eval.store.schema import DatabaseRefused, SchemaError, current_version, migrate
from tests.support.database_files import OLD_ROWS, REFUSED, Refused, build, old_database, snapshot


@pytest.mark.parametrize("case", REFUSED, ids=[case.name for case in REFUSED])
def test_a_file_that_is_not_ours_is_refused_by_every_open_and_left_as_it_was(tmp_path, case: Refused):
    path = build(case, tmp_path / "db")
    before = snapshot(tmp_path)
    for opener in (open_store, check_store, Database, open_read_only):
        with pytest.raises(case.error) as refused:
            opener(path)
        message = str(refused.value)
        assert str(path) in message and "\n" not in message, (opener, message)
        for words in case.says:
            assert words in message, (opener, message)
        if case.error is SchemaError:
            assert not isinstance(refused.value, DatabaseRefused)
        # no byte changed, and no WAL, lock file or spill directory beside it
        assert snapshot(tmp_path) == before, opener


def test_migrate_refuses_to_create_its_tables_in_another_programs_database(tmp_path):
    con = duckdb.connect(str(tmp_path / "theirs.duckdb"))
    con.execute("CREATE TABLE orders (id INTEGER)")
    with pytest.raises(DatabaseRefused, match=r"orders \(table\)"):
        migrate(con)
    tables = con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
    assert tables == [("orders",)]


def test_an_empty_duckdb_database_is_initialised_by_the_writer_and_explained_to_a_reader(tmp_path):
    path = tmp_path / "empty.duckdb"
    duckdb.connect(str(path)).close()
    with pytest.raises(SchemaError, match=r"no agentotel-eval tables yet.*serve --db"):
        open_read_only(path)
    con = open_store(path)
    assert current_version(con) == schema.SCHEMA_VERSION
    con.close()


def test_a_database_left_before_its_first_migration_committed_is_initialised(tmp_path):
    path = tmp_path / "crashed.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_version (version INTEGER NOT NULL, description VARCHAR, "
        "applied_at TIMESTAMPTZ DEFAULT current_timestamp)"
    )
    con.close()
    con = open_store(path)
    assert current_version(con) == schema.SCHEMA_VERSION
    con.close()


def test_what_a_user_added_to_our_database_does_not_make_it_foreign(tmp_path):
    path = tmp_path / "ours.duckdb"
    open_store(path).close()
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE notes (trace_id VARCHAR, note VARCHAR)")
    con.execute(
        "CREATE VIEW slow_runs AS SELECT * FROM agent_runs WHERE end_time - start_time > INTERVAL 1 MINUTE"
    )
    con.execute("ALTER TABLE agent_runs ADD COLUMN team VARCHAR")
    con.close()
    con = open_store(path)
    assert con.execute("SELECT count(*) FROM slow_runs").fetchone() == (0,)
    con.close()
    open_read_only(path).close()


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_database_passes_the_check_and_is_migrated_keeping_its_rows(tmp_path, version):
    path = tmp_path / "old.duckdb"
    old_database(path, version)
    con = duckdb.connect(str(path), read_only=True)
    before = {table: con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall() for table in OLD_ROWS}
    con.close()
    con = open_store(path)
    assert current_version(con) == schema.SCHEMA_VERSION
    for table, rows in before.items():
        width = len(rows[0])  # the older version's columns come first, the new ones after them
        assert [row[:width] for row in con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()] == rows
    con.close()


def test_an_older_database_whose_last_writes_are_in_its_wal_is_checked_then_migrated(tmp_path):
    # The check attaches it read-only: the WAL is read, not checkpointed; the writable open then replays it.
    path = tmp_path / "crashed.duckdb"
    old_database(path, 1)
    script = (
        "import duckdb, os, sys\n"
        "con = duckdb.connect(sys.argv[1])\n"
        "con.execute(\"SET checkpoint_threshold = '1GB'\")\n"
        "con.execute(\"INSERT INTO evaluations (trace_id, run_span_id, metric, score) VALUES ('t', 'r', 'm', "
        '1.0)")\nos._exit(0)\n'
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60)
    wal = path.with_name(path.name + ".wal")
    assert wal.exists()
    check_store(path)
    assert wal.exists()
    db = Database(path)
    try:
        with db.cursor() as cur:
            assert cur.execute("SELECT score, source FROM evaluations WHERE trace_id = 't'").fetchall() == [
                (1.0, "agentotel-eval"),
            ]
            assert current_version(cur) == schema.SCHEMA_VERSION
    finally:
        db.close()


def test_a_read_only_open_reads_an_older_database_as_it_is(tmp_path):
    path = tmp_path / "old.duckdb"
    old_database(path, 1)
    before = snapshot(tmp_path)
    con = open_read_only(path)
    try:
        assert current_version(con) == 1
        assert con.execute("SELECT tool_name, status FROM tool_calls").fetchall() == [("search", "error")]
        columns = {row[0] for row in con.execute("DESCRIBE evaluations").fetchall()}
        assert "source" not in columns  # not migrated: a read-only open cannot
    finally:
        con.close()
    assert snapshot(tmp_path) == before


def test_a_file_of_a_newer_duckdb_is_refused_with_the_way_to_copy_it():
    from agentotel_eval.store.identity import why_unopenable

    said = why_unopenable(
        RuntimeError(
            "IO Error: Trying to read a database file with version number 999, but we "
            "can only read versions between 64 and 68.\nThe database file was created "
            "with an newer version of DuckDB."
        )
    )
    assert (
        said.startswith("it was written by a newer DuckDB than this one")
        and "STORAGE_VERSION 'v1.5.0'" in said
    )
    assert why_unopenable(RuntimeError("Could not set lock on file")) == "Could not set lock on file"
