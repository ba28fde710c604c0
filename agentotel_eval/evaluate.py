"""Run metrics over test cases: ``await evaluate(cases, metrics)`` or ``evaluate_sync(cases, metrics)``.

Every metric runs on every case, at most ``concurrency`` at a time (LLM judge metrics await the network; the
deterministic ones finish inline in microseconds). A metric that raises does not stop the run: its result
for that case has ``status="error"`` and the message, and everything else goes on.

``cache`` turns on the LLM judge's on-disk response cache for the run (through the ``judge_cache_dir``
context variable, so evaluate and the judge need not import each other).
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from agentotel_eval import runtime
from agentotel_eval.metrics.base import BaseMetric, MetricResult, run_sync

__all__ = [
    "CaseResult",
    "EvaluationResult",
    "MetricSummary",
    "ProgressBar",
    "evaluate",
    "evaluate_sync",
    "resolve_cache_dir",
]

#: How many metric runs may be in flight at once (judge calls); deterministic metrics do not care.
DEFAULT_CONCURRENCY = 16
#: From this many cases on, progress is reported even when stderr is not a terminal (CI logs).
LONG_INPUT = 200
#: Environment variable that moves the judge response cache; the default is ``./.agentotel-cache``.
CACHE_DIR_ENV = "AGENTOTEL_CACHE_DIR"
DEFAULT_CACHE_DIR = ".agentotel-cache"


# --- results ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One test case and the results of every metric on it, in the order the metrics were given.

    ``success`` is True when every metric that scored the case succeeded and none raised; metrics that
    skipped the case (no expectation to compare with) neither pass nor fail it. A case no metric scored (nor
    raised on) is not ``scored``: it is reported apart and left out of the pass rate.
    """

    index: int
    test_case: Any
    results: tuple[MetricResult, ...]

    @property
    def success(self) -> bool:
        for result in self.results:
            if result.status == "error" or (result.status == "ok" and not result.success):
                return False
        return True

    @property
    def scored(self) -> bool:
        return any(r.status == "error" or (r.status == "ok" and r.score is not None) for r in self.results)

    @property
    def name(self) -> str | None:
        return getattr(self.test_case, "name", None)

    def __iter__(self) -> Iterator[MetricResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, key: int | str) -> MetricResult:
        """A result by position, or by metric name (the first with that name)."""
        if isinstance(key, str):
            for result in self.results:
                if result.metric == key:
                    return result
            raise KeyError(f"no result for metric {key!r}; have {[r.metric for r in self.results]}")
        return self.results[key]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "input": _input_text(self.test_case),
            "success": self.success,
            "scored": self.scored,
            "metrics": [r.to_dict() for r in self.results],
        }


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """Aggregates of one metric (by name) over a run."""

    metric: str
    count: int = 0
    scored: int = 0
    passed: int = 0
    errors: int = 0
    skipped: int = 0
    score_sum: float = 0.0
    cost_usd: float = 0.0

    @property
    def failed(self) -> int:
        return self.scored - self.passed

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.scored if self.scored else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "scored": self.scored,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "skipped": self.skipped,
            "mean_score": self.mean_score,
            "pass_rate": self.pass_rate,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """The outcome of a run: iterable and indexable per case, with summary figures."""

    cases: tuple[CaseResult, ...]
    duration_s: float = 0.0
    #: per metric name, in first-seen order (computed from ``cases`` when not given)
    metrics: Mapping[str, MetricSummary] = field(
        default=None,  # type: ignore[arg-type]  # None only until __post_init__ computes it
        repr=False,
        compare=False,
    )

    def __post_init__(self) -> None:
        if self.metrics is None:
            object.__setattr__(self, "metrics", _summarise(self.cases))

    def __iter__(self) -> Iterator[CaseResult]:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    def __getitem__(self, index: int) -> CaseResult:
        return self.cases[index]

    @property
    def scored(self) -> int:
        """Cases some metric scored (or raised on); the others had nothing to be compared with."""
        return sum(1 for c in self.cases if c.scored)

    @property
    def not_scored(self) -> int:
        return len(self.cases) - self.scored

    @property
    def passed(self) -> int:
        return sum(1 for c in self.cases if c.scored and c.success)

    @property
    def failed(self) -> int:
        return self.scored - self.passed

    @property
    def success(self) -> bool:
        return all(c.success for c in self.cases)

    @property
    def pass_rate(self) -> float | None:
        """Share of the scored cases whose every metric succeeded; None when no case was scored."""
        scored = self.scored
        return self.passed / scored if scored else None

    @property
    def errors(self) -> int:
        return sum(1 for c in self.cases for r in c.results if r.status == "error")

    @property
    def mean_scores(self) -> dict[str, float | None]:
        return {name: s.mean_score for name, s in self.metrics.items()}

    @property
    def total_cost_usd(self) -> float:
        """Summed ``cost_usd`` of every result (LLM judge calls; 0 for deterministic metrics)."""
        return math.fsum(s.cost_usd for s in self.metrics.values())

    def summary(self) -> dict[str, Any]:
        return {
            "cases": len(self.cases),
            "scored": self.scored,
            "not_scored": self.not_scored,
            "passed": self.passed,
            "failed": self.failed,
            "pass_rate": self.pass_rate,
            "errors": self.errors,
            "metrics": {name: s.to_dict() for name, s in self.metrics.items()},
            "total_cost_usd": self.total_cost_usd,
            "duration_s": self.duration_s,
        }

    def to_dict(self) -> dict[str, Any]:
        return {"cases": [c.to_dict() for c in self.cases], "summary": self.summary()}


