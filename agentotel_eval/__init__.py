"""agentotel-eval: score AI agents' tool use from their OpenTelemetry traces.

Importing the package is cheap: the tracing API (the OpenTelemetry SDK) and the LLM judge metric (jsonschema;
litellm only when a judge call is made) load on first use, through the lazy attributes below.
"""

from __future__ import annotations

import importlib
from typing import Any

from agentotel_eval.evaluate import CaseResult, EvaluationResult, evaluate, evaluate_sync
from agentotel_eval.metrics.base import BaseMetric, MetricResult
from agentotel_eval.metrics.multimodal_tool_correctness import MultimodalToolCorrectnessMetric
from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric

# Imported here, not lazily: the name is also the subpackage's, which Python binds on the package when the
# subpackage is first imported; importing the function after it makes the package's name the function.
from agentotel_eval.reconstruct import AgentRun, reconstruct
from agentotel_eval.test_case import (
    EvalTestCase,
    MLLMImage,
    ModelTestCase,
    ToolCall,
    ToolCallParams,
    ToolDefinition,
)

__version__ = "0.1.0"

#: public names that load their module on first access (attribute -> module)
_LAZY = {
    "ToolsErrorMetric": "agentotel_eval.metrics.tool_errors",
    "TrajectoryMetric": "agentotel_eval.metrics.trajectory",
    "SpecError": "agentotel_eval.trajectory",
    "TrajectorySpec": "agentotel_eval.trajectory",
    "parse_spec": "agentotel_eval.trajectory",
    "CustomLLMClient": "agentotel_eval.judge.client",
    "traced": "agentotel_eval.tracing",
    "configure": "agentotel_eval.tracing",
    "set_expected_tools": "agentotel_eval.tracing",
    "set_expected_trajectory": "agentotel_eval.tracing",
    "force_flush": "agentotel_eval.tracing",
    "shutdown": "agentotel_eval.tracing",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentotel_eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AgentRun",
    "BaseMetric",
    "CaseResult",
    "CustomLLMClient",
    "EvalTestCase",
    "EvaluationResult",
    "MLLMImage",
    "MetricResult",
    "ModelTestCase",
    "MultimodalToolCorrectnessMetric",
    "SpecError",
    "ToolCall",
    "ToolCallParams",
    "ToolCorrectnessMetric",
    "ToolDefinition",
    "ToolsErrorMetric",
    "TrajectoryMetric",
    "TrajectorySpec",
    "__version__",
    "configure",
    "evaluate",
    "evaluate_sync",
    "force_flush",
    "parse_spec",
    "reconstruct",
    "set_expected_tools",
    "set_expected_trajectory",
    "shutdown",
    "traced",
]
