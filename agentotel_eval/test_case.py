"""Test cases and tool calls: the plain data every metric scores.

A ``ToolCall`` is a value (frozen, hashable even with nested arguments), but lists of calls are compared by
position: two equal calls in a list are two calls, never one (deepeval #3141).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, overload

from agentotel_eval.frozen import FrozenDict, FrozenList, freeze, hashable


class ToolCallParams(StrEnum):
    """Which fields of a ToolCall, besides its name, two calls must share to count as the same call."""

    INPUT_PARAMETERS = "input_parameters"
    OUTPUT = "output"

    @classmethod
    def parse(cls, value: ToolCallParams | str) -> ToolCallParams:
        if isinstance(value, ToolCallParams):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            names = ", ".join(p.value for p in cls)
            raise ValueError(f"unknown evaluation param {value!r}; expected one of: {names}") from None


TOOL_STATUSES = ("ok", "error")
_FROZEN_AS_IS = frozenset(
    {str, int, float, bool, bytes, FrozenDict, FrozenList}
)  # freeze() returns these unchanged
_VALUE_FIELDS = ("input_parameters", "output", "description", "reasoning", "status")


#: ``ToolCall.sources["arguments"]`` ends with this when the capture kept only some of the call's values
#: (Langtrace's LangChain dumps drop non-string values): a required argument missing from them may
#: not have been missing
PARTIAL_SOURCE = ":partial"


@dataclass(frozen=True, slots=True, repr=False)
class ToolCall:
    """One call of a tool, as expected or as observed.

    The first five fields are the public, deepeval-compatible API. The keyword-only fields carry where an
    observed call came from in a trace; they default to ``None`` for hand-built calls.
    """

    name: str
    input_parameters: Mapping[str, Any] | None = None
    output: Any = None
    description: str | None = None
    reasoning: str | None = None
    # Provenance (set by trace reconstruction).
    status: str | None = field(default=None, kw_only=True)  # "ok" | "error" | None when unknown
    error: str | None = field(default=None, kw_only=True)  # error type or message when status == "error"
    call_id: str | None = field(default=None, kw_only=True)
    trace_id: str | None = field(default=None, kw_only=True)
    span_id: str | None = field(default=None, kw_only=True)
    llm_turn: str | None = field(default=None, kw_only=True)  # span id of the LLM span that requested it
    start_time_ns: int | None = field(default=None, kw_only=True)
    raw_arguments: Any = field(default=None, kw_only=True)  # the arguments as recorded, before normalising
    sources: Mapping[str, str] | None = field(
        default=None, kw_only=True
    )  # field -> convention that supplied it

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"ToolCall.name must be a str, got {type(self.name).__name__}")
        if self.status is not None and self.status not in TOOL_STATUSES:
            raise ValueError(f"ToolCall.status must be one of {TOOL_STATUSES} or None, got {self.status!r}")
        for attr in ("input_parameters", "output", "raw_arguments", "sources"):
            value = getattr(self, attr)
            if value is None or type(value) in _FROZEN_AS_IS:  # the common case, before the (slow) ABC check
                continue
            if isinstance(value, (Mapping, list, tuple)):
                object.__setattr__(self, attr, freeze(value))

    def __repr__(self) -> str:
        parts = [repr(self.name)]
        for attr in self.__dataclass_fields__:
            if attr != "name" and (value := getattr(self, attr)) is not None:
                parts.append(f"{attr}={value!r}")
        return f"ToolCall({', '.join(parts)})"

    def __hash__(self) -> int:
        return hash(
            (self.name, self.call_id, self.span_id, *(hashable(getattr(self, a)) for a in _VALUE_FIELDS))
        )

    @property
    def arguments(self) -> Mapping[str, Any]:
        """The input parameters, or an empty mapping."""
        return self.input_parameters if self.input_parameters is not None else FrozenDict()

    @property
    def failed(self) -> bool:
        return self.status == "error"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the fields that are set."""
        from agentotel_eval.frozen import thaw

        out: dict[str, Any] = {"name": self.name}
        for attr in (
            "input_parameters",
            "output",
            "description",
            "reasoning",
            "status",
            "error",
            "call_id",
            "trace_id",
            "span_id",
            "llm_turn",
            "start_time_ns",
            "raw_arguments",
            "sources",
        ):
            value = getattr(self, attr)
            if value is not None:
                out[attr] = thaw(value)
        return out

    @classmethod
    def from_value(cls, value: ToolCall | str | Mapping[str, Any]) -> ToolCall:
        """Accept a ToolCall, a bare tool name, or a dict with at least ``name``."""
        if isinstance(value, ToolCall):
            return value
        if isinstance(value, str):
            return cls(name=value)
        if isinstance(value, Mapping):
            data = dict(value)
            if "name" not in data:
                raise ValueError(f"a tool call dict needs a 'name': {value!r}")
            if "input_parameters" not in data:
                for alias in ("arguments", "args", "input", "parameters"):
                    if alias in data:
                        data["input_parameters"] = data.pop(alias)
                        break
            known = {f for f in cls.__dataclass_fields__}
            unknown = set(data) - known
            if unknown:
                raise ValueError(f"unknown ToolCall field(s) {sorted(unknown)} in {value!r}")
            return cls(**data)
        raise TypeError(f"expected a ToolCall, a tool name or a dict, got {type(value).__name__}")


