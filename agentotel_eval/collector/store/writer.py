"""The single DuckDB writer: a bounded queue, one thread, group commit, Arrow appends, idempotent on span ids.

Receivers ``submit()`` a decoded request as an Arrow batch and wait on the returned ticket; the writer thread
gathers whatever is queued (up to ``max_batch_records``, lingering at most ``flush_interval`` for more),
appends it in ONE transaction (``idempotent_append``: a record already stored is skipped) and only then
releases every waiting request: many concurrent exports share one commit, and nothing is acknowledged before
it is durable. The queue is bounded in records; a full queue is refused with ``QueueFull`` (retryable) instead
of growing. After each commit the listener hears, for every request in it, the submitter's ``payload`` and
which of its rows were new (``Committed``).

Other writes are ``Operation`` objects, applied beside ingest by the writer's ``OperationQueue``. Now and then
the database is closed and opened again between two commits (``ReopenPolicy``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from agentotel_eval.collector.store.idempotent_append import LOG_KEY, SPAN_KEY, InsertPlan, new_rows
from agentotel_eval.collector.store.operation_queue import OperationQueue, rollback
from agentotel_eval.collector.store.operations import Operation
from agentotel_eval.collector.store.reopen_policy import Reopen, ReopenPolicy
from agentotel_eval.collector.store.writer_stats import WriterStats
from agentotel_eval.store import schema
from agentotel_eval.store.rows import LOG_SCHEMA, SPAN_SCHEMA
from agentotel_eval.store.sealed import cursor as sealed_cursor

if TYPE_CHECKING:
    from agentotel_eval.collector.config import ReceiverConfig, WriterConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WriterSettings:
    """How the writer batches, bounds and reopens (``from_config``: the collector's ``[writer]`` and
    ``[receiver]`` settings)."""

    #: records queued for a commit before a request is refused (``QueueFull``)
    max_queue_records: int = 200_000
    #: at most this many records per transaction
    max_batch_records: int = 20_000
    #: how long a commit lingers for more requests to share it
    flush_interval: float = 0.005
    #: how long it may linger instead while requests are being decoded and it is short of
    #: ``direct_batch_records``
    max_linger: float = 0.05
    #: a commit of at least this many rows is written straight into the file (the database's row group size)
    direct_batch_records: int = 0
    #: the delay a refused request is told to retry after
    retry_after: float = 1.0
    #: close and open the database again after this many stored records (0: never)
    reopen_rows: int = 0

    @classmethod
    def from_config(cls, writer: WriterConfig, receiver: ReceiverConfig) -> WriterSettings:
        return cls(
            max_queue_records=writer.max_queue_records,
            max_batch_records=writer.max_batch_records,
            flush_interval=writer.flush_interval,
            max_linger=writer.max_linger,
            direct_batch_records=writer.row_group_size,
            retry_after=receiver.retry_after,
            reopen_rows=writer.reopen_rows,
        )


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
    """One request's part of a commit: its ``payload`` and which of its rows were new (indices into its span
    and log batches; None when every row was new, the common case)."""

    payload: Any
    new_spans: list[int] | None = None
    new_logs: list[int] | None = None
    #: the commit's ``ingested_at`` (ns, whole microseconds): every row of this commit carries
    #: it, and no other row
    ingested_ns: int | None = None

    @staticmethod
    def pick(items: Sequence[Any], new: list[int] | None) -> Sequence[Any]:
        """The entries of ``items`` (one per row) for the new rows."""
        return items if new is None else [items[i] for i in new]


CommitListener = Callable[[list[Committed]], None]


def _classify(exc: Exception) -> WriterError:
    if isinstance(
        exc,
        duckdb.ConversionException
        | duckdb.InvalidInputException
        | duckdb.ConstraintException
        | pa.ArrowInvalid
        | pa.ArrowTypeError,
    ):
        return RejectedData(f"the database refused the data: {exc}")
    return WriterUnavailable(f"could not commit: {exc}")


class StoreWriter:
    """The database's writer: the ingest thread (see the module docstring), with an operations queue beside it
    and a reopen policy (when ``reopen`` is given and ``settings.reopen_rows`` is set)."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        settings: WriterSettings | None = None,
        *,
        on_commit: CommitListener | None = None,
        incoming: Callable[[], int] = lambda: 0,
        reopen: Reopen | None = None,
    ) -> None:
        settings = settings or WriterSettings()
        self._con: duckdb.DuckDBPyConnection | None = con
        self._max_queue = settings.max_queue_records
        self._max_batch = settings.max_batch_records
        self._flush_interval = settings.flush_interval
        self._direct_batch = settings.direct_batch_records
        self._max_linger = max(settings.max_linger, settings.flush_interval)
        self._retry_after = settings.retry_after
        self._on_commit = on_commit
        #: requests on their way to ``submit`` (being decoded): whether waiting for more rows is worth it
        self._incoming = incoming
        self._items: deque[_Item] = deque()
        self._queued = 0
        self._cond = threading.Condition()
        self._stopping = False
        self._busy = False
        self._accepting = True
        self._thread: threading.Thread | None = None
        self._last_ingested_ns = 0
        self.stats = WriterStats()
        self._operations = OperationQueue(self.stats)
        self._reopen = (
            ReopenPolicy(reopen, settings.reopen_rows, self._operations, self.stats)
            if reopen is not None and settings.reopen_rows > 0
            else None
        )

    # ---- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            assert self._con is not None
            self._thread = threading.Thread(target=self._run, name="agentotel-writer", daemon=True)
            self._operations.start(sealed_cursor(self._con))
            self._thread.start()

    def shutdown(self, timeout: float = 30.0) -> None:
        """Refuse new ingest, drain the queue and pending operations, checkpoint. Idempotent."""
        with self._cond:
            self._accepting = False
            self._stopping = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if thread.is_alive():
                self._unfinished(timeout)
                return
        if thread is None or not thread.is_alive():
            self._operations.close()  # ingest (its commit listener) queues no more operations
        if not self._operations.join(timeout):
            self._unfinished(timeout)
            return
        if self._con is None:
            return
        try:
            self._con.execute("CHECKPOINT")
        except duckdb.Error as exc:  # the WAL still holds everything committed
            log.warning("checkpoint at shutdown failed: %s", exc)

    def _unfinished(self, timeout: float) -> None:
        log.error(
            "the writer did not finish within %.0fs; %d records and %d operations still queued",
            timeout,
            self._queued,
            self._operations.pending,
        )

    def stop_accepting(self) -> None:
        with self._cond:
            self._accepting = False

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until everything queued so far (ingest and operations) is written; False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if not self._wait_committed(deadline) or not self._operations.wait_idle(deadline):
                return False
            with self._cond:
                if not (self._items or self._busy):  # no commit queued operations meanwhile
                    return True

    def _wait_committed(self, deadline: float) -> bool:
        with self._cond:
            while self._items or self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._thread is None or not self._thread.is_alive():
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
        return self._operations.pending

    @property
    def pending_operation_rows(self) -> int:
        """Rows held by operations not yet applied (``Operation.rows``): the collector counts them against the
        write queue's bound, so a slow operations thread pushes back on exporters
        instead of growing memory."""
        return self._operations.pending_rows

    # ---- producers -----------------------------------------------------------------------------------------

    def check_room(self, extra_load: int = 0) -> None:
        """``QueueFull`` when a request would be refused now: lets a receiver refuse before it decodes one."""
        with self._cond:
            if not self._accepting:
                raise WriterUnavailable("the collector is shutting down")
            pending = self._queued + extra_load
            if pending >= self._max_queue:
                raise QueueFull(
                    f"write queue full ({pending} records pending, capacity {self._max_queue})",
                    self._retry_after,
                )

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
        """Queue a request's rows (``SPAN_SCHEMA`` / ``LOG_SCHEMA`` batches) for the next commit;
        ``QueueFull`` when at capacity. ``payload`` is handed to the commit listener with the
        rows that were new.

        ``extra_load`` counts records held downstream (the assembler's backlog) against the same bound, so a
        slow consumer pushes back on exporters instead of growing memory.
        """
        size = (span_batch.num_rows if span_batch is not None else 0) + (
            log_batch.num_rows if log_batch is not None else 0
        )
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
        """Queue a non-ingest write for the operations queue; never refused (its producers are
        bounded themselves)."""
        self._operations.submit(op)

    # ---- the writer thread ---------------------------------------------------------------------------------

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
        ``max_linger`` while the batch is short of ``direct_batch_records`` and more rows are on their way.
        With row groups larger than ``max_batch_records`` that is every loaded commit:
        fewer, larger commits."""
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
            if self._stopping:  # its commit listener queues no more operations
                self._operations.close()

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

    def _reopen_due(self) -> bool:
        return self._reopen is not None and self._reopen.due(self._con is not None)

    def _reopen_database(self) -> None:
        assert self._reopen is not None
        self._con = self._reopen.reopen(self._con)

    def _commit_items(self, items: list[_Item]) -> None:
        if self._con is None:  # retryable: the exporter sends it again once the database is open
            for item in items:
                item.ticket._resolve(
                    WriterUnavailable(
                        "the database is not open (it could not be opened again; see the collector's log)"
                    )
                )
            return
        started = time.perf_counter()
        try:
            committed = self._append(items)
        except Exception as exc:  # DuckDB refused the batch: find the culprit so the others still commit
            self.stats.commit_failures += 1
            if len(items) > 1:
                log.warning(
                    "a batch of %d requests failed to commit (%s); retrying them one by one", len(items), exc
                )
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
            plans.append(
                InsertPlan(
                    schema.SPANS, SPAN_SCHEMA, schema.SPAN_COLUMNS, span_batches, SPAN_KEY, "start_time"
                )
            )
        if log_batches:
            plans.append(
                InsertPlan(schema.LOGS, LOG_SCHEMA, schema.LOG_COLUMNS, log_batches, LOG_KEY, "time")
            )
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
                rollback(con)
                raise
        finally:
            for plan in plans:
                with contextlib.suppress(duckdb.Error):
                    con.unregister(plan.view)
        # Each ticket learns how many of its rows were new; only new rows go on to the listener.
        span_rows = new_rows([i.spans for i in items], outcomes.get(schema.SPANS), SPAN_KEY)
        log_rows = new_rows([i.logs for i in items], outcomes.get(schema.LOGS), LOG_KEY)
        committed = []
        for item, spans, logs in zip(items, span_rows, log_rows, strict=True):
            spans_stored, spans_duplicate = _stored(item.spans, spans)
            logs_stored, logs_duplicate = _stored(item.logs, logs)
            item.ticket.result.stored += spans_stored + logs_stored
            item.ticket.result.duplicates += spans_duplicate + logs_duplicate
            self.stats.spans_stored += spans_stored
            self.stats.spans_duplicate += spans_duplicate
            self.stats.logs_stored += logs_stored
            self.stats.logs_duplicate += logs_duplicate
            if spans != [] or logs != []:  # None: every row new
                committed.append(Committed(item.payload, spans, logs, ingested_ns))
        self._last_ingested_ns = ingested_ns
        return committed

    def _next_ingested_ns(self) -> int:
        """This commit's ``ingested_at``: now, in whole microseconds (what TIMESTAMPTZ keeps), and above the
        last commit's even if the clock stepped back, so that the value names one commit."""
        now = time.time_ns() // 1000 * 1000
        return max(now, self._last_ingested_ns + 1000)


def _stored(batch: pa.RecordBatch | None, new: list[int] | None) -> tuple[int, int]:
    """(rows stored, rows already stored) of one request's batch, given the indices of its
    new rows (None: all)."""
    rows = batch.num_rows if batch is not None else 0
    stored = rows if new is None else len(new)
    return stored, rows - stored
