"""Metrics: deterministic tool correctness (no LLM) and tool error detection (LLM judge, imported lazily)."""

from agentotel_eval.metrics.base import BaseMetric, MetricResult
from agentotel_eval.metrics.multimodal_tool_correctness import MultimodalToolCorrectnessMetric
from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric

__all__ = ["BaseMetric", "MetricResult", "MultimodalToolCorrectnessMetric", "ToolCorrectnessMetric"]
