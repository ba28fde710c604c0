"""Tool-call reconstruction: spans of any convention -> agent runs -> ordered tool calls."""

from agentotel_eval.reconstruct.model import AgentRun, Handoff
from agentotel_eval.reconstruct.pipeline import is_run_span, reconstruct

__all__ = ["AgentRun", "Handoff", "is_run_span", "reconstruct"]
