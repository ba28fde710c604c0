"""The queue and sender thread the forwarder and the sinks share: what the bound pushes out, what comes while
stopping and what is left at the shutdown's deadline reach ``on_drop`` with their reason; a batch whose
delivery raises is handed over as failed and the thread goes on with the next."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from agentotel_eval.collector.send_queue import Dropped, SendQueue
from tests.support.collector_harness import wait_until


class Fifo:
    """A ``Buffer`` of at most ``bound`` items, batches of ``batch``."""

    def __init__(self, bound: int, batch: int = 1) -> None:
        self.items: list[str] = []
        self.bound = bound
        self.batch = batch

    def __len__(self) -> int:
        return len(self.items)

    @property
    def queued(self) -> int:
        return len(self.items)

    def put(self, items: Sequence[str]) -> list[str]:
        self.items.extend(items)
        overflow = max(len(self.items) - self.bound, 0)
        pushed_out, self.items = self.items[:overflow], self.items[overflow:]
        return pushed_out

    def take(self) -> list[str]:
        batch, self.items = self.items[: self.batch], self.items[self.batch :]
        return batch

    def clear(self) -> list[str]:
        left, self.items = self.items, []
        return left


class Owner:
    """What an owner of the queue sees: every drop with its reason, the queued count,
    the batches delivered."""

    def __init__(self, deliver=None, bound: int = 100, batch: int = 1) -> None:
        self.dropped: list[tuple[list[str], Dropped, Exception | None]] = []
        self.delivered: list[list[str]] = []
        self.queued = 0
        self.queue = SendQueue[str](
            Fifo(bound, batch),
            deliver or self.delivered.append,
            name="test-send-queue",
            on_drop=lambda items, why, error: self.dropped.append((items, why, error)),
            on_queued=self._set_queued,
        )

    def _set_queued(self, queued: int) -> None:
        self.queued = queued

    def count(self, why: Dropped) -> int:
        return sum(len(items) for items, reason, _ in self.dropped if reason is why)


def test_a_full_queue_drops_the_oldest_and_counts_it_without_blocking() -> None:
    owner = Owner(bound=3)  # never started: nothing is taken
    owner.queue.submit(["a", "b"])
    owner.queue.submit(["c", "d", "e"])
    assert owner.dropped == [(["a", "b"], Dropped.FULL, None)]
    assert owner.queued == 3
    assert owner.queue.shutdown(0) is True
    assert owner.dropped[-1] == (["c", "d", "e"], Dropped.UNSENT, None)
    assert owner.queued == 0


def test_what_comes_after_shutdown_is_dropped_as_stopping_and_a_second_shutdown_does_nothing() -> None:
    owner = Owner()
    owner.queue.start()
    owner.queue.submit(["a"])
    wait_until(lambda: owner.delivered == [["a"]], what="the first batch")
    assert owner.queue.shutdown(1.0) is True
    owner.queue.submit(["late"])
    assert owner.dropped == [(["late"], Dropped.STOPPING, None)]
    assert owner.queue.shutdown(1.0) is False


def test_shutdown_counts_what_is_still_queued_when_a_stuck_delivery_outlasts_it() -> None:
    release = threading.Event()
    in_delivery = threading.Event()

    def deliver(batch: list[str]) -> None:  # a send that hangs past any deadline
        in_delivery.set()
        release.wait(30)

    owner = Owner(deliver=deliver)
    owner.queue.submit(["a", "b", "c"])
    owner.queue.start()
    assert in_delivery.wait(10)
    owner.queue.shutdown(0.1)
    assert owner.dropped == [(["b", "c"], Dropped.UNSENT, None)]
    assert owner.queued == 0
    release.set()


def test_a_backoff_ends_at_the_shutdown_deadline_and_no_retry_follows() -> None:
    """A delivery retrying with ``backoff`` is told to stop at the deadline instead of waiting the minute out;
    each batch still queued then gets its one attempt and gives up at once."""
    in_delivery = threading.Event()
    attempts: list[str] = []

    def deliver(batch: list[str]) -> None:
        in_delivery.set()
        while True:  # an endpoint that is always down, asking for a minute each time
            attempts.append(batch[0])
            if not owner.queue.backoff(60.0):
                return

    owner = Owner(deliver=deliver)
    owner.queue.submit(["a", "b"])
    owner.queue.start()
    assert in_delivery.wait(10)
    owner.queue.shutdown(0.2)
    assert attempts == ["a", "b"] and owner.dropped == []
    assert not any(t.name == "test-send-queue" for t in threading.enumerate())


def test_a_backoff_due_before_the_deadline_still_ends_normally() -> None:
    results: list[bool] = []

    def deliver(batch: list[str]) -> None:
        results.append(owner.queue.backoff(0.05))

    owner = Owner(deliver=deliver)
    owner.queue.submit(["a"])
    owner.queue.start()
    wait_until(lambda: results, what="the backoff")
    owner.queue.shutdown(10.0)
    assert results == [True] and owner.dropped == []


def test_a_failing_delivery_drops_its_batch_as_failed_and_the_thread_goes_on() -> None:
    def deliver(batch: list[str]) -> None:
        if batch == ["bad"]:
            raise RuntimeError("encoder bug")
        owner.delivered.append(batch)

    owner = Owner(deliver=deliver)
    owner.queue.start()
    owner.queue.submit(["bad"])
    owner.queue.submit(["good"])
    wait_until(lambda: owner.delivered == [["good"]], what="the batch after the failing one")
    owner.queue.shutdown(1.0)
    ((items, why, error),) = owner.dropped
    assert (items, why) == (["bad"], Dropped.FAILED)
    assert isinstance(error, RuntimeError) and str(error) == "encoder bug"
