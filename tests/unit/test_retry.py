"""The retry policy the judge and the forwarder share: its delays (a pure function) and its two loops."""

import asyncio
import math
import random
import time

import pytest

from agentotel_eval.retry import (
    AttemptCounter,
    Failure,
    GaveUp,
    RetryPolicy,
    call_with_retries,
    call_with_retries_async,
    parse_retry_after,
    retry_delay,
)


class Busy(Exception):
    def __init__(self, retry_after=None):
        super().__init__("busy")
        self.retry_after = retry_after


class Refused(Exception):
    pass


def classify(exc):
    return Failure(isinstance(exc, Busy), getattr(exc, "retry_after", None))


def script(*outcomes):
    """An attempt that raises the scripted exceptions in turn, then returns the first other value."""
    items = list(outcomes)
    calls = []

    def attempt():
        calls.append(len(calls))
        item = items.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    attempt.calls = calls
    return attempt


def test_delays_grow_exponentially_with_bounded_jitter():
    policy = RetryPolicy(max_attempts=10, base_delay=1.0, max_delay=8.0)
    rng = random.Random(7)
    failure = Failure(True)
    for i, cap in enumerate([1, 2, 4, 8, 8, 8]):
        for _ in range(50):
            delay = retry_delay(i, failure, policy, rng)
            assert cap / 2 <= delay <= cap
    assert len({round(retry_delay(3, failure, policy, rng), 6) for _ in range(20)}) > 10  # jittered


def test_retry_after_is_honoured_and_bounded():
    policy = RetryPolicy(max_attempts=3, max_retry_after=30)
    rng = random.Random(1)
    delay = retry_delay(0, Failure(True, 5.0), policy, rng)
    assert 5.0 <= delay <= 5.5
    assert retry_delay(0, Failure(True, 25.0), policy, rng) >= 25.0  # not cut to max_delay (20)
    assert retry_delay(0, Failure(True, 3600.0), policy, rng) is None  # quota gone: give up now
    assert retry_delay(2, Failure(True, 1.0), policy, rng) is None  # attempts exhausted
    assert retry_delay(0, Failure(False), policy, rng) is None


def test_retry_after_without_jitter_or_limit():
    policy = RetryPolicy(max_retry_after=math.inf, retry_after_jitter=0.0)
    rng = random.Random(3)
    assert [retry_delay(0, Failure(True, s), policy, rng) for s in (0.0, 7.5, 86400.0)] == [0.0, 7.5, 86400.0]


def test_policy_validation():
    for bad in (
        {"max_attempts": 0},
        {"base_delay": -1},
        {"max_delay": -1},
        {"max_retry_after": -1},
        {"max_retry_after": math.nan},
        {"retry_after_jitter": -0.1},
    ):
        with pytest.raises(ValueError):
            RetryPolicy(**bad)


def test_sync_loop_sleeps_each_delay_and_counts_every_attempt():
    slept, seen = [], []
    attempt = script(Busy(), Busy(2.5), "ok")
    counter = AttemptCounter()
    policy = RetryPolicy(max_attempts=4, base_delay=0.2, retry_after_jitter=0.0)
    result = call_with_retries(
        attempt,
        policy,
        classify,
        counter,
        sleep=lambda s: slept.append(s) or True,
        on_failure=lambda exc, failure: seen.append(failure),
    )
    assert result == "ok"
    assert (counter.attempts, counter.retries) == (3, 2) and counter.waited_s == pytest.approx(sum(slept))
    assert 0.1 <= slept[0] <= 0.2 and slept[1] == 2.5
    assert seen == [Failure(True), Failure(True, 2.5)]


def test_sync_loop_gives_up_with_the_last_error():
    attempt = script(Busy(), Busy(), Busy(), "never")
    counter = AttemptCounter()
    with pytest.raises(GaveUp) as info:
        call_with_retries(attempt, RetryPolicy(max_attempts=3), classify, counter, sleep=lambda s: True)
    assert (
        len(attempt.calls) == 3 and info.value.attempts == 3 and (counter.attempts, counter.retries) == (3, 2)
    )
    assert isinstance(info.value.__cause__, Busy) and info.value.failure.retryable


def test_a_permanent_error_is_not_retried():
    slept = []
    attempt = script(Refused(), "never")
    with pytest.raises(GaveUp) as info:
        call_with_retries(attempt, RetryPolicy(), classify, sleep=lambda s: slept.append(s) or True)
    assert len(attempt.calls) == 1 and slept == [] and not info.value.failure.retryable
    assert isinstance(info.value.__cause__, Refused)


def test_a_sleep_that_says_stop_ends_the_retries_without_another_attempt():
    """The forwarder's wait returns False when it is shutting down past its deadline."""
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        return len(slept) < 2

    attempt = script(Busy(), Busy(), "not reached")
    counter = AttemptCounter()
    with pytest.raises(GaveUp) as info:
        call_with_retries(attempt, RetryPolicy(max_attempts=10), classify, counter, sleep=sleep)
    assert len(attempt.calls) == 2 and len(slept) == 2 and info.value.attempts == 2
    assert counter.retries == 1  # the stopped wait was no retry


async def test_async_loop_has_the_same_policy_and_counts():
    slept = []
    outcomes = [Busy(), Busy(0.25), "ok"]

    async def attempt():
        item = outcomes.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    async def sleep(seconds):
        slept.append(seconds)

    counter = AttemptCounter()
    policy = RetryPolicy(max_attempts=3, base_delay=0.1)
    assert await call_with_retries_async(attempt, policy, classify, counter, sleep=sleep) == "ok"
    assert (counter.attempts, counter.retries) == (3, 2)
    assert 0.05 <= slept[0] <= 0.1 and 0.25 <= slept[1] <= 0.275


async def test_async_loop_does_not_retry_a_cancellation():
    calls = 0

    async def attempt():
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await call_with_retries_async(attempt, RetryPolicy(), classify, sleep=lambda s: asyncio.sleep(0))
    assert calls == 1


def test_a_retry_after_date_is_read_in_gmt_whatever_zone_it_names(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # a local zone far from GMT: a date naming no zone must not use it
    time.tzset()
    try:
        now = 1445412470.0  # 2015-10-21 07:27:50 GMT
        assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=now) == pytest.approx(10.0)
        assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 -0000", now=now) == pytest.approx(10.0)
        assert parse_retry_after("Wed, 21 Oct 2015 09:28:00 +0200", now=now) == pytest.approx(10.0)
        assert parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now=now) == 0.0  # past: retry now
    finally:
        monkeypatch.undo()
        time.tzset()
