"""Tool-call reconstruction: spans of any convention -> agent runs -> ordered tool calls
(docs/reconstruction.md)."""

from agentotel_eval.reconstruct.arguments import Arguments, normalize_arguments
from agentotel_eval.reconstruct.model import AgentRun, Handoff
from agentotel_eval.reconstruct.pipeline import is_run_span, reconstruct, results_fed_back

__all__ = [
    "AgentRun",
    "Arguments",
    "Handoff",
    "is_run_span",
    "normalize_arguments",
    "reconstruct",
    "results_fed_back",
]