@overload
def as_tool_calls(values: None) -> None: ...
@overload
def as_tool_calls(values: Iterable[ToolCall | str | Mapping[str, Any]]) -> list[ToolCall]: ...
@overload
def as_tool_calls(values: Iterable[ToolCall | str | Mapping[str, Any]] | None) -> list[ToolCall] | None: ...
def as_tool_calls(values: Iterable[ToolCall | str | Mapping[str, Any]] | None) -> list[ToolCall] | None:
    """Normalise a list of names / ToolCalls / dicts (mixed) to ToolCalls, keeping order and duplicates."""
    if values is None:
        return None
    if type(values) is list:  # the common case, a list of ToolCalls already: a copy, without a call per item
        for v in values:
            if type(v) is not ToolCall:
                break
        else:
            return values.copy()
    elif isinstance(values, str | bytes | Mapping):
        raise TypeError("expected a list of tool calls, not a single value")
    return [ToolCall.from_value(v) for v in values]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool offered to the model: its name, description and JSON Schema of parameters (when known)."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.parameters, Mapping):
            object.__setattr__(self, "parameters", freeze(self.parameters))

    @classmethod
    def from_value(cls, value: ToolDefinition | str | Mapping[str, Any]) -> ToolDefinition:
        """Accept a name, or a definition in the OpenAI, GenAI, Anthropic, Bedrock or pydantic-ai shape."""
        if isinstance(value, ToolDefinition):
            return value
        if isinstance(value, str):
            return cls(name=value)
        if not isinstance(value, Mapping):
            raise TypeError(f"expected a tool name or definition, got {type(value).__name__}")
        spec: Mapping[str, Any] = value
        for wrapper in ("function", "toolSpec", "data"):  # OpenAI chat {"function": {...}}, Bedrock, Haystack
            inner = spec.get(wrapper)
            if isinstance(inner, Mapping) and "name" in inner:
                spec = inner
                break
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a tool definition needs a 'name': {value!r}")
        params = None
        for key in (
            "parameters",
            "parameters_json_schema",
            "input_schema",
            "inputSchema",
            "json_schema",
            "schema",
        ):
            candidate = spec.get(key)
            if isinstance(candidate, Mapping):
                params = candidate.get("json", candidate) if key == "inputSchema" else candidate
                if isinstance(params, Mapping) and isinstance(params.get("jsonSchema"), Mapping):
                    params = params["jsonSchema"]  # Mastra: {"jsonSchema": {...}}
                break
        description = spec.get("description")
        return cls(
            name=name, description=description if isinstance(description, str) else None, parameters=params
        )


def as_tool_definitions(values: Iterable[Any] | None) -> list[ToolDefinition] | None:
    if values is None:
        return None
    if type(values) is list:  # a list of definitions already: a copy, without a call per item
        for v in values:
            if type(v) is not ToolDefinition:
                break
        else:
            return values.copy()
    return [ToolDefinition.from_value(v) for v in values]


