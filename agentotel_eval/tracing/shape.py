"""What a ``@traced`` span looks like for each kind: its name, SpanKind and attributes. Pure; no spans here.

Everything that depends only on the decorated function is computed once (``SpanShape.__init__``); a call adds
the attributes of its arguments (``start_attributes``) and of its outcome (``end_attributes`` /
``error_attributes``). The shapes follow the OpenTelemetry GenAI semantic conventions:

- agent: ``invoke_agent {name}``, INTERNAL, ``gen_ai.operation.name=invoke_agent``, ``gen_ai.agent.name``,
  input/output as GenAI messages (``gen_ai.input.messages``/``gen_ai.output.messages``) and as JSON
  (``agentotel.input``/``agentotel.output``), ``agentotel.eval.expected_tools`` and
  ``agentotel.eval.expected_trajectory``.
- tool: ``execute_tool {name}``, INTERNAL,
  ``gen_ai.tool.name|type|description|call.id|call.arguments|call.result``.
- llm: ``chat {name}``, CLIENT, ``gen_ai.operation.name=chat``, messages, ``gen_ai.request.model`` from a
  ``model`` argument, response model/id/finish reasons/token usage from a chat-completion-like result.
- chain: ``{name}``, INTERNAL, ``agentotel.input``/``agentotel.output``.
Every kind carries ``agentotel.kind``.
"""

from __future__ import annotations

import inspect
import itertools
import os
import random
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.trace import SpanKind

from agentotel_eval import semconv as sc
from agentotel_eval.tracing.arguments import ArgumentBinder
from agentotel_eval.tracing.capture import (
    PLAIN_TYPES,
    is_secret_name,
    redact,
    redact_arguments,
    to_json,
    to_text,
)
from agentotel_eval.tracing.messages import (
    dump_messages,
    llm_input_messages,
    llm_output_messages,
    llm_response_attributes,
    text_message,
)

KINDS = ("agent", "tool", "llm", "chain")
TOOL_CALL_ID_PARAM = "tool_call_id"
#: how many yielded items of a traced generator are kept to describe its output
MAX_GENERATOR_ITEMS = 10_000


def first_doc_line(fn: Callable[..., Any]) -> str | None:
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    line = doc.strip().splitlines()[0].strip()
    return line or None


def error_type(exc: BaseException) -> str:
    """``error.type``: the exception class's qualified name (builtins unprefixed, like ``ValueError``)."""
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


_CALL_COUNTER_MASK = 0xFFFFFFFFFFFFFF  # 14 hex digits


class _CallIds:
    """``call_<24 hex>`` ids: a random per-process prefix and a counter (cheaper than 96
    random bits per call)."""

    __slots__ = ("next", "prefix")

    def __init__(self) -> None:
        self.reseed()
        os.register_at_fork(after_in_child=self.reseed)  # a forked child must not repeat its parent's ids

    def reseed(self) -> None:
        self.prefix = f"call_{random.SystemRandom().getrandbits(40):010x}"
        self.next = itertools.count(random.getrandbits(32)).__next__


_call_ids = _CallIds()


def new_tool_call_id() -> str:
    """A fresh ``call_<24 hex>`` id. ``%`` formatting: about half the cost of an f-string
    with a format spec."""
    ids = _call_ids
    return "%s%014x" % (ids.prefix, ids.next() & _CALL_COUNTER_MASK)  # noqa: UP031 (speed)


def generator_output(items: list[Any]) -> Any:
    """What a generator produced: its text when it yielded strings (streamed tokens),
    else the list of items."""
    if items and all(isinstance(item, str) for item in items):
        return "".join(items)
    return items


