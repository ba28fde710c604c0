import asyncio
import random

import httpx
import pytest

from agentotel_eval.judge.errors import (
    Failure,
    JudgeOutputError,
    PermanentJudgeError,
    RetryableJudgeError,
    classify,
    parse_retry_after,
)
from agentotel_eval.judge.retry import (
    AttemptCounter,
    RetriesExhausted,
    RetryPolicy,
    call_with_retries,
    retry_delay,
)


class StatusError(Exception):
    def __init__(self, status, headers=None):
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.response = httpx.Response(status, headers=headers or {})


@pytest.mark.parametrize(
    ("exc", "retryable", "kind"),
    [
        (StatusError(429), True, "rate_limit"),
        (StatusError(500), True, "server"),
        (StatusError(502), True, "server"),
        (StatusError(503), True, "server"),
        (StatusError(408), True, "timeout"),
        (StatusError(400), False, "client"),
        (StatusError(401), False, "client"),
        (StatusError(404), False, "client"),
        (StatusError(409), False, "client"),
        (StatusError(422), False, "client"),
        (TimeoutError(), True, "timeout"),
        (httpx.ConnectError("refused"), True, "connection"),
        (httpx.ReadTimeout("slow"), True, "timeout"),
        (ConnectionResetError(), True, "connection"),
        (RetryableJudgeError("busy", retry_after=2.0), True, "other"),
        (PermanentJudgeError("no"), False, "client"),
        (JudgeOutputError("bad"), False, "client"),
        (ValueError("bug"), False, "other"),
    ],
)
def test_classification(exc, retryable, kind):
    failure = classify(exc)
    assert (failure.retryable, failure.kind) == (retryable, kind)


def test_retry_after_is_read_from_response_headers():
    assert classify(StatusError(429, {"Retry-After": "3"})).retry_after == 3.0
    assert classify(StatusError(503, {"retry-after-ms": "250"})).retry_after == 0.25
    assert classify(RetryableJudgeError("x", retry_after=1.5)).retry_after == 1.5


def test_parse_retry_after_forms():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(10.0)
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None


def test_delays_grow_exponentially_with_bounded_jitter():
    policy = RetryPolicy(max_attempts=10, base_delay=1.0, max_delay=8.0)
    rng = random.Random(7)
    failure = Failure(True, None, "server")
    for i, cap in enumerate([1, 2, 4, 8, 8, 8]):
        for _ in range(50):
            delay = retry_delay(i, failure, policy, rng)
            assert cap / 2 <= delay <= cap
    assert len({round(retry_delay(3, failure, policy, rng), 6) for _ in range(20)}) > 10  # jittered


def test_retry_after_is_honoured_and_bounded():
    policy = RetryPolicy(max_attempts=3, max_retry_after=30)
    rng = random.Random(1)
    delay = retry_delay(0, Failure(True, 5.0, "rate_limit"), policy, rng)
    assert 5.0 <= delay <= 5.5
    assert retry_delay(0, Failure(True, 3600.0, "rate_limit"), policy, rng) is None  # quota gone: give up now
    assert retry_delay(2, Failure(True, 1.0, "rate_limit"), policy, rng) is None  # attempts exhausted
    assert retry_delay(0, Failure(False, None, "client"), policy, rng) is None


async def test_call_with_retries_counts_attempts_and_sleeps():
    slept = []
    outcomes = [StatusError(500), StatusError(429, {"Retry-After": "0.25"}), "ok"]

    async def attempt():
        item = outcomes.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    async def fake_sleep(seconds):
        slept.append(seconds)

    counter = AttemptCounter()
    policy = RetryPolicy(max_attempts=4, base_delay=0.1)
    assert await call_with_retries(attempt, policy, counter, sleep=fake_sleep) == "ok"
    assert (counter.attempts, counter.retries) == (3, 2)
    assert 0.05 <= slept[0] <= 0.1 and 0.25 <= slept[1] <= 0.275


async def test_permanent_errors_are_not_retried():
    calls = 0

    async def attempt():
        nonlocal calls
        calls += 1
        raise StatusError(400)

    with pytest.raises(RetriesExhausted, match="not retryable") as info:
        await call_with_retries(attempt, RetryPolicy(), sleep=lambda s: asyncio.sleep(0))
    assert calls == 1 and info.value.attempts == 1
    assert isinstance(info.value.__cause__, StatusError)


async def test_attempts_are_bounded():
    calls = 0

    async def attempt():
        nonlocal calls
        calls += 1
        raise StatusError(503)

    with pytest.raises(RetriesExhausted, match="after 3 attempt"):
        await call_with_retries(attempt, RetryPolicy(max_attempts=3, base_delay=0), sleep=lambda s: asyncio.sleep(0))
    assert calls == 3


def test_policy_validation():
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(base_delay=-1)
