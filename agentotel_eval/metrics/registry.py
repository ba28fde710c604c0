"""The metrics a command can ask for by name (``agentotel-eval eval --metric NAME``), each built from the
command-line options that apply to it.

To add a metric, register a factory in ``METRICS``; import its module inside the factory, so building the
command line stays fast (the judge's litellm alone takes seconds to import).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentotel_eval.metrics.base import BaseMetric


@dataclass(frozen=True)
class MetricOptions:
    """The command-line options a metric factory may use."""

    threshold: float | None = None
    exact: bool = False
    ordering: bool = False
    strict: bool = False
    params: tuple[str, ...] = ()
    model: str | None = None
    api_base: str | None = None


class MetricUnavailable(Exception):
    """A registered metric that cannot be built here (a missing optional part, a missing option)."""


MetricFactory = Callable[[MetricOptions], "BaseMetric"]


def _tool_correctness(exact: bool, ordering: bool) -> MetricFactory:
    def build(options: MetricOptions) -> BaseMetric:
        from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric

        return ToolCorrectnessMetric(
            threshold=0.5 if options.threshold is None else options.threshold,
            exact_match=exact or options.exact,
            check_ordering=ordering or options.ordering,
            strict_mode=options.strict,
            evaluation_params=options.params,
        )

    return build


def _tool_errors(judge: bool) -> MetricFactory:
    """The tool-error metric; with ``judge=False`` only its deterministic detectors (no model, no cost).

    Imported only when asked for: the judge's litellm alone takes seconds to import.
    """

    def build(options: MetricOptions) -> BaseMetric:
        from agentotel_eval.metrics.tool_errors import ToolsErrorMetric

        kwargs: dict[str, Any] = {"judge": judge}
        if options.threshold is not None:
            kwargs["threshold"] = options.threshold
        if judge:
            if not options.model:
                raise MetricUnavailable("tool_errors needs a judge model: --model (e.g. openai/gpt-4o-mini)")
            if options.api_base:
                kwargs["api_base"] = options.api_base
        return ToolsErrorMetric(options.model if judge else None, **kwargs)

    return build


def _trajectory(options: MetricOptions) -> BaseMetric:
    from agentotel_eval.metrics.trajectory import TrajectoryMetric

    return TrajectoryMetric(threshold=1.0 if options.threshold is None else options.threshold)


#: name -> (factory, help). ``--exact`` / ``--ordering`` / ``--params`` / ``--strict`` apply to the
#: tool_correctness family; ``--threshold`` to every metric; ``--model`` to LLM-judge metrics.
#: To add a metric, register a factory here; import its module inside the factory (keep ``--help`` fast).
METRICS: dict[str, tuple[MetricFactory, str]] = {
    "tool_correctness": (_tool_correctness(False, False), "expected tools were called (default mode)"),
    "tool_correctness_exact": (_tool_correctness(True, False), "called tools equal the expected ones"),
    "tool_correctness_ordering": (_tool_correctness(False, True), "expected tools called in order (LCS)"),
    "tool_correctness_exact_ordering": (_tool_correctness(True, True), "called sequence equals the expected"),
    "trajectory": (_trajectory, "calls follow the case's expected_trajectory spec (steps, groups, matchers)"),
    "tool_errors": (_tool_errors(True), "LLM judge of tool-use errors (needs --model; --api-base optional)"),
    "tool_errors_detectors": (_tool_errors(False), "deterministic tool-error detectors only (no LLM)"),
}


def build_metrics(names: Iterable[str], options: MetricOptions) -> list[BaseMetric]:
    """Metrics for the given names (comma-separated allowed), without duplicates after flags apply."""
    metrics: list[BaseMetric] = []
    seen: set[str] = set()
    for raw in names:
        for name in filter(None, (part.strip() for part in raw.split(","))):
            if name not in METRICS:
                raise MetricUnavailable(f"unknown metric {name!r}; choose from: {', '.join(METRICS)}")
            metric = METRICS[name][0](options)
            key = getattr(metric, "metric_name", name)
            if key not in seen:
                seen.add(key)
                metrics.append(metric)
    return metrics
