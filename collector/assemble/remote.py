"""The collector's side of the assembler process (see ``collector.assemble.worker`` for why it exists).

``AssemblerProcess`` stands where the in-process ``Assembler`` stands: the writer hands it every commit's new
records, and it exposes the same counters (``backlog``, ``open_traces``, ``stats`` ...). Behind it, one thread
sends records to the worker (the writer never waits on the socket), and one thread takes what comes back: rows for
the run writer, held spans for the forwarder, reads to serve from the database, and the worker's counters.

If the worker dies, a new one is started: its recovery re-opens the recent stored traces that have no runs yet,
the same path that covers a collector killed mid-flight. What that does not cover: a late span of a trace that
already had runs, in flight to the dead worker (its runs stay as they were), and traces older than the recovery
window (twice ``max_wait`` + ``grace_period`` before the newest stored span). After ``MAX_RESTARTS`` deaths the
collector stops assembling (ingest goes on; the next start recovers the runs).
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from agentotel_eval.otlp.records import SpanRecord
from collector.assemble.assembler import AssemblerStats
from collector.assemble.marks import LogMark, SpanMark
from collector.assemble.trace_buffer import BufferStats
from collector.assemble.worker import WorkerSetup
from collector.config import AssemblerConfig
from collector.process import frames as wire
from collector.process.child import ChildUnavailable, close_connection, hang_up, start_child
from collector.process.tuning import UNTUNED, Tuning
from collector.score.config import ScoringConfig
from collector.score.stage import ScoringStats
from collector.store.reader import TraceReader
from collector.store.runs import RunWriter

log = logging.getLogger(__name__)

#: restarts of a worker that keeps dying, before the collector gives up on assembly (ingest goes on)
MAX_RESTARTS = 5
#: a worker that ran this long before it died is not "dying again": the count of deaths in a row starts over
STABLE_SECONDS = 60.0


class AssemblerUnavailable(RuntimeError):
    """The assembler process could not be started."""


@dataclass
class _Snapshot:
    """The worker's counters as last reported (cumulative, so a lost report loses nothing)."""

    received: int = 0
    inbox: int = 0
    open_traces: int = 0
    buffered_records: int = 0
    assembler: AssemblerStats = field(default_factory=AssemblerStats)
    buffer: BufferStats = field(default_factory=BufferStats)
    scoring: ScoringStats = field(default_factory=ScoringStats)
    conversion_errors: int = 0


class StatsView:
    """An object whose ``stats`` are one part of the worker's counters: ``assembler.buffer`` and
    ``collector.score.stage`` in process mode, read as those of the in-process assembler and scoring stage are."""

    def __init__(self, owner: AssemblerProcess, part: str) -> None:
        self._owner = owner
        self._part = part

    @property
    def stats(self) -> Any:
        return getattr(self._owner._totals(), self._part)


