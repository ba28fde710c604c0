import asyncio

import httpx
import pytest

from agentotel_eval.judge.errors import (
    JudgeOutputError,
    PermanentJudgeError,
    RetryableJudgeError,
    classify,
    parse_retry_after,
)
from agentotel_eval.judge.retry import RetriesExhausted, retry_judge_call
from agentotel_eval.retry import AttemptCounter, RetryPolicy


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
    assert await retry_judge_call(attempt, policy, counter, sleep=fake_sleep) == "ok"
    assert (counter.attempts, counter.retries) == (3, 2)
    assert 0.05 <= slept[0] <= 0.1 and 0.25 <= slept[1] <= 0.275


async def test_permanent_errors_are_not_retried():
    calls = 0

    async def attempt():
        nonlocal calls
        calls += 1
        raise StatusError(400)

    with pytest.raises(RetriesExhausted, match="not retryable") as info:
        await retry_judge_call(attempt, RetryPolicy(), sleep=lambda s: asyncio.sleep(0))
    assert calls == 1 and info.value.attempts == 1
    assert isinstance(info.value.__cause__, StatusError)


async def test_attempts_are_bounded():
    calls = 0

    async def attempt():
        nonlocal calls
        calls += 1
        raise StatusError(503)

    with pytest.raises(RetriesExhausted, match="after 3 attempt"):
        await retry_judge_call(
            attempt, RetryPolicy(max_attempts=3, base_delay=0), sleep=lambda s: asyncio.sleep(0)
        )
    assert calls == 3


async def test_a_longer_retry_after_than_allowed_fails_at_once():
    calls = 0

    async def attempt():
        nonlocal calls
        calls += 1
        raise StatusError(429, {"Retry-After": "3600"})

    with pytest.raises(RetriesExhausted, match="asked to retry after 3600s, more than max_retry_after=60s"):
        await retry_judge_call(attempt, RetryPolicy(max_retry_after=60), sleep=lambda s: asyncio.sleep(0))
    assert calls == 1


async def test_each_call_has_every_attempt_and_starts_its_backoff_afresh():
    """The runner counts a judgement's first answer and its repair in one counter: the repair still gets every
    attempt of the policy, and its backoff starts from the first step again."""
    slept = []

    async def fake_sleep(seconds):
        slept.append(seconds)

    def failing_twice():
        outcomes = [StatusError(503), StatusError(503), "ok"]

        async def attempt():
            item = outcomes.pop(0)
            if isinstance(item, Exception):
                raise item
            return item

        return attempt

    counter = AttemptCounter()
    policy = RetryPolicy(max_attempts=3, base_delay=1.0, max_delay=100.0)
    for _ in range(2):
        assert await retry_judge_call(failing_twice(), policy, counter, sleep=fake_sleep) == "ok"
    assert (counter.attempts, counter.retries) == (6, 4)
    assert len(slept) == 4
    assert all(0.5 <= d <= 1 for d in slept[0::2]) and all(1 <= d <= 2 for d in slept[1::2])
    assert counter.waited_s == pytest.approx(sum(slept))