def _summarise(cases: Iterable[CaseResult]) -> dict[str, MetricSummary]:
    acc: dict[str, list[Any]] = {}
    for case in cases:
        for r in case.results:
            # count, scored, passed, errors, skipped, scores, costs
            row = acc.setdefault(r.metric, [0, 0, 0, 0, 0, [], []])
            row[0] += 1
            if r.status == "ok" and r.score is not None:
                row[1] += 1
                row[2] += bool(r.success)
                row[5].append(r.score)
            elif r.status == "error":
                row[3] += 1
            elif r.status == "skipped":
                row[4] += 1
            if r.cost_usd:
                row[6].append(r.cost_usd)
    return {
        name: MetricSummary(name, c, s, p, e, k, math.fsum(scores), math.fsum(costs))
        for name, (c, s, p, e, k, scores, costs) in acc.items()
    }


def _input_text(case: Any) -> Any:
    value = getattr(case, "input", None)
    if isinstance(value, list):  # multimodal: keep the text parts, mark images
        return " ".join(part if isinstance(part, str) else "[image]" for part in value)
    return value


# --- progress -----------------------------------------------------------------------------------------------


class ProgressBar:
    """A progress report on stderr: a redrawn bar on a terminal, a line per 10% elsewhere (CI logs)."""

    def __init__(
        self, total: int, *, label: str = "cases", stream: TextIO | None = None, min_interval: float = 0.1
    ) -> None:
        self.total = total
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._min_interval = min_interval
        self._start = time.monotonic()
        self._last_draw = -math.inf
        self._last_decile = 0
        self._closed = False

    @classmethod
    def wanted(cls, total: int, show_progress: bool, stream: TextIO | None = None) -> bool:
        """Show progress when asked and it helps: on a terminal, or for long inputs."""
        if not show_progress or total == 0:
            return False
        stream = stream if stream is not None else sys.stderr
        return total >= LONG_INPUT or bool(getattr(stream, "isatty", lambda: False)())

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self._tty:
            if now - self._last_draw >= self._min_interval or self.done >= self.total:
                self._last_draw = now
                self.stream.write("\r" + self.render(now))
                self.stream.flush()
        else:
            decile = self.done * 10 // self.total if self.total else 10
            if decile > self._last_decile:
                self._last_decile = decile
                self.stream.write(self.render(now) + "\n")
                self.stream.flush()

    def render(self, now: float | None = None) -> str:
        elapsed = (now if now is not None else time.monotonic()) - self._start
        fraction = self.done / self.total if self.total else 1.0
        width = 30
        filled = int(width * fraction)
        bar = "#" * filled + "-" * (width - filled)
        text = f"[{bar}] {self.done}/{self.total} {self.label} ({fraction:.0%}) {elapsed:.1f}s"
        if 0 < self.done < self.total and elapsed > 1.0:
            text += f", ~{elapsed / self.done * (self.total - self.done):.0f}s left"
        return text

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._tty and self.done:
            self.stream.write("\n")
            self.stream.flush()


# --- running ------------------------------------------------------------------------------------------------


def resolve_cache_dir(cache: bool | str | os.PathLike[str] | None) -> Path | None:
    """``True``: ``$AGENTOTEL_CACHE_DIR`` or ``./.agentotel-cache``; a path: that
    directory; False/None: off."""
    if cache is True:
        return Path(os.environ.get(CACHE_DIR_ENV) or DEFAULT_CACHE_DIR).absolute()
    if cache is False or cache is None:
        return None
    if isinstance(cache, str | os.PathLike):
        return Path(cache).absolute()
    raise TypeError(f"cache must be True, False or a directory path, got {cache!r}")


