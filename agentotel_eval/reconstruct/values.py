"""Decoding attribute values that instrumentations serialise in different ways.

"Structured" attributes arrive as JSON strings in every real capture (sometimes JSON inside JSON), as plain
Python values when the exporter used AnyValue maps and arrays, and occasionally as Python reprs
(``{'city': 'Paris'}`` from OpenLLMetry's LangChain ``input_str``). These helpers turn all of them into plain
values without ever raising: a value that is not structured stays what it was.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, TypeGuard

from agentotel_eval.jsontext import loads

_JSON_STARTS = frozenset('{["')
_JSON_VALUE_STARTS = frozenset(
    '{["-0123456789tfnNI'
)  # objects, arrays, strings, numbers, true/false/null, NaN, Infinity
_MAX_NESTING = 4  # JSON inside JSON inside JSON ... is unwrapped at most this deep
#: ``json.loads`` for a stripped string (ValueError when it is not exactly one JSON value), faster
_loads = loads


def parse_json(value: Any, *, depth: int = _MAX_NESTING) -> Any:
    """The value with JSON strings decoded (repeatedly, for JSON inside JSON); anything else unchanged.

    Only strings that look like a JSON object, array or string literal are tried, so a bare word or number
    stays a string here (a bare scalar is the caller's business).
    """
    if not isinstance(value, str):
        if not isinstance(value, (bytes, bytearray)):
            return value  # already a plain value: the common case for AnyValue attributes
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    while depth > 0 and isinstance(value, str):
        text = value.strip()
        if not text or text[0] not in _JSON_STARTS:
            return value
        try:
            value = _loads(text)
        except ValueError:
            return value
        depth -= 1
    return value


def parse_literal(value: str) -> Any:
    """A JSON or Python literal (``{'a': 1}``, ``None``, ``3``) parsed safely, or the string unchanged."""
    text = value.strip()
    if not text:
        return value
    if text[0] in _JSON_VALUE_STARTS:  # else json.loads can only fail (raising costs more than this test)
        try:
            return json.loads(text)
        except ValueError:
            pass
    if text[0] in "{[(" or text in ("None", "True", "False"):
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return value
    return value


def as_dict(value: Any) -> dict[str, Any] | None:
    """The value as a dict when it is (or decodes to) a JSON object, else None."""
    value = parse_json(value)
    return value if isinstance(value, dict) else None


def as_list(value: Any) -> list[Any] | None:
    """The value as a list when it is (or decodes to) a JSON array / tuple, else None."""
    value = parse_json(value)
    if isinstance(value, tuple):
        return list(value)
    return value if isinstance(value, list) else None


def seq(value: Any) -> list[Any] | tuple[Any, ...]:
    """The value when it is a list or tuple, else an empty tuple (malformed input is iterated safely)."""
    return value if isinstance(value, (list, tuple)) else ()


def clean_id(value: Any, placeholders: frozenset[str]) -> str | None:
    """A usable call id, or None for missing, empty and placeholder ids (ADK's ``"<not specified>"``)."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    if not text or text in placeholders or text.lower() in placeholders:
        return None
    return text


def text_of(value: Any) -> str | None:
    """Human-readable text in a content value: a string, or the text blocks of a content list.

    Handles ``"..."``, ``[{"type": "text", "text": ...}]`` (OpenAI), ``[{"text": ...}]`` (Bedrock/Strands),
    ``[{"type": "text", "content": ...}]`` (GenAI parts). Returns None when there is no text.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("text", "content"):
            inner = value.get(key)
            if isinstance(inner, str):
                return inner
        return None
    if isinstance(value, (list, tuple)):
        pieces = [t for t in (text_of(v) for v in value if isinstance(v, (str, dict))) if t]
        return "\n".join(pieces) if pieces else None
    return None


def numeric_equal(a: Any, b: Any) -> bool:
    """Deep equality where numbers compare by value (100 == 100.0) and bools stay distinct from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(numeric_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(numeric_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


_ERROR_TEXT_STARTS = frozenset(
    "eEtTaA"
)  # error/exception, traceback, an error occurred (ASCII case-insensitive)
_ERROR_TEXT = re.compile(
    r"^\s*(?:(?:error|exception)\s*:|traceback \(most recent call last\)|an error "
    r"occurred\b|error executing tool\b)",
    re.I,
)


def short_type_name(value: Any) -> str:
    """An exception's type without its module path (``tools.UnknownCityError`` -> ``UnknownCityError``)."""
    return str(value or "").rsplit(".", 1)[-1]


def looks_like_error_text(value: Any) -> TypeGuard[str]:
    """Whether a tool result is an error report fed back as text (``"Error: ..."``, a traceback, OpenAI
    Agents' ``"An error occurred while running the tool..."``, MCP's ``"Error executing tool <name>: ..."``).
    A text signal: never over a recorded ERROR status, and off with ``reconstruct(...,
    text_failures=False)``."""
    if not isinstance(value, str):
        return False
    first = value[:1]
    if first.isascii() and first not in _ERROR_TEXT_STARTS and not first.isspace():
        return False  # (empty, or) no error report starts this way: skip the regex
    return _ERROR_TEXT.match(value) is not None


#: what instrumentations write in place of a value they were told not to record
REDACTION_MARKERS = frozenset(
    {"__redacted__", "<redacted>", "[redacted]", "redacted", "[hidden]", "<hidden>", "***"}
)
_SCHEMA_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null", "any"})


def is_redacted(value: Any) -> bool:
    """Whether a recorded value is a redaction marker (``__REDACTED__``): the value was not captured."""
    return isinstance(value, str) and len(value) < 16 and value.strip().lower() in REDACTION_MARKERS


def looks_like_schema(value: Any) -> bool:
    """Whether a value where arguments belong is a parameter schema instead: ``{"type": "object",
    "properties": ...}``, or a map of parameter names to ``{"type": ...}`` specs (smolagents copies
    ``tool.parameters`` there)."""
    if isinstance(value, str) and '"type"' not in value:
        return False  # (the common case, decided without parsing: a schema always names its types)
    value = parse_json(value)
    if not isinstance(value, dict) or not value:
        return False
    if value.get("type") == "object" and isinstance(value.get("properties"), dict):
        return True
    for spec in value.values():
        if not (isinstance(spec, dict) and spec.get("type") in _SCHEMA_TYPES and spec.keys() <= _SPEC_KEYS):
            return False
    return True


_SPEC_KEYS = frozenset(
    {
        "type",
        "description",
        "title",
        "default",
        "enum",
        "items",
        "nullable",
        "format",
        "properties",
        "required",
        "anyOf",
        "minimum",
        "maximum",
        "examples",
    }
)


_ERROR_OBJECT_KEYS = frozenset(
    {
        "error",
        "message",
        "code",
        "details",
        "name",
        "stack",
        "type",
        "status",
        "errorType",
        "error_type",
        "cause",
        "domain",
        "category",
    }
)
_ERROR_DETAIL_KEYS = frozenset({"code", "details", "stack", "errorType", "error_type", "cause"})


def error_object_message(value: Any) -> str | None:
    """The message of a tool result that is an error object rather than a value: ``{"error": "..."}``
    (Haystack), ``{"message": ..., "code": ..., "details": ...}`` (Mastra); None for anything else."""
    if not isinstance(value, dict) or not value or not value.keys() <= _ERROR_OBJECT_KEYS:
        return None
    error = value.get("error")
    if error is not None and error is not False:
        if isinstance(error, str) and error:
            return error
        if isinstance(error, dict):
            inner = error.get("message")
            return inner if isinstance(inner, str) and inner else "error"
        return "error" if error is True else None
    message = value.get("message")
    if isinstance(message, str) and message and not _ERROR_DETAIL_KEYS.isdisjoint(value.keys()):
        return message
    return None


def display_key(name: str) -> str:
    """A tool name with case and separators dropped: ``Delegate work to coworker`` and
    ``delegate_work_to_coworker`` are one key."""
    return _SEPARATORS.sub("", name.casefold())


_SEPARATORS = re.compile(r"[\W_]+")
