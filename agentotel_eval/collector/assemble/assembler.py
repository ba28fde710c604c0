"""The assembler stage: marks of committed records in, completed traces (with their reconstructed runs) out.

The writer calls ``consume`` after every commit with the marks of the new records
(``agentotel_eval.collector.process.marks``; it only appends to an inbox). The assembler's own thread feeds
the ``TraceBuffer``, asks it which traces are complete, reads those traces' records back from the database (in
a few queries per batch, bounded by the traces' time windows), runs ``reconstruct`` on each and hands the
batch to the next stage. Buffering marks instead of records keeps the assembler's memory at about 100 bytes
per open span, whatever the spans carry; the read is the same path a late span's re-read and the recovery at
startup always took. At startup it seeds its decision cache from the database and re-opens traces that were
stored but never assembled (the collector was killed), so a restart loses no agent run.
"""

from __future__ import annotations

import functools
import logging
import operator
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.collector.assemble.later_results import LaterResults, merge
from agentotel_eval.collector.assemble.trace_buffer import Decided, OpenTrace, TraceBuffer
from agentotel_eval.collector.config import AssemblerConfig
from agentotel_eval.collector.process.completed import REASON_SHUTDOWN, CompletedTrace, TraceStage
from agentotel_eval.collector.process.marks import LogMark, SpanMark, log_marks, span_marks
from agentotel_eval.collector.store.reader import StoredTrace, StoredTraceReader
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.declared import BUILTIN, Convention, Conventions
from agentotel_eval.reconstruct.model import AgentRun

log = logging.getLogger(__name__)

SPAN_ORDER = operator.attrgetter("start_ns", "span_id")
LOG_ORDER = operator.attrgetter("timestamp_ns")
_START_ORDER = operator.attrgetter("lo_ns", "trace_id")

Reconstruct = Callable[[Sequence[SpanRecord], Sequence[LogRecord]], list[AgentRun]]
#: one read of completed traces: (trace ids, lo_ns, hi_ns, the commits their records are in or None to read
#: them by the time window, a tag the reader hands back with the result)
Read = tuple[list[str], int, int, "tuple[int, ...] | None", int]
_NS = 1_000_000_000
#: a read that failed is tried again after these delays (seconds), then given up on (see ``_emit``)
READ_RETRY_DELAYS = (1.0, 2.0, 4.0, 8.0)
#: records read back in one query at most: what a read holds at once, as Arrow rows and records (a shutdown
#: drains every open trace; memory stays bounded)
MAX_READ_RECORDS = 2048
#: traces whose time windows are further apart than this are read in separate queries (one query's window is
#: the union of its traces' windows, and DuckDB skips only the row groups outside it)
READ_GAP_NS = 10 * _NS
#: commits one query names at most (a longer list is read in several queries; a trace of more commits, by its
#: window): spread-out commits make DuckDB scan the row groups between them
MAX_READ_COMMITS = 64


@dataclass(slots=True)
class AssemblerStats:
    runs_completed: int = 0
    traces_reopened: int = 0
    traces_recovered: int = 0
    reconstruct_errors: int = 0
    reload_errors: int = 0
    #: completed traces that could not be read back (their runs wait for the recovery at the next start)
    read_errors: int = 0
    stage_errors: int = 0
    #: completed traces with no run, tool or LLM span, evaluation event or log record other than a score: not
    #: read back (no runs)
    traces_without_evidence: int = 0
    #: earlier traces rebuilt because a later trace fed back results for their calls (their rows are replaced)
    traces_completed_later: int = 0


def _reconstructor(
    conventions: Conventions, text_failures: bool = True
) -> Callable[[Sequence[SpanRecord], Sequence[LogRecord]], list[AgentRun]]:
    from agentotel_eval.reconstruct import reconstruct

    return functools.partial(reconstruct, conventions=conventions, text_failures=text_failures)


