"""The single DuckDB writer: a bounded queue, one thread, group commit, Arrow appends, idempotent on span ids.

Receivers ``submit()`` a decoded request as an Arrow batch and wait on the returned ticket; the writer thread
gathers whatever is queued (up to ``max_batch_records``, lingering at most ``flush_interval`` for more), appends
it in ONE transaction and only then releases every waiting request: many concurrent exports share one commit, and
nothing is acknowledged before it is durable. The queue is bounded in records; a full queue is refused with
``QueueFull`` (retryable) instead of growing. After each commit the listener hears, for every request in it, the
submitter's ``payload`` and which of its rows were new (``Committed``).

Spans are idempotent on ``(trace_id, span_id)`` and logs on their content hash: the insert is an anti-join
against rows inside the batch's time window (a re-sent record has the same time), which lets DuckDB skip all
row groups outside the window by their min/max statistics, so appends stay fast as the table grows.

Other writes (agent runs and scores, retention, judge answers) are ``Operation`` objects applied by a second
thread on its own cursor, beside ingest: DuckDB runs one database's transactions concurrently, and ingest only
appends, so they never conflict, and an operation never delays the commits exporters wait for. Everything queued
is applied in one transaction (one WAL write and fsync); a failing group is retried operation by operation, so a
bad operation costs only itself and never an acknowledged span.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from agentotel_eval.collector.store.operations import Operation, merge_operations, ns_to_datetime
from agentotel_eval.store import schema
from agentotel_eval.store.rows import LOG_SCHEMA, SPAN_SCHEMA

log = logging.getLogger(__name__)

#: how long a reopen waits for the operations thread to finish its transaction before it is put off
REOPEN_WAIT = 0.25

FLUSH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class WriterError(Exception):
    """Base of the writer's errors; ``retryable`` tells a receiver which status to answer."""

    retryable = True


