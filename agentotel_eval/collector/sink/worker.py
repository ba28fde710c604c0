"""One sink's queue and sender thread: ``submit`` never blocks, what cannot be delivered is counted and logged.

The queue is keyed by (run, metric) and bounded: a newer evaluation of a run (a re-score, the judge's answer after
the detectors') replaces the one still waiting in place, and past ``max_queue`` the oldest is dropped. One thread
sends batches of ``max_batch``; a failed batch is retried with the shared backoff policy (``agentotel_eval.retry``,
the server's Retry-After wins up to ``max_backoff``), since every tool's write here is an upsert a retry cannot
duplicate. A batch the tool refuses, or that exhausts its retries, is dropped and counted; the warning comes once
per interval, not once per batch. The thread keeps to ``cpu_share`` of a core (measured as its own CPU time) by
pausing after a batch: ingest shares this process and comes first.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from agentotel_eval.collector.config_sinks import SinkConfig
from agentotel_eval.collector.sink.records import SinkEvaluation
from agentotel_eval.retry import Failure, GaveUp, RetryPolicy, call_with_retries

log = logging.getLogger(__name__)

WARN_EVERY_S = 30.0


class SinkRetryable(Exception):
    """A failure a later attempt may not have: the tool is down, busy, or does not know the run's trace yet."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SinkRefused(Exception):
    """The tool refused the request for good (bad credentials, a payload it does not accept)."""


@dataclass(frozen=True, slots=True)
class Sent:
    """What became of a batch: the evaluations still waiting (the tool has not stored their run's trace yet: they
    are tried again with backoff) and how many it refused for good (``why``); all others were written."""

    waiting: Sequence[SinkEvaluation] = ()
    refused: int = 0
    why: str = ""


class SinkClient(Protocol):
    """One tool's API: ``send`` writes a batch (an upsert per evaluation) and says what became of it; it raises
    ``SinkRetryable`` or ``SinkRefused`` when the whole batch failed."""

    def send(self, batch: Sequence[SinkEvaluation]) -> Sent: ...

    def close(self) -> None: ...


@dataclass
class SinkStats:
    queued: int = 0
    sent: int = 0
    replaced: int = 0  # evaluations replaced in the queue by a newer one of the same run and metric
    dropped: int = 0
    failed_attempts: int = 0
    last_error: str = ""


