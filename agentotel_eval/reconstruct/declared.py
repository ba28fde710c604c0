"""Conventions declared as data: which spans are runs, tool executions or LLM calls, and which attributes hold
each field.

Users declare their own in-house instrumentation this way (``[[conventions]]`` in the collector config,
``reconstruct(..., conventions=...)`` in the library), with no code change; the built-in ones below cover the
frameworks whose telemetry has a vocabulary of its own (the Vercel AI SDK's ``ai.*``, Mastra's AI tracing and
its older telemetry, Haystack's tracer). Declared conventions are tried before the attribute conventions, the
user's before the built-in ones.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from agentotel_eval.otlp.records import SpanRecord

ROLES = ("tool", "run", "llm")
#: a field read from a span event rather than an attribute:
#: ``"event:gen_ai.content.completion:gen_ai.completion"``
EVENT_SOURCE = "event:"
_FIELDS_BY_ROLE = {
    "tool": ("tool_name", "arguments", "result", "call_id", "error"),
    "run": ("agent_name", "input", "output"),
    "llm": ("tool_calls", "input_messages", "output_text"),
}


class ConventionError(ValueError):
    """A declared convention that cannot be used: the message names the rule and what is wrong with it."""


@dataclass(frozen=True, slots=True)
class Convention:
    """One declared rule. ``when``: an attribute equal to a value (or one of several), an attribute that is
    present, or a span-name glob. Field values are attribute keys; a key a span lacks is simply not used."""

    name: str
    role: str  # tool | run | llm
    when_attribute: str | None = None
    when_equals: tuple[Any, ...] | None = None  # None: the attribute only has to be present
    when_span_name: str | None = None  # a glob, e.g. "acme.tool.*"
    tool_name: str | None = None
    arguments: str | None = None  # a JSON string or a map
    result: str | None = None
    call_id: str | None = None
    error: str | None = None  # a boolean attribute; an ERROR span status counts anyway
    agent_name: str | None = None
    input: str | None = None
    output: str | None = None
    tool_calls: str | None = None  # LLM: the calls the model asked for (a list, or an object holding one)
    input_messages: str | None = None  # LLM: the messages sent to the model
    output_text: str | None = None  # LLM: the model's text
    call_repr: str | None = None  # built-in only: an attribute holding a ``ToolCall(...)`` repr of the call
    tools: str | None = None  # built-in only (run, llm): the tools offered to the model
    json_values: bool = (
        False  # every value is JSON-encoded text ('"TOOL"', '{"city": "Paris"}'): decoded when read
    )
    partial_arguments: bool = False  # built-in only: the calls' arguments keep only some values (strings)
    builtin: bool = False

    def __post_init__(self) -> None:
        if self.json_values and self.when_equals is not None:  # a JSON-encoded marker matches as written too
            encoded = tuple(json.dumps(v) for v in self.when_equals if isinstance(v, str))
            object.__setattr__(self, "when_equals", tuple(dict.fromkeys((*self.when_equals, *encoded))))

    def matches(self, span: SpanRecord) -> bool:
        if self.when_attribute is not None:
            value = span.attributes.get(self.when_attribute)
            if value is None:
                return False
            if self.when_equals is not None and value not in self.when_equals:
                return False
        if self.when_span_name is not None:
            return _glob(self.when_span_name).match(span.name) is not None
        return True

    def get(self, span: SpanRecord, field: str) -> Any:
        """The span's value for a field of this convention (None when not declared or absent)."""
        key = getattr(self, field)
        if not key:
            return None
        if key.startswith(EVENT_SOURCE):  # "event:<event name>:<attribute>": the first such event's attribute
            name, _, attribute = key[len(EVENT_SOURCE) :].rpartition(":")
            value = next((e.attributes.get(attribute) for e in span.events if e.name == name), None)
        else:
            value = span.attributes.get(key)
        if self.json_values and isinstance(value, str):
            return _json_text(value)
        return value


@functools.lru_cache(maxsize=4096)
def _json_text(value: str) -> Any:
    """A JSON-encoded scalar decoded once per distinct text ('"get_weather"' -> "get_weather", "3" -> 3);
    objects and arrays stay text, which every reader decodes where it reads it."""
    text = value.strip()
    if not text or text[0] in "{[":
        return value
    try:
        return json.loads(text)
    except ValueError:
        return value


