"""JSON Schema checks of a call's arguments: a compiled validator per distinct schema, a fast path for the
common flat object schema, and findings worded for a person (the argument's path, what it is,
what was expected).

Numbers follow JSON Schema by value: an int is a valid "number", and 100.0 IS a valid "integer" in every draft
(frameworks routinely turn the model's 100 into 100.0). Formats are checked with the formats jsonschema knows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError, ValidationError

from agentotel_eval.frozen import thaw
from agentotel_eval.test_case import ToolCall

_VALUE_PREVIEW = 80
#: what an exporter writes where it cut a value short: a schema holding one is not the tool's real schema
TRUNCATION_MARKERS = ("[MaxDepth]", "[Truncated]", "[Circular]", "...[truncated", "[Max Depth]")


@lru_cache(maxsize=1024)
def truncated(schema: Any) -> bool:
    """Whether an exporter cut the schema short (a marker where a nested schema was); ``schema`` frozen."""
    return _holds_marker(schema, 0)


def _holds_marker(value: Any, depth: int) -> bool:
    if isinstance(value, str):
        return any(marker in value for marker in TRUNCATION_MARKERS) if "[" in value else False
    if depth > 32:
        return False
    if isinstance(value, dict | Mapping):
        return any(_holds_marker(v, depth + 1) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_marker(v, depth + 1) for v in value)
    return False


@lru_cache(maxsize=1024)
def declared(schema: Any) -> frozenset[str] | None:
    """The parameter names an object schema declares when it says nothing of others: a key it does not name is
    no parameter of the tool (JSON Schema would let it pass; the function behind the tool would not take it).
    None when the schema allows other keys explicitly (``additionalProperties`` given,
    ``patternProperties``)."""
    if (
        not isinstance(schema, dict | Mapping)
        or "additionalProperties" in schema
        or "patternProperties" in schema
        or "unevaluatedProperties" in schema
    ):
        return None
    properties = schema.get("properties")
    if not isinstance(properties, dict | Mapping) or schema.get("type", "object") != "object":
        return None
    return frozenset(str(k) for k in properties)


#: a JSON Schema keyword that failed -> the kind of parameter error it is (BFCL's checker tells these apart)
SCHEMA_SUBTYPES = {
    "required": "missing_required",
    "dependentRequired": "missing_required",
    "dependencies": "missing_required",
    "additionalProperties": "unexpected_param",
    "unevaluatedProperties": "unexpected_param",
    "propertyNames": "unexpected_param",
    "type": "wrong_type",
    "enum": "value_not_allowed",
    "const": "value_not_allowed",
    "format": "bad_format",
    "pattern": "pattern_mismatch",
    "minimum": "out_of_range",
    "maximum": "out_of_range",
    "exclusiveMinimum": "out_of_range",
    "exclusiveMaximum": "out_of_range",
    "multipleOf": "out_of_range",
    "minLength": "out_of_range",
    "maxLength": "out_of_range",
    "minItems": "out_of_range",
    "maxItems": "out_of_range",
    "minProperties": "out_of_range",
    "maxProperties": "out_of_range",
    "uniqueItems": "out_of_range",
}


def error_path(error: ValidationError) -> str | None:
    return "/".join(str(p) for p in error.absolute_path) or None


def evidence_value(error: ValidationError) -> Any:
    value = error.validator_value
    text = preview(value)
    return value if len(text) < _VALUE_PREVIEW and not isinstance(value, dict | Mapping) else text


def arguments_of(call: ToolCall) -> tuple[bool, Any, str | None]:
    """(recorded?, the arguments as a JSON value, a problem that stops validation)."""
    if call.input_parameters is not None:
        return True, call.input_parameters, None
    raw = call.raw_arguments
    if raw is None:
        return False, None, None
    if isinstance(raw, str | bytes):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            return True, {}, None
        try:
            return True, json.loads(text), None
        except ValueError:
            return True, None, f"arguments are not valid JSON: {preview(text)}"
    return True, raw, None


# -- a fast path for the common schema shape ----------------------------------------------------------------
# Tool schemas are nearly always a flat object of typed properties. For those, a hand-written check says
# "valid" about ten times faster than jsonschema; anything it does not understand, and every failure, goes to
# jsonschema, so findings and their wording come from one place.

_OBJECT_KEYS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "description",
        "title",
        "$schema",
        "default",
        "examples",
    }
)
_PROPERTY_KEYS = frozenset({"type", "description", "title", "default", "examples", "enum", "format"})
#: the formats the full validator checks, for the fast path to say "conforms" only where it would too
_FORMATS = validators.Draft202012Validator.FORMAT_CHECKER
_TYPE_CHECKS: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and v.is_integer()))
    ),
    "number": lambda v: not isinstance(v, bool) and isinstance(v, int | float),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, dict | Mapping),
}


def _type_check(spec: Any) -> Any:
    """A predicate for a ``type`` value (a name or a list of names); None if it is not one we know."""
    if spec is None:
        return lambda v: True
    names = [spec] if isinstance(spec, str) else list(spec) if isinstance(spec, list | tuple) else None
    if not names or any(n not in _TYPE_CHECKS for n in names):
        return None
    checks = [_TYPE_CHECKS[n] for n in names]
    return checks[0] if len(checks) == 1 else (lambda v: any(c(v) for c in checks))


@lru_cache(maxsize=1024)
def quick_check(schema: Any) -> Any:
    """``instance -> True`` when it surely conforms to this flat object schema; None for
    other schema shapes."""
    if (
        not isinstance(schema, dict | Mapping)
        or not set(schema) <= _OBJECT_KEYS
        or schema.get("type", "object") != "object"
    ):
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", ())
    extra = schema.get("additionalProperties", True)
    if (
        not isinstance(properties, dict | Mapping)
        or not isinstance(required, list | tuple)
        or not isinstance(extra, bool)
    ):
        return None
    checks: dict[str, Any] = {}
    for name, prop in properties.items():
        if not isinstance(prop, dict | Mapping) or not set(prop) <= _PROPERTY_KEYS:
            return None
        type_ok = _type_check(prop.get("type"))
        if type_ok is None:
            return None
        enum = prop.get("enum")
        if enum is not None:
            if not isinstance(enum, list | tuple) or not all(isinstance(e, str) for e in enum):
                return (
                    None  # non-string enums compare with JSON (not Python) equality: leave them to jsonschema
                )
            allowed = frozenset(enum)
            checks[name] = lambda v, t=type_ok, a=allowed: isinstance(v, str) and v in a and t(v)
        else:
            checks[name] = type_ok
        fmt = prop.get("format")
        if fmt is not None:
            if not isinstance(fmt, str):
                return None
            checks[name] = lambda v, c=checks[name], f=fmt: c(v) and _FORMATS.conforms(v, f)
    required = tuple(required)
    closed = not extra

    def conforms(instance: Any) -> bool:
        if not isinstance(instance, dict | Mapping):
            return False
        for key in required:
            if key not in instance:
                return False
        for key, value in instance.items():
            check = checks.get(key)
            if check is None:
                if closed:
                    return False
            elif not check(value):
                return False
        return True

    return conforms


@lru_cache(maxsize=1024)
def validator(schema: Any) -> Any:
    """A compiled validator per distinct schema (schemas are frozen, hence hashable); None if
    the schema is invalid."""
    plain = thaw(schema)
    cls = validators.validator_for(plain, default=validators.Draft202012Validator)
    try:
        cls.check_schema(plain)
    except SchemaError:
        return None
    # Integers by value in every draft (draft 4's checker would reject 100.0): one documented rule for all.
    checker = cls.TYPE_CHECKER.redefine("integer", _is_integer)
    # formats are checked (a date that is no date is a parameter error), with the formats jsonschema knows
    return validators.extend(cls, type_checker=checker)(plain, format_checker=cls.FORMAT_CHECKER)


def _is_integer(checker: Any, instance: Any) -> bool:
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())


def explain(error: ValidationError, path: str | None) -> str:
    where = f"argument {path!r}" if path else "the arguments"
    kind = error.validator
    if kind == "required":
        missing = missing_property(error)
        parent = f" of {path!r}" if path else ""
        return f"missing required argument {missing!r}{parent}" if missing else error.message
    verb = "are" if path is None else "is"
    if kind == "type":
        return (
            f"{where} {verb} {_json_type(error.instance)} {preview(error.instance)}, expected "
            f"{_expected(error.validator_value)}"
        )
    if kind == "enum":
        return f"{where} {verb} {preview(error.instance)}, not one of {preview(error.validator_value)}"
    if kind == "const":
        return f"{where} {verb} {preview(error.instance)}, expected {preview(error.validator_value)}"
    if kind == "additionalProperties":
        return f"{error.message}" if len(error.message) <= 200 else error.message[:200] + "…"
    message = error.message if len(error.message) <= 200 else error.message[:200] + "…"
    return f"{where}: {message}" if path else message


def missing_property(error: ValidationError) -> str | None:
    instance = error.instance
    required = error.validator_value
    if isinstance(instance, dict | Mapping) and isinstance(required, list | tuple):
        for name in required:
            if name not in instance and f"{name!r}" in error.message:
                return str(name)
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict | Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _expected(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " or ".join(str(v) for v in value)
    return str(value)


def preview(value: Any) -> str:
    try:
        text = json.dumps(thaw(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _VALUE_PREVIEW else text[:_VALUE_PREVIEW] + "…"