def _metric_name(metric: Any) -> str:
    for attr in ("metric_name", "name"):
        value = getattr(metric, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(metric).__name__


def _error_result(metric: Any, exc: BaseException) -> MetricResult:
    message = f"{type(exc).__name__}: {exc}"
    threshold = getattr(metric, "threshold", None)
    return MetricResult(
        metric=_metric_name(metric),
        score=None,
        success=None,
        reason=f"The metric failed: {message}",
        threshold=threshold if isinstance(threshold, int | float) else None,  # type: ignore[arg-type]
        status="error",
        evaluation_log={"traceback": "".join(traceback.format_exception(exc)[-6:])},
        error=message,
        evaluator=type(metric).__name__,
        evaluator_version=str(getattr(metric, "version", "")),
    )


async def _run_one(metric: Any, case: Any) -> MetricResult:
    try:
        if hasattr(metric, "a_measure"):
            result = await metric.a_measure(case)
        else:  # a sync-only metric: keep it off the event loop
            result = await asyncio.to_thread(metric.measure, case)
    except Exception as exc:
        return _error_result(metric, exc)
    if not isinstance(result, MetricResult):
        return _error_result(
            metric, TypeError(f"{type(metric).__name__} returned {type(result).__name__}, not a MetricResult")
        )
    return result


def _as_metric_list(metrics: Any) -> list[Any]:
    if isinstance(metrics, BaseMetric) or (hasattr(metrics, "measure") and not isinstance(metrics, Iterable)):
        metrics = [metrics]
    metric_list = list(metrics)
    if not metric_list:
        raise ValueError("evaluate() needs at least one metric")
    for metric in metric_list:
        if not (hasattr(metric, "a_measure") or hasattr(metric, "measure")):
            raise TypeError(f"not a metric (no measure/a_measure): {metric!r}")
    return metric_list


async def evaluate(
    test_cases: Iterable[Any],
    metrics: Sequence[Any] | Any,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    show_progress: bool = True,
    cache: bool | str | os.PathLike[str] | None = True,
) -> EvaluationResult:
    """Run every metric on every case; one ``CaseResult`` per case, in input order.

    ``concurrency`` bounds the metric runs in flight. ``show_progress`` draws a bar on stderr when it helps
    (a terminal, or at least ``LONG_INPUT`` cases). ``cache`` sets the judge response cache directory for
    this run (see ``resolve_cache_dir``).
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
    cases = list(test_cases)
    metric_list = _as_metric_list(metrics)
    cache_dir = resolve_cache_dir(cache)
    n_metrics = len(metric_list)
    slots: list[list[MetricResult | None]] = [[None] * n_metrics for _ in cases]
    remaining = [n_metrics] * len(cases)
    progress = ProgressBar(len(cases)) if ProgressBar.wanted(len(cases), show_progress) else None
    jobs = ((ci, mi) for ci in range(len(cases)) for mi in range(n_metrics))

    async def worker() -> None:
        # One shared iterator: each worker takes the next (case, metric) when it is free, so at most
        # ``concurrency`` runs are in flight and nothing is queued up front.
        for ci, mi in jobs:
            slots[ci][mi] = await _run_one(metric_list[mi], cases[ci])
            remaining[ci] -= 1
            if progress is not None and remaining[ci] == 0:
                progress.advance()

    token = runtime.judge_cache_dir.set(cache_dir)
    start = time.perf_counter()
    try:
        n_workers = min(concurrency, len(cases) * n_metrics)
        if n_workers:
            await asyncio.gather(*(worker() for _ in range(n_workers)))
    finally:
        runtime.judge_cache_dir.reset(token)
        if progress is not None:
            progress.close()
    results = tuple(
        CaseResult(ci, case, tuple(r for r in slots[ci] if r is not None)) for ci, case in enumerate(cases)
    )
    return EvaluationResult(results, time.perf_counter() - start)


def evaluate_sync(
    test_cases: Iterable[Any],
    metrics: Sequence[Any] | Any,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    show_progress: bool = True,
    cache: bool | str | os.PathLike[str] | None = True,
) -> EvaluationResult:
    """``evaluate`` for scripts; works inside a running event loop too (it then runs in a helper thread)."""
    return run_sync(
        evaluate(test_cases, metrics, concurrency=concurrency, show_progress=show_progress, cache=cache)
    )


def summary_lines(result: EvaluationResult) -> list[str]:
    """A human summary: pass rate, then one line per metric with its mean score."""
    if not result.cases:
        return ["No test cases."]
    scored = result.scored
    if scored:
        line = f"{result.passed}/{scored} cases passed ({result.pass_rate or 0.0:.1%})"
    else:
        line = "no case was scored"
    if result.not_scored:
        line += (
            f"; {result.not_scored} not scored (no expectation to compare with: give expected_tools or "
            "expected_trajectory)"
        )
    lines = [f"{line} in {result.duration_s:.2f}s"]
    for name, s in result.metrics.items():
        mean = f"{s.mean_score:.3f}" if s.mean_score is not None else "-"
        extra = "".join(f", {k} {v}" for k, v in (("errors", s.errors), ("skipped", s.skipped)) if v)
        lines.append(f"  {name}: mean score {mean}, passed {s.passed}/{s.scored}{extra}")
    if result.total_cost_usd:
        lines.append(f"  cost: ${result.total_cost_usd:.4f}")
    return lines
