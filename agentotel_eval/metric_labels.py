"""What each score is called for people, which way is good, and what it means: one table for every place that
shows scores (the web pages, the report, the command line).

A metric's stored name (``tool_correctness_exact``) is for queries; a reader sees its label ("Tool correctness
(exact set)"), its direction (higher or lower is better) and one sentence on what the score and a pass mean.
Pure data and one function, importing nothing of the project: the command line may use it as the pages do.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HIGHER", "LOWER", "METRIC_LABELS", "MetricLabel", "metric_label"]

HIGHER = "higher is better"
LOWER = "lower is better"


@dataclass(frozen=True, slots=True)
class MetricLabel:
    """How a metric is shown: ``label`` instead of its name, with its direction and meaning."""

    metric: str  # the stored name: tool_correctness_exact
    label: str  # "Tool correctness (exact set)"
    higher_is_better: bool | None  # None: not known (a metric this table does not describe)
    meaning: str  # what the score is, in one sentence ("" when not known)
    passes: str  # what a pass means

    @property
    def direction(self) -> str:
        """"higher is better", "lower is better", or "" when not known."""
        return "" if self.higher_is_better is None else HIGHER if self.higher_is_better else LOWER

    @property
    def arrow(self) -> str:
        """A direction marker to print beside a score: "↑" (higher is better), "↓" (lower is better) or ""."""
        return "" if self.higher_is_better is None else "↑" if self.higher_is_better else "↓"

    @property
    def description(self) -> str:
        """The label, direction, meaning and pass in one line (a tooltip, a CLI legend line)."""
        parts = [self.label + (f" ({self.direction})" if self.direction else "")]
        parts += [text for text in (self.meaning, self.passes) if text]
        return ". ".join(parts) + "."


_AT_THRESHOLD = "pass: the score reaches the threshold"

#: the metrics this project scores with, in the order they are best read
METRIC_LABELS: dict[str, MetricLabel] = {m.metric: m for m in (
    MetricLabel("tool_correctness", "Tool correctness", True,
                "share of the expected tool calls the agent made (0 to 1); extra calls are not penalised",
                _AT_THRESHOLD),
    MetricLabel("tool_correctness_exact", "Tool correctness (exact set)", True,
                "1 when the called tools are exactly the expected ones, as a set with counts: order is NOT "
                "checked; else 0",
                _AT_THRESHOLD),
    MetricLabel("tool_correctness_ordering", "Tool correctness (in order)", True,
                "share of the expected calls made in the expected order (longest common subsequence, 0 to 1)",
                _AT_THRESHOLD),
    MetricLabel("tool_correctness_exact_ordering", "Tool correctness (exact sequence)", True,
                "1 only when the called sequence equals the expected one, order included; else 0",
                _AT_THRESHOLD),
    MetricLabel("trajectory", "Trajectory", True,
                "weighted share of the expected trajectory's steps the calls matched (0 to 1)",
                "pass: the score reaches the threshold with no violation"),
    MetricLabel("tool_errors", "Tool-use errors (judge)", False,
                "how sure the LLM judge is that the agent misused a tool (0: no error found, 1: certain)",
                "pass: no tool-use error found with the threshold's confidence"),
    MetricLabel("tool_errors_detectors", "Tool-use errors (detectors)", False,
                "1 when a deterministic detector found a tool-use error, 0 when none was found",
                "pass: no tool-use error found"),
)}

_MODES = {"_exact_ordering": "exact sequence", "_exact": "exact set", "_ordering": "in order"}


def metric_label(metric: str) -> MetricLabel:
    """How ``metric`` is shown: from ``METRIC_LABELS``; a tool-correctness variant (``multimodal_tool_correctness
    _exact``) as its base metric's; any other name in words, its direction unknown."""
    known = METRIC_LABELS.get(metric)
    if known is not None:
        return known
    if "tool_correctness" in metric:
        mode = next((suffix for suffix in _MODES if metric.endswith(suffix)), "")
        base = metric[: len(metric) - len(mode)] if mode else metric
        like = METRIC_LABELS["tool_correctness" + mode]
        words = base.replace("_", " ").strip().capitalize()
        return MetricLabel(metric, f"{words} ({_MODES[mode]})" if mode else words, True, like.meaning, like.passes)
    return MetricLabel(metric, metric.replace("_", " ").strip().capitalize() or metric, None, "", "")
