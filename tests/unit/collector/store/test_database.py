"""The reopenable database handle: reads wait for a reopen and a reopen for reads; a
failed open is retried."""

from __future__ import annotations

import threading
import time

import pytest

from agentotel_eval.collector.store import database as database_module
from agentotel_eval.collector.store.database import Database, DatabaseClosed, SharedLock
from agentotel_eval.collector.store.writer import StoreWriter, WriterSettings, WriterUnavailable
from agentotel_eval.store.opening import open_read_only
from agentotel_eval.store.rows import spans_to_arrow
from agentotel_eval.store.schema import SchemaError
from tests.support.collector_harness import Blocker, wait_until
from tests.unit.collector.store.test_writer import make_spans, submit_spans


def _count(db: Database) -> int:
    with db.cursor() as cur:
        return cur.execute("SELECT count(*) FROM spans").fetchall()[0][0]


def test_a_reopen_keeps_what_was_committed_and_serves_new_cursors(tmp_path):
    db = Database(tmp_path / "d.duckdb")
    con = db.connection
    con.register("_s", spans_to_arrow(make_spans(1)))
    con.execute("INSERT INTO spans BY NAME SELECT * FROM _s")
    con.unregister("_s")
    new = db.reopen()
    assert new is not None and new is db.connection and new is not con
    assert _count(db) == 3 and db.reopens == 1 and db.reopen_seconds > 0
    with pytest.raises(Exception, match="closed"):
        con.execute("SELECT 1")  # the old connection is gone, not left open beside the new one
    # still sealed after the reopen: a query cannot reach the file system
    (tmp_path / "other.txt").write_text("x")
    with db.cursor() as cur, pytest.raises(Exception, match="disabled"):
        cur.execute(f"SELECT * FROM read_text('{tmp_path / 'other.txt'}')")
    db.close()
    assert not db.is_open


def test_a_reopen_waits_for_a_read_in_progress_and_gives_up_after_a_while(tmp_path, monkeypatch):
    monkeypatch.setattr(Database, "READS_WAIT", 0.05)
    db = Database(tmp_path / "d.duckdb")
    inside, leave = threading.Event(), threading.Event()

    def read() -> None:
        with db.cursor() as cur:
            cur.execute("SELECT count(*) FROM spans").fetchall()
            inside.set()
            leave.wait(5)
            cur.execute("SELECT count(*) FROM spans").fetchall()  # still its connection: nothing was closed

    reader = threading.Thread(target=read)
    reader.start()
    assert inside.wait(5)
    root = db.connection
    assert db.reopen() is None and db.connection is root and db.reopens == 0
    leave.set()
    reader.join(5)
    assert db.reopen() is not None and db.reopens == 1
    db.close()


def test_reads_asked_for_while_a_reopen_waits_go_after_it():
    lock = SharedLock()
    lock.acquire_shared()  # a read in progress
    order: list[str] = []

    def reopen() -> None:
        assert lock.acquire_exclusive(5)
        order.append("reopen")
        lock.release_exclusive()

    def new_read() -> None:
        lock.acquire_shared()
        order.append("read")
        lock.release_shared()

    waiting = threading.Thread(target=reopen)
    waiting.start()
    while not lock._waiting:
        time.sleep(0.001)
    late = threading.Thread(target=new_read)
    late.start()
    time.sleep(0.05)  # what is checked is that nothing happens meanwhile: no event to wait for
    assert order == []  # the new read waits behind the reopen, which waits for the read in progress
    lock.release_shared()
    waiting.join(5)
    late.join(5)
    assert order == ["reopen", "read"]


def test_a_reopen_that_gave_up_lets_waiting_reads_in():
    lock = SharedLock()
    lock.acquire_shared()
    got = threading.Event()
    threading.Thread(target=lambda: (lock.acquire_shared(), got.set())).start()
    assert not lock.acquire_exclusive(0.05)
    assert got.wait(5)