@dataclass(slots=True)
class EvalTestCase:
    """One agent interaction to score: what the user asked, what the agent answered, which tools it used."""

    input: str
    actual_output: str | None = None
    tools_called: list[ToolCall] | None = None
    expected_tools: list[ToolCall] | None = None
    expected_output: str | None = None
    context: list[str] | str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCall] | None = None  # structured calls with arguments, results and statuses (traces)
    available_tools: list[ToolDefinition] | None = None
    name: str | None = field(default=None, kw_only=True)
    metadata: dict[str, Any] | None = field(default=None, kw_only=True)
    #: a trajectory spec (``agentotel_eval.trajectory``): its written form (a dict, a JSON string, a list of
    #: steps) is read here, so a bad spec fails when the case is made, not when it is scored
    expected_trajectory: Any = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        self.tools_called = as_tool_calls(self.tools_called)
        self.expected_tools = as_tool_calls(self.expected_tools)
        self.tool_calls = as_tool_calls(self.tool_calls)
        self.available_tools = as_tool_definitions(self.available_tools)
        if self.expected_trajectory is not None:
            from agentotel_eval.trajectory.spec import parse_spec  # the spec's matchers import this module

            self.expected_trajectory = parse_spec(self.expected_trajectory, "expected_trajectory")

    @property
    def structured_calls(self) -> list[ToolCall] | None:
        """The richest call list there is: ``tool_calls`` when given, else ``tools_called``."""
        return self.tool_calls if self.tool_calls is not None else self.tools_called

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict that ``from_dict`` turns back into an equal test case (unset fields left out)."""
        from agentotel_eval.frozen import thaw

        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if value is None:
                continue
            if name in ("tools_called", "expected_tools", "tool_calls"):
                value = [call.to_dict() for call in value]
            elif name == "available_tools":
                value = [
                    {
                        k: thaw(v)
                        for k, v in (
                            ("name", t.name),
                            ("description", t.description),
                            ("parameters", t.parameters),
                        )
                        if v is not None
                    }
                    for t in value
                ]
            elif name == "expected_trajectory":
                value = value.written
            out[name] = thaw(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalTestCase:
        """Build from a JSON object (one line of a cases file); unknown keys are an error, not ignored."""
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown test case field(s): {sorted(unknown)}")
        if "input" not in data:
            raise ValueError("a test case needs an 'input'")
        return cls(**dict(data))


@dataclass(frozen=True, slots=True)
class MLLMImage:
    """An image in a multimodal test case: a URL, or a local file (``local=True``, or a path that exists)."""

    url: str | None = None
    local: bool | None = None

    def __post_init__(self) -> None:
        if self.url is None:
            raise ValueError("MLLMImage needs a url (or a local file path)")
        if self.local is None:
            is_local = "://" not in self.url and os.path.exists(self.url)
            object.__setattr__(self, "local", is_local)


MultimodalPart = str | MLLMImage


@dataclass(slots=True)
class ModelTestCase:
    """The multimodal form: input and actual_output are lists of text and images."""

    input: list[MultimodalPart]
    actual_output: list[MultimodalPart]
    tools_called: list[ToolCall] | None = None
    expected_tools: list[ToolCall] | None = None
    context: list[MultimodalPart] | None = None
    name: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        for attr in ("input", "actual_output"):
            value = getattr(self, attr)
            if isinstance(value, str | MLLMImage):
                setattr(self, attr, [value])
            elif not isinstance(value, Sequence):
                raise TypeError(f"ModelTestCase.{attr} must be a list of text and MLLMImage")
            for part in getattr(self, attr):
                if not isinstance(part, str | MLLMImage):
                    raise TypeError(
                        f"ModelTestCase.{attr} holds {type(part).__name__}; expected str or MLLMImage"
                    )
        self.tools_called = as_tool_calls(self.tools_called)
        self.expected_tools = as_tool_calls(self.expected_tools)


AnyTestCase = EvalTestCase | ModelTestCase