@functools.lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    """A span-name glob compiled once (it is tested against every span that reaches it)."""
    return re.compile(fnmatch.translate(pattern))


class Conventions:
    """Declared conventions in the order they are tried, indexed so that a span none of them can match (the
    usual case) costs a few dictionary look-ups: by the attribute a rule tests, by exact
    span name, then globs."""

    __slots__ = ("_by_attribute", "_by_span_name", "_by_value", "_globbed", "_keys", "rules")

    def __init__(self, rules: Sequence[Convention] = ()) -> None:
        self.rules = tuple(rules)
        self._by_attribute: dict[str, list[tuple[int, Convention]]] = {}
        self._by_span_name: dict[str, list[tuple[int, Convention]]] = {}
        self._globbed: list[tuple[int, Convention]] = []
        #: rules that test an attribute for given values, by attribute and value (a span with
        #: ``gen_ai.operation.name = chat`` finds the rules for "chat" in one look-up, none for most values)
        self._by_value: dict[str, dict[Any, list[tuple[int, Convention]]]] = {}
        for order, rule in enumerate(self.rules):
            if (
                rule.when_attribute is not None
                and rule.when_equals is not None
                and _all_hashable(rule.when_equals)
            ):
                values = self._by_value.setdefault(rule.when_attribute, {})
                for value in rule.when_equals:
                    values.setdefault(value, []).append((order, rule))
            elif rule.when_attribute is not None:
                self._by_attribute.setdefault(rule.when_attribute, []).append((order, rule))
            elif rule.when_span_name is not None and not _GLOB_CHARS.search(rule.when_span_name):
                self._by_span_name.setdefault(rule.when_span_name, []).append((order, rule))
            else:
                self._globbed.append((order, rule))
        self._keys = frozenset((*self._by_attribute, *self._by_value))

    def match(self, span: SpanRecord) -> Convention | None:
        """The first rule (in declaration order) that matches the span, or None."""
        attrs = span.attributes
        if self._keys.isdisjoint(attrs) and span.name not in self._by_span_name and not self._globbed:
            return None  # (the usual span: one C-level test)
        best: tuple[int, Convention] | None = None
        for key, by_value in self._by_value.items():
            value = attrs.get(key)
            if value is not None:
                try:
                    found = by_value.get(value)
                except TypeError:  # an unhashable (AnyValue list/map) value equals no declared value
                    found = None
                if found is not None and (best is None or found[0][0] < best[0]):
                    best = found[0]
        for key, rules in self._by_attribute.items():
            if key in attrs:
                for candidate in rules:
                    if (best is None or candidate[0] < best[0]) and candidate[1].matches(span):
                        best = candidate
                        break
        named = self._by_span_name.get(span.name)
        if named is not None and (best is None or named[0][0] < best[0]):
            best = named[0]
        for candidate in self._globbed:
            if best is not None and candidate[0] > best[0]:
                break
            if candidate[1].matches(span):
                best = candidate
                break
        return best[1] if best is not None else None

    def plus(self, first: Sequence[Convention]) -> Conventions:
        """These conventions with ``first`` tried before them."""
        return Conventions((*first, *self.rules)) if first else self


_GLOB_CHARS = re.compile(r"[*?\[]")


def _all_hashable(values: tuple[Any, ...]) -> bool:
    try:
        hash(values)
    except TypeError:
        return False
    return True


def _rule(name: str, role: str, **spec: Any) -> Convention:
    equals = spec.pop("when_equals", None)
    return Convention(
        name, role, when_equals=tuple(equals) if equals is not None else None, builtin=True, **spec
    )


_VERCEL_RUNS = ("ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject")
_VERCEL_STEPS = tuple(f"{op}.{step}" for op in _VERCEL_RUNS for step in ("doGenerate", "doStream"))

