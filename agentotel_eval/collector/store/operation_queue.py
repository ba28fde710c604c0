"""The writer's operations queue: writes other than ingest, applied in order by a thread and a
cursor of their own.

Operations (``collector.store.operations``: agent runs and scores, retention, judge answers) run beside
ingest: DuckDB runs one database's transactions concurrently, and ingest only appends, so the two never
conflict, and an operation never delays the commits exporters wait for. Everything queued is applied in one
transaction (one WAL write and fsync); a failing group is retried operation by operation, so a bad operation
costs only itself and never an acknowledged span.

Each transaction stamps the rows it inserts with one ``committed_at``, rising from one transaction to the
next: the transactions run one at a time on this thread, so a reader that sees the stamp S has seen every row
stamped S or earlier, and every row it has not seen yet will be stamped later (a lake flush's exact mark).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque

import duckdb

from agentotel_eval.collector.store.operations import Operation, merge_operations
from agentotel_eval.collector.store.writer_stats import WriterStats
from agentotel_eval.store.schema import COMMIT_STAMP_VARIABLE

log = logging.getLogger(__name__)


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    with contextlib.suppress(duckdb.Error):
        con.execute("ROLLBACK")


class OperationQueue:
    """Unbounded (its producers bound themselves; ``pending_rows`` lets the collector count what it holds
    against the write queue's bound). The thread ends once ``close`` was called and
    nothing is left to apply."""

    def __init__(self, stats: WriterStats) -> None:
        self._stats = stats
        self._cond = threading.Condition()
        self._ops: deque[Operation] = deque()
        self._rows = 0
        self._busy = False  # a group is being applied
        self._paused = False  # between two transactions while the database is reopened
        self._closed = False
        self._con: duckdb.DuckDBPyConnection | None = None
        self._thread: threading.Thread | None = None
        self._last_stamp_us = 0

    def start(self, con: duckdb.DuckDBPyConnection) -> None:
        """Apply operations on ``con``, a cursor of the database's connection that the queue closes."""
        self._con = con
        self._thread = threading.Thread(target=self._run, name="agentotel-writer-ops", daemon=True)
        self._thread.start()

    def submit(self, op: Operation) -> None:
        with self._cond:
            self._ops.append(op)
            self._rows += op.rows
            self._cond.notify_all()

    @property
    def pending(self) -> int:
        return len(self._ops)

    @property
    def pending_rows(self) -> int:
        return self._rows

    def wait_idle(self, deadline: float) -> bool:
        """Wait until everything queued so far is applied; False at ``deadline`` (``time.monotonic``), or at
        once when there is something to apply and no thread to apply it."""
        with self._cond:
            while self._ops or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._thread is None or not self._thread.is_alive():
                    return False
                self._cond.wait(min(remaining, 0.1))
        return True

    def quiesce(self, timeout: float) -> bool:
        """Pause between two transactions and close the cursor, before the database is closed: True once done,
        False (nothing changed) when a transaction is still running after ``timeout``. ``resume`` ends it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._paused = True
            while self._busy and time.monotonic() < deadline:
                self._cond.wait(0.02)
            if self._busy:
                self._paused = False
                self._cond.notify_all()
                return False
            con, self._con = self._con, None
        if con is not None:
            with contextlib.suppress(duckdb.Error):
                con.close()
        return True

    def resume(self, con: duckdb.DuckDBPyConnection | None) -> None:
        """End a pause, going on with ``con`` (a cursor of the database opened again); with None (it is not
        open) operations wait for a later ``resume``."""
        with self._cond:
            self._con = con
            self._paused = False
            self._cond.notify_all()

    def close(self) -> None:
        """No more operations come from ingest: the thread ends once nothing is left to apply."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def join(self, timeout: float) -> bool:
        """Wait for the thread to end (after ``close``) and close the cursor; False if it still runs."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                return False
        if self._con is not None:
            with contextlib.suppress(duckdb.Error):
                self._con.close()
        return True

    def _run(self) -> None:
        """Each group in one transaction; waits while the database is being reopened, or is not open."""
        while True:
            with self._cond:
                while not (self._ops and not self._paused and self._con is not None):
                    if self._closed and not self._paused:
                        if self._ops:
                            log.error(
                                "%d write operations were not applied: the database is not open",
                                len(self._ops),
                            )
                        return
                    self._cond.wait(1.0)
                ops = list(self._ops)
                self._ops.clear()
                self._busy = True
                con = self._con
            try:
                self._apply_group(ops, con)
            finally:
                with self._cond:
                    self._busy = False
                    self._rows -= sum(op.rows for op in ops)
                    self._cond.notify_all()

    def _apply_group(self, ops: list[Operation], con: duckdb.DuckDBPyConnection) -> None:
        """Every pending operation in ONE transaction, in order (each commit costs a WAL write and an fsync),
        runs batches merged; if the group fails, each is retried alone so one bad
        operation costs only itself."""
        if len(ops) == 1:
            self._apply(ops[0], con)
            return
        merged: list[Operation] = []
        try:
            merged = merge_operations(ops)
            self._stamp(con)
            con.execute("BEGIN TRANSACTION")
            for op in merged:
                op.apply(con)
            con.execute("COMMIT")
        except Exception as exc:
            rollback(con)
            log.warning("a group of %d write operations failed (%s); applying them one by one", len(ops), exc)
            for op in ops:
                self._apply(op, con)
            return
        for op in merged:
            self._applied(op)

    def _apply(self, op: Operation, con: duckdb.DuckDBPyConnection) -> None:
        try:
            self._stamp(con)
            con.execute("BEGIN TRANSACTION")
            op.apply(con)
            con.execute("COMMIT")
        except Exception as exc:
            rollback(con)
            self._stats.operation_failures[op.name] = self._stats.operation_failures.get(op.name, 0) + 1
            log.exception("write operation %s failed", op.name)
            try:  # whoever waits for it hears that it will never commit
                op.failed(exc)
            except Exception:
                log.exception("the failed() hook of %s failed", op.name)
            return
        self._applied(op)

    def _stamp(self, con: duckdb.DuckDBPyConnection) -> None:
        """The next transaction's ``committed_at``: now in whole microseconds, above the last even if the
        clock stepped back."""
        self._last_stamp_us = max(time.time_ns() // 1000, self._last_stamp_us + 1)
        con.execute(
            f"SET VARIABLE {COMMIT_STAMP_VARIABLE} = make_timestamp({self._last_stamp_us}::BIGINT)"
            "::TIMESTAMPTZ"
        )

    def _applied(self, op: Operation) -> None:
        self._stats.operations[op.name] = self._stats.operations.get(op.name, 0) + op.parts
        try:
            op.committed()
        except Exception:
            log.exception("the committed() hook of %s failed", op.name)
