"""Copy what this node committed to the shared lake, every ``[lake] flush_interval``.

Each table is read past this node's flush mark for it and appended to the lake with the node's name and the
flush time; the new marks are written to the lake in the same transaction as the rows, so a flush either lands
whole or not at all, and a restarted node goes on from the lake's marks (nothing twice, nothing skipped).

Every table's mark is exact: spans and log records carry ``ingested_at``, one rising value per ingest commit;
runs, calls and evaluations carry ``committed_at``, one rising value per write transaction. A flush copies the
rows up to the newest value its snapshot sees; every row it cannot see yet will carry a later one.

With the spans, a flush writes the lake's narrow index of trace parts (``lake.PARTS``: one row per trace in
the flush), which the reconciler reads to find traces split between nodes. A flush with nothing to copy writes
a heartbeat mark instead, so an idle node still shows as live to the others.

The lag (``lag_seconds``) is the age of the oldest committed row not yet copied, read after every flush: 0
when everything is copied, rising while flushes fail. A flush that runs past the lake's ``timeout`` is logged
(an S3 or catalog server that stopped answering) and interrupted.

The lake is written through an instance of its own (the node's file stays sealed); the rows cross as Arrow.
Every error said (logs, ``/healthz``) is scrubbed of the catalog's password.
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
_MARK_COLUMNS = {
    "spans": "ingested_at",
    "logs": "ingested_at",
    "agent_runs": "committed_at",
    "tool_calls": "committed_at",
    "evaluations": "committed_at",
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: the ``table_name`` of an idle node's heartbeat mark
HEARTBEAT = "heartbeat"


@dataclass(slots=True)
class FlushStats:
    flushes: int = 0
    failures: int = 0
    #: failures since the last flush that worked (0: the last one worked)
    failing: int = 0
    heartbeats: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    parts: int = 0  # rows written to the lake's index of trace parts
    last_seconds: float = 0.0
    last_error: str = ""
    #: when the newest flushed commit was made
    last_watermark: datetime | None = None
    #: the commit time of the oldest row not yet copied, as read after the last flush (None: every row copied)
    oldest_unflushed: datetime | None = None
    #: flushes that ran past the timeout (interrupted)
    timeouts: int = 0

    def lag_seconds(self, now: datetime | None = None) -> float:
        """The age of the oldest committed row not yet in the lake; 0 when every row is."""
        oldest = self.oldest_unflushed
        if oldest is None:
            return 0.0
        return max(0.0, ((now or datetime.now(UTC)) - oldest).total_seconds())


class LakeFlusher:
    """Appends committed rows to the lake on a thread of its own; ``flush()`` once more at shutdown."""

    def __init__(
        self,
        settings: lake.LakeSettings,
        node: str,
        local_cursor: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]],
        interval: float,
    ) -> None:
        self._settings = settings
        self.node = node
        self._local_cursor = local_cursor
        self._interval = interval
        self._con: duckdb.DuckDBPyConnection | None = None
        self._marks: dict[str, datetime] = {}
        self._ready = False  # the marks are read: flushes may go
        self._lock = threading.Lock()  # one flush at a time (the thread's and shutdown's)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watchdog: threading.Thread | None = None
        self._running_since: float | None = None  # monotonic start of the flush under way
        self._wrote_at = 0.0  # monotonic time of the last write to the lake (a flush or a heartbeat)
        self.stats = FlushStats()

    def connect(self) -> None:
        """Attach the lake (creating its catalog when new) and check the catalog's role may write: done before
        the node opens its own file, so a node that cannot use its lake starts nothing. ``lake.LakeError``
        when the lake cannot be used (a node configured for a lake does not run without it)."""
        con = lake.open_writer(self._settings)
        try:
            lake.check_privileges(con, self._settings, write=True, who=f"node {self.node!r}")
        except BaseException:
            con.close()
            raise
        self._con = con

    def open(self) -> None:
        """Create or complete the lake's tables from this node's schema and read this node's marks
        (``connect`` first when it was not)."""
        if self._con is None:
            self.connect()
        con = self._con
        assert con is not None
        with self._local_cursor() as local:
            schema = lake.node_schema(local)
        try:
            lake.sync(con, self._settings, schema)
            rows = con.execute(
                f"SELECT table_name, max(watermark) FROM {lake.LAKE}.{lake.MARKS} WHERE node = ? "
                "GROUP BY table_name",
                [self.node],
            ).fetchall()
        except BaseException:
            con.close()
            self._con = None
            raise
        self._marks = {str(table): mark for table, mark in rows if mark is not None}
        with self._local_cursor() as local:
            self.stats.oldest_unflushed = self._oldest_unflushed(local)
        self._ready = True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agentotel-lake-flush", daemon=True)
        self._thread.start()
        self._watchdog = threading.Thread(target=self._watch, name="agentotel-lake-watchdog", daemon=True)
        self._watchdog.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.flush()

    def _watch(self) -> None:
        """Say when a flush hangs (an S3 or catalog server that accepts connections and never answers), and
        interrupt it at the lake's timeout: DuckDB's own timeouts do not cover every wait."""
        timeout = self._settings.timeout
        warned: float | None = None
        while not self._stop.wait(min(1.0, timeout / 4)):
            since = self._running_since
            if since is None:
                warned = None
                continue
            running = time.monotonic() - since
            if running < timeout or warned == since:
                continue
            warned = since
            self.stats.timeouts += 1
            log.warning(
                "lake flush has run for %.0fs, past the lake's timeout (%.0fs): the catalog's server or "
                "S3 is not answering; interrupting it (the rows wait in the node's file)",
                running,
                timeout,
            )
            con = self._con
            if con is not None:
                con.interrupt()

    def flush(self) -> dict[str, int]:
        """Copy every table's rows past its mark; returns the rows copied per table (empty after a failure,
        which is logged and retried at the next interval)."""
        with self._lock:
            if self._con is None or not self._ready:
                return {}
            started = time.monotonic()
            self._running_since = started
            try:
                copied = self._flush(self._con)
            except Exception as exc:  # the lake unreachable for a while: the rows wait in the node's file
                self._failed(exc)
                return {}
            finally:
                self._running_since = None
            self.stats.flushes += 1
            self.stats.failing = 0
            self.stats.last_error = ""
            self.stats.last_seconds = time.monotonic() - started
            for table, n in copied.items():
                self.stats.rows[table] = self.stats.rows.get(table, 0) + n
            return copied

    def _failed(self, exc: Exception) -> None:
        said = self._settings.scrub(lake.explain(exc))
        self.stats.failures += 1
        self.stats.failing += 1
        self.stats.last_error = said
        log.warning("lake flush failed (retried in %.0fs): %s", self._interval, said)
        try:
            with self._local_cursor() as local:  # the lag goes on rising from the oldest row still waiting
                self.stats.oldest_unflushed = self._oldest_unflushed(local)
        except Exception:  # the node's own file closing: the lag stays as it was
            log.debug("could not read the oldest unflushed row", exc_info=True)

    def _flush(self, con: duckdb.DuckDBPyConnection) -> dict[str, int]:
        batches: list[tuple[str, Any, datetime]] = []
        with self._local_cursor() as local:
            for table in lake.TABLES:
                column = _MARK_COLUMNS[table]
                since = self._marks.get(table, _EPOCH)
                # up to the newest commit this snapshot sees: a commit it does not see is stamped later
                (upper,) = local.execute(f"SELECT max({column}) FROM {table}").fetchone() or (None,)
                if upper is None or upper <= since:
                    continue
                rows = local.execute(
                    f"SELECT * FROM {table} WHERE {column} > ? AND {column} <= ?", [since, upper]
                ).to_arrow_table()
                batches.append((table, rows, upper))
        now = datetime.now(UTC)
        if not batches:
            self._heartbeat(con, now)
            self.stats.oldest_unflushed = None
            return {}
        copied: dict[str, int] = {}
        parts = 0
        con.execute("BEGIN")
        try:
            for table, rows, upper in batches:
                lake.append(con, table, rows, {"node": self.node, "flushed_at": now})
                if table == "spans":
                    parts = lake.append_parts(con, rows, self.node, now)
                con.execute(
                    f"INSERT INTO {lake.LAKE}.{lake.MARKS} VALUES (?, ?, ?, ?)",
                    [self.node, table, upper, now],
                )
                copied[table] = rows.num_rows
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        self._wrote_at = time.monotonic()
        self.stats.parts += parts
        for table, _, upper in batches:
            self._marks[table] = upper
        spans_mark = self._marks.get("spans")
        if spans_mark is not None:
            self.stats.last_watermark = spans_mark
        with self._local_cursor() as local:
            self.stats.oldest_unflushed = self._oldest_unflushed(local)
        return copied

    def _heartbeat(self, con: duckdb.DuckDBPyConnection, now: datetime) -> None:
        """Nothing to copy: a mark that only says this node is alive (no watermark), once a flush interval, so
        the others do not take an idle node for a departed one."""
        if time.monotonic() - self._wrote_at < self._interval * 0.9:
            return
        con.execute(
            f"INSERT INTO {lake.LAKE}.{lake.MARKS} VALUES (?, ?, NULL, ?)", [self.node, HEARTBEAT, now]
        )
        self._wrote_at = time.monotonic()
        self.stats.heartbeats += 1

    def _oldest_unflushed(self, local: duckdb.DuckDBPyConnection) -> datetime | None:
        """The commit time of the oldest row past its table's mark (the columns rise with the commits, so each
        read skips the row groups already copied)."""
        oldest: datetime | None = None
        for table in lake.TABLES:
            column = _MARK_COLUMNS[table]
            (first,) = local.execute(
                f"SELECT min({column}) FROM {table} WHERE {column} > ?", [self._marks.get(table, _EPOCH)]
            ).fetchone() or (None,)
            if first is not None and (oldest is None or first < oldest):
                oldest = first
        return oldest

    def close(self, *, final: bool = True) -> None:
        """Stop the thread; with ``final`` (every write of the node done) copy what is left; detach."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._interval + self._settings.timeout + 5)
        if self._watchdog is not None:
            self._watchdog.join(2)
        if self._con is not None:
            if final:
                self.flush()
            with self._lock:
                self._con.close()
                self._con = None
