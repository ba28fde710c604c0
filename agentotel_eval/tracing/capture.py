"""Turn arbitrary Python values into bounded, secret-free JSON text for span attributes.

Pure functions, no OpenTelemetry. The hot path (small dicts of plain scalars) is one C-encoder call;
everything else (non-JSON objects, secrets nested in mappings, oversized values) takes slower
paths only when needed.

Rules:
- a mapping key or argument name that looks like a secret (``password``, ``api_key``/``apikey``/``api-key``,
  ``token``, ``secret``, ``authorization``; case-insensitive, anywhere in the name) has its value replaced by
  ``[REDACTED]``. Token *counts* (``max_tokens``, ``input_tokens``, ``token_count``, ``token_limit``) are not
  secrets and are kept, since LLM calls are full of them.
- values JSON cannot encode become plain JSON where a faithful form exists (dataclasses, pydantic models,
  sets, bytes, dates, enums), else their ``repr`` truncated to ``REPR_MAX_CHARS``. A ``repr`` that raises is
  replaced by ``<unrepresentable TypeName>``.
- text longer than ``max_chars`` is shrunk: long strings and sequences inside the structure are cut first (so
  the result stays valid JSON), and only if that is not enough is the text itself cut, with a marker.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import enum
import json
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from pathlib import PurePath
from typing import Any

import orjson

from agentotel_eval.jsontext import has_non_finite

REDACTED = "[REDACTED]"
DEFAULT_MAX_CHARS = 16_384
REPR_MAX_CHARS = 1_024
_MAX_DEPTH = 32

_SECRET_NAME = re.compile(
    r"password|api[_-]?key|token(?!s|_?count|_?limit)|secret|authorization", re.IGNORECASE
)
_PLAIN = (str, int, float, bool, type(None))
_PLAIN_TYPES = PLAIN_TYPES = frozenset(_PLAIN)


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a value stored under this argument name or mapping key must be redacted."""
    return _SECRET_NAME.search(name) is not None


def safe_repr(value: Any, max_chars: int = REPR_MAX_CHARS) -> str:
    """``repr(value)`` cut to ``max_chars``; never raises (a user's ``__repr__`` may)."""
    try:
        text = repr(value)
    except Exception:
        return f"<unrepresentable {type(value).__qualname__}>"
    return truncate(text, max_chars)


