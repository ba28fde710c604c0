"""The assembler's pure core: group stored records by trace, decide when a trace is complete
(tail-sampling style).

A trace is complete when its run span has arrived (the root span, or an agent-run span whose parent is not
part of the trace) and no record of it arrived for ``grace_period`` — the OpenTelemetry Collector's
tail-sampling processor decides the same way. A trace whose run span never comes is completed ``max_wait``
after its first record. Memory is bounded: over ``max_open_traces`` or ``max_buffered_records`` the least
recently active traces are completed early. Completed traces are remembered (only their id and time window) in
a bounded decision cache (``DecisionCache``), so a span arriving later re-opens the trace: its runs are
rebuilt from the stored spans and replaced.

Only marks are buffered (``agentotel_eval.collector.process.marks``: ids, times, whether a span delimits a
run, whether it is evidence of one), about 100 bytes a span instead of the record's few kilobytes; the
assembler reads a trace's records from the database once it is decided, if any of them is evidence
(``OpenTrace.evidence``). No I/O and no threads here; time is passed in, so tests drive it with plain numbers.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from agentotel_eval.collector.process.completed import REASON_EARLY, REASON_QUIET, REASON_TIMEOUT
from agentotel_eval.collector.process.marks import LogMark, SpanMark

#: the lower bound of a trace with no record yet (any time of a record is lower)
NO_TIME = (1 << 63) - 1


@dataclass(slots=True)
class OpenTrace:
    trace_id: str
    first_seen: float
    last_seen: float
    #: ids of its stored spans
    span_ids: set[str] = field(default_factory=set)
    #: its stored log records
    logs: int = 0
    #: the parent span id of each of its run spans
    run_parents: list[str | None] = field(default_factory=list)
    has_root: bool = False
    #: completed before (re-opened by a late record, or recovered): its stored rows are to be replaced
    replace: bool = False
    #: one of its records can make a run or a score (``agentotel_eval.collector.process.marks``): without one,
    #: nothing is read back
    evidence: bool = False
    #: the commits its records came in (their ``ingested_at``, ns), by which they are read back; None when one
    #: is not known (a trace re-opened from storage, a commit reported without it): read
    #: back by its time window
    commits: set[int] | None = None
    #: every stored record of it lies in [lo_ns, hi_ns] (span start and end times, log times: the records are
    #: read back by these bounds, so none may fall outside, whatever times an exporter sent), or at time 0,
    #: which reads look up apart (``TraceReader.load_tables``): a window reaching back to 1970 would
    #: scan the whole table
    lo_ns: int = NO_TIME
    hi_ns: int = 0

    @property
    def size(self) -> int:
        return len(self.span_ids) + self.logs

    def widen(self, start: int, end: int) -> None:
        """Take in a record from ``start`` to ``end`` (an end before its start is taken as the start)."""
        if start and start < self.lo_ns:
            self.lo_ns = start
        if end < start:
            end = start
        if end > self.hi_ns:
            self.hi_ns = end

    @property
    def complete(self) -> bool:
        """Its run span is here: the root, or an agent-run span whose parent is not in the
        trace (remote root)."""
        if self.has_root:
            return True
        spans = self.span_ids
        return any(parent not in spans for parent in self.run_parents)


@dataclass(frozen=True, slots=True)
class Decided:
    """A completed trace, as remembered in the decision cache: its id and the window its records lie in."""

    trace_id: str
    lo_ns: int
    hi_ns: int


_LOW64 = (1 << 64) - 1


class DecisionCache:
    """Completed traces by id, each with its window: at most ``capacity`` of them, and at least the latest
    ``capacity // 2``.

    Two generations of plain dicts: once the newer holds half the capacity it becomes the older, and the older
    is dropped whole, so no order is kept per entry; a window is packed into one int. About half the memory of
    an ordered dict of ``Decided`` (docs/benchmarks.md): the cache is the assembler process's largest
    structure under load."""

    __slots__ = ("_half", "_new", "_old", "capacity")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._half = max(1, capacity // 2)
        self._new: dict[str, int] = {}
        self._old: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def __contains__(self, trace_id: object) -> bool:
        return trace_id in self._new or trace_id in self._old

    def __iter__(self) -> Iterator[str]:
        """Trace ids, older generation first."""
        yield from self._old
        yield from self._new

    def get(self, trace_id: str) -> Decided | None:
        packed = self._new.get(trace_id)
        if packed is None:
            packed = self._old.get(trace_id)
            if packed is None:
                return None
        return Decided(trace_id, packed >> 64, packed & _LOW64)

    def __getitem__(self, trace_id: str) -> Decided:
        decided = self.get(trace_id)
        if decided is None:
            raise KeyError(trace_id)
        return decided

    def pop(self, trace_id: str) -> None:
        self._new.pop(trace_id, None)
        self._old.pop(trace_id, None)

    def add(self, decided: Decided) -> None:
        """Remember (or refresh: it moves to the newer generation) a decision."""
        trace_id = decided.trace_id
        self._old.pop(trace_id, None)
        new = self._new
        if trace_id not in new and len(new) >= self._half:
            # the full newer generation becomes the older (with a capacity of 1, where half
            # of it is 1 too, none)
            self._old = new if 2 * self._half <= self.capacity else {}
            self._new = new = {}
        new[trace_id] = decided.lo_ns << 64 | (decided.hi_ns & _LOW64)


@dataclass(slots=True)
class BufferStats:
    records_added: int = 0
    late_records: int = 0
    completed: dict[str, int] = field(default_factory=dict)  # reason -> traces

    def count(self, reason: str, n: int = 1) -> None:
        self.completed[reason] = self.completed.get(reason, 0) + n


class TraceBuffer:
    """Open traces ordered by last activity, plus the decision cache of completed ones."""

    def __init__(
        self,
        *,
        grace_period: float = 2.0,
        max_wait: float = 60.0,
        max_open_traces: int = 20_000,
        max_buffered_records: int = 200_000,
        decision_cache_traces: int = 100_000,
    ) -> None:
        self.grace_period = grace_period
        self.max_wait = max_wait
        self.max_open_traces = max_open_traces
        self.max_buffered_records = max_buffered_records
        self.open: OrderedDict[str, OpenTrace] = OrderedDict()
        self.decided = DecisionCache(decision_cache_traces)
        self.buffered = 0
        self.stats = BufferStats()
        #: whether a new trace's commits are known from its marks (``OpenTrace.commits``); off while earlier,
        #: unmarked records of a new trace may be stored (the assembler's recovery could not re-open them all)
        self.track_commits = True

    # ---- arrivals ------------------------------------------------------------------------------------------

    def _new(self, trace_id: str, now: float) -> OpenTrace:
        """A trace first seen in these marks: its commits are theirs, unless they may not
        name all its records."""
        return OpenTrace(trace_id, now, now, commits=set() if self.track_commits else None)

    def _touch(self, trace_id: str, now: float) -> OpenTrace:
        trace = self.open.get(trace_id)
        if trace is None:
            trace = self.open[trace_id] = OpenTrace(trace_id, now, now)
        else:
            trace.last_seen = now
            self.open.move_to_end(trace_id)
        return trace

    def add(
        self, spans: Iterable[SpanMark], logs: Iterable[LogMark], now: float, commit: int | None = None
    ) -> dict[str, Decided]:
        """Take the marks of newly stored records, and the commit that stored them (``OpenTrace.commits``).
        Returns the completed traces they belong to (late records), widened to include the late records'
        times: the caller reads those traces' marks from storage and calls ``reopen``."""
        late: dict[str, Decided] = {}
        open_traces = self.open
        decided_traces = self.decided
        touched: dict[str, OpenTrace] = {}  # activity is recorded once per trace per batch (the hot loop)
        added = 0
        for tid, sid, parent, start, end, is_run, evidence in spans:
            trace = touched.get(tid)
            if trace is None:
                trace = open_traces.get(tid)
                if trace is None:
                    decided = decided_traces.get(tid)
                    if decided is not None:
                        late[tid] = _widen(late.get(tid, decided), start, end)
                        self.stats.late_records += 1
                        continue
                    trace = open_traces[tid] = self._new(tid, now)
                touched[tid] = trace
            ids = trace.span_ids
            if sid in ids:
                continue
            ids.add(sid)
            added += 1
            trace.widen(start, end)
            if evidence:
                trace.evidence = True
            if parent is None:
                trace.has_root = True
            elif is_run:
                trace.run_parents.append(parent)
        for log_tid, ts, is_evaluation in logs:
            if log_tid is None:
                continue  # not part of any trace: stored, nothing to assemble
            trace = touched.get(log_tid) or open_traces.get(log_tid)
            if trace is None:
                decided = decided_traces.get(log_tid)
                if decided is not None:
                    if not is_evaluation:  # a score changes no tool call
                        late[log_tid] = _widen(late.get(log_tid, decided), ts, ts)
                        self.stats.late_records += 1
                    continue
                trace = open_traces[log_tid] = self._new(log_tid, now)
            touched[log_tid] = trace
            trace.logs += 1
            trace.widen(ts, ts)
            if not is_evaluation:  # a gen_ai event may hold tool calls; a score is stored at ingest
                trace.evidence = True
            added += 1
        for tid, trace in touched.items():
            trace.last_seen = now
            open_traces.move_to_end(tid)
            if trace.commits is not None:
                if commit is None:
                    trace.commits = None
                else:
                    trace.commits.add(commit)
        self.buffered += added
        self.stats.records_added += added
        return late

    def reopen(
        self,
        decided: Decided,
        spans: Iterable[SpanMark],
        logs: Iterable[LogMark],
        now: float,
        *,
        replace: bool = True,
    ) -> OpenTrace:
        """Put a completed trace back in the buffer with the marks of its records as stored (after a late
        record)."""
        self.decided.pop(decided.trace_id)
        trace = self.open.pop(decided.trace_id, None)
        if trace is not None:
            self.buffered -= trace.size
        trace = self._touch(decided.trace_id, now)
        trace.replace = replace
        trace.widen(decided.lo_ns, decided.hi_ns)
        for _tid, sid, parent, start, end, is_run, evidence in spans:
            if sid in trace.span_ids:
                continue
            trace.span_ids.add(sid)
            trace.widen(start, end)
            if evidence:
                trace.evidence = True
            if parent is None:
                trace.has_root = True
            elif is_run:
                trace.run_parents.append(parent)
        for _log_tid, ts, is_evaluation in logs:
            trace.logs += 1
            trace.widen(ts, ts)
            if not is_evaluation:
                trace.evidence = True
        self.buffered += trace.size
        return trace

    def remember(self, decided: Decided) -> None:
        """Record a decision made elsewhere (traces with runs found in storage at startup)."""
        if decided.trace_id not in self.open:
            self._remember(decided)

    # ---- decisions -----------------------------------------------------------------------------------------

    def due(self, now: float) -> list[tuple[OpenTrace, str]]:
        """Traces to complete now, each with the reason; they leave the buffer and enter
        the decision cache."""
        out: list[tuple[OpenTrace, str]] = []
        while self.open and (
            len(self.open) > self.max_open_traces or self.buffered > self.max_buffered_records
        ):
            _, trace = self.open.popitem(last=False)
            out.append(self._decide(trace, REASON_EARLY))
        deadline = now - self.grace_period
        waited = now - self.max_wait
        ready: list[tuple[OpenTrace, str]] = []
        for trace in self.open.values():
            if trace.last_seen > deadline:
                break  # ordered by last activity: every later trace is more recent
            if trace.complete:
                ready.append((trace, REASON_QUIET))
            elif trace.first_seen <= waited:
                ready.append((trace, REASON_TIMEOUT))
        for trace, reason in ready:
            del self.open[trace.trace_id]
            out.append(self._decide(trace, reason))
        return out

    def drain(self, reason: str) -> list[tuple[OpenTrace, str]]:
        """Complete every open trace (shutdown)."""
        out = [self._decide(trace, reason) for trace in self.open.values()]
        self.open.clear()
        return out

    def _decide(self, trace: OpenTrace, reason: str) -> tuple[OpenTrace, str]:
        self.buffered -= trace.size
        self.stats.count(reason)
        self._remember(Decided(trace.trace_id, trace.lo_ns, trace.hi_ns))
        return trace, reason

    def _remember(self, decided: Decided) -> None:
        self.decided.add(decided)


def _widen(decided: Decided, start: int, end: int) -> Decided:
    return Decided(decided.trace_id, min(decided.lo_ns, start or NO_TIME), max(decided.hi_ns, start, end))