def test_an_open_refused_for_a_moment_is_retried(tmp_path, monkeypatch):
    db = Database(tmp_path / "d.duckdb")
    real = database_module.open_store
    refusals = [2]

    def flaky(*args, **kwargs):
        if refusals[0]:
            refusals[0] -= 1
            raise SchemaError("cannot open for writing: Conflicting lock is held")
        return real(*args, **kwargs)

    monkeypatch.setattr(database_module, "open_store", flaky)
    assert db.reopen() is not None and refusals == [0] and _count(db) == 0
    db.close()


def test_another_process_holding_the_file_past_the_retries_leaves_it_closed_until_a_later_reopen(
    tmp_path, monkeypatch
):
    """Between the close and the open a process that does not look at the lock file (the duckdb CLI, say) took
    the file read-only: real DuckDB locks, in a child process."""
    import multiprocessing as mp

    monkeypatch.setattr(Database, "OPEN_RETRY_FOR", 0.3)
    path = tmp_path / "d.duckdb"
    db = Database(path)
    db._close()  # as a reopen does first
    ctx = mp.get_context("spawn")
    opened, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_with_duckdb, args=(str(path), opened, release))
    holder.start()
    try:
        assert opened.wait(30)
        started = time.monotonic()
        with pytest.raises(DatabaseClosed, match="could not be opened again"):
            db.reopen()  # closed already: one attempt, not the retries
        assert time.monotonic() - started < 0.3 and not db.is_open
        with pytest.raises(DatabaseClosed), db.cursor():  # reads fail at once, they do not wait
            pass
    finally:
        release.set()
        holder.join(30)
    assert db.reopen() is not None and _count(db) == 0
    db.close()
    with pytest.raises(DatabaseClosed, match="was closed"):
        db.reopen()  # closed for good


def _hold_with_duckdb(path: str, opened, release) -> None:
    import duckdb

    con = duckdb.connect(path, read_only=True)
    opened.set()
    release.wait(30)
    con.close()


def test_while_a_collector_has_the_file_other_opens_are_refused_even_between_close_and_reopen(tmp_path):
    import duckdb

    path = tmp_path / "d.duckdb"
    db = Database(path)
    with pytest.raises(SchemaError, match="another collector"):
        Database(path)
    db._close()  # DuckDB's own lock is dropped here, for the moment of a reopen; the lock file's is not
    with pytest.raises(duckdb.IOException, match="a collector holds it"):
        open_read_only(path)
    with pytest.raises(SchemaError, match="another collector"):
        Database(path)
    assert db.reopen() is not None
    db.close()
    open_read_only(path).close()  # released with the close
    Database(path).close()


def test_the_writer_reopens_after_its_rows_and_loses_nothing(tmp_path):
    db = Database(tmp_path / "w.duckdb")
    writer = StoreWriter(db.connection, WriterSettings(flush_interval=0.0, reopen_rows=5), reopen=db.reopen)
    writer.start()
    try:
        for trace in range(1, 8):  # 3 spans each: a reopen after every second commit
            submit_spans(writer, make_spans(trace)).wait(5)
            with db.cursor() as cur:  # reads beside the writer, as the assembler's and queries do
                cur.execute("SELECT count(*) FROM spans").fetchall()
        assert writer.flush(5)
    finally:
        writer.shutdown()
    assert writer.stats.reopens == 3 == db.reopens and writer.stats.reopen_failures == 0
    assert _count(db) == 21
    db.close()