def truncate(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, ending with a marker saying how much was dropped."""
    if len(text) <= max_chars:
        return text
    keep = max(max_chars - 32, max_chars // 2)
    return f"{text[:keep]}...[truncated {len(text) - keep} chars]"


def redact(value: Any, _depth: int = 0) -> Any:
    """The value with secret-named mapping entries replaced; returns the same object when nothing changed."""
    value_type = type(value)
    if value_type in _PLAIN_TYPES or _depth > _MAX_DEPTH:
        return value
    # exact list/tuple first: an isinstance() against the Mapping ABC costs about a microsecond when it fails
    if (
        value_type is list
        or value_type is tuple
        or (value_type is not dict and isinstance(value, list | tuple))
    ):
        items = None
        for index, item in enumerate(value):
            new = redact(item, _depth + 1)
            if new is not item:
                if items is None:
                    items = list(value)
                items[index] = new
        return value if items is None else items
    if value_type is dict or isinstance(value, Mapping):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new = REDACTED if isinstance(key, str) and is_secret_name(key) else redact(item, _depth + 1)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    return value


def redact_arguments(arguments: dict[str, Any], safe_names: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Bound arguments with secret-named ones (and secret keys nested in their values) redacted.

    ``safe_names``: argument names already known not to be secrets (a function's parameters, checked once).
    """
    out = arguments
    for name, value in arguments.items():
        if name not in safe_names and is_secret_name(name):
            new = REDACTED
        elif type(value) in _PLAIN_TYPES:
            continue
        else:
            new = redact(value)
        if new is not value:
            if out is arguments:
                out = dict(arguments)
            out[name] = new
    return out


def _jsonable(value: Any) -> Any:
    """JSON encoder fallback: a faithful plain form for common types, else a truncated repr."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return redact({f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)})
    dump = getattr(value, "model_dump", None)  # pydantic v2
    if callable(dump) and not isinstance(value, type):
        try:
            return redact(dump(mode="json"))
        except Exception:
            return safe_repr(value)
    if isinstance(value, set | frozenset):
        try:
            return sorted(value)
        except TypeError:
            return list(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return (
            truncate(base64.b64encode(raw).decode("ascii"), REPR_MAX_CHARS)
            if len(raw) > 64
            else safe_repr(raw)
        )
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value if isinstance(value.value, _PLAIN) else value.name
    if isinstance(value, Decimal | uuid.UUID | PurePath):
        return str(value)
    return safe_repr(value)


# orjson for the common case (several times faster than the json module on the small dicts of bound
# arguments); what it refuses (integers beyond 64 bits, keys JSON cannot hold, lone surrogates, cycles, deep
# nesting) goes through the json module. Datetimes and dataclasses go to ``_jsonable`` as they would
# with the json module.
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_orjson_dumps = orjson.dumps
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=_jsonable, separators=(",", ":"))


def _fast(value: Any) -> str:
    """``value`` as JSON by orjson; raises TypeError (orjson.JSONEncodeError) for what orjson refuses, and for
    a NaN or an infinity, which orjson would write as null (the json module keeps them)."""
    out = _orjson_dumps(value, default=_jsonable, option=_ORJSON_OPTIONS)
    if b"null" in out and has_non_finite(value):
        raise TypeError("a NaN or infinity")
    return out.decode()


def _encode_str(text: str) -> str:
    try:
        return _orjson_dumps(text).decode()
    except TypeError:  # a lone surrogate
        return json.dumps(text, ensure_ascii=False)


def _string_keys(value: Any, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        return safe_repr(value)
    if isinstance(value, Mapping):
        return {
            key if type(key) in _PLAIN_TYPES else safe_repr(key): _string_keys(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_string_keys(item, depth + 1) for item in value]
    return value


def _encode(value: Any) -> str:
    value_type = type(value)
    if value_type is str:
        return _encode_str(value)
    if value is None:
        return "null"
    if value_type is bool:
        return "true" if value else "false"
    if value_type is int:
        return str(value)
    try:
        return _fast(value)
    except TypeError:
        pass
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError):
        pass
    # Keys JSON cannot hold (tuples, objects), circular references, pathological nesting: keep what we can.
    try:
        return _ENCODER.encode(_string_keys(value))
    except (TypeError, ValueError, RecursionError):
        return _encode_str(safe_repr(value))


def _shrink(value: Any, str_cap: int, item_cap: int) -> Any:
    if isinstance(value, str):
        return truncate(value, str_cap)
    if isinstance(value, list):
        items = [_shrink(item, str_cap, item_cap) for item in value[:item_cap]]
        if len(value) > item_cap:
            items.append(f"...[{len(value) - item_cap} more items]")
        return items
    if isinstance(value, dict):
        return {key: _shrink(item, str_cap, item_cap) for key, item in value.items()}
    return value


def _as_json_string(text: str, max_chars: int) -> str:
    """The (cut) text as one JSON string literal of at most ``max_chars``: still parseable, structure lost."""
    keep = max_chars
    while True:
        encoded = _encode_str(truncate(text, keep))
        if len(encoded) <= max_chars or keep <= 1:
            return encoded
        keep = max(1, keep * max_chars // len(encoded) - 1)


def to_json(value: Any, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Compact JSON text of ``value`` (already redacted by the caller), at most ``max_chars``
    long, always valid.

    Too long: long strings and lists inside are cut (with markers) until it fits; if even that fails (a huge
    flat mapping), the text becomes one JSON string holding its cut beginning.
    """
    value_type = type(value)
    if value_type is dict or value_type is list:
        # the common case (bound arguments, a list result) first, without _encode()'s type checks
        try:
            text = _fast(value)
        except TypeError:
            text = _encode(value)
    else:
        text = _encode(value)
    if len(text) <= max_chars:
        return text
    plain = json.loads(text)
    str_cap, item_cap = max(max_chars // 4, 16), max(max_chars // 16, 1)
    while True:
        shrunk = _encode(_shrink(plain, str_cap, item_cap))
        if len(shrunk) <= max_chars:
            return shrunk
        if str_cap == 16 and item_cap == 1:
            return _as_json_string(text, max_chars)
        str_cap, item_cap = max(str_cap // 2, 16), max(item_cap // 2, 1)


def to_text(value: Any, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """A string value as itself (truncated), anything else as JSON: what a chat message's text should be."""
    if isinstance(value, str):
        return truncate(value, max_chars)
    return to_json(redact(value), max_chars)
