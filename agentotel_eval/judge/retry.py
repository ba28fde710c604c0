"""The judge's retries: the shared policy (``agentotel_eval.retry``) with the judge's
classification and messages.

litellm's and the OpenAI SDK's own retries are switched off by the litellm client, so these are the only ones,
and every attempt is counted.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from agentotel_eval.judge.errors import Failure, JudgeError, classify
from agentotel_eval.retry import AttemptCounter, GaveUp, RetryPolicy, call_with_retries_async

T = TypeVar("T")


class RetriesExhausted(JudgeError):
    """Every attempt failed (or the failure was not retryable). ``__cause__`` is the last error."""

    def __init__(self, message: str, attempts: int, failure: Failure) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.failure = failure


async def retry_judge_call(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    counter: AttemptCounter | None = None,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """Run ``attempt`` until it succeeds, a failure is not retryable, or the policy gives up
    (RetriesExhausted)."""
    counter = counter if counter is not None else AttemptCounter()
    try:
        return await call_with_retries_async(attempt, policy, classify, counter, rng=rng, sleep=sleep)
    except GaveUp as gave_up:
        exc = gave_up.__cause__ or gave_up  # the last attempt's error
        failure = classify(exc)
        raise RetriesExhausted(
            _describe(exc, failure, gave_up.attempts, policy), gave_up.attempts, failure
        ) from exc


def _describe(exc: BaseException, failure: Failure, attempts: int, policy: RetryPolicy) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    if len(text) > 500:
        text = text[:500] + "…"
    if not failure.retryable:
        return f"judge call failed ({failure.kind}, not retryable): {text}"
    if failure.retry_after is not None and failure.retry_after > policy.max_retry_after:
        return (
            f"judge call failed: the provider asked to retry after {failure.retry_after:.0f}s, more than "
            f"max_retry_after={policy.max_retry_after:.0f}s: {text}"
        )
    return f"judge call failed after {attempts} attempt(s) ({failure.kind}): {text}"
