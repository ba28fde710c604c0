"""One sink's queue and sender thread: ``submit`` never blocks, what cannot be delivered is
counted and logged.

The queue is keyed by (run, metric) and bounded: a newer evaluation of a run (a re-score, the judge's answer
after the detectors') replaces the one still waiting in place, and past ``max_queue`` the oldest is dropped.
One thread (``collector.send_queue``) sends batches of ``max_batch``; a failed batch is retried with the
shared backoff policy (``agentotel_eval.retry``, the server's Retry-After wins up to ``max_backoff``), since
every tool's write here is an upsert a retry cannot duplicate. A batch the tool refuses, or that exhausts its
retries, is dropped and counted; the warning comes once per interval, not once per batch. The thread keeps to
``cpu_share`` of a core (measured as its own CPU time) by pausing after a batch: ingest shares this
process and comes first.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from agentotel_eval.collector.config_sinks import SinkConfig
from agentotel_eval.collector.send_queue import Dropped, SendQueue
from agentotel_eval.collector.sink.records import SinkEvaluation
from agentotel_eval.retry import Failure, GaveUp, RetryPolicy, call_with_retries

log = logging.getLogger(__name__)

WARN_EVERY_S = 30.0


class SinkRetryable(Exception):
    """A failure a later attempt may not have: the tool is down, busy, or does not know
    the run's trace yet."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SinkRefused(Exception):
    """The tool refused the request for good (bad credentials, a payload it does not accept)."""


@dataclass(frozen=True, slots=True)
class Sent:
    """What became of a batch: the evaluations still waiting (the tool has not stored their run's trace yet:
    they are tried again with backoff) and how many it refused for good (``why``); all others were written."""

    waiting: Sequence[SinkEvaluation] = ()
    refused: int = 0
    why: str = ""


class SinkClient(Protocol):
    """One tool's API: ``send`` writes a batch (an upsert per evaluation) and says what became of it; it
    raises ``SinkRetryable`` or ``SinkRefused`` when the whole batch failed."""

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


Key = tuple[str, str, str]


class _LatestEvaluations:
    """A sink's ``Buffer``: one evaluation per (run, metric), in the order they first came; a newer one
    replaces the one waiting in place (counted in ``stats.replaced``); past ``max_queue`` the oldest go."""

    def __init__(self, max_queue: int, max_batch: int, stats: SinkStats) -> None:
        self._items: OrderedDict[Key, SinkEvaluation] = OrderedDict()
        self._max_queue = max_queue
        self._max_batch = max_batch
        self._stats = stats

    def __len__(self) -> int:
        return len(self._items)

    @property
    def queued(self) -> int:
        return len(self._items)

    def put(self, items: Sequence[SinkEvaluation]) -> list[SinkEvaluation]:
        for evaluation in items:
            if evaluation.key in self._items:
                self._stats.replaced += 1
            self._items[evaluation.key] = evaluation
        overflow = len(self._items) - self._max_queue
        # the oldest first: fresh scores are worth more
        return [self._items.popitem(last=False)[1] for _ in range(max(overflow, 0))]

    def take(self) -> list[SinkEvaluation]:
        return [self._items.popitem(last=False)[1] for _ in range(min(self._max_batch, len(self._items)))]

    def clear(self) -> list[SinkEvaluation]:
        left = list(self._items.values())
        self._items.clear()
        return left


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
        self.stats = SinkStats()
        self._clock = clock
        self._queue = SendQueue[SinkEvaluation](
            _LatestEvaluations(config.max_queue, config.max_batch, self.stats),
            self._send,
            name=f"agentotel-sink-{config.kind}",
            on_drop=self._dropped,
            on_queued=self._set_queued,
            clock=clock,
        )
        self._sleep = sleep or self._queue.backoff
        self._rng = rng or random.Random()
        self._retry = RetryPolicy(
            max_attempts=config.max_retries + 1,
            base_delay=config.initial_backoff,
            max_delay=config.max_backoff,
            max_retry_after=math.inf,
            retry_after_jitter=0.0,
        )
        self._last_warning = -WARN_EVERY_S

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._queue.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Send what is queued within ``timeout_s``; the rest is counted as dropped."""
        if self._queue.shutdown(timeout_s):
            self._client.close()

    # -- producer side ---------------------------------------------------------------------------------------
    def submit(self, evaluations: Sequence[SinkEvaluation]) -> None:
        self._queue.submit(evaluations)

    def _set_queued(self, queued: int) -> None:
        self.stats.queued = queued

    def _dropped(self, items: list[SinkEvaluation], why: Dropped, error: Exception | None) -> None:
        if why is Dropped.FULL:
            self._drop(len(items), f"the queue is full ({self.config.max_queue} evaluations)")
        elif why is Dropped.STOPPING:
            self._drop(len(items), "the collector is stopping")
        elif why is Dropped.UNSENT:
            self._drop(len(items), "not sent before shutdown")
        else:
            self._drop(len(items), f"{type(error).__name__}: {error}")

    # -- sender thread ---------------------------------------------------------------------------------------
    def _send(self, batch: list[SinkEvaluation]) -> None:
        cpu, wall = time.thread_time(), self._clock()
        self._deliver(batch)
        self._queue.pause((time.thread_time() - cpu) / self.config.cpu_share - (self._clock() - wall))

    def _deliver(self, batch: list[SinkEvaluation]) -> None:
        pending = batch

        def attempt() -> None:
            nonlocal pending
            outcome = self._client.send(pending)
            with self._queue.lock:
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
            with self._queue.lock:
                self._drop(len(pending), message)

    def _classify(self, exc: Exception) -> Failure:
        if not isinstance(exc, SinkRetryable):
            return Failure(False)
        asked = exc.retry_after_s
        return Failure(True, None if asked is None else min(asked, self.config.max_backoff))

    def _count_failure(self, exc: Exception, failure: Failure) -> None:
        self.stats.failed_attempts += 1
        self.stats.last_error = str(exc)

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