class QueueFull(WriterError):
    """The write queue is at capacity: try again later (HTTP 503 / gRPC UNAVAILABLE with a retry delay)."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class WriterUnavailable(WriterError):
    """The writer is stopped, failed to commit for a transient reason, or did not answer in time."""


class RejectedData(WriterError):
    """DuckDB refused the data itself (a value it cannot store): retrying the same request cannot help."""

    retryable = False


@dataclass(slots=True)
class IngestResult:
    stored: int = 0  # records actually appended (the rest were duplicates)
    duplicates: int = 0


class Ticket:
    """What a submitter waits on: released once the records are committed (or definitively not)."""

    __slots__ = ("_event", "error", "result")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.error: WriterError | None = None
        self.result = IngestResult()

    def wait(self, timeout: float | None = None) -> IngestResult:
        if not self._event.wait(timeout):
            raise WriterUnavailable(f"the write was not committed within {timeout:g}s")
        if self.error is not None:
            raise self.error
        return self.result

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def _resolve(self, error: WriterError | None = None) -> None:
        self.error = error
        self._event.set()


@dataclass(slots=True)
class _Item:
    spans: pa.RecordBatch | None
    logs: pa.RecordBatch | None
    payload: Any
    size: int
    ticket: Ticket


@dataclass(frozen=True, slots=True)
class Committed:
    """One request's part of a commit: its ``payload`` and which of its rows were new (indices into its span and
    log batches; None when every row was new, the common case)."""

    payload: Any
    new_spans: list[int] | None = None
    new_logs: list[int] | None = None
    #: the commit's ``ingested_at`` (ns, whole microseconds): every row of this commit carries it, and no other row
    ingested_ns: int | None = None

    @staticmethod
    def pick(items: Sequence[Any], new: list[int] | None) -> Sequence[Any]:
        """The entries of ``items`` (one per row) for the new rows."""
        return items if new is None else [items[i] for i in new]


@dataclass(slots=True)
class WriterStats:
    """Counters owned by the writer thread (read by the metrics endpoint)."""

    spans_stored: int = 0
    spans_duplicate: int = 0
    logs_stored: int = 0
    logs_duplicate: int = 0
    commits: int = 0
    commit_failures: int = 0
    rejected_requests: int = 0
    #: times the database was closed and opened again (``reopen_rows``), and attempts that failed to open it
    reopens: int = 0
    reopen_failures: int = 0
    operations: dict[str, int] = field(default_factory=dict)
    operation_failures: dict[str, int] = field(default_factory=dict)
    flush_buckets: list[int] = field(default_factory=lambda: [0] * (len(FLUSH_BUCKETS) + 1))
    flush_sum: float = 0.0
    flush_count: int = 0
    last_flush_seconds: float = 0.0

    def observe_flush(self, seconds: float) -> None:
        self.flush_buckets[bisect.bisect_left(FLUSH_BUCKETS, seconds)] += 1
        self.flush_sum += seconds
        self.flush_count += 1
        self.last_flush_seconds = seconds


CommitListener = Callable[[list[Committed]], None]


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    with contextlib.suppress(duckdb.Error):
        con.execute("ROLLBACK")


def _classify(exc: Exception) -> WriterError:
    if isinstance(exc, duckdb.ConversionException | duckdb.InvalidInputException | duckdb.ConstraintException
                  | pa.ArrowInvalid | pa.ArrowTypeError):
        return RejectedData(f"the database refused the data: {exc}")
    return WriterUnavailable(f"could not commit: {exc}")


class _InsertPlan:
    """One idempotent append: rows whose key is already stored in the batch's time window are skipped."""

    def __init__(self, table: str, arrow_schema: pa.Schema, columns: Sequence[str], batches: list[pa.RecordBatch],
                 key: tuple[str, ...], time_column: str) -> None:
        self.table = table
        self.view = f"_ingest_{table}"
        self.data = pa.Table.from_batches(batches, schema=arrow_schema)
        self.columns = columns
        self.key = key
        self.time_column = time_column

    def execute(self, con: duckdb.DuckDBPyConnection, ingested_ns: int
                ) -> tuple[int, set[tuple[str, ...]] | None]:
        """Returns (rows offered, keys inserted); the key set is None when every row was new (the common case,
        decided by count, without building the set). Every row is stamped ``ingested_at`` = ``ingested_ns``."""
        data = self.data
        total = data.num_rows
        times = data.column(self.time_column).cast(pa.int64())
        # A record sent with no time is stored at the epoch: it is probed there apart, as the window stretched back
        # to 1970 would make the check scan every row group of the table
        zero = pc.equal(times, 0)
        timeless = pc.any(zero).as_py() or False
        bounds = pc.min_max(pc.if_else(zero, None, times) if timeless else times).as_py()
        lo = None if bounds["min"] is None else ns_to_datetime(bounds["min"])
        hi = None if bounds["max"] is None else ns_to_datetime(bounds["max"], ceil=True)
        window = f"s.{self.time_column} BETWEEN $lo AND $hi"
        params: dict[str, object] = {"lo": lo, "hi": hi, "ingested": ns_to_datetime(ingested_ns)}
        if timeless:
            window = f"({window} OR s.{self.time_column} = $epoch)"
            params["epoch"] = ns_to_datetime(0)
        cols = ", ".join(self.columns)
        on = " AND ".join(f"s.{k} = b.{k}" for k in self.key)
        key = ", ".join(self.key)
        source = self.view
        if _has_duplicate_keys(data, self.key):  # rare (a retry racing its original): keep one copy of each
            source = f"(SELECT * FROM {self.view} QUALIFY row_number() OVER (PARTITION BY {key}) = 1)"
        # con.sql runs an INSERT at once and keeps its RETURNING rows; fetched as Arrow, not Python tuples.
        inserted = con.sql(
            f"""
            INSERT INTO {self.table} ({cols}, ingested_at)
            SELECT {cols}, $ingested FROM {source} b
            WHERE NOT EXISTS (
                SELECT 1 FROM {self.table} s WHERE {window} AND {on}
            )
            RETURNING {key}
            """,
            params=params,
        ).to_arrow_table()
        if inserted.num_rows == total:
            return total, None
        return total, set(zip(*(inserted.column(k).to_pylist() for k in self.key), strict=True))


SPAN_KEY = ("trace_id", "span_id")
LOG_KEY = ("log_id",)


def _has_duplicate_keys(data: pa.Table, key: tuple[str, ...]) -> bool:
    column = data.column(key[0]) if len(key) == 1 else pc.binary_join_element_wise(
        *(data.column(k) for k in key), ""
    )
    return pc.count_distinct(column).as_py() != data.num_rows


