"""The assembler process: assembly, reconstruction, scoring and run-row building, off the collector's GIL.

Everything after a commit is CPU work in Python over records, and in the collector's process it would take
turns on the interpreter lock with the receivers and slow the writer's DuckDB calls, which take that lock too.
Here it runs in a process of its own: the collector sends the ``Marks`` of the records it committed; this
process reads each completed trace's records back through the collector (``ReadTraces``: the database stays
with its single writer, which runs the query and sends back the Arrow rows) and sends back the ``Rows`` to
write, the held spans to ``Forward``, its ``Counters`` and, as soon as it took marks, its ``Progress``. It
owns no file and no socket but the pair it was started with.

Run as ``python -m agentotel_eval.collector.pipeline.worker FD`` by
``agentotel_eval.collector.pipeline.helper_proxy``; not a user command.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.collector.assemble.assembler import Assembler, Read
from agentotel_eval.collector.config import AssemblerConfig
from agentotel_eval.collector.config_scoring import ScoringConfig
from agentotel_eval.collector.pipeline.assembly import assembly_stats
from agentotel_eval.collector.process import wire
from agentotel_eval.collector.process.channel import Channel, ChannelClosed
from agentotel_eval.collector.process.child import helper_main
from agentotel_eval.collector.process.completed import CompletedTrace
from agentotel_eval.collector.process.messages import (
    CallFailed,
    Counters,
    Forward,
    LatestSpanTime,
    Marks,
    Message,
    Progress,
    ReadTraces,
    Ready,
    RecentTraces,
    Reply,
    Setup,
    Stop,
    Stopped,
)
from agentotel_eval.collector.process.tuning import TRIM_INTERVAL, Tuning, release_free_memory
from agentotel_eval.collector.score.stage import ScoringStage
from agentotel_eval.collector.store.reader import StoredTrace, group_by_trace
from agentotel_eval.collector.store.runs import build_batches, rows_message
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.declared import Convention
from agentotel_eval.store.rows import logs_from_arrow, spans_from_arrow

log = logging.getLogger("agentotel.assembler")

#: how often the collector hears this process's counters (its backlog and open traces drive back-pressure)
COUNTERS_INTERVAL = 0.1
#: how long a read through the collector may take before the assembler gives up on it
CALL_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What this process is set up with (pickled into its ``Setup``)."""

    assembler: AssemblerConfig
    scoring: ScoringConfig
    forwarding: bool
    conventions: tuple[Convention, ...] = ()  # the user's declared conventions
    text_failures: bool = True  # [reconstruction] text_failures


class RemoteCallError(RuntimeError):
    """The collector could not answer a read (its message says why)."""


