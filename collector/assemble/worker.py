"""The assembler process: assembly, reconstruction, scoring and run-row building, off the collector's GIL.

Everything after a commit is CPU work in Python over records (some 30 µs a span), and in the collector's process it
would take turns on the interpreter lock with the receivers and slow the writer's DuckDB calls, which take that
lock too. Here it runs in a process of its own: the collector sends the marks of the records it committed; this
process reads each completed trace's records back through the collector (the database stays with its single
writer, which runs the query and sends the Arrow rows) and sends back the rows to write. It owns no file and no
socket but the pair it was started with.

Messages on the socket pair (``multiprocessing.connection`` framing, pickled tuples):

    collector -> here:  ("setup", WorkerSetup) first, then ("marks", bytes), ("reply", call_id, (ok, value)),
                        ("reply_frames", call_id, n) followed by n raw frames (``wire.ipc_frames``), ("stop",)
    here -> collector:  ("ready",), ("rows", head, n) followed by n raw frames (``wire.run_rows_frames``),
                        ("forward", bytes), ("call", name, args),
                        ("stats", dict), ("progress", received, inbox), ("stopped",)

Run as ``python -m collector.assemble.worker FD`` by ``collector.assemble.remote``; not a user command.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.store.rows import logs_from_arrow, spans_from_arrow
from collector.assemble.assembler import Assembler, Read
from collector.assemble.completed import CompletedTrace
from collector.config import AssemblerConfig
from collector.process import frames as wire
from collector.process.child import apply_helper_settings, helper_main
from collector.process.tuning import TRIM_INTERVAL, release_free_memory
from collector.score.config import ScoringConfig
from collector.score.stage import ScoringStage
from collector.store.reader import StoredTrace, group_by_trace
from collector.store.runs import build_batches

log = logging.getLogger("agentotel.assembler")

#: how often the collector hears this process's counters (its backlog and open traces drive back-pressure)
STATS_INTERVAL = 0.1
#: how long a read through the collector may take before the assembler gives up on it
CALL_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class WorkerSetup:
    assembler: AssemblerConfig
    scoring: ScoringConfig
    forwarding: bool
    log_level: int = logging.INFO
    #: how this process tunes itself (``Tuning.as_tuple``)
    tuning: tuple[int, bool, float, bool] = (0, False, 0.0, False)


class RemoteCallError(RuntimeError):
    """The collector could not answer a read (its message says why)."""


class _Link:
    """This side of the socket pair: sends from any thread; a call's reply is routed to whoever waits for it (one
    thread may have several calls outstanding: the assembler asks for its next read before it works on this one)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._send_lock = threading.Lock()
        self._call_lock = threading.Lock()
        self.replies: queue.Queue[Any] = queue.Queue()
        self.closed = False
        self._calls = 0
        self._outstanding: set[int] = set()
        self._early: dict[int, tuple[bool, Any]] = {}  # replies to outstanding calls not waited for yet

    def send(self, message: tuple[Any, ...]) -> None:
        if self.closed:
            raise ConnectionError("the collector closed the connection")
        with self._send_lock:
            try:
                self.conn.send(message)
            except (OSError, ValueError):
                self.closed = True
                raise

    def send_frames(self, message: tuple[Any, ...], frames: Sequence[Any]) -> None:
        """A message followed by raw frames, with nothing in between."""
        if self.closed:
            raise ConnectionError("the collector closed the connection")
        with self._send_lock:
            try:
                self.conn.send(message)
                for frame in frames:
                    self.conn.send_bytes(frame)
            except (OSError, ValueError):
                self.closed = True
                raise

    def call(self, name: str, *args: Any) -> Any:
        return self.result(self.request(name, *args), name)

    def request(self, name: str, *args: Any) -> int:
        """Send a call; ``result`` waits for its answer."""
        with self._call_lock:
            self._calls += 1
            call_id = self._calls
            self._outstanding.add(call_id)
        try:
            self.send(("call", call_id, name, args))
        except BaseException:
            with self._call_lock:
                self._outstanding.discard(call_id)
            raise
        return call_id

    def result(self, call_id: int, name: str) -> Any:
        """The answer to a call made with ``request`` (``RemoteCallError`` if the collector could not answer)."""
        deadline = time.monotonic() + CALL_TIMEOUT
        try:
            while True:
                with self._call_lock:
                    early = self._early.pop(call_id, None)
                if early is not None:
                    ok, value = early
                    break
                try:
                    answered, (ok, value) = self.replies.get(timeout=max(deadline - time.monotonic(), 0.0))
                except queue.Empty:
                    raise RemoteCallError(f"the collector did not answer {name} within {CALL_TIMEOUT:g}s") from None
                if answered == call_id or answered is None:  # None: the connection closed
                    break
                with self._call_lock:
                    if answered in self._outstanding:  # another outstanding call's: kept for its caller
                        self._early[answered] = (ok, value)
                    # else the late answer to an earlier call that timed out: nobody's
        finally:
            with self._call_lock:
                self._outstanding.discard(call_id)
                self._early.pop(call_id, None)
        if not ok:
            raise RemoteCallError(value)
        return value


