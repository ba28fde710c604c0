"""Tool-call arguments in every encoding real instrumentations use, normalised to a dict of parameters.

Encodings seen in real captures: a JSON object string, JSON inside JSON (pydantic-ai puts
the model's argument string inside message parts), ``{"args": [...], "kwargs": {...}}`` (traceloop-sdk,
Langfuse; positional args possible), ``{"input_str": "<python repr>", "inputs": {...}, ...}`` (OpenLLMetry
LangChain), a bare scalar for single-argument tools (OpenInference LangChain: ``"Rome"``), Bedrock
``{"toolUse": {"input": {...}}}`` (Strands). Where the parameter names are not knowable (a bare scalar or
positional args with no schema) the result has ``params=None`` and the caller keeps the raw value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.reconstruct.values import parse_json, parse_literal


@dataclass(frozen=True, slots=True)
class Arguments:
    """Normalised arguments: ``params`` (None when not knowable), how they were encoded,
    an embedded call id."""

    params: dict[str, Any] | None
    encoding: str  # absent | object | json | args_kwargs | input_str | bedrock | positional | scalar
    call_id: str | None = None


def schema_parameter_names(schema: Mapping[str, Any] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(all parameter names in declaration order, required names) of a JSON schema, or two empty tuples."""
    if not isinstance(schema, dict):
        return (), ()
    props = schema.get("properties")
    names = tuple(props) if isinstance(props, dict) else ()
    required = schema.get("required")
    req = tuple(r for r in required if isinstance(r, str)) if isinstance(required, (list, tuple)) else ()
    return names, req


def _single_parameter(schema: Mapping[str, Any] | None) -> str | None:
    """The name a bare scalar binds to: the only parameter, else the only required one."""
    names, required = schema_parameter_names(schema)
    if len(names) == 1:
        return names[0]
    if len(required) == 1:
        return required[0]
    return None


def _bind_positional(
    args: Sequence[Any], kwargs: Mapping[str, Any], schema: Mapping[str, Any] | None
) -> dict | None:
    """Bind positional values to the schema's parameter names (those not already given by
    keyword), in order."""
    if not args:
        return dict(kwargs)
    names, _ = schema_parameter_names(schema)
    free = [n for n in names if n not in kwargs]
    if not free or len(args) > len(free):
        return None  # no schema, or more values than parameters: the names are not knowable
    bound = dict(zip(free, args, strict=False))
    bound.update(kwargs)
    return bound


def normalize_arguments(raw: Any, schema: Mapping[str, Any] | None = None) -> Arguments:
    """Normalise one recorded argument value; ``schema`` (the tool's JSON schema) names
    bare/positional values."""
    if raw is None:
        return Arguments(None, "absent", None)
    encoding = "object"
    value = raw
    if isinstance(value, (bytes, bytearray, str)):
        value = parse_json(value)
        encoding = "json"
        if isinstance(value, str):
            literal = parse_literal(value)  # a Python repr such as "{'city': 'Paris'}", or a bare number
            if isinstance(literal, (dict, list, tuple)) or not _single_is_string(schema):
                value = literal
    return _normalize_value(value, encoding, schema)


def _single_is_string(schema: Mapping[str, Any] | None) -> bool:
    """Whether a bare scalar binds to a string parameter (then "2025" stays "2025", not 2025)."""
    name = _single_parameter(schema)
    props = schema.get("properties") if isinstance(schema, dict) else None
    spec = props.get(name) if isinstance(props, dict) and name else None
    return isinstance(spec, dict) and spec.get("type") == "string"


def _normalize_value(value: Any, encoding: str, schema: Mapping[str, Any] | None) -> Arguments:
    if isinstance(value, dict):
        return _normalize_mapping(value, encoding, schema)
    if isinstance(value, (list, tuple)):
        bound = _bind_positional(list(value), {}, schema)
        return Arguments(bound, "positional", None)
    name = _single_parameter(schema)
    return Arguments({name: value} if name else None, "scalar", None)


def _normalize_mapping(value: dict[str, Any], encoding: str, schema: Mapping[str, Any] | None) -> Arguments:
    if ("args" in value or "kwargs" in value) and (envelope := _call_envelope(value, schema)) is not None:
        return envelope
    if isinstance(value.get("input_str"), str):
        return _normalize_input_str(value, schema)
    tool_use = value.get("toolUse")
    if isinstance(tool_use, dict) and "input" in tool_use:
        inner = normalize_arguments(tool_use["input"], schema)
        return Arguments(inner.params, "bedrock", inner.call_id)
    if "toolUseId" in value and "input" in value:
        inner = normalize_arguments(value["input"], schema)
        return Arguments(inner.params, "bedrock", inner.call_id)
    return Arguments(
        value if encoding == "json" else dict(value), encoding, None
    )  # parsed here: ours, no copy


def _call_envelope(value: dict[str, Any], schema: Mapping[str, Any] | None) -> Arguments | None:
    """A call recorded as the Python call it was: ``{"args": [...], "kwargs": {...}}`` (traceloop-sdk,
    Langfuse), with flags beside it (smolagents' ``sanitize_inputs_outputs``), ``{"kwargs": {...}}`` alone
    (LlamaIndex) or ``{"args": ["<JSON object>"]}`` (OpenLLMetry-JS LangChain). None when ``args``/``kwargs``
    are the tool's own parameters, or the shape is none of these."""
    names, _ = schema_parameter_names(schema)
    if "args" in names or "kwargs" in names:
        return None
    args, kwargs = value.get("args", ()), value.get("kwargs", {})
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs, dict):
        return None
    others = [k for k in value if k != "args" and k != "kwargs"]
    if others and (
        (names and not set(others).isdisjoint(names))
        or not all(isinstance(value[k], (bool, type(None))) for k in others)
    ):
        return None  # beside them only flags (booleans, nulls), none of them a parameter
    if len(args) == 1 and not kwargs and _single_parameter(schema) != "args":
        inner = parse_json(args[0])
        if isinstance(inner, dict):  # one positional value that is the whole argument object
            return Arguments(inner if inner is not args[0] else dict(inner), "args_kwargs", None)
    bound = _bind_positional(list(args), kwargs, schema)
    return Arguments(bound, "args_kwargs", None)


def _normalize_input_str(value: Mapping[str, Any], schema: Mapping[str, Any] | None) -> Arguments:
    """OpenLLMetry LangChain: prefer the structured ``inputs``, else the Python repr in ``input_str``."""
    kwargs = value.get("kwargs")
    call_id = kwargs.get("tool_call_id") if isinstance(kwargs, dict) else None
    call_id = call_id if isinstance(call_id, str) and call_id else None
    inputs = value.get("inputs")
    if isinstance(inputs, dict) and inputs:
        return Arguments(dict(inputs), "input_str", call_id)
    parsed = parse_literal(value["input_str"])
    if isinstance(parsed, dict):
        return Arguments(dict(parsed), "input_str", call_id)
    inner = _normalize_value(parsed, "input_str", schema)
    return Arguments(inner.params, "input_str", call_id)
