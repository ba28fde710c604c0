"""What every metric returns, and the small base class they share.

Metrics return a ``MetricResult`` and keep no per-case state of their own, so one instance can score many
cases from many threads. For compatibility with deepeval-style code, ``measure`` also sets ``.score``,
``.success`` and ``.reason`` on the instance (last writer wins; use the returned result when
sharing an instance).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

# ok: scored; error: the metric could not score (see ``error``); skipped: deliberately not run (budget,
# sampling, no expectation), pending: queued (the collector's judge queue).
RESULT_STATUSES = ("ok", "error", "skipped", "pending")


@dataclass(frozen=True, slots=True)
class MetricResult:
    """The outcome of one metric on one case."""

    metric: str
    score: float | None
    success: bool | None
    reason: str
    threshold: float
    status: str = "ok"
    evaluation_log: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    cost_usd: float | None = None
    model: str | None = None
    evaluator: str = ""
    evaluator_version: str = ""
    latency_s: float | None = None

    def __post_init__(self) -> None:
        if self.status not in RESULT_STATUSES:
            raise ValueError(f"status must be one of {RESULT_STATUSES}, got {self.status!r}")

    @property
    def label(self) -> str | None:
        """``pass`` / ``fail`` as in ``gen_ai.evaluation.score.label``; None when not scored."""
        if self.success is None:
            return None
        return "pass" if self.success else "fail"

    def with_latency(self, seconds: float) -> MetricResult:
        return replace(self, latency_s=seconds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "score": self.score,
            "success": self.success,
            "reason": self.reason,
            "threshold": self.threshold,
            "status": self.status,
            "evaluation_log": dict(self.evaluation_log),
            "error": self.error,
            "cost_usd": self.cost_usd,
            "model": self.model,
            "evaluator": self.evaluator,
            "evaluator_version": self.evaluator_version,
            "latency_s": self.latency_s,
        }


class BaseMetric(ABC):
    """A metric: ``measure(case) -> MetricResult``; ``a_measure`` is the async form."""

    #: the metric's name in results, in the ``evaluations.metric`` column and in span attribute names
    name: ClassVar[str] = "metric"
    #: bumped when scoring semantics change, so stored scores say which logic produced them
    version: ClassVar[str] = "1"

    threshold: float
    verbose: bool = False

    def __init__(self) -> None:
        self._compat_lock = threading.Lock()
        self.score: float | None = None
        self.success: bool | None = None
        self.reason: str | None = None
        self.evaluation_log: Mapping[str, Any] | None = None
        self.error: str | None = None

    @property
    def evaluator(self) -> str:
        return type(self).__name__

    @property
    def metric_name(self) -> str:
        """The name this instance reports (a mode-specific name for mode-dependent metrics)."""
        return self.name

    @abstractmethod
    def _measure(self, case: Any) -> MetricResult:
        """Score one case. Pure: no instance state is read except configuration."""

    def measure(self, case: Any) -> MetricResult:
        result = self._measure(case)
        self._remember(result)
        return result

    async def a_measure(self, case: Any) -> MetricResult:
        result = await self._a_measure(case)
        self._remember(result)
        return result

    async def _a_measure(self, case: Any) -> MetricResult:
        """Async scoring; deterministic metrics run inline (they are microseconds)."""
        return self._measure(case)

    def is_successful(self) -> bool:
        return bool(self.success)

    def _remember(self, result: MetricResult) -> None:
        with self._compat_lock:
            self.score = result.score
            self.success = result.success
            self.reason = result.reason
            self.evaluation_log = result.evaluation_log
            self.error = result.error
        if self.verbose:
            print(f"[{result.metric}] score={result.score} success={result.success} reason={result.reason}")

    def _result(self, **kwargs: Any) -> MetricResult:
        kwargs.setdefault("metric", self.metric_name)
        kwargs.setdefault("evaluator", self.evaluator)
        kwargs.setdefault("evaluator_version", self.version)
        kwargs.setdefault("threshold", self.threshold)
        return MetricResult(**kwargs)


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even when an event loop is already running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}
    context = contextvars.copy_context()  # the caller's ContextVars (e.g. the judge cache) follow the call

    def target() -> None:
        try:
            box["value"] = context.run(asyncio.run, coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="agentotel-run-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