BUILTIN = Conventions(
    (
        # Vercel AI SDK telemetry: ai.operationId names the operation (span names may be
        # rewritten by processors)
        _rule(
            "vercel-ai",
            "tool",
            when_attribute="ai.operationId",
            when_equals=("ai.toolCall",),
            tool_name="ai.toolCall.name",
            arguments="ai.toolCall.args",
            result="ai.toolCall.result",
            call_id="ai.toolCall.id",
        ),
        _rule(
            "vercel-ai",
            "llm",
            when_attribute="ai.operationId",
            when_equals=_VERCEL_STEPS,
            tool_calls="ai.response.toolCalls",
            input_messages="ai.prompt.messages",
            output_text="ai.response.text",
            tools="ai.prompt.tools",
        ),
        _rule(
            "vercel-ai",
            "run",
            when_attribute="ai.operationId",
            when_equals=_VERCEL_RUNS,
            agent_name="ai.telemetry.functionId",
            input="ai.prompt",
            output="ai.response.text",
        ),
        # Mastra AI tracing (@mastra/otel-exporter)
        _rule(
            "mastra",
            "tool",
            when_attribute="gen_ai.operation.name",
            when_equals=("tool.execute",),
            tool_name="gen_ai.tool.name",
            arguments="gen_ai.tool.input",
            result="gen_ai.tool.output",
        ),
        _rule(
            "mastra",
            "llm",
            when_attribute="gen_ai.operation.name",
            when_equals=("model.step",),
            tool_calls="output",
            input_messages="input",
            output_text="output",
            tools="input",
        ),
        _rule(
            "mastra",
            "run",
            when_attribute="gen_ai.operation.name",
            when_equals=("agent.run",),
            agent_name="gen_ai.agent.id",
            input="input",
            output="output",
        ),
        # Mastra's older telemetry config
        _rule(
            "mastra-telemetry",
            "tool",
            when_attribute="mastra.operationId",
            when_equals=("mastra.stream.toolCall",),
            tool_name="stream.toolCall.toolName",
            arguments="stream.toolCall.args",
            result="stream.toolCall.result",
            call_id="stream.toolCall.toolCallId",
        ),
        _rule(
            "mastra-telemetry",
            "llm",
            when_attribute="mastra.operationId",
            when_equals=("mastra.stream",),
            tool_calls="stream.response.toolCalls",
            input_messages="stream.prompt.messages",
            output_text="stream.response.text",
        ),
        _rule(
            "mastra-telemetry",
            "llm",
            when_attribute="mastra.operationId",
            when_equals=("mastra.stream.aisdk.doStream",),
            tool_calls="stream.response.toolCalls",
            tools="stream.prompt.tools",
        ),
        _rule("mastra-telemetry", "run", when_span_name="agent.generate", input="agent.generate.argument.0"),
        _rule("mastra-telemetry", "run", when_span_name="agent.stream", input="agent.stream.argument.0"),
        # LlamaIndex's own OpenTelemetry: the call only as a repr of the step's input event
        _rule(
            "llama-index-otel",
            "tool",
            when_attribute="llamaindex.step.input_event",
            when_equals=("ToolCall",),
            call_repr="llamaindex.step.input_summary",
        ),
        # MLflow tracing over OTLP: a span type, and every value JSON-encoded; a tool span is
        # named after its tool
        _rule(
            "mlflow",
            "tool",
            when_attribute="mlflow.spanType",
            when_equals=("TOOL",),
            json_values=True,
            tool_name="mlflow.spanFunctionName",
            arguments="mlflow.spanInputs",
            result="mlflow.spanOutputs",
            call_id="tool_call_id",
        ),
        _rule(
            "mlflow",
            "llm",
            when_attribute="mlflow.spanType",
            when_equals=("CHAT_MODEL", "LLM"),
            json_values=True,
            tool_calls="mlflow.spanOutputs",
            input_messages="mlflow.spanInputs",
            output_text="mlflow.spanOutputs",
            tools="mlflow.chat.tools",
        ),
        _rule(
            "mlflow",
            "run",
            when_attribute="mlflow.spanType",
            when_equals=("AGENT",),
            json_values=True,
            input="mlflow.spanInputs",
            output="mlflow.spanOutputs",
        ),
        # Langtrace's LangChain instrumentation: a chat model's answer (with its tool calls) as a message dump
        _rule(
            "langtrace-langchain",
            "llm",
            when_attribute="langchain.task.name",
            when_equals=("chatmodel",),
            tool_calls="langchain.outputs",
            input_messages="langchain.inputs",
            output_text="langchain.outputs",
            tools="langchain.metadata",
            partial_arguments=True,
        ),  # its dumps keep string values only
        # Haystack's OpenTelemetry tracer
        _rule(
            "haystack",
            "tool",
            when_span_name="haystack.agent.step.tool",
            tool_name="haystack.tool.name",
            arguments="haystack.agent.step.tool.input",
            result="haystack.agent.step.tool.output",
            error="haystack.tool.error",
        ),
        _rule(
            "haystack",
            "llm",
            when_span_name="haystack.agent.step.llm",
            tool_calls="haystack.agent.step.llm.output",
            input_messages="haystack.agent.step.llm.input",
            output_text="haystack.agent.step.llm.output",
        ),
        _rule(
            "haystack",
            "run",
            when_span_name="haystack.agent.run",
            input="haystack.agent.input",
            output="haystack.agent.output",
            tools="haystack.agent.tools",
        ),
    )
)


