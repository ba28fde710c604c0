"""Decode workers: processes that decode export requests while the collector's process writes them.

The receivers hand each request body to ``DecodePool.decode`` (through the ``Ingestor``) and get back the rows
to append; the call blocks the receiver's thread, as decoding in it would, but with the interpreter lock
released, so the DuckDB writer's appends run at full speed beside it. A request goes to the worker with the
fewest requests in flight. Each worker is a helper process of its own ``Supervisor``.

When a worker dies, the requests it held fail as UNAVAILABLE (nothing of them was acknowledged, and the
exporter retries them) and the supervisor starts a new one. A worker that does not take a request's body
within the request's timeout, or does not answer it within a whole timeout after taking it, is stuck (decoding
takes well under a second even for the largest request): it is stopped, and replaced the same way.
"""

from __future__ import annotations

import functools
import itertools
import logging
import pickle
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from agentotel_eval.collector.decode.batch import from_message
from agentotel_eval.collector.process.channel import Channel
from agentotel_eval.collector.process.ingest_batch import DecodeUnavailable, IngestBatch
from agentotel_eval.collector.process.messages import (
    BAD_REQUEST,
    ERROR,
    OVER_LIMIT,
    Decode,
    Decoded,
    DecodeFailed,
    Message,
    Setup,
)
from agentotel_eval.collector.process.supervisor import HelperUnavailable, RestartPolicy, Supervisor
from agentotel_eval.collector.process.tuning import UNTUNED, Tuning
from agentotel_eval.otlp import DecodeError, LimitExceeded
from agentotel_eval.otlp.limits import DEFAULT_LIMITS, Limits
from agentotel_eval.reconstruct.declared import Convention
from agentotel_eval.redaction import RedactionSettings

log = logging.getLogger(__name__)

#: the workers' nice value: when the CPU is short, assembly goes first and ingest slows down (exporters wait a
#: little longer for their answers) instead of runs falling further and further behind ingest
NICE = 10
#: a worker that held a request this share of its timeout without answering is stuck
STUCK_SHARE = 0.9
#: a worker that ran this long before it died is started again without the delay of one that keeps dying
STABLE_SECONDS = 30.0


class _Call:
    __slots__ = ("event", "outcome")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.outcome: tuple[str, object] = ("unavailable", "no answer")


@dataclass(eq=False)
class _Worker:
    index: int
    supervisor: Supervisor
    pending: dict[int, _Call] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DecodeStats:
    requests: int
    restarts: int
    #: requests lost with a worker that died (answered UNAVAILABLE)
    failed_in_worker: int