def test_a_writer_whose_database_cannot_be_opened_again_refuses_until_it_can(tmp_path, monkeypatch):
    db = Database(tmp_path / "w.duckdb")
    writer = StoreWriter(db.connection, WriterSettings(flush_interval=0.0, reopen_rows=3), reopen=db.reopen)
    real = database_module.open_store
    refuse = threading.Event()
    refuse.set()

    def guarded(*args, **kwargs):
        if refuse.is_set():
            raise SchemaError("cannot open for writing: Conflicting lock is held")
        return real(*args, **kwargs)

    monkeypatch.setattr(database_module, "open_store", guarded)
    monkeypatch.setattr(Database, "OPEN_RETRY_FOR", 0.05)
    writer.start()
    try:
        assert submit_spans(writer, make_spans(1)).wait(5).stored == 3  # then the reopen fails
        with pytest.raises(WriterUnavailable, match="not open"):
            submit_spans(writer, make_spans(2)).wait(5)
        assert writer.stats.reopen_failures >= 1
        refuse.clear()
        # no export needed: the writer tries again about once a second by itself
        wait_until(lambda: db.is_open, timeout=10, what="the database to be opened again")
        assert submit_spans(writer, make_spans(3)).wait(5).stored == 3
    finally:
        writer.shutdown()
    with db.cursor() as cur:
        traces = cur.execute("SELECT DISTINCT trace_id FROM spans ORDER BY 1").fetchall()
    assert traces == [
        (f"{1:032x}",),
        (f"{3:032x}",),
    ]  # the acknowledged ones; the refused one is the exporter's to retry
    db.close()


def test_a_long_operation_puts_the_reopen_off_instead_of_holding_exports(tmp_path):
    db = Database(tmp_path / "w.duckdb")
    writer = StoreWriter(db.connection, WriterSettings(flush_interval=0.0, reopen_rows=3), reopen=db.reopen)
    writer.start()
    blocker = Blocker()  # a long transaction of the operations thread (retention, say)
    try:
        writer.submit_operation(blocker)
        assert blocker.entered.wait(5)
        started = time.monotonic()
        assert submit_spans(writer, make_spans(1)).wait(5).stored == 3  # reaches reopen_rows
        assert submit_spans(writer, make_spans(2)).wait(5).stored == 3  # not held up by a reopen waiting
        assert time.monotonic() - started < 2 and writer.stats.reopens == 0
        blocker.release.set()
        # put off by a second: the next commit after it reopens
        wait_until(
            lambda: (
                submit_spans(writer, make_spans(3 + writer.stats.commits)).wait(5) and writer.stats.reopens
            ),
            timeout=10,
            what="the reopen that was put off",
        )
    finally:
        blocker.release.set()
        writer.shutdown()
    assert _count(db) == 3 * writer.stats.commits
    db.close()


def test_the_collector_opens_its_database_with_the_writer_settings_and_keeps_them_across_a_reopen(tmp_path):
    import duckdb

    from tests.support.collector_harness import running_collector

    settings = ("memory_limit", "threads", "checkpoint_threshold", "max_vacuum_tasks")
    query = "SELECT " + ", ".join(f"current_setting('{name}')" for name in settings)
    # DuckDB renders sizes its own way: the expected values are read back from a connection
    # given the same settings
    with duckdb.connect(
        config={"memory_limit": "40MB", "threads": 1, "checkpoint_threshold": "8MB", "max_vacuum_tasks": 0}
    ) as reference:
        expected = reference.execute(query).fetchall()[0]
    with running_collector(
        tmp_path / "c.duckdb", writer={"memory_limit": "40MB", "threads": 1, "checkpoint_threshold": "8MB"}
    ) as collector:
        with collector.database.cursor() as cur:
            assert cur.execute(query).fetchall()[0] == expected
        assert collector.database.reopen()
        with collector.database.cursor() as cur:
            assert cur.execute(query).fetchall()[0] == expected


def test_the_writer_settings_leave_duckdb_defaults_where_asked():
    from agentotel_eval.collector.config import WriterConfig

    settings = WriterConfig(memory_limit="", threads=0).duckdb_settings()
    assert "memory_limit" not in settings and "threads" not in settings
    assert WriterConfig(threads=3).duckdb_settings()["threads"] == 3
