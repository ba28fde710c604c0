"""Per-trace state the reconstruction stages share: the tree, each span's role, and parsed LLM outputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.arguments import normalize_arguments
from agentotel_eval.reconstruct.frameworks import Plumbing, plumbing_of
from agentotel_eval.reconstruct.llm import (
    LLMOutput,
    read_declared_input,
    read_declared_output,
    read_definitions,
    read_input,
    read_output,
)
from agentotel_eval.reconstruct.messages import Message
from agentotel_eval.reconstruct.spans import Role, read_execution
from agentotel_eval.reconstruct.tree import TraceTree
from agentotel_eval.reconstruct.values import display_key


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """What a tool span says of its call, to tell another call from the same one recorded again."""

    call_id: str | None
    name_key: str  # the tool name with case and separators dropped
    arguments: Any  # normalised, or None when not recorded

    def other_than(self, outer: RecordedCall) -> bool:
        """Whether this is another call than ``outer``: a model-given call id of its own, or, where the
        capture records no call id, another tool with other arguments (a second record of one call has its id,
        or its arguments, under another name; a helper the tool ran has no id where the
        model's calls have one)."""
        if self.call_id or outer.call_id:
            return bool(self.call_id) and self.call_id != outer.call_id
        return (
            self.name_key != outer.name_key
            and self.arguments is not None
            and outer.arguments is not None
            and self.arguments != outer.arguments
        )


@dataclass(slots=True, init=False)
class TraceContext:
    """Per-trace caches, so each span's JSON is parsed at most once however many questions are asked of it."""

    tree: TraceTree
    roles: dict[str, Role]
    llm_parent: dict[str, str]  # LLM span -> LLM span it is nested in
    outputs: dict[str, LLMOutput]
    inputs: dict[str, list[Message]]
    plumbing: Plumbing  # the plumbing tools of the frameworks present in this trace
    text_failures: bool

    def __init__(
        self,
        tree: TraceTree,
        roles: dict[str, Role],
        llm_parent: dict[str, str] | None = None,
        text_failures: bool = True,
    ) -> None:
        # by hand: one per trace, and the generated __init__ calls a factory per dict
        self.tree, self.roles = tree, roles
        #: whether a tool message that reads as an error report ("Error: ...") makes its call a failed one
        self.text_failures = text_failures
        self.llm_parent = {} if llm_parent is None else llm_parent
        self.outputs, self.inputs = {}, {}
        self.plumbing = plumbing_of(tree.spans.values())

    def logs(self, span: SpanRecord) -> Sequence[LogRecord]:
        return self.tree.logs.get(span.span_id, ())

    def output(self, span: SpanRecord) -> LLMOutput:
        found = self.outputs.get(span.span_id)
        if found is None:  # (the span's logs looked up here, not through self.logs: a call per LLM span less)
            role = self.roles.get(span.span_id)
            if role is not None and role.rule is not None:
                found = read_declared_output(span, role.rule)
            else:
                found = read_output(span, self.tree.logs.get(span.span_id, ()))
            self.outputs[span.span_id] = found
        return found

    def input(self, span: SpanRecord) -> list[Message]:
        """The messages sent to the model on this LLM span (history: earlier turns, never
        calls); parsed once."""
        found = self.inputs.get(span.span_id)
        if found is None:
            role = self.roles.get(span.span_id)
            if role is not None and role.rule is not None:
                found = read_declared_input(span, role.rule)
            else:
                found = read_input(span, self.tree.logs.get(span.span_id, ()))
            self.inputs[span.span_id] = found
        return found

    def recorded_call(self, span: SpanRecord) -> RecordedCall | None:
        """The call a tool span records: its call id, tool name and arguments (read as the assembly reads
        them; asked only of tool spans with tool spans inside them)."""
        role = self.roles.get(span.span_id)
        if role is None or not role.tool:
            return None
        e = read_execution(span, role, self.plumbing)
        return RecordedCall(
            e.call_id, display_key(e.name), normalize_arguments(e.raw_arguments, e.schema).params
        )

    def offers_tools(self, span: SpanRecord) -> bool:
        """Whether the model was offered tools on this LLM span (its definitions are recorded)."""
        role = self.roles.get(span.span_id)
        if role is not None and role.rule is not None and role.rule.tools:
            return role.rule.get(span, "tools") is not None
        return bool(read_definitions(span))

    def requests_tools(self, span: SpanRecord) -> bool:
        """Whether the model asked for tools on this span: calls in its output, or only a finish reason that
        says so (a capture without content: the calls happened, what they were is not recorded)."""
        return bool(self.output(span).requests) or stopped_for_tools(span)


#: attributes that hold an LLM call's finish / stop reason(s), by convention
_FINISH_KEYS = (
    "gen_ai.response.finish_reasons",
    "llm.finish_reason",
    "anthropic.message.stop_reason",
    "ai.response.finishReason",
    "gen_ai.response.finish_reason",
)


def stopped_for_tools(span: SpanRecord) -> bool:
    """Whether the span's finish reason is a tool call (``tool_calls``, ``tool_use``, ``tool-calls``, ...)."""
    attrs = span.attributes
    for key in _FINISH_KEYS:
        value = attrs.get(key)
        if value is not None:
            text = str(value).lower()
            if "tool" in text or "function_call" in text:
                return True
    return False
