"""Per-trace state the reconstruction stages share: the tree, each span's role, and parsed LLM outputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.llm import LLMOutput, read_output
from agentotel_eval.reconstruct.spans import Role
from agentotel_eval.reconstruct.tree import TraceTree


@dataclass(slots=True, init=False)
class TraceContext:
    """Per-trace caches, so each span's JSON is parsed at most once however many questions are asked of it."""

    tree: TraceTree
    roles: dict[str, Role]
    llm_parent: dict[str, str]  # LLM span -> LLM span it is nested in
    outputs: dict[str, LLMOutput]

    def __init__(self, tree: TraceTree, roles: dict[str, Role], llm_parent: dict[str, str] | None = None) -> None:
        # by hand: one per trace, and the generated __init__ calls a factory per dict
        self.tree, self.roles = tree, roles
        self.llm_parent = {} if llm_parent is None else llm_parent
        self.outputs = {}

    def logs(self, span: SpanRecord) -> Sequence[LogRecord]:
        return self.tree.logs.get(span.span_id, ())

    def output(self, span: SpanRecord) -> LLMOutput:
        found = self.outputs.get(span.span_id)
        if found is None:  # (the span's logs looked up here, not through self.logs: a call per LLM span less)
            found = self.outputs[span.span_id] = read_output(span, self.tree.logs.get(span.span_id, ()))
        return found

    def requests_tools(self, span: SpanRecord) -> bool:
        return bool(self.output(span).requests)