class DecodePool:
    """``workers`` decode processes. ``decode`` is thread-safe; ``start``/``shutdown``
    are called once each."""

    def __init__(
        self,
        workers: int,
        *,
        keep_spans: bool | str = False,
        log_level: int = logging.INFO,
        tuning: Tuning = UNTUNED,
        nice: int = NICE,
        start_timeout: float = 60.0,
        conventions: Sequence[Convention] = (),
        limits: Limits = DEFAULT_LIMITS,
        redaction: RedactionSettings | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("a decode pool needs at least one worker")
        self._keep_spans = keep_spans
        # the user's declared conventions (the workers mark the spans they classify), the request limits and
        # what to redact before storing (pickled: the collector's own config, over the private socket pair to
        # the helper it starts)
        setup = Setup(
            log_level, tuning.as_tuple(), nice, pickle.dumps((tuple(conventions), limits, redaction))
        )
        self._workers = [
            _Worker(
                i,
                Supervisor(
                    f"decode-{i}",
                    "agentotel_eval.collector.decode.worker",
                    setup,
                    functools.partial(self._answered, i),
                    on_exit=functools.partial(self._exited, i),
                    policy=RestartPolicy(stable_after=STABLE_SECONDS),
                    start_timeout=start_timeout,
                ),
            )
            for i in range(workers)
        ]
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._rotation = itertools.count()
        self._stopping = False
        self._requests = 0
        self._failed_in_worker = 0

    @property
    def pids(self) -> list[int]:
        return [pid for w in self._workers if w.supervisor.alive and (pid := w.supervisor.pid) is not None]

    @property
    def supervisors(self) -> list[Supervisor]:
        return [w.supervisor for w in self._workers]

    @property
    def stats(self) -> DecodeStats:
        return DecodeStats(
            self._requests, sum(w.supervisor.restarts for w in self._workers), self._failed_in_worker
        )

    # ---- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> None:
        try:
            for worker in self._workers:
                worker.supervisor.start()
        except HelperUnavailable as exc:
            self.shutdown()
            raise DecodeUnavailable(str(exc)) from exc

    def shutdown(self, timeout: float = 5.0) -> None:
        """Tell every worker to stop after the requests it holds (the collector sends none by then); anything
        still waiting after ``timeout`` fails as UNAVAILABLE. Idempotent."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
        for worker in self._workers:  # all told first, so they finish side by side
            worker.supervisor.ask_to_stop(timeout)
        for worker in self._workers:
            worker.supervisor.wait_stopped(timeout)
        for worker in self._workers:
            self._fail_pending(worker, "the collector is stopping")

    # ---- requests ------------------------------------------------------------------------------------------

    def decode(self, signal: str, encoding: str, body: bytes, timeout: float = 30.0) -> IngestBatch:
        """The request decoded by a worker; ``DecodeError`` for a body that is not a valid request,
        ``DecodeUnavailable`` when no worker could decode it now."""
        call = _Call()
        request_id = next(self._ids)
        deadline = time.monotonic() + timeout  # the caller's: it is answered by then, whatever happens
        worker = self._pick(request_id, call)
        supervisor = worker.supervisor
        generation = supervisor.generation
        try:
            # Waiting for the channel is other requests' turn; the send itself making no headway for a whole
            # timeout means the worker stopped reading (the supervisor's watchdog stops it).
            supervisor.send(
                Decode(request_id, signal, encoding, self._keep_spans),
                [body],
                timeout=timeout,
                stuck_after=timeout,
            )
        except HelperUnavailable as exc:
            self._forget(worker, request_id)
            raise DecodeUnavailable(str(exc)) from None
        sent = time.monotonic()
        if not call.event.wait(max(deadline - sent, 0.0)):
            taken = self._forget(worker, request_id)
            if (
                taken
                and supervisor.generation == generation
                and supervisor.alive
                and time.monotonic() - sent >= STUCK_SHARE * timeout
            ):
                # (Nearly) a whole timeout without an answer: decoding never takes this long, the worker is
                # stuck (on this body, or before it). A caller that gave up having waited for its
                # turn leaves it alone.
                log.error("a decode worker did not answer within %gs; stopping it", timeout)
                supervisor.kill(generation)
            raise DecodeUnavailable(f"the request was not decoded within {timeout:g}s")
        kind, value = call.outcome
        if kind == "ok":
            message, frames = cast("tuple[Decoded, list[bytes]]", value)  # as ``_answered`` stores it
            return from_message(message, frames)
        if kind == BAD_REQUEST:
            raise DecodeError(str(value))
        if kind == OVER_LIMIT:
            raise LimitExceeded(str(value))
        if kind == ERROR:
            raise RuntimeError(f"decoding failed: {value}")
        raise DecodeUnavailable(str(value))

    def _pick(self, request_id: int, call: _Call) -> _Worker:
        """The live worker with the fewest requests in flight (in turn among equals); the
        call is registered."""
        with self._lock:
            if self._stopping:
                raise DecodeUnavailable("the collector is stopping")
            live = [w for w in self._workers if w.supervisor.alive]
            if not live:
                raise DecodeUnavailable("no decode worker is running (one is being restarted)")
            turn = next(self._rotation)
            worker = min(live, key=lambda w: (len(w.pending), (w.index - turn) % len(self._workers)))
            worker.pending[request_id] = call
            self._requests += 1
            return worker

    def _forget(self, worker: _Worker, request_id: int) -> bool:
        """Stop waiting for a request's answer; whether it was still awaited."""
        with self._lock:
            return worker.pending.pop(request_id, None) is not None

    def _answered(self, index: int, message: Message, frames: list[bytes], _channel: Channel) -> None:
        """A worker's answer (on its supervisor's receiving thread)."""
        if isinstance(message, Decoded):
            outcome: tuple[str, object] = ("ok", (message, frames))
        elif isinstance(message, DecodeFailed):
            outcome = (message.reason, message.message)
        else:
            log.error("unexpected %s from a decode worker; ignored", type(message).__name__)
            return
        with self._lock:
            call = self._workers[index].pending.pop(message.request_id, None)
        if call is not None:  # else its caller gave up waiting
            call.outcome = outcome
            call.event.set()

    def _exited(self, index: int, code: int | None) -> None:
        with self._lock:
            stopping = self._stopping
        lost = self._fail_pending(
            self._workers[index], "the collector is stopping" if stopping else "the decode worker exited"
        )
        if not stopping:
            with self._lock:
                self._failed_in_worker += lost

    def _fail_pending(self, worker: _Worker, why: str) -> int:
        """Answer what the worker still held as retryable (the exporters send it again); how many."""
        with self._lock:
            held = list(worker.pending.values())
            worker.pending.clear()
        for call in held:
            call.outcome = ("unavailable", f"{why}; try again")
            call.event.set()
        return len(held)
