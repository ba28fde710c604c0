"""agentotel-eval: score AI agents' tool use from their OpenTelemetry traces.

Importing the package is cheap: metrics that need an LLM (and litellm) load only when used.
"""

from agentotel_eval.metrics.base import BaseMetric, MetricResult
from agentotel_eval.test_case import (
    EvalTestCase,
    MLLMImage,
    ModelTestCase,
    ToolCall,
    ToolCallParams,
    ToolDefinition,
)

__version__ = "0.1.0"

__all__ = [
    "BaseMetric",
    "EvalTestCase",
    "MLLMImage",
    "MetricResult",
    "ModelTestCase",
    "ToolCall",
    "ToolCallParams",
    "ToolDefinition",
    "__version__",
]
