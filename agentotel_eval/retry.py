"""Bounded retries with exponential backoff and jitter, honouring the delay a server asks for.

One policy for the judge's calls (async) and the forwarder's exports (a thread of its own). The delay before
each retry is a pure function of the retry number, the failure and a random source (``retry_delay``); the
loops around it take the sleep as an argument, so a test sees every delay without waiting, and a sleep that
returns False (the forwarder shutting down past its deadline) ends the retries without another attempt.
Tenacity's loop always makes one more attempt after a sleep, and times with its own clock, hence this
small loop of ours.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
F = TypeVar("F", bound="Failure")


@dataclass(frozen=True, slots=True)
class Failure:
    """What the retry loop needs to know about an error: whether a retry can fix it, and how long the server
    asked us to wait (seconds), if it said."""

    retryable: bool
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try. ``max_attempts`` counts the first attempt (4 = one call and up to three retries)."""

    max_attempts: int = 4
    base_delay: float = 0.5
    #: the longest backoff of our own; a delay the server asks for is bounded by ``max_retry_after`` instead
    max_delay: float = 20.0
    #: a server asking us to wait longer than this (a spent quota, say) is not waited for: the call fails now
    max_retry_after: float = 60.0
    #: up to this fraction is added to a server's delay, so callers released together do not return together
    retry_after_jitter: float = 0.1

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if min(self.base_delay, self.max_delay, self.max_retry_after, self.retry_after_jitter) < 0:
            raise ValueError("retry delays must not be negative")
        if math.isnan(self.max_retry_after):
            raise ValueError("max_retry_after must be a number")


def retry_delay(retry_index: int, failure: Failure, policy: RetryPolicy, rng: random.Random) -> float | None:
    """Seconds to wait before retry number ``retry_index`` (0-based), or None to give up.

    Without a server's delay: "equal jitter", uniform in [cap/2, cap] with cap = base * 2**i bounded by
    max_delay, so concurrent callers spread out but none retries at once. With one: at least what the server
    asked, plus up to ``retry_after_jitter`` of it.
    """
    if not failure.retryable or retry_index + 1 >= policy.max_attempts:
        return None
    if failure.retry_after is not None:
        if failure.retry_after > policy.max_retry_after:
            return None
        return failure.retry_after * (1.0 + policy.retry_after_jitter * rng.random())
    cap = min(policy.max_delay, policy.base_delay * (2.0**retry_index))
    return cap / 2.0 + rng.random() * cap / 2.0


@dataclass(slots=True)
class AttemptCounter:
    """Counts the attempts of one call, for the caller's stats."""

    attempts: int = 0
    retries: int = 0
    waited_s: float = 0.0


class GaveUp(Exception):
    """No further attempt: the failure is permanent, the attempts are spent, the server asked for a longer
    wait than the policy allows, or the sleep said stop. ``__cause__`` is the last attempt's error."""

    def __init__(self, attempts: int, failure: Failure) -> None:
        super().__init__(f"gave up after {attempts} attempt(s)")
        self.attempts = attempts
        self.failure = failure


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return True


def call_with_retries(
    attempt: Callable[[], T],
    policy: RetryPolicy,
    classify: Callable[[Exception], F],
    counter: AttemptCounter | None = None,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], bool] = _sleep,
    on_failure: Callable[[Exception, F], object] | None = None,
) -> T:
    """Run ``attempt`` until it succeeds or the policy gives up (raises GaveUp from the last error). ``sleep``
    waits before a retry and returns False to stop retrying; ``on_failure`` sees every failed attempt."""
    counter = counter if counter is not None else AttemptCounter()
    rng = rng or random.Random()
    retry_index = 0
    while True:
        counter.attempts += 1
        try:
            return attempt()
        except Exception as exc:
            failure = classify(exc)
            if on_failure is not None:
                on_failure(exc, failure)
            delay = retry_delay(retry_index, failure, policy, rng)
            if delay is None or not sleep(delay):
                raise GaveUp(counter.attempts, failure) from exc
        retry_index += 1
        counter.retries += 1
        counter.waited_s += delay


async def call_with_retries_async(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    classify: Callable[[Exception], F],
    counter: AttemptCounter | None = None,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    on_failure: Callable[[Exception, F], object] | None = None,
) -> T:
    """``call_with_retries`` for a coroutine: the same policy, counting and GaveUp;
    cancellation is not retried."""
    counter = counter if counter is not None else AttemptCounter()
    rng = rng or random.Random()
    retry_index = 0
    while True:
        counter.attempts += 1
        try:
            return await attempt()
        except Exception as exc:
            failure = classify(exc)
            if on_failure is not None:
                on_failure(exc, failure)
            delay = retry_delay(retry_index, failure, policy, rng)
            if delay is None:
                raise GaveUp(counter.attempts, failure) from exc
        await sleep(delay)
        retry_index += 1
        counter.retries += 1
        counter.waited_s += delay


def parse_retry_after(value: Any, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds (fractions tolerated) or an HTTP date."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str | bytes):
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        text = text.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(text)
            except (TypeError, ValueError, IndexError):
                return None
            if parsed is None:
                return None
            if parsed.tzinfo is None:  # an HTTP date is in GMT, whether it says so or not ("-0000")
                parsed = parsed.replace(tzinfo=datetime.UTC)
            seconds = parsed.timestamp() - (time.time() if now is None else now)
    else:
        return None
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)
