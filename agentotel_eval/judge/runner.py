"""The judge runner: one client, wrapped in everything a reliable, cheap judge call needs.

Per call: the response cache; a concurrency limit; a timeout per attempt; bounded retries with backoff; then
validation of the answer, and ONE repair request asking for valid JSON when the answer does not validate. A
failure is an outcome with the error and the raw text, never an exception that loses them
and never a silent 0.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from agentotel_eval.judge import prompts
from agentotel_eval.judge.cache import ResponseCache, cache_key
from agentotel_eval.judge.client import CustomLLMClient, Message, complete_once
from agentotel_eval.judge.errors import JudgeError, JudgeOutputError, PermanentJudgeError
from agentotel_eval.judge.retry import RetriesExhausted, retry_judge_call
from agentotel_eval.retry import AttemptCounter, RetryPolicy

T = TypeVar("T")
logger = logging.getLogger(__name__)

DEFAULT_MAX_CONCURRENCY = 8
MAX_ECHOED_ANSWER_CHARS = 4000  # how much of a bad answer the repair request quotes back


@dataclass(frozen=True, slots=True)
class JudgeOutcome(Generic[T]):
    """What one judgement produced. ``value`` is set when the answer validated; else ``error`` says why."""

    value: T | None
    raw: str | None  # the answer the value came from, or the last answer received
    cost_usd: float | None  # total over every answered attempt; 0.0 from the cache; None when unknown
    attempts: int  # HTTP attempts made (retries included, cache hits are 0)
    cached: bool = False
    repaired: bool = False
    error: str | None = None
    raw_answers: tuple[str, ...] = ()  # every answer received, in order (first answer and repair answer)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class JudgeStats:
    """Counters since the runner was made; thread-safe. For ``/metrics`` and for tests."""

    calls: int = 0
    attempts: int = 0
    retries: int = 0
    cache_hits: int = 0
    repairs: int = 0
    failures: int = 0
    cost_usd: float = 0.0
    unknown_cost_answers: int = 0
    cache_write_errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: float) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return {
                k: getattr(self, k)
                for k in (
                    "calls",
                    "attempts",
                    "retries",
                    "cache_hits",
                    "repairs",
                    "failures",
                    "cost_usd",
                    "unknown_cost_answers",
                    "cache_write_errors",
                )
            }


class JudgeRunner:
    """Runs judgements through one client with retries, a per-runner concurrency limit, a cache and repair.

    The concurrency limit holds per event loop (an ``asyncio.Semaphore`` belongs to one loop): ``evaluate()``
    and the collector run one loop, so for them it is the limit of the metric.
    """

    def __init__(
        self,
        client: CustomLLMClient,
        *,
        retry: RetryPolicy | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        attempt_timeout: float | None = None,
        temperature: float = 0.0,
    ) -> None:
        if not isinstance(client, CustomLLMClient):
            raise TypeError(f"client must be a CustomLLMClient, got {type(client).__name__}")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ValueError("max_concurrency must be a positive integer")
        self.client = client
        self.retry = retry or RetryPolicy()
        self.max_concurrency = max_concurrency
        self.attempt_timeout = attempt_timeout
        self.temperature = temperature
        self.stats = JudgeStats()
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._warned_cache = False
        self._prepared = False

    @property
    def model_name(self) -> str:
        return self.client.get_model_name()

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        with self._lock:
            semaphore = self._semaphores.get(loop)
            if semaphore is None:
                semaphore = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
            return semaphore

    async def _prepare_client(self) -> None:
        if self._prepared:
            return
        try:
            await self.client.prepare()
        except Exception as exc:
            raise PermanentJudgeError(f"judge client set-up failed: {type(exc).__name__}: {exc}") from exc
        self._prepared = True

    async def complete(
        self, messages: Sequence[Message], counter: AttemptCounter
    ) -> tuple[str, float | None]:
        """One answer to ``messages``, retried per the policy. Raises RetriesExhausted or
        PermanentJudgeError."""
        await (
            self._prepare_client()
        )  # outside the attempt timeout: a first import must not count as a timeout
        semaphore = self._semaphore()

        async def attempt() -> tuple[str, float | None]:
            async with semaphore:
                call = complete_once(self.client, messages, self.temperature)
                if self.attempt_timeout is None:
                    return await call
                return await asyncio.wait_for(call, self.attempt_timeout)

        return await retry_judge_call(attempt, self.retry, counter)

    async def judge(
        self,
        messages: Sequence[Message],
        validate: Callable[[str], T],
        *,
        cache: ResponseCache | None = None,
        cache_params: Mapping[str, Any] | None = None,
    ) -> JudgeOutcome[T]:
        """Ask, validate (``validate`` raises JudgeOutputError on a bad answer), repair
        once, cache the good."""
        self.stats.add(calls=1)
        key = None
        if cache is not None:
            params = {"temperature": self.temperature, **dict(cache_params or {})}
            key = cache_key(self.client.cache_identity(), messages, params)
            hit = cache.get(key)
            if hit is not None:
                try:
                    value = validate(hit.text)
                except JudgeOutputError:
                    pass  # validation changed since it was stored: ask again
                else:
                    self.stats.add(cache_hits=1)
                    return JudgeOutcome(value, hit.text, 0.0, 0, cached=True, raw_answers=(hit.text,))

        counter = AttemptCounter()
        answers: list[str] = []
        costs: list[float | None] = []
        conversation = list(messages)
        repaired = False
        try:
            for round_ in range(2):
                text, cost = await self.complete(conversation, counter)
                answers.append(text)
                costs.append(cost)
                try:
                    value = validate(text)
                except JudgeOutputError as problem:
                    if round_ == 1:
                        raise JudgeOutputError(
                            f"invalid answer, also after a repair request: {problem}"
                        ) from problem
                    repaired = True
                    self.stats.add(repairs=1)
                    conversation = [*messages, *_repair_turn(text, str(problem))]
                    continue
                if cache is not None and key is not None:
                    self._store(cache, key, text, _total(costs))
                return JudgeOutcome(
                    value,
                    text,
                    _total(costs),
                    counter.attempts,
                    repaired=repaired,
                    raw_answers=tuple(answers),
                )
        except (RetriesExhausted, JudgeError) as exc:
            error = str(exc)
        finally:
            self._count(counter, costs)
        self.stats.add(failures=1)
        return JudgeOutcome(
            None,
            answers[-1] if answers else None,
            _total(costs),
            counter.attempts,
            repaired=repaired,
            error=error,
            raw_answers=tuple(answers),
        )

    def _store(self, cache: ResponseCache, key: str, text: str, cost: float | None) -> None:
        """Cache a good answer; a cache that cannot be written costs a warning, never the verdict."""
        try:
            cache.put(key, text, cost_usd=cost, model=self.model_name)
        except OSError as exc:
            self.stats.add(cache_write_errors=1)
            if not self._warned_cache:
                self._warned_cache = True
                logger.warning(
                    "judge cache %s cannot be written (%s); answers are not cached", cache.directory, exc
                )

    def _count(self, counter: AttemptCounter, costs: list[float | None]) -> None:
        known = [c for c in costs if c is not None]
        self.stats.add(
            attempts=counter.attempts,
            retries=counter.retries,
            cost_usd=sum(known),
            unknown_cost_answers=len(costs) - len(known),
        )


def _repair_turn(bad_answer: str, problem: str) -> list[dict[str, str]]:
    quoted = (
        bad_answer
        if len(bad_answer) <= MAX_ECHOED_ANSWER_CHARS
        else bad_answer[:MAX_ECHOED_ANSWER_CHARS] + "…"
    )
    return [
        {"role": "assistant", "content": quoted},
        {"role": "user", "content": prompts.render("repair.v1", problem=problem)},
    ]


def _total(costs: Sequence[float | None]) -> float | None:
    """The sum, or None when any answer's cost is unknown: a partial sum would understate what was spent."""
    if not costs or any(c is None for c in costs):
        return None if costs else 0.0
    return float(sum(c for c in costs if c is not None))
