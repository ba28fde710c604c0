"""Bounded retries with exponential backoff and jitter, honouring Retry-After.

litellm's and the OpenAI SDK's own retries are switched off by the litellm client, so these are the only ones,
and every attempt is counted. The delay computation is a pure function (tested without sleeping).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from agentotel_eval.judge.errors import Failure, JudgeError, classify

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try. ``max_attempts`` counts the first attempt (4 = one call and up to three retries)."""

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 20.0
    #: a server asking us to wait longer than this (a spent quota, say) is not waited for: the call fails now
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("retry delays must not be negative")


def retry_delay(retry_index: int, failure: Failure, policy: RetryPolicy, rng: random.Random) -> float | None:
    """Seconds to wait before retry number ``retry_index`` (0-based), or None to give up.

    Without Retry-After: "equal jitter", uniform in [cap/2, cap] with cap = base * 2**i bounded by max_delay,
    so concurrent callers spread out but none retries at once. With Retry-After: at least what the server
    asked, plus up to 10% so a crowd released together does not return together.
    """
    if not failure.retryable or retry_index + 1 >= policy.max_attempts:
        return None
    if failure.retry_after is not None:
        if failure.retry_after > policy.max_retry_after:
            return None
        return failure.retry_after * (1.0 + 0.1 * rng.random())
    cap = min(policy.max_delay, policy.base_delay * (2.0**retry_index))
    return cap / 2.0 + rng.random() * cap / 2.0


class RetriesExhausted(JudgeError):
    """Every attempt failed (or the failure was not retryable). ``__cause__`` is the last error."""

    def __init__(self, message: str, attempts: int, failure: Failure) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.failure = failure


@dataclass(slots=True)
class AttemptCounter:
    """Counts attempts and the kinds of failures seen, for the caller's stats."""

    attempts: int = 0
    retries: int = 0
    waited_s: float = 0.0
    last_failure: str | None = None


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    counter: AttemptCounter | None = None,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """Run ``attempt`` until it succeeds, a failure is not retryable, or the policy gives up."""
    counter = counter if counter is not None else AttemptCounter()
    rng = rng or random.Random()
    retry_index = 0
    while True:
        counter.attempts += 1
        try:
            return await attempt()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = classify(exc)
            counter.last_failure = failure.kind
            delay = retry_delay(retry_index, failure, policy, rng)
            if delay is None:
                raise RetriesExhausted(_describe(exc, failure, counter.attempts, policy), counter.attempts,
                                       failure) from exc
            counter.retries += 1
            counter.waited_s += delay
            retry_index += 1
            await sleep(delay)


def _describe(exc: BaseException, failure: Failure, attempts: int, policy: RetryPolicy) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    if len(text) > 500:
        text = text[:500] + "…"
    if not failure.retryable:
        return f"judge call failed ({failure.kind}, not retryable): {text}"
    if failure.retry_after is not None and failure.retry_after > policy.max_retry_after:
        return (f"judge call failed: the provider asked to retry after {failure.retry_after:.0f}s, more than "
                f"max_retry_after={policy.max_retry_after:.0f}s: {text}")
    return f"judge call failed after {attempts} attempt(s) ({failure.kind}): {text}"
