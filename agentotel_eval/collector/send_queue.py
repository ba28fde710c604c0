"""A bounded queue and the daemon thread that sends from it: ``submit`` never blocks, and what is not
delivered — pushed out by the bound, submitted while stopping, still queued at the shutdown's deadline, or in
a batch whose ``deliver`` raised — goes to ``on_drop`` with the reason, so its owner counts it;
nothing is lost silently.

The forwarder and each sink build on it: what they queue, how they batch (the ``Buffer``) and how they send
(``deliver``, retrying with ``backoff`` as its sleep) stay theirs. The OpenTelemetry SDK's ``BatchProcessor``
does not fit: it lives in a private module, bounds its queue by item count only, reports no drop to its owner
and gives the exporter's retries no shared shutdown deadline.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Dropped(enum.Enum):
    """Why items were not delivered."""

    FULL = "full"  # pushed out by the queue's bound (the oldest first)
    STOPPING = "stopping"  # submitted once shutdown had begun
    UNSENT = "unsent"  # still queued when shutdown ended
    FAILED = "failed"  # in a batch whose ``deliver`` raised


class Buffer(Protocol[T]):
    """What a ``SendQueue`` holds, and how: its bound, its batches. Called with the queue's lock held."""

    def put(self, items: Sequence[T]) -> list[T]:
        """Add ``items``; return what the bound pushed out to make room."""
        ...

    def take(self) -> list[T]:
        """The next batch (called only when the buffer is not empty)."""
        ...

    def clear(self) -> list[T]:
        """Empty the buffer; return what it held."""
        ...

    def __len__(self) -> int: ...

    @property
    def queued(self) -> int:
        """How much waits, in the unit its owner reports (records, evaluations)."""
        ...


class SendQueue(Generic[T]):
    """A ``Buffer`` fed by ``submit`` and sent by one daemon thread calling ``deliver(batch)``.

    ``on_drop(items, why, error)`` and ``on_queued(queued)`` run with the lock held (``lock``, reentrant:
    owners update their counters under it too). ``clock`` times the shutdown deadline;
    tests pass their own."""

    def __init__(
        self,
        buffer: Buffer[T],
        deliver: Callable[[list[T]], None],
        *,
        name: str,
        on_drop: Callable[[list[T], Dropped, Exception | None], None],
        on_queued: Callable[[int], None] = lambda _queued: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._buffer = buffer
        self._deliver = deliver
        self._name = name
        self._on_drop = on_drop
        self._on_queued = on_queued
        self._clock = clock
        self.lock = threading.Condition()
        self._stopping = False
        self._deadline = 0.0
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def shutdown(self, timeout_s: float) -> bool:
        """Let the thread send what is queued within ``timeout_s``; hand the rest to ``on_drop`` as
        ``UNSENT``. False when shutdown had already begun (nothing done)."""
        with self.lock:
            if self._stopping:
                return False
            self._stopping = True
            self._deadline = self._clock() + timeout_s
            self.lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s + 1.0)
        with self.lock:
            left = self._buffer.clear()
            if left:
                self._on_drop(left, Dropped.UNSENT, None)
            self._on_queued(self._buffer.queued)
        return True

    def submit(self, items: Sequence[T]) -> None:
        """Queue ``items``; never blocks. What the bound pushes out goes to ``on_drop`` as ``FULL``."""
        if not items:
            return
        with self.lock:
            if self._stopping:
                self._on_drop(list(items), Dropped.STOPPING, None)
                return
            pushed_out = self._buffer.put(items)
            if pushed_out:
                self._on_drop(pushed_out, Dropped.FULL, None)
            self._on_queued(self._buffer.queued)
            self.lock.notify()

    def backoff(self, seconds: float) -> bool:
        """Wait before a retry; False once shutting down past the deadline (then stop retrying). Every submit
        notifies the lock, so the wait runs to its own end: a wake-up does not cut the backoff short."""
        until = self._clock() + seconds
        with self.lock:
            while True:
                now = self._clock()
                if self._stopping:
                    if now >= self._deadline:
                        return False
                    until = min(until, self._deadline)
                if now >= until:
                    return True
                self.lock.wait(until - now)

    def pause(self, seconds: float) -> None:
        """Wait ``seconds`` unless stopping (then what is left goes at once, within the shutdown's time)."""
        until = self._clock() + seconds
        with self.lock:
            while not self._stopping and (now := self._clock()) < until:
                self.lock.wait(until - now)

    def _take(self) -> list[T] | None:
        with self.lock:
            while not len(self._buffer) and not self._stopping:
                self.lock.wait()
            if not len(self._buffer):
                return None
            batch = self._buffer.take()
            self._on_queued(self._buffer.queued)
            return batch

    def _run(self) -> None:
        while (batch := self._take()) is not None:
            try:
                self._deliver(batch)
            except Exception as exc:  # a bug in one batch's delivery must not end the thread
                log.debug("%s: delivering a batch failed", self._name, exc_info=exc)
                with self.lock:
                    self._on_drop(batch, Dropped.FAILED, exc)