class RemoteReader:
    """``TraceReader``'s interface, answered by the collector's reader (the database is the collector's)."""

    def __init__(self, link: _Link) -> None:
        self._link = link

    def load(self, trace_ids: Iterable[str], lo_ns: int, hi_ns: int, *, whole: bool = True,
             commits: Sequence[int] | None = None) -> dict[str, StoredTrace]:
        """The collector runs the query and sends its Arrow tables; they become records here, on this side."""
        ids = sorted(set(trace_ids))
        return self._records(ids, self._link.call("load", ids, lo_ns, hi_ns, whole, commits))

    def load_many(self, reads: Iterable[Read], *, whole: bool = True) -> Iterator[tuple[Read, Any]]:
        """``load`` for each read in turn, the next one asked for before this one is handed over: the collector
        runs its query while this process works on the records of the last (without, the assembler waited for
        every read). Yields each read with its traces, or with the exception that failed it."""
        pending: deque[tuple[Read, list[str], int]] = deque()
        reads = iter(reads)

        def ask() -> None:
            read = next(reads, None)
            if read is not None:
                ids = sorted(set(read[0]))
                pending.append((read, ids, self._link.request("load", ids, read[1], read[2], whole, read[3])))

        ask()
        while pending:
            read, ids, call_id = pending.popleft()
            ask()
            try:
                yield read, self._records(ids, self._link.result(call_id, "load"))
            except Exception as exc:
                yield read, exc

    @staticmethod
    def _records(ids: list[str], frames: Any) -> dict[str, StoredTrace]:
        spans, logs = wire.tables_from_frames(frames)
        return group_by_trace(ids, spans_from_arrow(spans), logs_from_arrow(logs))

    def latest_span_time(self) -> int | None:
        return self._link.call("latest_span_time")

    def recent_traces(self, since_ns: int) -> tuple[list[tuple[str, int, int]], set[str]]:
        return self._link.call("recent_traces", since_ns)

    def close(self) -> None:
        pass


