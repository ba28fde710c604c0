"""The collector's database handle: one DuckDB instance shared by its threads, reopened now and then.

DuckDB keeps some memory of every append, update and delete for as long as the database stays open, whatever
its ``memory_limit`` says; only closing the database gives it back (docs/benchmarks.md has how much). A
collector runs for weeks, so its writer closes and reopens the file after every ``writer.reopen_rows`` stored
records (``StoreWriter``): closing checkpoints the write-ahead log, opening reads the catalog.

Every reader takes its cursor through ``cursor()``, which holds a shared lock while the cursor is in use; the
reopen takes it exclusively, so no query runs on an instance being closed. The writer's own connections are
quiesced by the writer itself before it calls ``reopen``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentotel_eval.store.identity import check_store
from agentotel_eval.store.opening import DEFAULT_ROW_GROUP_SIZE, open_store
from agentotel_eval.store.schema import SchemaError
from agentotel_eval.store.sealed import DuckDBSetting
from agentotel_eval.store.sealed import cursor as sealed_cursor
from agentotel_eval.store.writer_lock import hold_writer_lock, release_writer_lock

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)


class DatabaseClosed(Exception):
    """The database is not open (a reopen could not open it again, or it was closed)."""


class SharedLock:
    """Many holders in shared mode or one in exclusive mode. A waiting exclusive holder keeps new shared
    holders out, so a stream of short reads cannot starve it; it waits a bounded time, so a long query only
    postpones it (and a shared holder that asks again while it waits delays it only as long)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = False

    def acquire_shared(self) -> None:
        with self._cond:
            while self._exclusive or self._waiting:
                self._cond.wait()
            self._shared += 1

    def release_shared(self) -> None:
        with self._cond:
            self._shared -= 1
            if not self._shared:
                self._cond.notify_all()

    def acquire_exclusive(self, timeout: float) -> bool:
        """True once held exclusively; False if shared holders remain after ``timeout`` seconds."""
        with self._cond:
            while self._waiting or self._exclusive:  # one exclusive holder at a time
                self._cond.wait()
            self._waiting = True
            try:
                if not self._cond.wait_for(lambda: self._shared == 0, timeout):
                    return False
                self._exclusive = True
                return True
            finally:
                self._waiting = False
                self._cond.notify_all()

    def release_exclusive(self) -> None:
        with self._cond:
            self._exclusive = False
            self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self, attempt: float) -> Iterator[None]:
        """Held exclusively, however long that takes: waits ``attempt`` seconds at a time, letting the shared
        holders that came meanwhile in between."""
        while not self.acquire_exclusive(attempt):
            pass
        try:
            yield
        finally:
            self.release_exclusive()