_SPEC_KEYS = frozenset(f.name for f in fields(Convention)) - {
    "when_attribute",
    "when_equals",
    "when_span_name",
    "builtin",
    "call_repr",
    "tools",
    "json_values",
    "partial_arguments",
}
_VALUES = ("text", "json")


def conventions_from_config(items: Iterable[Mapping[str, Any]]) -> tuple[Convention, ...]:
    """``[[conventions]]`` tables as Conventions; a bad rule raises ConventionError naming it."""
    out: list[Convention] = []
    for position, item in enumerate(items, 1):
        if not isinstance(item, Mapping):
            raise ConventionError(f"conventions #{position}: expected a table, got {type(item).__name__}")
        label = (
            f"conventions #{position} ({item.get('name')!r})"
            if item.get("name")
            else f"conventions #{position}"
        )
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConventionError(f"{label}: 'name' must be a non-empty string")
        role = item.get("role")
        if role not in ROLES:
            raise ConventionError(f"{label}: 'role' must be one of {', '.join(ROLES)}, got {role!r}")
        when = item.get("when")
        if not isinstance(when, Mapping) or not when:
            raise ConventionError(
                f"{label}: 'when' must be a table: {{ attribute = KEY, equals = VALUE }} or "
                "{ span_name = GLOB }"
            )
        unknown_when = set(when) - {"attribute", "equals", "span_name"}
        if unknown_when:
            raise ConventionError(f"{label}: unknown key(s) in 'when': {', '.join(sorted(unknown_when))}")
        attribute, span_name = when.get("attribute"), when.get("span_name")
        if (attribute is None) == (span_name is None):
            raise ConventionError(f"{label}: 'when' needs exactly one of 'attribute' or 'span_name'")
        if attribute is not None and (not isinstance(attribute, str) or not attribute):
            raise ConventionError(f"{label}: 'when.attribute' must be an attribute key")
        if span_name is not None and (not isinstance(span_name, str) or not span_name):
            raise ConventionError(f"{label}: 'when.span_name' must be a glob such as \"acme.tool.*\"")
        if "equals" in when and attribute is None:
            raise ConventionError(f"{label}: 'when.equals' needs 'when.attribute'")
        equals = when.get("equals")
        allowed = set(_FIELDS_BY_ROLE[role])
        spec: dict[str, Any] = {}
        values = item.get("values", "text")
        if values not in _VALUES:
            raise ConventionError(
                f"{label}: 'values' must be \"json\" (every value JSON-encoded text, as MLflow "
                f'writes them) or "text", got {values!r}'
            )
        for key, value in item.items():
            if key in ("name", "role", "when", "values"):
                continue
            if key not in _SPEC_KEYS or key not in allowed:
                hint = f"a {role} rule takes {', '.join(_FIELDS_BY_ROLE[role])}"
                raise ConventionError(f"{label}: unknown setting {key!r} ({hint})")
            if not isinstance(value, str) or not value:
                raise ConventionError(f"{label}: {key!r} must be an attribute key (a string)")
            if value.startswith(EVENT_SOURCE) and value.count(":") < 2:
                raise ConventionError(
                    f'{label}: {key!r} reads an event as "event:<event name>:<attribute>", got {value!r}'
                )
            spec[key] = value
        if role == "tool" and "tool_name" not in spec:
            raise ConventionError(
                f"{label}: a tool rule needs 'tool_name' (the attribute holding the tool's name)"
            )
        equals_tuple = (
            tuple(equals) if isinstance(equals, list) else (equals,) if equals is not None else None
        )
        out.append(
            Convention(
                name.strip(),
                role,
                when_attribute=attribute,
                when_equals=equals_tuple,
                when_span_name=span_name,
                json_values=values == "json",
                **spec,
            )
        )
    return tuple(out)