class SinkWorker:
    """The queue and sender thread of one configured sink (see the module docstring). ``clock``, ``sleep`` and
    ``rng`` stand in for time in tests, as the forwarder's do."""

    def __init__(
        self,
        config: SinkConfig,
        client: SinkClient,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], bool] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self._client = client
        self._queue: OrderedDict[tuple[str, str, str], SinkEvaluation] = OrderedDict()
        self._cond = threading.Condition()
        self._stopping = False
        self._deadline = 0.0
        self._thread: threading.Thread | None = None
        self._clock = clock
        self._sleep = sleep or self._wait_before_retry
        self._rng = rng or random.Random()
        self._retry = RetryPolicy(
            max_attempts=config.max_retries + 1,
            base_delay=config.initial_backoff,
            max_delay=config.max_backoff,
            max_retry_after=math.inf,
            retry_after_jitter=0.0,
        )
        self._last_warning = -WARN_EVERY_S
        self.stats = SinkStats()

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"agentotel-sink-{self.config.kind}", daemon=True
            )
            self._thread.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Send what is queued within ``timeout_s``; the rest is counted as dropped."""
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            self._deadline = self._clock() + timeout_s
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s + 1.0)
        with self._cond:
            if self._queue:
                self._drop(len(self._queue), "not sent before shutdown")
                self._queue.clear()
            self.stats.queued = 0
        self._client.close()

    # -- producer side -----------------------------------------------------------------------------------------
    def submit(self, evaluations: Sequence[SinkEvaluation]) -> None:
        if not evaluations:
            return
        with self._cond:
            if self._stopping:
                self._drop(len(evaluations), "the collector is stopping")
                return
            for evaluation in evaluations:
                if evaluation.key in self._queue:
                    self.stats.replaced += 1
                self._queue[evaluation.key] = evaluation
            overflow = len(self._queue) - self.config.max_queue
            if overflow > 0:
                for _ in range(overflow):
                    self._queue.popitem(last=False)  # the oldest first: fresh scores are worth more
                self._drop(overflow, f"the queue is full ({self.config.max_queue} evaluations)")
            self.stats.queued = len(self._queue)
            self._cond.notify()

    # -- sender thread -----------------------------------------------------------------------------------------
    def _take(self) -> list[SinkEvaluation] | None:
        with self._cond:
            while not self._queue and not self._stopping:
                self._cond.wait()
            if not self._queue:
                return None
            batch: list[SinkEvaluation] = []
            while self._queue and len(batch) < self.config.max_batch:
                batch.append(self._queue.popitem(last=False)[1])
            self.stats.queued = len(self._queue)
            return batch

    def _run(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            cpu, wall = time.thread_time(), self._clock()
            self._deliver(batch)
            self._pause((time.thread_time() - cpu) / self.config.cpu_share - (self._clock() - wall))

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` unless stopping (then the rest is sent at once, within the shutdown's time)."""
        until = self._clock() + seconds
        with self._cond:
            while not self._stopping and (now := self._clock()) < until:
                self._cond.wait(until - now)

    def _deliver(self, batch: list[SinkEvaluation]) -> None:
        pending = batch

        def attempt() -> None:
            nonlocal pending
            outcome = self._client.send(pending)
            with self._cond:
                self.stats.sent += len(pending) - len(outcome.waiting) - outcome.refused
                if outcome.refused:
                    self._drop(outcome.refused, f"refused: {outcome.why}")
            if outcome.waiting:  # only these are tried again
                pending = list(outcome.waiting)
                raise SinkRetryable(
                    f"{len(pending)} evaluations wait for their run's trace to reach the tool"
                )

        try:
            call_with_retries(
                attempt,
                self._retry,
                self._classify,
                rng=self._rng,
                sleep=self._sleep,
                on_failure=self._count_failure,
            )
        except GaveUp as gave_up:
            exc = gave_up.__cause__
            if gave_up.failure.retryable:
                message = f"gave up after {gave_up.attempts} attempts: {self.stats.last_error}"
            elif isinstance(exc, SinkRefused):
                message = f"refused: {exc}"
            else:  # a mapping or transport bug must not end the thread
                message = f"{type(exc).__name__}: {exc}"
                log.debug("sink %s failed", self.name, exc_info=exc)
            with self._cond:
                self._drop(len(pending), message)

    def _classify(self, exc: Exception) -> Failure:
        if not isinstance(exc, SinkRetryable):
            return Failure(False)
        asked = exc.retry_after_s
        return Failure(True, None if asked is None else min(asked, self.config.max_backoff))

    def _count_failure(self, exc: Exception, failure: Failure) -> None:
        self.stats.failed_attempts += 1
        self.stats.last_error = str(exc)

    def _wait_before_retry(self, seconds: float) -> bool:
        """Wait before a retry; False once shutting down past the deadline."""
        until = self._clock() + seconds
        with self._cond:
            while True:
                now = self._clock()
                if self._stopping:
                    if now >= self._deadline:
                        return False
                    until = min(until, self._deadline)
                if now >= until:
                    return True
                self._cond.wait(until - now)

    def _drop(self, n: int, why: str) -> None:
        """Count ``n`` evaluations as dropped; warn at most once per interval (the caller holds the lock)."""
        self.stats.dropped += n
        self.stats.last_error = why
        now = self._clock()
        if now - self._last_warning >= WARN_EVERY_S:
            self._last_warning = now
            log.warning(
                "sink %s is dropping evaluations (%d dropped so far): %s", self.name, self.stats.dropped, why
            )