class Database:
    """The writable database file of one collector (``open_store``), reopenable (see the module docstring).

    ``connection`` is the root connection, for the writer's threads only; everything else reads through
    ``cursor()``. For its whole life the instance also holds ``writer_lock_path(path)`` exclusively: DuckDB's
    own lock on the file is dropped for the moment of each reopen, and this one tells another collector, or a
    read-only open (``open_read_only``), that the file is taken all the same."""

    #: how long a reopen waits for reads in progress to finish before it gives up and is tried again later
    READS_WAIT = 0.25
    #: how long a reopen keeps trying to open the file again (another process may hold it for a moment)
    OPEN_RETRY_FOR = 10.0

    def __init__(
        self,
        path: str | Path,
        *,
        settings: Mapping[str, DuckDBSetting] | None = None,
        row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    ) -> None:
        self.path = Path(path)
        self._settings = dict(settings or {})
        self._row_group_size = row_group_size
        self._lock = SharedLock()
        # before the lock file is made: a file refused (not ours, newer, held) is left with nothing beside it
        check_store(self.path)
        self._lock_file = hold_writer_lock(self.path)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._read_root: duckdb.DuckDBPyConnection | None = None
        try:
            self._install(self._open())
        except BaseException:
            release_writer_lock(self._lock_file)
            raise
        self._cursor_lock = threading.Lock()  # cursor() of one connection from several threads
        self._closed = False
        #: times the file was closed and opened again, and the seconds that took
        self.reopens = 0
        self.reopen_seconds = 0.0

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            raise DatabaseClosed(f"the database {self.path} is not open")
        return self._con

    @contextlib.contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor of its own for one use (DuckDB connections are per thread), closed after it. Raises
        ``DatabaseClosed`` at once while the file is not open (a reopen failed to open it again)."""
        self._lock.acquire_shared()
        try:
            with self._cursor_lock:
                if self._read_root is None:
                    raise DatabaseClosed(f"the database {self.path} is not open")
                cur = sealed_cursor(self._read_root)
            try:
                yield cur
            finally:
                cur.close()
        finally:
            self._lock.release_shared()

    def reopen(self) -> duckdb.DuckDBPyConnection | None:
        """Close the database and open it again: the new root connection, or None when reads in progress did
        not finish within ``READS_WAIT`` (nothing was closed; try again later). The caller must hold no cursor
        of the old connection. Reads asked for meanwhile wait for the new connection. If the file cannot be
        opened at once, it is retried for ``OPEN_RETRY_FOR`` seconds with reads failing at once
        (``DatabaseClosed``), then ``DatabaseClosed`` is raised; a later call tries once more."""
        if self._closed:
            raise DatabaseClosed(f"the database {self.path} was closed")
        started = time.monotonic()
        retry_for = 0.0
        if self._con is not None:
            if not self._lock.acquire_exclusive(self.READS_WAIT):
                return None
            try:
                self._close()
                with contextlib.suppress(SchemaError):  # refused: retried below, without holding up reads
                    self._install(self._open())
                    return self._reopened(started)
            finally:
                self._lock.release_exclusive()
            retry_for = self.OPEN_RETRY_FOR
        con = self._open_again(retry_for)
        with self._lock.exclusive(self.READS_WAIT):  # short: reads fail at once while it is closed
            self._install(con)
        return self._reopened(started)

    def _open(self) -> duckdb.DuckDBPyConnection:
        # checked once before the first open; a reopen finds the file this instance migrated
        return open_store(
            self.path, settings=self._settings, row_group_size=self._row_group_size, check=False
        )

    def _install(self, con: duckdb.DuckDBPyConnection) -> None:
        try:
            read_root = sealed_cursor(con)
        except BaseException:
            con.close()  # a leaked instance would hold the file against every later open
            raise
        self._con, self._read_root = con, read_root

    def _reopened(self, started: float) -> duckdb.DuckDBPyConnection:
        elapsed = time.monotonic() - started
        self.reopens += 1
        self.reopen_seconds += elapsed
        log.debug("database %s reopened in %.3fs", self.path, elapsed)
        assert self._con is not None
        return self._con

    def _open_again(self, retry_for: float) -> duckdb.DuckDBPyConnection:
        """Another process may have opened the file since the close (one that did not look at the lock file):
        retried for ``retry_for`` seconds."""
        deadline = time.monotonic() + retry_for
        delay = 0.01
        while True:
            try:
                return self._open()
            except SchemaError as exc:
                if time.monotonic() >= deadline:
                    log.error("could not open the database %s again: %s", self.path, exc)
                    raise DatabaseClosed(
                        f"the database {self.path} could not be opened again: {exc}"
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _close(self) -> None:
        import duckdb

        for con in (self._read_root, self._con):
            if con is not None:
                with contextlib.suppress(duckdb.Error):
                    con.close()
        self._con = self._read_root = None

    def close(self) -> None:
        """Close for good (waits for reads in progress); a later ``reopen`` raises ``DatabaseClosed``."""
        self._closed = True
        try:
            with self._lock.exclusive(self.READS_WAIT):
                self._close()
        finally:
            release_writer_lock(self._lock_file)
            self._lock_file = None

    @property
    def is_open(self) -> bool:
        return self._con is not None