class SpanShape:
    """The span a traced function produces; built once per decorated function."""

    __slots__ = (
        "binder",
        "capture_args",
        "capture_result",
        "is_agent",
        "kind",
        "max_chars",
        "name",
        "safe_names",
        "span_kind",
        "span_name",
        "static_attributes",
        "takes_call_id",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        kind: str,
        name: str | None,
        expected_tools: Iterable[str] | None,
        capture_args: bool,
        expected_trajectory: str | None = None,
        capture_result: bool,
        max_chars: int,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"@traced kind must be one of {', '.join(KINDS)}; got {kind!r}")
        self.kind = kind
        self.name = name or getattr(fn, "__name__", None) or type(fn).__name__
        self.is_agent = kind == "agent"
        self.capture_args = capture_args
        self.capture_result = capture_result
        self.max_chars = max_chars
        self.binder = ArgumentBinder(fn)
        self.takes_call_id = TOOL_CALL_ID_PARAM in self.binder.parameter_names
        self.safe_names = frozenset(n for n in self.binder.parameter_names if not is_secret_name(n))
        description = first_doc_line(fn)
        attrs: dict[str, Any] = {sc.AGENTOTEL_KIND: kind}
        if kind == "agent":
            self.span_name, self.span_kind = f"{sc.OP_INVOKE_AGENT} {self.name}", SpanKind.INTERNAL
            attrs[sc.GEN_AI_OPERATION_NAME] = sc.OP_INVOKE_AGENT
            attrs[sc.GEN_AI_AGENT_NAME] = self.name
            if description:
                attrs[sc.GEN_AI_AGENT_DESCRIPTION] = description
            if expected_tools is not None:
                attrs[sc.AGENTOTEL_EXPECTED_TOOLS] = list(expected_tools)
            if expected_trajectory is not None:
                attrs[sc.AGENTOTEL_EXPECTED_TRAJECTORY] = expected_trajectory
        elif kind == "tool":
            self.span_name, self.span_kind = f"{sc.OP_EXECUTE_TOOL} {self.name}", SpanKind.INTERNAL
            attrs[sc.GEN_AI_OPERATION_NAME] = sc.OP_EXECUTE_TOOL
            attrs[sc.GEN_AI_TOOL_NAME] = self.name
            attrs[sc.GEN_AI_TOOL_TYPE] = "function"
            if description:
                attrs[sc.GEN_AI_TOOL_DESCRIPTION] = description
        elif kind == "llm":
            self.span_name, self.span_kind = f"{sc.OP_CHAT} {self.name}", SpanKind.CLIENT
            attrs[sc.GEN_AI_OPERATION_NAME] = sc.OP_CHAT
        else:
            self.span_name, self.span_kind = self.name, SpanKind.INTERNAL
        self.static_attributes = attrs

    # -- per call --------------------------------------------------------------------------------------------

    def start_attributes(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        attrs = self.static_attributes.copy()
        kind = self.kind
        if kind == "tool":
            if self.capture_args or self.takes_call_id:
                bound = self.binder.bind(args, kwargs)
                call_id = bound.pop(TOOL_CALL_ID_PARAM, None)
            else:
                bound, call_id = {}, kwargs.get(TOOL_CALL_ID_PARAM)
            attrs[sc.GEN_AI_TOOL_CALL_ID] = str(call_id) if call_id is not None else new_tool_call_id()
            if self.capture_args:
                attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = to_json(
                    redact_arguments(bound, self.safe_names), self.max_chars
                )
            return attrs
        if not self.capture_args:
            if kind == "llm":  # the model is metadata, not content: recorded even without capture
                model = self.binder.bind(args, kwargs).get("model")
                if isinstance(model, str):
                    attrs[sc.GEN_AI_REQUEST_MODEL] = model
            return attrs
        bound = redact_arguments(self.binder.bind(args, kwargs), self.safe_names)
        input_json = to_json(bound, self.max_chars)
        attrs[sc.AGENTOTEL_INPUT] = input_json
        if kind == "chain":
            return attrs
        if len(bound) == 1:
            (only,) = bound.values()
            text = to_text(only, self.max_chars) if isinstance(only, str) else input_json
        else:
            text = input_json
        if kind == "agent":
            messages = [text_message("user", text)]
        else:
            model = bound.get("model")
            if isinstance(model, str):
                attrs[sc.GEN_AI_REQUEST_MODEL] = model
            messages = llm_input_messages(bound, text, self.max_chars)
        attrs[sc.GEN_AI_INPUT_MESSAGES] = dump_messages(messages, self.max_chars)
        return attrs

    def end_attributes(self, result: Any) -> dict[str, Any]:
        if not self.capture_result:
            return {}
        kind = self.kind
        output_json = to_json(result if type(result) in PLAIN_TYPES else redact(result), self.max_chars)
        if kind == "tool":
            return {sc.GEN_AI_TOOL_CALL_RESULT: output_json}
        attrs = {sc.AGENTOTEL_OUTPUT: output_json}
        if kind == "agent":
            text = to_text(result, self.max_chars) if isinstance(result, str) else output_json
            attrs[sc.GEN_AI_OUTPUT_MESSAGES] = dump_messages(
                [text_message("assistant", text, "stop")], self.max_chars
            )
        elif kind == "llm":
            attrs[sc.GEN_AI_OUTPUT_MESSAGES] = dump_messages(
                llm_output_messages(result, self.max_chars), self.max_chars
            )
            attrs.update(llm_response_attributes(result))
        return attrs

    @staticmethod
    def error_attributes(exc: BaseException) -> dict[str, Any]:
        return {sc.ERROR_TYPE: error_type(exc)}