class StoreWriter:
    """The database's writer: an ingest thread and an operations thread (see the module docstring)."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        *,
        max_queue_records: int = 200_000,
        max_batch_records: int = 20_000,
        flush_interval: float = 0.005,
        on_commit: CommitListener | None = None,
        retry_after: float = 1.0,
        direct_batch_records: int = 0,
        max_linger: float = 0.05,
        incoming: Callable[[], int] = lambda: 0,
        reopen: Callable[[], duckdb.DuckDBPyConnection | None] | None = None,
        reopen_rows: int = 0,
    ) -> None:
        self._con: duckdb.DuckDBPyConnection | None = con
        self._max_queue = max_queue_records
        self._max_batch = max_batch_records
        self._flush_interval = flush_interval
        #: a commit of at least this many rows is written straight into the file (the database's row group size)
        self._direct_batch = direct_batch_records
        self._max_linger = max(max_linger, flush_interval)
        #: requests on their way to ``submit`` (being decoded): whether waiting for more rows is worth it
        self._incoming = incoming
        self._on_commit = on_commit
        self._retry_after = retry_after
        self._items: deque[_Item] = deque()
        self._ops: deque[Operation] = deque()
        self._queued = 0
        self._cond = threading.Condition()
        self._stopping = False
        self._busy = False
        self._ops_busy = False
        self._ops_rows = 0
        self._ingest_done = False
        self._accepting = True
        self._thread: threading.Thread | None = None
        self._ops_thread: threading.Thread | None = None
        self._ops_con: duckdb.DuckDBPyConnection | None = None
        self._last_ingested_ns = 0
        #: closes and opens the database again (``Database.reopen``): after ``reopen_rows`` stored records, to
        #: give back the memory DuckDB keeps of every write until the database is closed
        self._reopen = reopen if reopen_rows > 0 else None
        self._reopen_rows = reopen_rows
        self._stored_at_open = 0  # stored records (stats) when the database was last opened
        self._next_reopen = 0.0  # monotonic time before which no reopen is tried (reads held it off)
        self._ops_paused = False
        self.stats = WriterStats()

    # ---- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            assert self._con is not None
            self._ops_con = self._con.cursor()
            self._thread = threading.Thread(target=self._run, name="agentotel-writer", daemon=True)
            self._ops_thread = threading.Thread(target=self._run_ops, name="agentotel-writer-ops", daemon=True)
            self._thread.start()
            self._ops_thread.start()

    def shutdown(self, timeout: float = 30.0) -> None:
        """Refuse new ingest, drain the queue and pending operations, checkpoint. Idempotent."""
        with self._cond:
            self._accepting = False
            self._stopping = True
            self._cond.notify_all()
        for thread in (self._thread, self._ops_thread):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout)
                if thread.is_alive():
                    log.error("the writer did not finish within %.0fs; %d records and %d operations still queued",
                              timeout, self._queued, len(self._ops))
                    return
        if self._ops_con is not None:
            with contextlib.suppress(duckdb.Error):
                self._ops_con.close()
        if self._con is None:
            return
        try:
            self._con.execute("CHECKPOINT")
        except duckdb.Error as exc:  # the WAL still holds everything committed
            log.warning("checkpoint at shutdown failed: %s", exc)

    def stop_accepting(self) -> None:
        with self._cond:
            self._accepting = False

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until everything queued so far (ingest and operations) is written; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._items or self._ops or self._busy or self._ops_busy:
                remaining = deadline - time.monotonic()
                threads = (self._thread, self._ops_thread)
                if remaining <= 0 or any(t is None or not t.is_alive() for t in threads):
                    return False
                self._cond.wait(min(remaining, 0.1))
        return True

    @property
    def queued_records(self) -> int:
        return self._queued

    @property
    def capacity(self) -> int:
        return self._max_queue

    @property
    def pending_operations(self) -> int:
        return len(self._ops)

    @property
    def pending_operation_rows(self) -> int:
        """Rows held by operations not yet applied (a ``ReplaceRuns`` counts its runs, calls, evaluations and span
        updates; another operation counts 1): the collector counts them against the write queue's bound, so a slow
        operations thread pushes back on exporters instead of growing memory."""
        return self._ops_rows

    # ---- producers ------------------------------------------------------------------------------------------

    def check_room(self, extra_load: int = 0) -> None:
        """``QueueFull`` when a request would be refused now: lets a receiver refuse before it decodes one."""
        with self._cond:
            if not self._accepting:
                raise WriterUnavailable("the collector is shutting down")
            pending = self._queued + extra_load
            if pending >= self._max_queue:
                raise QueueFull(f"write queue full ({pending} records pending, capacity {self._max_queue})",
                                self._retry_after)

    @property
    def retry_after(self) -> float:
        return self._retry_after

    def submit(
        self,
        span_batch: pa.RecordBatch | None = None,
        log_batch: pa.RecordBatch | None = None,
        *,
        payload: Any = None,
        extra_load: int = 0,
    ) -> Ticket:
        """Queue a request's rows (``SPAN_SCHEMA`` / ``LOG_SCHEMA`` batches) for the next commit; ``QueueFull``
        when at capacity. ``payload`` is handed to the commit listener with the rows that were new.

        ``extra_load`` counts records held downstream (the assembler's backlog) against the same bound, so a
        slow consumer pushes back on exporters instead of growing memory.
        """
        size = (span_batch.num_rows if span_batch is not None else 0) + (log_batch.num_rows if log_batch is not None
                                                                          else 0)
        ticket = Ticket()
        with self._cond:
            if not self._accepting:
                raise WriterUnavailable("the collector is shutting down")
            pending = self._queued + extra_load
            if pending and pending + size > self._max_queue:  # an oversized request alone is still taken
                raise QueueFull(
                    f"write queue full ({pending} records pending, capacity {self._max_queue})",
                    self._retry_after,
                )
            self._items.append(_Item(span_batch, log_batch, payload, size, ticket))
            self._queued += size
            self._cond.notify_all()
        return ticket

    def submit_operation(self, op: Operation) -> None:
        """Queue a non-ingest write; never refused (its producers are bounded themselves).

        Operations run on their own thread and cursor, beside ingest: DuckDB runs transactions of one database
        concurrently, and ingest only appends, so the two never conflict; the runs and scores of earlier traces
        then no longer hold up the commits exporters wait for."""
        with self._cond:
            self._ops.append(op)
            self._ops_rows += op.rows
            self._cond.notify_all()

    # ---- the writer thread ----------------------------------------------------------------------------------

    def _take(self) -> list[_Item] | None:
        with self._cond:
            while not self._items:
                if self._stopping:
                    return None
                if self._con is None and self._reopen_due():
                    self._busy = True
                    return []  # nothing to write, but the database is to be opened again
                self._cond.wait(1.0)
            if self._items and not self._stopping:
                self._linger()
            items: list[_Item] = []
            taken = 0
            while self._items and (not items or taken + self._items[0].size <= self._max_batch):
                item = self._items.popleft()
                items.append(item)
                taken += item.size
            self._busy = True
            return items

    def _linger(self) -> None:
        """Wait (holding the condition) for more requests to share the commit: ``flush_interval``, or up to
        ``max_linger`` while the batch is short of ``direct_batch_records`` and more rows are on their way. With
        row groups larger than ``max_batch_records`` that is every loaded commit: fewer, larger commits."""
        start = time.monotonic()
        while self._queued < self._max_batch and not self._stopping:
            now = time.monotonic()
            short = self._queued < self._direct_batch and self._incoming() > 0
            remaining = start + (self._max_linger if short else self._flush_interval) - now
            if remaining <= 0:
                return
            # woken by each submit; what is on its way is looked at again every few ms (a request that fails
            # to decode never arrives)
            self._cond.wait(min(remaining, 0.005) if short else remaining)

    def _run(self) -> None:
        try:
            self._run_ingest()
        finally:
            with self._cond:
                self._ingest_done = True
                self._cond.notify_all()

    def _run_ops(self) -> None:
        """Operations, each group in one transaction on the operations cursor; ends after the ingest thread (whose
        commits may still queue operations) once nothing is left. Waits while the database is being reopened, or
        is not open."""
        while True:
            with self._cond:
                while not (self._ops and not self._ops_paused and self._ops_con is not None):
                    if self._stopping and self._ingest_done and not self._ops_paused:
                        if self._ops:
                            log.error("%d write operations were not applied: the database is not open",
                                      len(self._ops))
                        return
                    self._cond.wait(1.0)
                ops = list(self._ops)
                self._ops.clear()
                self._ops_busy = True
            try:
                self._apply_group(ops, self._ops_con)
            finally:
                with self._cond:
                    self._ops_busy = False
                    self._ops_rows -= sum(op.rows for op in ops)
                    self._cond.notify_all()

    def _run_ingest(self) -> None:
        while True:
            items = self._take()
            if items is None:
                return
            if self._con is None and self._reopen_due():
                self._reopen_database()  # a reopen failed to open the file: try again before these commit
            if items:
                try:
                    self._commit_items(items)
                except Exception as exc:  # a bug, not a DuckDB refusal: fail these requests, keep writing
                    log.exception("the writer failed on a batch")
                    for item in items:
                        if not item.ticket.done:
                            item.ticket._resolve(WriterUnavailable(f"internal error in the writer: {exc}"))
                finally:
                    with self._cond:
                        self._queued -= sum(i.size for i in items)
            if self._reopen_due():
                self._reopen_database()
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _reopen_database(self) -> None:
        """Close and open the database between two commits, with the operations thread paused between two of its
        transactions. Reads in progress, or a long group of operations, may hold the reopen off: it is tried
        again a little later rather than keep exports waiting."""
        deadline = time.monotonic() + REOPEN_WAIT
        with self._cond:
            self._ops_paused = True
            while self._ops_busy and time.monotonic() < deadline:
                self._cond.wait(0.02)
            if self._ops_busy:
                self._ops_paused = False
                self._cond.notify_all()
                self._next_reopen = time.monotonic() + 1.0
                return
        try:
            if self._ops_con is not None:
                with contextlib.suppress(duckdb.Error):
                    self._ops_con.close()
                self._ops_con = None
            try:
                con = self._reopen() if self._reopen is not None else None
                if con is not None:
                    self._con, self._ops_con = con, con.cursor()
                    self._stored_at_open = self._stored()
                    self.stats.reopens += 1
                elif self._con is not None:  # reads held it off: a while later (a long query may still run)
                    self._ops_con = self._con.cursor()
                    self._next_reopen = time.monotonic() + 5.0
            except Exception as exc:  # not opened again: exports are refused as unavailable until it is
                self.stats.reopen_failures += 1
                self._con = self._ops_con = None
                self._next_reopen = time.monotonic() + 1.0
                log.error("the database could not be opened again (%s); exports are refused until it is", exc)
        finally:
            with self._cond:
                self._ops_paused = False
                self._cond.notify_all()

    def _stored(self) -> int:
        return self.stats.spans_stored + self.stats.logs_stored

    def _reopen_due(self) -> bool:
        """Whether to open the database again now: ``reopen_rows`` records were stored since it was opened, or a
        reopen left it closed; not before ``_next_reopen``."""
        if self._reopen is None or time.monotonic() < self._next_reopen:
            return False
        return self._con is None or self._stored() - self._stored_at_open >= self._reopen_rows

    def _commit_items(self, items: list[_Item]) -> None:
        if self._con is None:  # retryable: the exporter sends it again once the database is open
            for item in items:
                item.ticket._resolve(WriterUnavailable("the database is not open (it could not be opened again; "
                                                       "see the collector's log)"))
            return
        started = time.perf_counter()
        try:
            committed = self._append(items)
        except Exception as exc:  # DuckDB refused the batch: find the culprit so the others still commit
            self.stats.commit_failures += 1
            if len(items) > 1:
                log.warning("a batch of %d requests failed to commit (%s); retrying them one by one", len(items), exc)
                for item in items:
                    self._commit_items([item])
                return
            error = _classify(exc)
            if isinstance(error, RejectedData):
                self.stats.rejected_requests += 1
            log.warning("could not store a request of %d records: %s", items[0].size, exc)
            items[0].ticket._resolve(error)
            return
        self.stats.observe_flush(time.perf_counter() - started)
        self.stats.commits += 1
        for item in items:
            item.ticket._resolve()
        if self._on_commit is not None and committed:
            try:
                self._on_commit(committed)
            except Exception:
                log.exception("the commit listener failed")

    def _append(self, items: list[_Item]) -> list[Committed]:
        con = self._con
        assert con is not None
        span_batches = [i.spans for i in items if i.spans is not None and i.spans.num_rows]
        log_batches = [i.logs for i in items if i.logs is not None and i.logs.num_rows]
        plans = []
        if span_batches:
            plans.append(_InsertPlan(schema.SPANS, SPAN_SCHEMA, schema.SPAN_COLUMNS, span_batches,
                                     SPAN_KEY, "start_time"))
        if log_batches:
            plans.append(_InsertPlan(schema.LOGS, LOG_SCHEMA, schema.LOG_COLUMNS, log_batches, LOG_KEY, "time"))
        # Views are registered outside the transaction: a statement after a failed one (even DROP VIEW) would
        # only report "transaction aborted" and hide the real error.
        for plan in plans:
            con.register(plan.view, plan.data)
        ingested_ns = self._next_ingested_ns()
        try:
            con.execute("BEGIN TRANSACTION")
            try:
                outcomes = {plan.table: plan.execute(con, ingested_ns) for plan in plans}
                con.execute("COMMIT")
            except BaseException:
                _rollback(con)
                raise
        finally:
            for plan in plans:
                with contextlib.suppress(duckdb.Error):
                    con.unregister(plan.view)
        # Each ticket learns how many of its rows were new; only new rows go on to the listener.
        span_rows = self._new_rows(items, "spans", outcomes.get(schema.SPANS), SPAN_KEY)
        log_rows = self._new_rows(items, "logs", outcomes.get(schema.LOGS), LOG_KEY)
        committed = []
        for item, spans, logs in zip(items, span_rows, log_rows, strict=True):
            if spans != [] or logs != []:  # None: every row new
                committed.append(Committed(item.payload, spans, logs, ingested_ns))
        self._last_ingested_ns = ingested_ns
        return committed

    def _next_ingested_ns(self) -> int:
        """This commit's ``ingested_at``: now, in whole microseconds (what TIMESTAMPTZ keeps), and above the last
        commit's even if the clock stepped back, so that the value names one commit."""
        now = time.time_ns() // 1000 * 1000
        return max(now, self._last_ingested_ns + 1000)

    def _new_rows(
        self,
        items: list[_Item],
        attr: str,
        outcome: tuple[int, set[tuple[str, ...]] | None] | None,
        key: tuple[str, ...],
    ) -> list[list[int] | None]:
        """Per item, the indices of its new rows (None: all of them; [] for none, or no batch)."""
        out: list[list[int] | None] = []
        inserted = outcome[1] if outcome is not None else None
        is_spans = attr == "spans"
        for item in items:
            batch: pa.RecordBatch | None = getattr(item, attr)
            rows = batch.num_rows if batch is not None else 0
            if batch is None or not rows:
                out.append([])
                continue
            if inserted is None:
                new: list[int] | None = None
                stored = rows
            else:
                keys = zip(*(batch.column(k).to_pylist() for k in key), strict=True)
                new = []
                for i, k in enumerate(keys):
                    if k in inserted:
                        inserted.discard(k)  # a second copy of the same record in this batch is a duplicate
                        new.append(i)
                stored = len(new)
            dup = rows - stored
            item.ticket.result.stored += stored
            item.ticket.result.duplicates += dup
            if is_spans:
                self.stats.spans_stored += stored
                self.stats.spans_duplicate += dup
            else:
                self.stats.logs_stored += stored
                self.stats.logs_duplicate += dup
            out.append(new)
        return out

    def _apply_group(self, ops: list[Operation], con: duckdb.DuckDBPyConnection) -> None:
        """Every pending operation in ONE transaction, in order (each commit costs a WAL write and an fsync), runs
        batches merged; if the group fails, each is retried alone so one bad operation costs only itself."""
        if len(ops) == 1:
            self._apply(ops[0], con)
            return
        merged: list[Operation] = []
        try:
            merged = merge_operations(ops)
            con.execute("BEGIN TRANSACTION")
            for op in merged:
                op.apply(con)
            con.execute("COMMIT")
        except Exception as exc:
            _rollback(con)
            log.warning("a group of %d write operations failed (%s); applying them one by one", len(ops), exc)
            for op in ops:
                self._apply(op, con)
            return
        for op in merged:
            self._applied(op)

    def _apply(self, op: Operation, con: duckdb.DuckDBPyConnection) -> None:
        try:
            con.execute("BEGIN TRANSACTION")
            op.apply(con)
            con.execute("COMMIT")
        except Exception as exc:
            _rollback(con)
            self.stats.operation_failures[op.name] = self.stats.operation_failures.get(op.name, 0) + 1
            log.exception("write operation %s failed", op.name)
            try:  # whoever waits for it hears that it will never commit
                op.failed(exc)
            except Exception:
                log.exception("the failed() hook of %s failed", op.name)
            return
        self._applied(op)

    def _applied(self, op: Operation) -> None:
        self.stats.operations[op.name] = self.stats.operations.get(op.name, 0) + op.parts
        try:
            op.committed()
        except Exception:
            log.exception("the committed() hook of %s failed", op.name)