class Assembler:
    """Thread stage around a ``TraceBuffer`` (see the module docstring)."""

    def __init__(
        self,
        config: AssemblerConfig,
        next_stage: TraceStage,
        reader: StoredTraceReader,
        *,
        reconstruct: Reconstruct | None = None,
        clock: Callable[[], float] = time.monotonic,
        tick: float = 0.05,
        on_step: Callable[[], None] | None = None,
        whole_spans: bool = True,
        read_plain_traces: bool = False,
        conventions: Sequence[Convention] = (),
        text_failures: bool = True,
    ) -> None:
        self.config = config
        #: the declared conventions (the user's first) that spans are classified and reconstructed with
        self._conventions = BUILTIN.plus(tuple(conventions))
        self.buffer = TraceBuffer(
            grace_period=config.grace_period,
            max_wait=config.max_wait,
            max_open_traces=config.max_open_traces,
            max_buffered_records=config.max_buffered_records,
            decision_cache_traces=config.decision_cache_traces,
        )
        self._next = next_stage
        self._reader = reader
        self._reconstruct = reconstruct or _reconstructor(self._conventions, text_failures)
        #: earlier traces whose calls a later trace gives results to (a plain client loop, one
        #: trace per LLM call)
        self._later = LaterResults(self._reconstruct, self._conventions)
        self._clock = clock
        self._tick = tick
        #: called by the assembler's thread after each round, between batches (its state is consistent then)
        self._on_step = on_step
        #: read completed traces' spans with every field (their forwarded copies need them), or without the
        #: few that nothing here reads (``SPAN_SELECT_ASSEMBLY``)
        self._whole_spans = whole_spans
        #: read back and pass on even the traces that can hold no run (``OpenTrace.evidence``): a forwarder
        #: sends their held spans (the roots) only after that
        self._read_plain_traces = read_plain_traces
        self._inbox: deque[tuple[Sequence[SpanMark], Sequence[LogMark], int | None]] = deque()
        self._inbox_records = 0
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # the buffer is touched by the thread, and by shutdown after it stopped
        self._decided: list[tuple[OpenTrace, str]] = []  # decided, waiting for the next read
        self._decided_records = 0
        #: completed traces whose read-back failed, by trace id: (when to try again, tries so far, (the trace,
        #: why it completed)). A trace re-opened meanwhile (a late span) leaves: it is read whole
        #: when it completes again
        self._read_retries: dict[str, tuple[float, int, tuple[OpenTrace, str]]] = {}
        #: late traces whose stored records could not be re-read, by trace id: (when to try again,
        #: tries so far, None)
        self._late_retries: dict[str, tuple[float, int, None]] = {}
        self._last_read = float("-inf")
        #: until then new traces are read back by their window
        #: (``TraceBuffer.track_commits``; see ``_recover``)
        self._untracked_until = float("-inf")
        self.stats = AssemblerStats()

    # ---- stage interface -----------------------------------------------------------------------------------

    def consume(self, spans: Sequence[SpanMark], logs: Sequence[LogMark], commit: int | None = None) -> None:
        """Called by the writer after a commit with the marks of the new records and the commit's
        ``ingested_at`` (ns; None: not known, the records are read back by their time window); never
        blocks on assembly."""
        n = len(spans) + len(logs)
        if not n:
            return
        with self._cond:
            self._inbox.append((spans, logs, commit))
            self._inbox_records += n
            self._cond.notify()

    @property
    def backlog(self) -> int:
        """Records received but not yet buffered (counts against the write queue's bound)."""
        return self._inbox_records

    @property
    def open_traces(self) -> int:
        """Traces not written yet: buffered until they complete, or complete and waiting for the next read."""
        return len(self.buffer.open) + len(self._decided) + len(self._read_retries)

    @property
    def buffered_records(self) -> int:
        return self.buffer.buffered

    def start(self) -> None:
        if self._thread is not None:
            return
        self._next.start()
        try:
            self._recover()
        except Exception:
            log.exception("could not recover unassembled traces at startup; continuing without")
        self._thread = threading.Thread(target=self._run, name="agentotel-assembler", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        """Process what is queued, complete every open trace, and shut the next stage down. Idempotent."""
        with self._cond:
            if self._stopping and self._thread is None:
                return
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self._drain_inbox()
            self._retry_late(self._clock(), force=True)  # a last try (given up on and counted if it fails)
            self._collect(self.buffer.drain(REASON_SHUTDOWN), force=True)
        self._reader.close()
        self._next.shutdown()

    # ---- the thread ----------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._stopping and not self._inbox:
                    self._cond.wait(self._tick)
                if self._stopping:
                    return
            try:
                with self._lock:
                    self._round()
                    if self._on_step is not None:
                        self._on_step()
            except Exception:
                log.exception("the assembler failed on a batch; continuing")

    def step(self) -> None:
        """One round of work, for callers driving the assembler without its thread (tests)."""
        with self._lock:
            self._round()

    def _round(self) -> None:
        if not self.buffer.track_commits and self._clock() >= self._untracked_until:
            self.buffer.track_commits = True
        self._drain_inbox()
        self._collect(self.buffer.due(self._clock()))

    def _collect(self, decided: list[tuple[OpenTrace, str]], *, force: bool = False) -> None:
        """Decided traces are read back together, every ``read_interval`` (or sooner when many are waiting): a
        read costs DuckDB a scan of the rows of its commits (or of its time window) whatever it returns, so
        fewer, larger reads cost less."""
        if decided and not self._read_plain_traces:
            # A trace with no evidence has nothing to rebuild. A re-opened or recovered one got its marks from
            # all its stored records: none is evidence, so no run was ever written for it either.
            kept = [item for item in decided if item[0].evidence]
            self.stats.traces_without_evidence += len(decided) - len(kept)
            decided = kept
        if decided:
            self._decided.extend(decided)
            self._decided_records += sum(trace.size for trace, _ in decided)
        now = self._clock()
        retries = _due(self._read_retries, now, force)
        if not self._decided and not retries:
            return
        if (
            not force
            and not retries
            and now - self._last_read < self.config.read_interval
            and self._decided_records < MAX_READ_RECORDS
        ):
            return
        batch, self._decided, self._decided_records = self._decided, [], 0
        self._last_read = now
        attempts = {tid: tries for tid, (_, tries, _) in retries.items()}
        self._emit(batch + [item for _, _, item in retries.values()], attempts)

    def _drain_inbox(self) -> None:
        with self._cond:
            batches = list(self._inbox)
            self._inbox.clear()
        now = self._clock()
        late: dict[str, Decided] = {}
        for spans, logs, commit in batches:
            late.update(self.buffer.add(spans, logs, now, commit))
            with self._cond:
                self._inbox_records -= len(spans) + len(logs)
        if late:
            self._reopen(late, now)
        self._retry_late(now)

    def _retry_late(self, now: float, *, force: bool = False) -> None:
        """Re-read the late traces whose earlier re-read failed, once their time has come (all with
        ``force``), by the window their decision has now (a trace no longer decided was
        re-opened, or forgotten)."""
        due = _due(self._late_retries, now, force)
        decided = self.buffer.decided
        late = {tid: decided[tid] for tid in due if tid in decided}
        if late:
            self._reopen(late, now, {tid: due[tid][1] for tid in late})

    def _reopen(self, late: dict[str, Decided], now: float, attempts: dict[str, int] | None = None) -> None:
        """Put late traces back in the buffer with the marks of their stored records (their rows will be
        replaced). ``attempts``: the earlier failed tries of each."""
        if not late:
            return
        slack = int(self.config.late_window * _NS)
        lo = min(d.lo_ns for d in late.values()) - slack
        hi = max(d.hi_ns for d in late.values()) + slack
        try:
            stored = self._reader.load(late, lo, hi, whole=False)
        except Exception as exc:
            # Rebuilding from the late records alone would replace good runs with partial ones: the runs stay
            # as they are until a later try reads the trace whole.
            for decided in late.values():  # the window widened by the late records, for the next try
                self.buffer.remember(decided)
            again = self._schedule(self._late_retries, dict.fromkeys(late), attempts or {})
            self.stats.reload_errors += len(late) - again
            _log_failure("re-read", len(late), again, exc)
            return
        self.stats.traces_reopened += len(late)
        for decided in late.values():
            self._put_back(decided, stored.get(decided.trace_id), now)

    def _schedule(
        self, retries: dict[str, tuple[float, int, Any]], items: Mapping[str, Any], attempts: dict[str, int]
    ) -> int:
        """Put each trace's item down for another try after its next delay (``READ_RETRY_DELAYS``), unless it
        had every try already or the assembler is stopping; how many were."""
        now = self._clock()
        scheduled = 0
        for tid, item in items.items():
            tries = attempts.get(tid, 0)
            if tries < len(READ_RETRY_DELAYS) and not self._stopping:
                retries[tid] = (now + READ_RETRY_DELAYS[tries], tries + 1, item)
                scheduled += 1
        return scheduled

    def _put_back(self, decided: Decided, record: StoredTrace | None, now: float) -> None:
        self._read_retries.pop(decided.trace_id, None)  # re-opened: read whole when it completes again
        self._late_retries.pop(decided.trace_id, None)
        if record is None:
            self.buffer.reopen(decided, (), (), now)
        else:
            self.buffer.reopen(
                decided, span_marks(record.spans, self._conventions), log_marks(record.logs), now
            )

    def _recover(self) -> None:
        """Seed the decision cache from stored runs, and re-open stored traces that have none (a crash)."""
        reader = self._reader
        latest = reader.latest_span_time()
        if latest is None:
            return
        since = latest - int((self.config.max_wait + self.config.grace_period) * 2 * _NS)
        traces, with_runs = reader.recent_traces(since)
        pending = []
        for trace_id, lo, hi in traces:
            decided = Decided(trace_id, lo, hi)
            if trace_id in with_runs:
                self.buffer.remember(decided)
            else:
                pending.append(decided)
        if len(pending) > self.config.max_open_traces:
            # Those left out are stored without runs and not re-opened: a later record of one starts a new
            # trace here, whose earlier records no mark names. New traces are read by their window
            # until they are done.
            unassembled = len(pending)
            pending.sort(key=lambda d: d.hi_ns)
            pending = pending[-self.config.max_open_traces :]
            self._untracked_until = self._clock() + self.config.max_wait + self.config.grace_period
            self.buffer.track_commits = False
            log.warning(
                "%d stored traces without runs are more than max_open_traces: the latest %d are re-opened",
                unassembled,
                len(pending),
            )
        if not pending:
            return
        slack = int(self.config.late_window * _NS)
        stored = reader.load(
            [d.trace_id for d in pending],
            min(d.lo_ns for d in pending) - slack,
            max(d.hi_ns for d in pending) + slack,
            whole=False,
        )
        now = self._clock()
        for decided in pending:
            self._put_back(decided, stored.get(decided.trace_id), now)
        self.stats.traces_recovered += len(pending)
        log.info(
            "re-opened %d stored traces that had not been assembled (the collector had stopped abruptly)",
            len(pending),
        )

    # ---- completion ----------------------------------------------------------------------------------------

    def _emit(self, decided: list[tuple[OpenTrace, str]], attempts: dict[str, int] | None = None) -> None:
        """Read the decided traces' records back, reconstruct, and hand them on (a batch per read). A read
        that fails is tried again later (``READ_RETRY_DELAYS``); ``attempts`` counts the
        earlier tries of a trace."""
        groups = {id(group): group for group in _read_groups(decided)}
        reads = [
            (
                [t.trace_id for t, _ in g],
                min(t.lo_ns for t, _ in g),
                max(t.hi_ns for t, _ in g),
                _commits_of(g),
                id(g),
            )
            for g in groups.values()
        ]
        for read, stored in self._load_all(reads):
            group = groups[read[4]]
            if isinstance(stored, BaseException):
                self._read_failed(group, stored, attempts or {})
                continue
            self._reconstruct_and_pass(group, stored)

    def _read_failed(
        self, group: list[tuple[OpenTrace, str]], error: BaseException, attempts: dict[str, int]
    ) -> None:
        again = self._schedule(self._read_retries, {item[0].trace_id: item for item in group}, attempts)
        # Given up on: they are stored traces without runs, which the recovery at the next start re-opens.
        self.stats.read_errors += len(group) - again
        _log_failure("read back", len(group), again, error)

    def _load_all(self, reads: list[Read]) -> Iterator[tuple[Read, dict[str, StoredTrace] | BaseException]]:
        """Each read's traces, or the exception that failed it; through the reader's ``load_many`` when it has
        one (the assembler process's reads the next while this one is worked on), else one
        ``load`` after another."""
        load_many = getattr(self._reader, "load_many", None)
        if load_many is not None:
            yield from load_many(reads, whole=self._whole_spans)
            return
        for read in reads:
            try:
                yield (
                    read,
                    self._reader.load(read[0], read[1], read[2], whole=self._whole_spans, commits=read[3]),
                )
            except Exception as exc:
                yield read, exc

    def _reconstruct_and_pass(
        self, group: list[tuple[OpenTrace, str]], stored: dict[str, StoredTrace]
    ) -> None:
        completed: list[CompletedTrace] = []
        for trace, reason in group:
            record = stored.get(trace.trace_id)
            spans = sorted(record.spans, key=SPAN_ORDER) if record is not None else []
            logs = sorted(record.logs, key=LOG_ORDER) if record is not None and record.logs else []
            try:
                runs = tuple(self._reconstruct(spans, logs))
            except Exception:
                self.stats.reconstruct_errors += 1
                log.exception("reconstruction failed for trace %s; its runs are not written", trace.trace_id)
                continue
            self.stats.runs_completed += len(runs)
            done = CompletedTrace(
                trace_id=trace.trace_id,
                spans=tuple(spans),
                logs=tuple(logs),
                runs=runs,
                reason=reason,
                complete=trace.complete,
                replace=trace.replace,
                lo_ns=trace.lo_ns,
                hi_ns=trace.hi_ns,
            )
            completed.append(done)
        for done in sorted(
            completed, key=_START_ORDER
        ):  # (an earlier trace first: later ones give it results)
            try:
                redone = self._later.complete(done)
            except Exception:
                self.stats.reconstruct_errors += 1
                log.exception("rebuilding the traces that trace %s gives results to failed", done.trace_id)
                continue
            merge(completed, redone)
            self.stats.traces_completed_later += len(redone)
        if completed:
            try:
                self._next.consume(completed)
            except Exception:
                self.stats.stage_errors += 1
                log.exception("the stage after the assembler failed on %d traces", len(completed))


def _due(retries: dict[str, tuple[Any, ...]], now: float, force: bool) -> dict[str, tuple[Any, ...]]:
    """Take out the retries whose time has come (all of them with ``force``)."""
    if not retries:
        return {}
    due = {tid: entry for tid, entry in retries.items() if force or entry[0] <= now}
    for tid in due:
        del retries[tid]
    return due


def _log_failure(what: str, traces: int, again: int, error: BaseException) -> None:
    if again:
        log.warning("could not %s %d traces (%s); %d will be tried again", what, traces, error, again)
    if traces - again:
        log.error(
            "could not %s %d traces (%s); given up on: their runs are left as they were",
            what,
            traces - again,
            error,
            exc_info=error,
        )


def _by_commits(trace: OpenTrace) -> bool:
    return 0 < len(trace.commits or ()) <= MAX_READ_COMMITS


def _commits_of(group: list[tuple[OpenTrace, str]]) -> tuple[int, ...] | None:
    """The commits a group's records are in, or None when a trace's are not all known
    (read by time window)."""
    out: set[int] = set()
    for trace, _ in group:
        if not _by_commits(trace):
            return None
        out |= trace.commits or set()
    return tuple(sorted(out))


def _read_groups(decided: list[tuple[OpenTrace, str]]) -> list[list[tuple[OpenTrace, str]]]:
    """The decided traces in groups to read with one query each, at most ``MAX_READ_RECORDS`` records a query
    (a trace larger than that goes alone). Traces whose commits are known go together, by their first commit
    (a query reads the row groups of its commits); the others by time window (traces far apart in time go in
    separate queries: a query scans every row group whose start times meet its window)."""
    by_commits = sorted((d for d in decided if _by_commits(d[0])), key=lambda d: min(d[0].commits or (0,)))
    by_window = sorted((d for d in decided if not _by_commits(d[0])), key=lambda d: d[0].lo_ns)
    return _cut(by_commits, gap=False) + _cut(by_window, gap=True)


def _cut(decided: list[tuple[OpenTrace, str]], *, gap: bool) -> list[list[tuple[OpenTrace, str]]]:
    """Groups of at most ``MAX_READ_RECORDS`` records; by window (``gap``): no gap over ``READ_GAP_NS`` inside
    one, by commits: at most ``MAX_READ_COMMITS`` commits in one."""
    groups: list[list[tuple[OpenTrace, str]]] = []
    group: list[tuple[OpenTrace, str]] = []
    size = 0
    hi = 0
    commits: set[int] = set()
    for item in decided:
        trace = item[0]
        if group and (
            size + trace.size > MAX_READ_RECORDS
            or (
                trace.lo_ns > hi + READ_GAP_NS
                if gap
                else len(commits | (trace.commits or set())) > MAX_READ_COMMITS
            )
        ):
            groups.append(group)
            group, size, hi, commits = [], 0, 0, set()
        group.append(item)
        size += trace.size
        hi = max(hi, trace.hi_ns)
        if not gap:
            commits |= trace.commits or set()
    if group:
        groups.append(group)
    return groups
