"""The collector's side of the assembler process (``agentotel_eval.collector.pipeline.worker`` runs in it).

``ProcessAssembly`` (an ``AssemblyStage``) takes every commit's marks from the writer and hands them to the
assembler process: one thread sends them (the writer never waits on the socket); the process's supervisor
hands what comes back to ``_received``: rows for the run writer, held spans for the forwarder, reads to serve
from the database, and the process's counters.

If the process dies, the supervisor starts a new one: its recovery re-opens the recent stored traces that have
no runs yet, the same path that covers a collector killed mid-flight. What that does not cover: a late span of
a trace that already had runs, in flight to the dead process (its runs stay as they were), and traces older
than the recovery window (twice ``max_wait`` + ``grace_period`` before the newest stored span). After
``MAX_RESTARTS`` deaths in a row the collector stops assembling (ingest goes on; the next start
recovers the runs).
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from agentotel_eval.collector.assemble.assembler import AssemblerStats
from agentotel_eval.collector.assemble.trace_buffer import BufferStats
from agentotel_eval.collector.config import AssemblerConfig
from agentotel_eval.collector.config_scoring import ScoringConfig
from agentotel_eval.collector.pipeline.assembly import AssemblyStats
from agentotel_eval.collector.pipeline.worker import WorkerSettings
from agentotel_eval.collector.process import wire
from agentotel_eval.collector.process.channel import Channel, ChannelClosed
from agentotel_eval.collector.process.marks import LogMark, SpanMark
from agentotel_eval.collector.process.messages import (
    CallFailed,
    Counters,
    Forward,
    LatestSpanTime,
    Marks,
    Message,
    Progress,
    ReadTraces,
    RecentTraces,
    Reply,
    Rows,
    Setup,
)
from agentotel_eval.collector.process.supervisor import HelperUnavailable, RestartPolicy, Supervisor
from agentotel_eval.collector.process.tuning import UNTUNED, Tuning
from agentotel_eval.collector.score.stage import ScoringStats
from agentotel_eval.collector.store.reader import TraceReader
from agentotel_eval.collector.store.runs import RunWriter, rows_from
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.declared import Convention

log = logging.getLogger(__name__)

#: deaths in a row of the assembler process before the collector gives up on assembly (ingest goes on)
MAX_RESTARTS = 5
#: a process that ran this long before it died is not "dying again": the count of deaths in a row starts over
STABLE_SECONDS = 60.0

_Entry = tuple[Sequence[SpanMark], Sequence[LogMark], "int | None"]


class AssemblerUnavailable(RuntimeError):
    """The assembler process could not be started."""


def _empty() -> AssemblyStats:
    return AssemblyStats(AssemblerStats(), BufferStats(), ScoringStats())


class ProcessAssembly:
    """Assembly, reconstruction and scoring in a helper process; the database stays here. It is sent the marks
    of committed records and reads completed traces back through this process (``_answer``)."""

    def __init__(
        self,
        config: AssemblerConfig,
        scoring: ScoringConfig,
        reader: TraceReader,
        run_writer: RunWriter,
        *,
        forward: Callable[[Sequence[SpanRecord]], None] | None = None,
        start_timeout: float = 60.0,
        tuning: Tuning = UNTUNED,
        conventions: Sequence[Convention] = (),
        text_failures: bool = True,
    ) -> None:
        self.config = config
        settings = pickle.dumps(
            WorkerSettings(config, scoring, forward is not None, tuple(conventions), text_failures)
        )
        self._supervisor = Supervisor(
            "assembler",
            "agentotel_eval.collector.pipeline.worker",
            Setup(log.getEffectiveLevel(), tuning.as_tuple(), 0, settings),
            self._received,
            on_exit=self._exited,
            on_give_up=self._gave_up,
            start_timeout=start_timeout,
            policy=RestartPolicy(stable_after=STABLE_SECONDS, give_up_after=MAX_RESTARTS),
        )
        self.reader = reader
        self._run_writer = run_writer
        self._forward = forward
        self._start_timeout = start_timeout
        self._cond = threading.Condition()
        self._outbox: deque[_Entry] = deque()
        self._queued = 0  # records in the outbox
        self._sent = 0  # records sent to the current process
        self._stopping = False
        #: the process kept dying and was given up on: records are dropped here (they are
        #: stored), nothing waits
        self._disabled = False
        self._snapshot = _empty()  # the running process's counters, as last reported
        self._reported = (0, 0)  # (marks received, inbox) with those counters
        self._progress = (0, 0)  # (received, inbox) as the process's receiving thread last said
        self._retired = _empty()  # counters of processes that exited, so totals never go backwards
        self._sender: threading.Thread | None = None
        self._last_failed: tuple[Any, ...] | None = None  # the marks whose send failed last (see _requeue)

    # ---- what the collector reads --------------------------------------------------------------------------

    @property
    def backlog(self) -> int:
        """Marks of committed records the process has not buffered yet (counted against the
        write queue's bound)."""
        with self._cond:
            if self._disabled:
                return 0
            received, inbox = self._progress
            if self._reported[0] >= received:  # the full counters are the newer
                received, inbox = self._reported
            return self._queued + max(self._sent - received, 0) + inbox

    @property
    def open_traces(self) -> int:
        return self._snapshot.open_traces

    def snapshot(self) -> AssemblyStats:
        with self._cond:
            return self._retired.plus(self._snapshot)

    @property
    def supervisor(self) -> Supervisor:
        return self._supervisor

    @property
    def pid(self) -> int | None:
        return self._supervisor.pid

    @property
    def alive(self) -> bool:
        return self._supervisor.alive

    @property
    def restarts(self) -> int:
        return self._supervisor.restarts

    # ---- stage interface -----------------------------------------------------------------------------------

    def consume(self, spans: Sequence[SpanMark], logs: Sequence[LogMark], commit: int | None = None) -> None:
        """Called by the writer after a commit with the marks of the new records and the commit's
        ``ingested_at`` (see ``Assembler.consume``); only queues."""
        n = len(spans) + len(logs)
        if not n:
            return
        with self._cond:
            if self._disabled:
                # stored already; assembly is off until the collector restarts (logged when it happened)
                return
            self._outbox.append((spans, logs, commit))  # copied once, by marshal, when sent
            self._queued += n
            self._cond.notify()

    def start(self) -> None:
        try:
            self._supervisor.start()
        except HelperUnavailable as exc:
            raise AssemblerUnavailable(f"could not start the assembler process: {exc}") from exc
        self._sender = threading.Thread(target=self._send_loop, name="agentotel-assembler-send", daemon=True)
        self._sender.start()

    def shutdown(self, timeout: float = 120.0) -> None:
        """Send what is queued, let the process complete every open trace and send its rows, then stop it."""
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            self._cond.notify_all()
        # A process that dies from here on is not replaced: the next start's recovery rebuilds what it held
        self._supervisor.stop_restarting()
        if self._sender is not None:
            self._sender.join(timeout)
        self._supervisor.stop(timeout)

    # ---- sending marks -------------------------------------------------------------------------------------

    def _send_loop(self) -> None:
        while True:
            with self._cond:
                while not self._outbox and not self._stopping:
                    self._cond.wait()
                if not self._outbox:  # stopping, and everything is sent
                    return
                # A message a commit: its ingested_at says where its records are read back from
                entry = self._outbox.popleft()
                n = len(entry[0]) + len(entry[1])
                self._sent += (
                    n  # counted before it leaves the outbox count: the backlog never dips in between
                )
                self._queued -= n
                disabled = self._disabled
            if disabled:
                continue
            supervisor = self._supervisor
            was_alive, generation = supervisor.alive, supervisor.generation
            try:
                supervisor.send(Marks(entry[0], entry[1], entry[2]))
            except HelperUnavailable:
                # The process died (its supervisor starts another), or is starting. These marks go to the next
                # one: its recovery re-opens stored traces without runs, but a late span of a trace that has
                # runs would be missed.
                if not self._requeue(entry, generation if was_alive else None):
                    return
            except Exception:  # a bug in encoding: these records' runs are lost, the sender must go on
                log.exception("could not send %d records to the assembler process", n)

    def _requeue(self, entry: _Entry, dead: int | None) -> bool:
        """Put marks that could not be sent back at the head of the outbox and wait for a process to take
        them: a new one when ``dead`` (the generation that died), else the one starting. False when there will
        be none (the collector is stopping: the next start's recovery is what remains)."""
        spans, logs, _ = entry
        n = len(spans) + len(logs)
        key = (spans[0] if spans else None, logs[0] if logs else None)  # a resend starts with the same marks
        if key == self._last_failed:  # its second process died with it: perhaps it is what kills them
            log.error(
                "the assembler process died twice on the same %d records; they are dropped (their runs are "
                "not written)",
                n,
            )
            self._last_failed = None
            with self._cond:
                self._sent = max(self._sent - n, 0)  # counted as sent when it left the outbox
            return True
        self._last_failed = key
        with self._cond:
            self._outbox.appendleft(entry)
            self._sent = max(self._sent - n, 0)  # the exit may have reset it already
            self._queued += n
        supervisor = self._supervisor
        given_up_at = (
            time.monotonic() + self._start_timeout + 60.0
        )  # a send that failed with its process alive
        while True:
            with self._cond:
                if self._stopping:
                    self._queued -= sum(len(s) + len(lg) for s, lg, _ in self._outbox)
                    self._outbox.clear()
                    return False
                if self._disabled:
                    return True
                if time.monotonic() > given_up_at:  # never seen to die: these marks go, the sender goes on
                    log.error(
                        "could not send %d records to the assembler process; their runs are not written", n
                    )
                    if self._outbox and self._outbox[0] is entry:
                        self._outbox.popleft()
                        self._queued -= n
                    return True
            if supervisor.alive and (dead is None or supervisor.generation != dead):
                return True
            if supervisor.alive:  # the dead one's: its supervisor has not seen the death yet
                time.sleep(0.05)
            else:
                supervisor.wait_ready(0.5)

    # ---- what the process sends ----------------------------------------------------------------------------

    def _received(self, message: Message, frames: list[bytes], channel: Channel) -> None:
        if isinstance(message, Rows):
            self._run_writer.submit(rows_from(message, frames))
        elif isinstance(message, Counters):
            self._update(message.counters)
        elif isinstance(message, Progress):
            with self._cond:
                self._progress = (message.received, message.inbox)
        elif isinstance(message, Forward):
            if self._forward is not None:
                self._forward(wire.loads(message.records)[0])
        elif isinstance(message, ReadTraces | LatestSpanTime | RecentTraces):
            self._answer(message, channel)
        else:
            log.error("unexpected %s from the assembler process; ignored", type(message).__name__)

    def _answer(self, call: ReadTraces | LatestSpanTime | RecentTraces, channel: Channel) -> None:
        """Serve a read the process asked for, from the database (a read's rows go as Arrow IPC frames), on
        the channel it came on."""
        frames: list[Any] = []
        value: Any = None
        try:
            if isinstance(call, ReadTraces):
                frames = wire.ipc_frames(
                    *self.reader.load_tables(
                        call.trace_ids, call.lo_ns, call.hi_ns, whole=call.whole, commits=call.commits
                    )
                )
            elif isinstance(call, LatestSpanTime):
                value = self.reader.latest_span_time()
            else:
                traces, with_runs = self.reader.recent_traces(call.since_ns)
                value = (traces, list(with_runs))
            reply: Message = Reply(call.call_id, value)
        except Exception as exc:
            log.exception("serving %s for the assembler process failed", type(call).__name__)
            reply, frames = CallFailed(call.call_id, f"{type(exc).__name__}: {exc}"), []
        with contextlib.suppress(ChannelClosed):  # the process is gone; its successor asks again
            channel.send(reply, frames)

    def _update(self, data: dict[str, Any]) -> None:
        stats = AssemblyStats.from_dict(data["stats"])
        with self._cond:
            self._snapshot, self._reported = stats, (data["received"], data["inbox"])

    def _exited(self, code: int | None) -> None:
        """The process exited: its counters are kept, its marks in flight are in the database (the next
        process's recovery finds the traces it held)."""
        with self._cond:
            self._retired = self._retired.plus(self._snapshot)
            self._snapshot, self._reported, self._progress = _empty(), (0, 0), (0, 0)
            self._sent = 0

    def _gave_up(self) -> None:
        log.error(
            "agent runs are no longer assembled until the collector restarts (spans are still stored, and "
            "that start recovers their runs)"
        )
        with self._cond:
            self._disabled = True
            self._outbox.clear()
            self._queued = 0
            self._cond.notify_all()
