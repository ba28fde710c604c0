"""Trajectory: did the run's tool calls follow a spec (order, alternatives, groups, counts, argument matchers,
data flow, forbidden calls)? No LLM; an exact alignment (``agentotel_eval.trajectory``).

The metric reads ``case.expected_trajectory`` and the case's calls (``tool_calls``, else ``tools_called``). A
run passes when its score reaches the threshold (the spec's own ``threshold``, else the metric's, 1.0 unless
given) and no violation was found.
"""

from __future__ import annotations

from typing import Any

from agentotel_eval.metrics.base import BaseMetric, MetricResult
from agentotel_eval.metrics.registry import TRAJECTORY
from agentotel_eval.test_case import as_tool_calls

__all__ = ["TrajectoryMetric"]


class TrajectoryMetric(BaseMetric):
    """Scores ``expected_trajectory``; skipped (not 0) for a case without one."""

    name = TRAJECTORY.name
    version = "1"

    def __init__(self, threshold: float = TRAJECTORY.threshold, verbose: bool = False) -> None:
        super().__init__()
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be a number between 0 and 1, got {threshold!r}")
        self.threshold = float(threshold)
        self.verbose = verbose

    def unreadable(self, why: str) -> MetricResult:
        """The result for a run whose spec could not be read: an error that says why, no score."""
        return self._result(score=None, success=None, status="error", reason=why, error=why)

    def _measure(self, case: Any) -> MetricResult:
        from agentotel_eval.trajectory.score import score_trajectory
        from agentotel_eval.trajectory.spec import parse_spec

        written = getattr(case, "expected_trajectory", None)
        if written is None:
            return self._result(
                score=None,
                success=None,
                status="skipped",
                reason="Skipped: the test case has no expected_trajectory to compare with.",
            )
        spec = parse_spec(written, "expected_trajectory")
        calls = getattr(case, "tool_calls", None)
        if calls is None:
            calls = getattr(case, "tools_called", None)
        threshold = spec.threshold if spec.threshold is not None else self.threshold
        outcome = score_trajectory(spec, as_tool_calls(calls) or [], threshold)
        success = outcome.score >= threshold and not outcome.violations
        # the details are built for this result, and what they share with other results (the written spec, the
        # rows of a report kept from a run of the same shape) is frozen: not deep-copied again, which cost a
        # third of the metric on short runs
        return self._result(
            score=outcome.score,
            success=success,
            reason=outcome.details["reason"],
            threshold=threshold,
            evaluation_log=outcome.details,
        )