class AssemblerProcess:
    """Assembly, reconstruction and scoring in a child process; the database stays here. It is sent the marks of
    committed records and reads completed traces back through this process (see ``_answer``)."""

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
    ) -> None:
        self.config = config
        self._setup = WorkerSetup(config, scoring, forward is not None, log.getEffectiveLevel(), tuning.as_tuple())
        self._reader = reader
        self._run_writer = run_writer
        self._forward = forward
        self._start_timeout = start_timeout
        self._cond = threading.Condition()
        self._outbox: deque[tuple[Sequence[SpanMark], Sequence[LogMark], int | None]] = deque()
        self._queued = 0  # records in the outbox
        self._sent = 0  # records sent to the current worker
        self._stopping = False
        #: the worker kept dying and was given up on: records are dropped here (they are stored), nothing waits
        self._disabled = False
        self._snapshot = _Snapshot()
        self._progress = (0, 0)  # (received, inbox) as the worker's receiving thread last said
        self._retired = _Snapshot()  # counters of workers that died, so totals never go backwards
        self._conn: Connection | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._send_lock = threading.Lock()
        self._abandoned: set[Connection] = set()  # connections closed on purpose (a failed start)
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self._sender: threading.Thread | None = None
        self._receiver: threading.Thread | None = None
        self.restarts = 0
        self._deaths_in_row = 0  # restarts since a worker last ran for STABLE_SECONDS
        self._last_failed: tuple[Any, ...] | None = None  # the marks whose send failed last (see _requeue)
        self._spawned_at = time.monotonic()
        self.buffer = StatsView(self, "buffer")
        self.scoring = StatsView(self, "scoring")

    # ---- what the collector reads ---------------------------------------------------------------------------

    @property
    def backlog(self) -> int:
        """Marks of committed records the worker has not buffered yet (counted against the write queue's bound)."""
        with self._cond:
            if self._disabled:
                return 0
            snap = self._snapshot
            received, inbox = self._progress
            if snap.received >= received:  # the full counters are the newer
                received, inbox = snap.received, snap.inbox
            return self._queued + max(self._sent - received, 0) + inbox

    @property
    def open_traces(self) -> int:
        return self._snapshot.open_traces

    @property
    def buffered_records(self) -> int:
        return self._snapshot.buffered_records

    @property
    def stats(self) -> AssemblerStats:
        return self._totals().assembler

    @property
    def conversion_errors(self) -> int:
        return self._totals().conversion_errors

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _totals(self) -> _Snapshot:
        with self._cond:
            snap, old = self._snapshot, self._retired
        return snap if not self.restarts else _merge(old, snap)

    # ---- stage interface ------------------------------------------------------------------------------------

    def consume(self, spans: Sequence[SpanMark], logs: Sequence[LogMark], commit: int | None = None) -> None:
        """Called by the writer after a commit with the marks of the new records and the commit's ``ingested_at``
        (see ``Assembler.consume``); only queues."""
        n = len(spans) + len(logs)
        if not n:
            return
        with self._cond:
            if self._disabled:
                return  # stored already; assembly is off until the collector restarts (logged when it happened)
            self._outbox.append((spans, logs, commit))  # copied once, by marshal (wire.dump_marks)
            self._queued += n
            self._cond.notify()

    def start(self) -> None:
        self._spawn()
        self._sender = threading.Thread(target=self._send_loop, name="agentotel-assembler-send", daemon=True)
        self._sender.start()

    def shutdown(self, timeout: float = 120.0) -> None:
        """Send what is queued, let the worker complete every open trace and send its rows, then stop it."""
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            self._cond.notify_all()
        if self._sender is not None:
            self._sender.join(timeout)  # it sends "stop" after the last records
        if not self._stopped.wait(timeout):
            log.error("the assembler process did not finish within %.0fs; stopping it", timeout)
        self._terminate()

    # ---- the worker -----------------------------------------------------------------------------------------

    def _spawn(self) -> None:
        try:
            proc, conn = start_child("collector.assemble.worker")
        except ChildUnavailable as exc:
            raise AssemblerUnavailable(f"could not start the assembler process: {exc}") from exc
        conn.send(("setup", self._setup))  # first, before the sender can see this connection
        self._ready.clear()
        with self._cond:
            self._conn, self._proc = conn, proc
            self._spawned_at = time.monotonic()
            self._sent = 0
            self._snapshot = _Snapshot()
            self._progress = (0, 0)
            stopping = self._stopping
        if not stopping:
            self._stopped.clear()
        self._receiver = threading.Thread(target=self._receive_loop, args=(conn, proc), name="agentotel-assembler-recv",
                                          daemon=True)
        self._receiver.start()
        if stopping:  # the collector began to stop while this one started: stop it as the old one would have been
            with contextlib.suppress(OSError, ValueError):
                self._send(conn, ("stop",))
        if not self._ready.wait(self._start_timeout):
            code = proc.poll()
            self._abandoned.add(conn)  # its receiver must not restart it
            self._terminate()
            raise AssemblerUnavailable(
                f"the assembler process did not start within {self._start_timeout:g}s"
                + (f" (it exited with code {code})" if code is not None else "")
            )

    def _terminate(self) -> None:
        proc, conn = self._proc, self._conn
        if conn is not None:
            hang_up(conn)  # its receiver, blocked reading, returns at once
            close_connection(conn)
        if proc is not None and proc.poll() is None:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _send(self, conn: Connection, message: tuple[Any, ...]) -> None:
        with self._send_lock:
            conn.send(message)

    def _send_loop(self) -> None:
        while True:
            with self._cond:
                while not self._outbox and not self._stopping:
                    self._cond.wait()
                if not self._outbox:  # stopping, and everything is sent
                    break
                # A message a commit: its ingested_at says where its records are read back from
                spans, logs, commit = self._outbox.popleft()
                n = len(spans) + len(logs)
                conn = self._conn
                self._sent += n  # counted before it leaves the outbox count: the backlog never dips in between
                self._queued -= n
                disabled = self._disabled
            if disabled:
                continue
            try:
                if conn is None:
                    raise OSError("no assembler process")
                self._send(conn, ("marks", wire.dump_marks(spans, logs, commit)))
            except (OSError, ValueError):
                # The worker died (the receiver restarts it). These marks go to the new one: its recovery re-opens
                # stored traces without runs, but a late span of a trace that has runs would be missed.
                if not self._requeue(spans, logs, commit, conn):
                    break
            except Exception:  # a bug in encoding: these records' runs are lost, the sender must go on
                log.exception("could not send %d records to the assembler process", n)
        conn = self._conn
        if conn is not None:
            try:
                self._send(conn, ("stop",))
            except (OSError, ValueError):
                self._stopped.set()

    def _requeue(self, spans: Sequence[SpanMark], logs: Sequence[LogMark], commit: int | None,
                 dead: Connection | None) -> bool:
        """Put marks that could not be sent back at the head of the outbox and wait for the next worker; False
        when there will be none (the collector is stopping: the next start's recovery is what remains)."""
        n = len(spans) + len(logs)
        key = (spans[0] if spans else None, logs[0] if logs else None)  # a resend starts with the same marks
        if key == self._last_failed:  # its second worker died with it: perhaps it is what kills them
            log.error("the assembler process died twice on the same %d records; they are dropped (their runs are "
                      "not written)", n)
            self._last_failed = None
            return True
        self._last_failed = key
        entry = (spans, logs, commit)
        with self._cond:
            self._outbox.appendleft(entry)
            self._sent = max(self._sent - n, 0)  # a restart may have reset it already
            self._queued += n
        given_up_at = time.monotonic() + self._start_timeout + 60.0  # a connection broken with its worker alive
        while True:
            if self._ready.is_set() and self._conn is dead:
                if time.monotonic() > given_up_at:  # never seen to die: these marks go, the sender goes on
                    log.error("could not send %d records to the assembler process; their runs are not written", n)
                    with self._cond:
                        if self._outbox and self._outbox[0] is entry:
                            self._outbox.popleft()
                            self._queued -= n
                    return True
                time.sleep(0.05)  # the receiver has not seen the death yet: "ready" is still the dead one's
            else:
                self._ready.wait(0.5)
            with self._cond:
                if self._stopping:
                    self._queued -= sum(len(s) + len(lg) for s, lg, _ in self._outbox)
                    self._outbox.clear()
                    return False
                if self._disabled or (self._ready.is_set() and self._conn is not dead):
                    return True

    def _receive_loop(self, conn: Connection, proc: subprocess.Popen[bytes]) -> None:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            except Exception:  # an unreadable message: treat the worker as failed (it is restarted)
                log.exception("unreadable message from the assembler process")
                with contextlib.suppress(OSError):
                    proc.kill()
                break
            kind = message[0]
            try:
                if kind == "rows":
                    frames = [conn.recv_bytes() for _ in range(message[2])]
                    self._run_writer.submit(wire.run_rows_from(message[1], frames))
                elif kind == "stats":
                    self._update(message[1])
                elif kind == "progress":
                    with self._cond:
                        self._progress = (message[1], message[2])
                elif kind == "forward":
                    if self._forward is not None:
                        self._forward(wire.loads(message[1])[0])
                elif kind == "call":
                    self._answer(conn, message[1], message[2], message[3])
                elif kind == "ready":
                    self._ready.set()
                elif kind == "stopped":
                    self._stopped.set()
                    return
                else:
                    log.error("unknown message %r from the assembler process; ignored", kind)
            except Exception:
                log.exception("handling %r from the assembler process failed", kind)
        # The connection closed without "stopped": the worker died.
        close_connection(conn)
        if conn in self._abandoned:  # we closed it (a failed start): whoever did so reports it
            return
        self._ready.clear()  # the sender waits for the next one instead of writing into a closed socket
        code = proc.wait()
        with self._cond:
            stopping = self._stopping
        if stopping:
            log.error("the assembler process exited (code %s) before it finished", code)
            self._stopped.set()
            return
        self._restart(code)

    def _restart(self, code: int | None) -> None:
        with self._cond:
            self._retired = _merge(self._retired, self._snapshot)
            self._snapshot = _Snapshot()
            self._progress = (0, 0)
            self._sent = 0  # what the dead worker had is in the database; its recovery there is the new one's
        self.restarts += 1
        if time.monotonic() - self._spawned_at > STABLE_SECONDS:
            self._deaths_in_row = 0
        self._deaths_in_row += 1
        if self._deaths_in_row > MAX_RESTARTS:
            log.error("the assembler process exited (code %s) %d times in a row; agent runs are no longer assembled "
                      "until the collector restarts (spans are still stored, and that start recovers their runs)",
                      code, self._deaths_in_row)
            with self._cond:
                self._disabled = True
                self._outbox.clear()
                self._queued = 0
            self._stopped.set()
            return
        log.error("the assembler process exited unexpectedly (code %s); starting a new one (its recovery re-opens "
                  "the stored traces that have no runs yet)", code)
        time.sleep(min(0.2 * 2 ** (self._deaths_in_row - 1), 5.0))
        with self._cond:
            if self._stopping:  # the collector began to stop meanwhile: its recovery at the next start remains
                self._stopped.set()
                return
        try:
            self._spawn()
        except AssemblerUnavailable:
            log.exception("could not restart the assembler process; agent runs are no longer assembled until the "
                          "collector restarts (spans are still stored)")
            with self._cond:
                self._disabled = True
                self._outbox.clear()
                self._queued = 0
            self._stopped.set()

    def _answer(self, conn: Connection, call_id: int, name: str, args: tuple[Any, ...]) -> None:
        """Serve a read the worker asked for, from the database (a load's rows go as raw Arrow IPC frames)."""
        frames: list[Any] | None = None
        value: Any = None
        try:
            if name == "load":
                ids, lo, hi, whole, commits = args
                frames = wire.ipc_frames(*self._reader.load_tables(ids, lo, hi, whole=whole, commits=commits))
            elif name == "latest_span_time":
                value = self._reader.latest_span_time()
            elif name == "recent_traces":
                value = self._reader.recent_traces(*args)
            else:
                raise ValueError(f"unknown call {name!r}")
        except Exception as exc:
            log.exception("serving %s for the assembler process failed", name)
            self._send(conn, ("reply", call_id, (False, f"{type(exc).__name__}: {exc}")))
            return
        if frames is None:
            self._send(conn, ("reply", call_id, (True, value)))
            return
        with self._send_lock:  # the header and its frames, with nothing in between
            conn.send(("reply_frames", call_id, len(frames)))
            for frame in frames:
                conn.send_bytes(frame)

    def _update(self, data: dict[str, Any]) -> None:
        snap = _Snapshot(
            received=data["received"],
            inbox=data["inbox"],
            open_traces=data["open_traces"],
            buffered_records=data["buffered_records"],
            assembler=AssemblerStats(**data["assembler"]),
            buffer=BufferStats(late_records=data["late_records"], completed=dict(data["completed"])),
            scoring=ScoringStats(**data["scoring"]),
            conversion_errors=data["conversion_errors"],
        )
        with self._cond:
            self._snapshot = snap


def _merge(a: _Snapshot, b: _Snapshot) -> _Snapshot:
    """Counters of two workers added (gauges from the newer)."""

    def add(x: Any, y: Any) -> Any:
        out = type(x)()
        for name in x.__dataclass_fields__:
            u, v = getattr(x, name), getattr(y, name)
            if isinstance(u, dict):
                merged = dict(u)
                for k, n in v.items():
                    merged[k] = merged.get(k, 0) + n
                setattr(out, name, merged)
            else:
                setattr(out, name, u + v)
        return out

    return _Snapshot(
        received=b.received, inbox=b.inbox, open_traces=b.open_traces, buffered_records=b.buffered_records,
        assembler=add(a.assembler, b.assembler), buffer=add(a.buffer, b.buffer), scoring=add(a.scoring, b.scoring),
        conversion_errors=a.conversion_errors + b.conversion_errors,
    )
