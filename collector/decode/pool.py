"""Decode workers: processes that decode export requests while the collector's process writes them.

The receivers hand each request body to ``DecodePool.decode`` (through the ``Ingestor``) and get back the rows to
append; the call blocks the receiver's thread, as decoding in it did, but with the interpreter lock released, so
the DuckDB writer's appends run at full speed beside it (see ``collector.decode.worker`` for the measurement). A
request goes to the worker with the fewest requests in flight.

When a worker dies, the requests it held fail as UNAVAILABLE (nothing of them was acknowledged, and the exporter
retries them) and a new worker is started, with a growing delay if it keeps dying soon after it started. A worker
that does not answer a request within the export timeout is stuck (decoding takes well under a second even for
the largest request) and is stopped, to be replaced the same way.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import marshal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

from agentotel_eval.otlp import DecodeError
from collector.decode.batch import STOP, IngestBatch, from_frames
from collector.process.child import ChildUnavailable, close_connection, hang_up, start_child
from collector.process.tuning import UNTUNED, Tuning

log = logging.getLogger(__name__)

#: the workers' nice value: when the CPU is short, assembly goes first and ingest slows down (exporters wait a
#: little longer for their answers) instead of runs falling further and further behind ingest
NICE = 10
#: the longest wait before starting a worker again after it died
MAX_RESTART_DELAY = 5.0
#: how often the watchdog looks for a request body that a worker has stopped reading
WATCH_INTERVAL = 0.5


class DecodeUnavailable(RuntimeError):
    """No decode worker could take the request now (retryable: HTTP 503 / gRPC UNAVAILABLE)."""


class _Call:
    __slots__ = ("event", "outcome")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.outcome: tuple[str, object] = ("unavailable", "no answer")


@dataclass(eq=False)
class _Worker:
    index: int
    proc: subprocess.Popen[bytes]
    conn: Connection
    pending: dict[int, _Call] = field(default_factory=dict)
    send_lock: threading.Lock = field(default_factory=threading.Lock)
    alive: bool = True
    started_at: float = field(default_factory=time.monotonic)
    #: while a request is being sent to it, when that must be done by (0: no send under way)
    send_deadline: float = 0.0


@dataclass
class DecodeStats:
    requests: int = 0
    restarts: int = 0
    failed_in_worker: int = 0  # requests lost with a worker that died (answered UNAVAILABLE)


class DecodePool:
    """``workers`` decode processes. ``decode`` is thread-safe; ``start``/``shutdown`` are idempotent."""

    def __init__(self, workers: int, *, keep_spans: bool = False, log_level: int = logging.INFO,
                 tuning: Tuning = UNTUNED, nice: int = NICE, start_timeout: float = 60.0) -> None:
        if workers < 1:
            raise ValueError("a decode pool needs at least one worker")
        self._count = workers
        self._keep_spans = keep_spans
        self._setup = marshal.dumps((log_level, tuning.as_tuple(), nice))
        self._start_timeout = start_timeout
        self._workers: list[_Worker | None] = [None] * workers
        self._delays = [0.0] * workers  # the wait before the next restart of each worker
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._rotation = itertools.count()
        self._stopping = False
        self._started = False
        self.stats = DecodeStats()

    @property
    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers if w is not None and w.alive]

    # ---- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        try:
            for i in range(self._count):
                worker = self._workers[i] = self._spawn(i)
                self._listen(worker)
        except BaseException:
            self.shutdown()
            raise
        threading.Thread(target=self._watch, name="agentotel-decode-watchdog", daemon=True).start()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Tell every worker to stop after the requests it holds (the collector sends none by then); anything
        still waiting after ``timeout`` fails as UNAVAILABLE."""
        with self._lock:
            self._stopping = True
            workers = [w for w in self._workers if w is not None]
        for worker in workers:
            if worker.send_lock.acquire(timeout=timeout):  # a send under way is bounded by the watchdog
                try:
                    with contextlib.suppress(Exception):
                        worker.conn.send_bytes(STOP)
                finally:
                    worker.send_lock.release()
        for worker in workers:
            try:
                worker.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                worker.proc.wait()
            self._retire(worker, "the collector is stopping")

    def _spawn(self, index: int) -> _Worker:
        try:
            proc, conn = start_child("collector.decode.worker")
        except ChildUnavailable as exc:
            raise DecodeUnavailable(str(exc)) from exc
        try:
            conn.send_bytes(self._setup)
            if not conn.poll(self._start_timeout) or conn.recv_bytes() != b"ready":
                raise DecodeUnavailable(f"the decode worker did not start within {self._start_timeout:g}s")
        except (OSError, EOFError) as exc:
            conn.close()
            proc.kill()
            proc.wait()
            raise DecodeUnavailable(f"the decode worker exited while starting (code {proc.poll()})") from exc
        except BaseException:
            conn.close()
            proc.kill()
            proc.wait()
            raise
        return _Worker(index, proc, conn)

    def _listen(self, worker: _Worker) -> None:
        """Start reading the worker's answers (once it is in its slot: it may die, and be replaced, at once)."""
        threading.Thread(target=self._receive, args=(worker,), name=f"agentotel-decode-recv-{worker.index}",
                         daemon=True).start()

    def _watch(self) -> None:
        """Stop a worker that has not taken a request's body by the request's deadline: a worker that stopped
        reading would otherwise hold its sender, and every request queued behind it, forever."""
        while True:
            time.sleep(WATCH_INTERVAL)
            with self._lock:
                if self._stopping:
                    return
                workers = [w for w in self._workers if w is not None and w.alive]
            now = time.monotonic()
            for worker in workers:
                deadline = worker.send_deadline
                if deadline and now > deadline:
                    log.error("a decode worker stopped taking requests; stopping it")
                    with contextlib.suppress(OSError):
                        worker.proc.kill()
                    hang_up(worker.conn)

    # ---- requests -------------------------------------------------------------------------------------------

    def decode(self, signal: str, encoding: str, body: bytes, timeout: float = 30.0) -> IngestBatch:
        """The request decoded by a worker; ``DecodeError`` for a body that is not a valid request,
        ``DecodeUnavailable`` when no worker could decode it now."""
        call = _Call()
        request_id = next(self._ids)
        deadline = time.monotonic() + timeout  # the caller's: it is answered by then, whatever happens
        worker = self._pick(request_id, call)
        head = marshal.dumps((request_id, signal, encoding, self._keep_spans))
        if not worker.send_lock.acquire(timeout=timeout):  # behind other requests' bodies: the worker may be fine
            self._forget(worker, request_id)
            raise DecodeUnavailable(f"the decode worker did not take the request within {timeout:g}s")
        try:  # the head and its body, with nothing in between
            # A worker is stuck only if this send itself makes no headway for a whole timeout (the watchdog);
            # time spent waiting for the lock is other requests' turn.
            worker.send_deadline = time.monotonic() + timeout
            worker.conn.send_bytes(head)
            worker.conn.send_bytes(body)
        except Exception:  # closed, hung up by the watchdog, or the worker gone: retryable whatever the error
            self._forget(worker, request_id)
            raise DecodeUnavailable("the decode worker is gone; try again") from None
        finally:
            worker.send_deadline = 0.0
            worker.send_lock.release()
        sent = time.monotonic()
        if not call.event.wait(max(deadline - sent, 0.0)):
            taken = self._forget(worker, request_id)
            if taken and worker.alive and time.monotonic() - sent >= timeout:
                # A whole timeout without an answer: decoding never takes this long, the worker is stuck (on this
                # body, or before it). It is replaced; what it held is answered as retryable. (A caller that gave
                # up sooner, having waited for its turn to send, leaves the worker alone.)
                log.error("a decode worker did not answer within %gs; stopping it", timeout)
                with contextlib.suppress(OSError):
                    worker.proc.kill()
            raise DecodeUnavailable(f"the request was not decoded within {timeout:g}s")
        kind, value = call.outcome
        if kind == "ok":
            head, rows = value  # type: ignore[misc]
            return from_frames(head, rows)
        if kind == "bad_request":
            raise DecodeError(str(value))
        if kind == "error":
            raise RuntimeError(f"decoding failed: {value}")
        raise DecodeUnavailable(str(value))

    def _forget(self, worker: _Worker, request_id: int) -> bool:
        """Stop waiting for a request's answer; whether it was still awaited."""
        with self._lock:
            return worker.pending.pop(request_id, None) is not None

    def _pick(self, request_id: int, call: _Call) -> _Worker:
        """The live worker with the fewest requests in flight (in turn among equals); the call is registered."""
        with self._lock:
            if self._stopping:
                raise DecodeUnavailable("the collector is stopping")
            live = [w for w in self._workers if w is not None and w.alive]
            if not live:
                raise DecodeUnavailable("no decode worker is running (one is being restarted)")
            turn = next(self._rotation)
            worker = min(live, key=lambda w: (len(w.pending), (w.index - turn) % len(self._workers)))
            worker.pending[request_id] = call
            self.stats.requests += 1
            return worker

    def _receive(self, worker: _Worker) -> None:
        conn = worker.conn
        while True:
            try:
                request_id, kind, value = marshal.loads(conn.recv_bytes())
                if kind == "ok":
                    value = (value, conn.recv_bytes())  # the rows frame follows its head
            except (EOFError, OSError, ValueError, TypeError):
                break
            with self._lock:
                call = worker.pending.pop(request_id, None)
            if call is not None:  # else its caller gave up waiting
                call.outcome = (kind, value)
                call.event.set()
        self._retire(worker, "the decode worker exited")
        with self._lock:
            stopping = self._stopping
        if not stopping:
            code = worker.proc.wait()
            # A worker that dies soon after it started (a request that crashes it, retried by its exporter)
            # waits longer each time; one that ran a while starts again at once.
            lived = time.monotonic() - worker.started_at
            delay = self._delays[worker.index]
            self._delays[worker.index] = 0.0 if lived > 30.0 else min(max(delay * 2, 0.2), MAX_RESTART_DELAY)
            self._restart(worker.index, code)

    def _retire(self, worker: _Worker, why: str) -> None:
        """Take the worker out of rotation and fail what it still held (the exporters retry those)."""
        with self._lock:
            worker.alive = False
            held = list(worker.pending.values())
            worker.pending.clear()
            self.stats.failed_in_worker += len(held) if why != "the collector is stopping" else 0
        hang_up(worker.conn)  # wakes a thread reading or writing it; then it can be closed under the send lock
        if worker.send_lock.acquire(timeout=5.0):
            try:
                close_connection(worker.conn)
            finally:
                worker.send_lock.release()
        for call in held:
            call.outcome = ("unavailable", f"{why}; try again")
            call.event.set()

    def _restart(self, index: int, code: int | None) -> None:
        delay = self._delays[index]
        while True:
            with self._lock:
                if self._stopping:
                    return
            self.stats.restarts += 1
            log.error("a decode worker exited unexpectedly (code %s); starting a new one", code)
            time.sleep(delay)
            try:
                worker = self._spawn(index)
            except DecodeUnavailable:
                log.exception("could not start a decode worker; trying again")
                delay = min(max(delay * 2, 0.2), MAX_RESTART_DELAY)
                code = None
                continue
            with self._lock:
                if self._stopping:
                    stale: _Worker | None = worker
                else:
                    self._workers[index] = worker
                    stale = None
            if stale is not None:  # started while the collector began to stop: it never gets a request
                self._retire(stale, "the collector is stopping")
                with contextlib.suppress(OSError):
                    stale.proc.kill()
                stale.proc.wait()
                return
            self._listen(worker)
            return
