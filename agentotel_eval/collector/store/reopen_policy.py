"""When the writer closes and opens its database again, and how, so that DuckDB gives back the memory it keeps
of every write until the database is closed (``collector.store.database``).

After ``reopen_rows`` stored records the ingest thread, between two of its commits, quiesces the operations
queue between two of its transactions and has the database closed and opened again. Every wait is bounded: a
long operation or reads in progress put the reopen off, to be tried again a little later, rather than keep
exporters waiting; a file that cannot be opened again leaves the writer refusing exports as unavailable until
a later try opens it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import duckdb

from agentotel_eval.collector.store.operation_queue import OperationQueue
from agentotel_eval.collector.store.writer_stats import WriterStats
from agentotel_eval.store.sealed import cursor as sealed_cursor

log = logging.getLogger(__name__)

#: how long a reopen waits for the operations thread to finish its transaction before it is put off
REOPEN_WAIT = 0.25
#: how long a reopen is put off after a long operation held it off, or the file could not be opened again
RETRY_AFTER = 1.0
#: how long after reads in progress held it off (a long query may still run)
RETRY_AFTER_READS = 5.0

#: closes the database and opens it again (``Database.reopen``): the new connection, or None when reads in
#: progress held it off (nothing was closed); raises when the file could not be opened again
Reopen = Callable[[], duckdb.DuckDBPyConnection | None]


class ReopenPolicy:
    """Used by the ingest thread only: ``due`` between commits, then ``reopen``."""

    def __init__(
        self, reopen: Reopen, every_rows: int, operations: OperationQueue, stats: WriterStats
    ) -> None:
        self._reopen = reopen
        self._every_rows = every_rows
        self._operations = operations
        self._stats = stats
        self._stored_at_open = 0  # stored records (stats) when the database was last opened
        self._next_try = 0.0  # monotonic time before which no reopen is tried (something held it off)

    def due(self, is_open: bool) -> bool:
        """Whether to open the database again now: ``every_rows`` records were stored since it was opened, or
        a reopen left it closed; not before a reopen that was put off is to be tried again."""
        if time.monotonic() < self._next_try:
            return False
        return not is_open or self._stats.records_stored - self._stored_at_open >= self._every_rows

    def reopen(self, con: duckdb.DuckDBPyConnection | None) -> duckdb.DuckDBPyConnection | None:
        """Close and open the database between two commits (``con``: the ingest thread's connection, None when
        a reopen left it closed): the connection to write with from now on, which is ``con`` when the reopen
        was put off and None when the file could not be opened again."""
        if not self._operations.quiesce(REOPEN_WAIT):
            self._next_try = time.monotonic() + RETRY_AFTER
            return con
        cursor = None
        try:
            opened = self._reopen()
            if opened is not None:
                con, cursor = opened, sealed_cursor(opened)
                self._stored_at_open = self._stats.records_stored
                self._stats.reopens += 1
            elif con is not None:  # reads held it off
                cursor = sealed_cursor(con)
                self._next_try = time.monotonic() + RETRY_AFTER_READS
        except Exception as exc:  # not opened again: exports are refused as unavailable until it is
            self._stats.reopen_failures += 1
            con = cursor = None
            self._next_try = time.monotonic() + RETRY_AFTER
            log.error("the database could not be opened again (%s); exports are refused until it is", exc)
        finally:
            self._operations.resume(cursor)
        return con