class RemoteRunSink:
    """The last stage here: builds each batch's rows and sends them to the collector's run writer."""

    def __init__(self, link: _Link) -> None:
        self._link = link
        self.conversion_errors = 0
        self.sent = threading.Event()

    def start(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def consume(self, traces: Sequence[CompletedTrace]) -> None:
        if self._link.closed:
            return  # the collector is gone (its recovery rebuilds these runs from the stored spans at its restart)
        batches, errors = build_batches(traces, time.time_ns())
        self.conversion_errors += errors
        for rows in batches:
            head, frames = wire.run_rows_frames(rows)
            self._link.send_frames(("rows", head, len(frames)), frames)
        if batches:
            self.sent.set()  # the counters follow the rows promptly (the collector's tests and /metrics read them)


def serve(conn: Connection) -> None:
    """Run until told to stop (or the collector goes away)."""
    # The collector decides when this process stops (its "stop", or its end closing the socket): a Ctrl-C in the
    # terminal or a service manager's SIGTERM to the whole group must not cut the final drain short.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    link = _Link(conn)
    kind, setup = conn.recv()
    if kind != "setup":
        raise RuntimeError(f"expected the setup message first, got {kind!r}")
    apply_helper_settings("assembler", setup.log_level, setup.tuning)
    sink = RemoteRunSink(link)

    def forward(spans: Sequence[SpanRecord]) -> None:
        link.send(("forward", wire.dumps(spans)))

    scoring = ScoringStage(sink, setup.scoring, forward=forward if setup.forwarding else None)
    received = [0]
    last_sent = [0.0]
    trimmed = [time.monotonic()]

    def stats() -> dict[str, Any]:
        """Called between batches (on the assembler's thread, or after it stopped): what left the buffer has been
        sent as rows already. ``received`` is read first: a record arriving meanwhile is counted twice (as not
        received and as in the inbox), never as neither."""
        got = received[0]
        return {
            "received": got,
            "inbox": assembler.backlog,
            "open_traces": assembler.open_traces,
            "buffered_records": assembler.buffered_records,
            "assembler": dataclasses.asdict(assembler.stats),
            "completed": dict(assembler.buffer.stats.completed),
            "late_records": assembler.buffer.stats.late_records,
            "scoring": dataclasses.asdict(scoring.stats),
            "conversion_errors": sink.conversion_errors,
        }

    def publish() -> None:
        """After each round of the assembler (every tick, or batch): the counters, right after new rows, else
        every ``STATS_INTERVAL`` (a waiting thread taking the assembler's lock could starve behind it)."""
        now = time.monotonic()
        if setup.tuning[3] and now - trimmed[0] > TRIM_INTERVAL:
            release_free_memory()  # what the reads of completed traces and their rows left free
            trimmed[0] = now
        if not sink.sent.is_set() and now - last_sent[0] < STATS_INTERVAL:
            return
        sink.sent.clear()
        last_sent[0] = now
        with contextlib.suppress(OSError, ValueError):
            link.send(("stats", stats()))

    assembler = Assembler(setup.assembler, scoring, RemoteReader(link), on_step=publish,
                          whole_spans=setup.forwarding, read_plain_traces=setup.forwarding)

    stop_asked = threading.Event()

    def receive() -> None:
        """Records into the assembler, replies to the waiting caller; keeps going after "stop" (a read the
        final drain makes still needs its reply)."""
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):  # the collector is gone: nothing to send rows to
                link.closed = True
                if not stop_asked.is_set():
                    # Killed, not stopped: whatever is buffered here is stored there, and its next start
                    # recovers it. Assembling it now would only burn CPU for nobody.
                    log.warning("the collector went away; exiting")
                    logging.shutdown()
                    os._exit(0)
                link.replies.put((None, (False, "the collector closed the connection")))
                stop_asked.set()
                return
            kind = message[0]
            if kind == "marks":
                try:
                    spans, logs, commit = wire.load_marks(message[1])
                    assembler.consume(spans, logs, commit)
                except BaseException:
                    # This thread is the only reader of the socket: without it the collector's sender would block.
                    # Exit, so the collector starts a new process (its recovery re-reads these from the database).
                    log.exception("could not take marks from the collector; exiting to be restarted")
                    logging.shutdown()
                    os._exit(1)
                received[0] += len(spans) + len(logs)  # after consume: see stats()
                took.set()
            elif kind == "reply":
                link.replies.put((message[1], message[2]))
            elif kind == "reply_frames":
                try:
                    frames = [conn.recv_bytes() for _ in range(message[2])]
                except (EOFError, OSError):
                    continue  # the next recv sees the closed connection
                link.replies.put((message[1], (True, frames)))
            elif kind == "stop":
                stop_asked.set()
            else:
                log.error("unknown message %r from the collector; ignored", kind)

    took = threading.Event()

    def report_progress() -> None:
        """What was taken, soon after it was: the collector's back-pressure reads it, and the assembler's own
        counters (``stats``) wait for the end of its round, which a large batch makes long. Sent from a thread of
        its own: the receiving thread never writes to the socket (it is the only reader of this side, and the
        collector may be blocked writing to it while this process writes to the collector)."""
        while not stop_asked.is_set():
            if not took.wait(0.5):
                continue
            took.clear()
            try:
                link.send(("progress", received[0], assembler.backlog))
            except (OSError, ValueError, ConnectionError):
                return
            time.sleep(0.02)  # at most fifty reports a second

    receiver = threading.Thread(target=receive, name="agentotel-assembler-receive", daemon=True)
    receiver.start()
    threading.Thread(target=report_progress, name="agentotel-assembler-progress", daemon=True).start()
    assembler.start()  # recovery reads go through the collector, which serves them while it waits for "ready"
    link.send(("ready",))
    stop_asked.wait()
    assembler.shutdown()  # completes every open trace; their rows are sent before "stopped"
    with contextlib.suppress(OSError, ValueError):
        link.send(("stats", stats()))
        link.send(("stopped",))


def main(argv: Sequence[str] | None = None) -> int:
    return helper_main(serve, argv)


if __name__ == "__main__":
    sys.exit(main())
