"""Copy what this node committed to the shared lake, every ``[lake] flush_interval``.

Each table is read past this node's flush mark for it and appended to the lake with the node's name and the
flush time; the new marks are written to the lake in the same transaction as the rows, so a flush either lands
whole or not at all, and a restarted node goes on from the lake's marks (nothing twice, nothing skipped).

Every table's mark is exact: spans and log records carry ``ingested_at``, one rising value per ingest commit;
runs, calls and evaluations carry ``committed_at``, one rising value per write transaction. A flush copies the
rows up to the newest value its snapshot sees; every row it cannot see yet will carry a later one.

The lake is written through an instance of its own (the node's file stays sealed); the rows cross as Arrow.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentotel_eval.store import lake

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)

#: the column that stamps each table's rows with their commit, in commit order: the flush mark's
_MARK_COLUMNS = {"spans": "ingested_at", "logs": "ingested_at", "agent_runs": "committed_at",
                 "tool_calls": "committed_at", "evaluations": "committed_at"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class FlushStats:
    flushes: int = 0
    failures: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    last_seconds: float = 0.0
    last_error: str = ""
    #: when the newest flushed commit was made (the lag from ack to visible in the lake is now minus this)
    last_watermark: datetime | None = None


class LakeFlusher:
    """Appends committed rows to the lake on a thread of its own; ``flush()`` once more at shutdown."""

    def __init__(self, settings: lake.LakeSettings, node: str,
                 local_cursor: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]],
                 interval: float) -> None:
        self._settings = settings
        self.node = node
        self._local_cursor = local_cursor
        self._interval = interval
        self._con: duckdb.DuckDBPyConnection | None = None
        self._marks: dict[str, datetime] = {}
        self._lock = threading.Lock()  # one flush at a time (the thread's and shutdown's)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stats = FlushStats()

    def open(self) -> None:
        """Attach the lake (creating its tables from this node's schema) and read this node's marks. Raises
        ``lake.LakeError`` when the lake cannot be used: a node configured for a lake does not run without it."""
        with self._local_cursor() as local:
            schema = lake.node_schema(local)
        con = lake.open_writer(self._settings, schema)
        try:
            rows = con.execute(f"SELECT table_name, max(watermark) FROM {lake.LAKE}.{lake.MARKS} WHERE node = ? "
                               "GROUP BY table_name", [self.node]).fetchall()
        except BaseException:
            con.close()
            raise
        self._marks = {str(table): mark for table, mark in rows if mark is not None}
        self._con = con

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agentotel-lake-flush", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.flush()

    def flush(self) -> dict[str, int]:
        """Copy every table's rows past its mark; returns the rows copied per table (empty after a failure,
        which is logged and retried at the next interval)."""
        with self._lock:
            if self._con is None:
                return {}
            started = time.monotonic()
            try:
                copied = self._flush(self._con)
            except Exception as exc:  # the lake unreachable for a while: the rows wait in the node's file
                self.stats.failures += 1
                self.stats.last_error = str(exc)
                log.warning("lake flush failed (retried in %.0fs): %s", self._interval, exc)
                return {}
            self.stats.flushes += 1
            self.stats.last_error = ""
            self.stats.last_seconds = time.monotonic() - started
            for table, n in copied.items():
                self.stats.rows[table] = self.stats.rows.get(table, 0) + n
            return copied

    def _flush(self, con: duckdb.DuckDBPyConnection) -> dict[str, int]:
        now = datetime.now(UTC)
        batches: list[tuple[str, Any, datetime]] = []
        with self._local_cursor() as local:
            for table in lake.TABLES:
                column = _MARK_COLUMNS[table]
                since = self._marks.get(table, _EPOCH)
                # up to the newest commit this snapshot sees: a commit it does not see is stamped later
                (upper,) = local.execute(f"SELECT max({column}) FROM {table}").fetchone() or (None,)
                if upper is None or upper <= since:
                    continue
                rows = local.execute(f"SELECT * FROM {table} WHERE {column} > ? AND {column} <= ?",
                                     [since, upper]).to_arrow_table()
                batches.append((table, rows, upper))
        if not batches:
            return {}
        copied: dict[str, int] = {}
        con.execute("BEGIN")
        try:
            for table, rows, upper in batches:
                lake.append(con, table, rows, {"node": self.node, "flushed_at": now})
                con.execute(f"INSERT INTO {lake.LAKE}.{lake.MARKS} VALUES (?, ?, ?, ?)",
                            [self.node, table, upper, now])
                copied[table] = rows.num_rows
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        for table, _, upper in batches:
            self._marks[table] = upper
        spans_mark = self._marks.get("spans")
        if spans_mark is not None:
            self.stats.last_watermark = spans_mark
        return copied

    def close(self, *, final: bool = True) -> None:
        """Stop the thread; with ``final`` (every write of the node done) copy what is left; detach."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._interval + 30)
        if self._con is not None:
            if final:
                self.flush()
            with self._lock:
                self._con.close()
                self._con = None
