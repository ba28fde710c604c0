"""Metrics: deterministic tool correctness (no LLM) and tool error detection (LLM judge, imported lazily)."""

from agentotel_eval.metrics.base import BaseMetric, MetricResult

__all__ = ["BaseMetric", "MetricResult"]
