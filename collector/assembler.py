"""The assembler stage: committed records in, completed traces (with their reconstructed runs) out.

The writer calls ``consume`` after every commit (it only appends to an inbox). The assembler's own thread feeds the
``TraceBuffer``, re-reads traces that a late record re-opened, asks the buffer which traces are complete, runs
``reconstruct`` on each and hands the batch to the next stage. At startup it seeds its decision cache from the
database and re-opens traces that were stored but never assembled (the collector was killed), so a restart loses
no agent run.
"""

from __future__ import annotations

import logging
import operator
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.store.reader import TraceReader
from collector.config import AssemblerConfig
from collector.pipeline import REASON_SHUTDOWN, CompletedTrace, TraceStage
from collector.trace_buffer import Decided, OpenTrace, TraceBuffer

log = logging.getLogger(__name__)

_SPAN_ORDER = operator.attrgetter("start_ns", "span_id")
_LOG_ORDER = operator.attrgetter("timestamp_ns")

Reconstruct = Callable[[Sequence[SpanRecord], Sequence[LogRecord]], list[AgentRun]]
_NS = 1_000_000_000


@dataclass(slots=True)
class AssemblerStats:
    runs_completed: int = 0
    traces_reopened: int = 0
    traces_recovered: int = 0
    reconstruct_errors: int = 0
    reload_errors: int = 0
    stage_errors: int = 0


def _default_reconstruct(spans: Sequence[SpanRecord], logs: Sequence[LogRecord]) -> list[AgentRun]:
    from agentotel_eval.reconstruct import reconstruct

    return reconstruct(spans, logs)


class Assembler:
    """Thread stage around a ``TraceBuffer`` (see the module docstring)."""

    def __init__(
        self,
        config: AssemblerConfig,
        next_stage: TraceStage,
        reader: TraceReader | None = None,
        *,
        reconstruct: Reconstruct | None = None,
        clock: Callable[[], float] = time.monotonic,
        tick: float = 0.05,
        on_step: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.buffer = TraceBuffer(
            grace_period=config.grace_period,
            max_wait=config.max_wait,
            max_open_traces=config.max_open_traces,
            max_buffered_records=config.max_buffered_records,
            decision_cache_traces=config.decision_cache_traces,
        )
        self._next = next_stage
        self._reader = reader
        self._reconstruct = reconstruct or _default_reconstruct
        self._clock = clock
        self._tick = tick
        #: called by the assembler's thread after each round, between batches (its state is consistent then)
        self._on_step = on_step
        self._inbox: deque[tuple[Sequence[SpanRecord], Sequence[LogRecord]]] = deque()
        self._inbox_records = 0
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # the buffer is touched by the thread, and by shutdown after it stopped
        self.stats = AssemblerStats()

    # ---- stage interface ------------------------------------------------------------------------------------

    def consume(self, spans: Sequence[SpanRecord], logs: Sequence[LogRecord]) -> None:
        """Called by the writer after a commit; never blocks on assembly."""
        n = len(spans) + len(logs)
        if not n:
            return
        with self._cond:
            self._inbox.append((spans, logs))
            self._inbox_records += n
            self._cond.notify()

    @property
    def backlog(self) -> int:
        """Records received but not yet buffered (counts against the write queue's bound)."""
        return self._inbox_records

    @property
    def open_traces(self) -> int:
        return len(self.buffer.open)

    @property
    def buffered_records(self) -> int:
        return self.buffer.buffered

    def start(self) -> None:
        if self._thread is not None:
            return
        self._next.start()
        if self._reader is not None:
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
            self._emit(self.buffer.drain(REASON_SHUTDOWN))
        if self._reader is not None:
            self._reader.close()
        self._next.shutdown()

    # ---- the thread -----------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._stopping and not self._inbox:
                    self._cond.wait(self._tick)
                if self._stopping:
                    return
            try:
                with self._lock:
                    self._drain_inbox()
                    self._emit(self.buffer.due(self._clock()))
                    if self._on_step is not None:
                        self._on_step()
            except Exception:
                log.exception("the assembler failed on a batch; continuing")

    def step(self) -> None:
        """One round of work, for callers driving the assembler without its thread (tests)."""
        with self._lock:
            self._drain_inbox()
            self._emit(self.buffer.due(self._clock()))

    def _drain_inbox(self) -> None:
        with self._cond:
            batches = list(self._inbox)
            self._inbox.clear()
        now = self._clock()
        late: dict[str, Decided] = {}
        for spans, logs in batches:
            late.update(self.buffer.add(spans, logs, now))
            with self._cond:
                self._inbox_records -= len(spans) + len(logs)
        if late:
            self._reopen(late, now)

    def _reopen(self, late: dict[str, Decided], now: float) -> None:
        """Re-read late traces from storage and put them back in the buffer (their rows will be replaced)."""
        if self._reader is None:
            stored = None
        else:
            slack = int(self.config.late_window * _NS)
            lo = min(d.lo_ns for d in late.values()) - slack
            hi = max(d.hi_ns for d in late.values()) + slack
            try:
                stored = self._reader.load(late, lo, hi)
            except Exception:
                # Rebuilding from the late records alone would replace good runs with partial ones: keep the runs.
                self.stats.reload_errors += len(late)
                log.exception("could not re-read %d late traces; their runs are left as they were", len(late))
                return
        self.stats.traces_reopened += len(late)
        for decided in late.values():
            record = stored.get(decided.trace_id) if stored else None
            self.buffer.reopen(decided, record.spans if record else (), record.logs if record else (), now)

    def _recover(self) -> None:
        """Seed the decision cache from stored runs, and re-open stored traces that have none (a crash)."""
        reader = self._reader
        assert reader is not None
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
        pending = pending[-self.config.max_open_traces:]
        if not pending:
            return
        slack = int(self.config.late_window * _NS)
        stored = reader.load([d.trace_id for d in pending], min(d.lo_ns for d in pending) - slack,
                             max(d.hi_ns for d in pending) + slack)
        now = self._clock()
        for decided in pending:
            record = stored[decided.trace_id]
            self.buffer.reopen(decided, record.spans, record.logs, now)
        self.stats.traces_recovered += len(pending)
        log.info("re-opened %d stored traces that had not been assembled (the collector had stopped abruptly)",
                 len(pending))

    # ---- completion -----------------------------------------------------------------------------------------

    def _emit(self, decided: list[tuple[OpenTrace, str]]) -> None:
        if not decided:
            return
        completed: list[CompletedTrace] = []
        for trace, reason in decided:
            spans = sorted(trace.spans.values(), key=_SPAN_ORDER)
            logs = sorted(trace.logs, key=_LOG_ORDER) if trace.logs else []
            try:
                runs = tuple(self._reconstruct(spans, logs))
            except Exception:
                self.stats.reconstruct_errors += 1
                log.exception("reconstruction failed for trace %s; its runs are not written", trace.trace_id)
                continue
            self.stats.runs_completed += len(runs)
            completed.append(
                CompletedTrace(
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
            )
        if completed:
            try:
                self._next.consume(completed)
            except Exception:
                self.stats.stage_errors += 1
                log.exception("the stage after the assembler failed on %d traces", len(completed))