class _Calls:
    """Calls to the collector, each answered by a ``Reply`` (or ``CallFailed``) with its id; several may be
    outstanding (the assembler asks for its next read before it works on the last)."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._lock = threading.Lock()
        self._ids = 0
        self._waiting: dict[int, tuple[threading.Event, list[Any]]] = {}
        self._closed = False

    def request(self, make: Callable[[int], Message]) -> int:
        """Send the call ``make(call_id)``; ``result`` waits for its answer."""
        with self._lock:
            if self._closed:
                raise RemoteCallError("the collector closed the connection")
            self._ids += 1
            call_id = self._ids
            self._waiting[call_id] = (threading.Event(), [])
        try:
            self._channel.send(make(call_id))
        except BaseException:
            with self._lock:
                self._waiting.pop(call_id, None)
            raise
        return call_id

    def result(self, call_id: int, name: str) -> Any:
        with self._lock:
            event, box = self._waiting[call_id]
        try:
            if not event.wait(CALL_TIMEOUT):
                raise RemoteCallError(f"the collector did not answer {name} within {CALL_TIMEOUT:g}s")
        finally:
            with self._lock:
                self._waiting.pop(call_id, None)
        ok, value = box
        if not ok:
            raise RemoteCallError(value)
        return value

    def call(self, name: str, make: Callable[[int], Message]) -> Any:
        return self.result(self.request(make), name)

    def answered(self, message: Reply | CallFailed, frames: list[bytes]) -> None:
        with self._lock:
            waiting = self._waiting.get(message.call_id)
        if waiting is None:
            return  # the late answer to a call that timed out: nobody's
        event, box = waiting
        box[:] = [True, frames or message.value] if isinstance(message, Reply) else [False, message.message]
        event.set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            waiting = list(self._waiting.values())
        for event, box in waiting:
            box[:] = [False, "the collector closed the connection"]
            event.set()


class RemoteReader:
    """``TraceReader``'s interface, answered by the collector's reader (the database is the collector's)."""

    def __init__(self, calls: _Calls) -> None:
        self._calls = calls

    def load(
        self,
        trace_ids: Iterable[str],
        lo_ns: int,
        hi_ns: int,
        *,
        whole: bool = True,
        commits: Sequence[int] | None = None,
    ) -> dict[str, StoredTrace]:
        """The collector runs the query and sends its Arrow tables; they become records here, on this side."""
        ids = sorted(set(trace_ids))
        commit_list = list(commits) if commits is not None else None
        tables = self._calls.call("a read", lambda c: ReadTraces(c, ids, lo_ns, hi_ns, whole, commit_list))
        return self._records(ids, tables)

    def load_many(self, reads: Iterable[Read], *, whole: bool = True) -> Iterator[tuple[Read, Any]]:
        """``load`` for each read in turn, the next one asked for before this one is handed over: the
        collector runs its query while this process works on the records of the last. Yields each read with
        its traces, or with the exception that failed it."""
        pending: deque[tuple[Read, list[str], int]] = deque()
        reads = iter(reads)

        def ask() -> None:
            read = next(reads, None)
            if read is not None:
                ids = sorted(set(read[0]))
                commits = list(read[3]) if read[3] is not None else None
                pending.append(
                    (
                        read,
                        ids,
                        self._calls.request(lambda c: ReadTraces(c, ids, read[1], read[2], whole, commits)),
                    )
                )

        ask()
        while pending:
            read, ids, call_id = pending.popleft()
            ask()
            try:
                yield read, self._records(ids, self._calls.result(call_id, "a read"))
            except Exception as exc:
                yield read, exc

    @staticmethod
    def _records(ids: list[str], tables: Any) -> dict[str, StoredTrace]:
        spans, logs = wire.tables_from_frames(tables)
        return group_by_trace(ids, spans_from_arrow(spans), logs_from_arrow(logs))

    def latest_span_time(self) -> int | None:
        return self._calls.call("latest_span_time", LatestSpanTime)

    def recent_traces(self, since_ns: int) -> tuple[list[tuple[str, int, int]], set[str]]:
        traces, with_runs = self._calls.call("recent_traces", lambda c: RecentTraces(c, since_ns))
        return [tuple(t) for t in traces], set(with_runs)

    def close(self) -> None:
        pass


class RemoteRunSink:
    """The last stage here: builds each batch's rows and sends them to the collector's run writer."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self.conversion_errors = 0
        self.sent = threading.Event()

    def start(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def consume(self, traces: Sequence[CompletedTrace]) -> None:
        batches, errors = build_batches(traces, time.time_ns())
        self.conversion_errors += errors
        try:
            for rows in batches:
                self._channel.send(*rows_message(rows))
        except ChannelClosed:
            # the collector is gone (its recovery rebuilds these runs from the stored spans at its restart)
            return
        if batches:
            # the counters follow the rows promptly (the collector's tests and /metrics read them)
            self.sent.set()


def serve(channel: Channel, setup: Setup) -> None:
    """Run until told to stop (or the collector goes away)."""
    settings: WorkerSettings = pickle.loads(
        setup.settings
    )  # the collector's own, over our private socket pair
    trim = Tuning(*setup.tuning).malloc
    calls = _Calls(channel)
    sink = RemoteRunSink(channel)

    def forward(spans: Sequence[SpanRecord]) -> None:
        channel.send(Forward(wire.dumps(spans)))

    scoring = ScoringStage(sink, settings.scoring, forward=forward if settings.forwarding else None)
    received = [0]
    last_sent = [0.0]
    trimmed = [time.monotonic()]

    def counters() -> dict[str, Any]:
        """Called between batches (on the assembler's thread, or after it stopped): what left the buffer has
        been sent as rows already. ``received`` is read first: a record arriving meanwhile is counted twice
        (as not received and as in the inbox), never as neither."""
        got = received[0]
        return {
            "received": got,
            "inbox": assembler.backlog,
            "stats": assembly_stats(assembler, scoring, sink.conversion_errors).to_dict(),
        }

    def publish() -> None:
        """After each round of the assembler (every tick, or batch): the counters, right after new rows, else
        every ``COUNTERS_INTERVAL`` (a waiting thread taking the assembler's lock could starve behind it)."""
        now = time.monotonic()
        if trim and now - trimmed[0] > TRIM_INTERVAL:
            release_free_memory()  # what the reads of completed traces and their rows left free
            trimmed[0] = now
        if not sink.sent.is_set() and now - last_sent[0] < COUNTERS_INTERVAL:
            return
        sink.sent.clear()
        last_sent[0] = now
        with contextlib.suppress(ChannelClosed):
            channel.send(Counters(counters()))

    assembler = Assembler(
        settings.assembler,
        scoring,
        RemoteReader(calls),
        on_step=publish,
        whole_spans=settings.forwarding,
        read_plain_traces=settings.forwarding,
        conventions=settings.conventions,
        text_failures=settings.text_failures,
    )
    stop_asked = threading.Event()
    took = threading.Event()

    def receive() -> None:
        """Marks into the assembler, replies to their callers; goes on after ``Stop`` (a read the final drain
        makes still needs its reply)."""
        while True:
            try:
                message, frames = channel.receive()
            except (ChannelClosed, ValueError):  # the collector is gone: nothing to send rows to
                calls.close()
                if not stop_asked.is_set():
                    # Killed, not stopped: whatever is buffered here is stored there, and its next start
                    # recovers it. Assembling it now would only burn CPU for nobody.
                    log.warning("the collector went away; exiting")
                    logging.shutdown()
                    os._exit(0)
                return
            if isinstance(message, Marks):
                try:
                    assembler.consume(message.spans, message.logs, message.commit)
                except BaseException:
                    # This thread is the only reader of the channel: without it the collector's sender would
                    # block. Exit, so the collector starts a new process (its recovery re-reads these
                    # from the database).
                    log.exception("could not take marks from the collector; exiting to be restarted")
                    logging.shutdown()
                    os._exit(1)
                received[0] += len(message.spans) + len(message.logs)  # after consume: see counters()
                took.set()
            elif isinstance(message, Reply | CallFailed):
                calls.answered(message, frames)
            elif isinstance(message, Stop):
                stop_asked.set()
            else:
                log.error("unexpected %s from the collector; ignored", type(message).__name__)

    def report_progress() -> None:
        """What was taken, soon after it was: the collector's back-pressure reads it, and the assembler's own
        counters wait for the end of its round, which a large batch makes long. Sent from a thread of its own:
        the receiving thread never writes (it is the only reader of this side, and the collector may be
        blocked writing to it while this process writes to the collector)."""
        while not stop_asked.is_set():
            if not took.wait(0.5):
                continue
            took.clear()
            try:
                channel.send(Progress(received[0], assembler.backlog))
            except ChannelClosed:
                return
            time.sleep(0.02)  # at most fifty reports a second

    threading.Thread(target=receive, name="agentotel-assembler-receive", daemon=True).start()
    threading.Thread(target=report_progress, name="agentotel-assembler-progress", daemon=True).start()
    assembler.start()  # recovery reads go through the collector, which serves them before this is ready
    channel.send(Ready(os.getpid()))
    stop_asked.wait()
    assembler.shutdown()  # completes every open trace; their rows are sent before the last counters
    with contextlib.suppress(ChannelClosed):
        channel.send(Counters(counters()))
        channel.send(Stopped())


def main(argv: Sequence[str] | None = None) -> int:
    return helper_main("assembler", serve, argv)


if __name__ == "__main__":
    sys.exit(main())
