"""Turn arbitrary Python values into bounded, secret-free JSON text for span attributes.

Pure functions, no OpenTelemetry. The hot path (small dicts of plain scalars) is one C-encoder call; everything
else (non-JSON objects, secrets nested in mappings, oversized values) takes slower paths only when needed.

Rules:
- a mapping key or argument name that looks like a secret (``password``, ``api_key``/``apikey``/``api-key``,
  ``token``, ``secret``, ``authorization``; case-insensitive, anywhere in the name) has its value replaced by
  ``[REDACTED]``. Token *counts* (``max_tokens``, ``input_tokens``, ``token_count``, ``token_limit``) are not
  secrets and are kept, since LLM calls are full of them.
- values JSON cannot encode become plain JSON where a faithful form exists (dataclasses, pydantic models, sets,
  bytes, dates, enums), else their ``repr`` truncated to ``REPR_MAX_CHARS``. A ``repr`` that raises is replaced
  by ``<unrepresentable TypeName>``.
- text longer than ``max_chars`` is shrunk: long strings and sequences inside the structure are cut first (so the
  result stays valid JSON), and only if that is not enough is the text itself cut, with a marker.
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

REDACTED = "[REDACTED]"
DEFAULT_MAX_CHARS = 16_384
REPR_MAX_CHARS = 1_024
_MAX_DEPTH = 32

_SECRET_NAME = re.compile(
    r"password|api[_-]?key|token(?!s|_?count|_?limit)|secret|authorization", re.IGNORECASE
)
_PLAIN = (str, int, float, bool, type(None))


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
    """Cut ``text`` to ``max_chars`` plus a marker saying how much was dropped."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}...[truncated {len(text) - max_chars} chars]"


def redact(value: Any, _depth: int = 0) -> Any:
    """The value with secret-named mapping entries replaced; returns the same object when nothing changed."""
    if isinstance(value, _PLAIN) or _depth > _MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new = REDACTED if isinstance(key, str) and is_secret_name(key) else redact(item, _depth + 1)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [redact(item, _depth + 1) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    return value


def redact_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Bound arguments with secret-named ones (and secret keys nested in their values) redacted."""
    out = arguments
    for name, value in arguments.items():
        new = REDACTED if is_secret_name(name) else redact(value)
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


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=_jsonable, separators=(",", ":"))


def _string_keys(value: Any, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        return safe_repr(value)
    if isinstance(value, Mapping):
        return {
            key if isinstance(key, str) else safe_repr(key): _string_keys(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_string_keys(item, depth + 1) for item in value]
    return value


def _encode(value: Any) -> str:
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError):
        pass
    # Keys JSON cannot hold (tuples, objects), circular references, pathological nesting: keep what we can.
    try:
        return _ENCODER.encode(_string_keys(value))
    except (TypeError, ValueError, RecursionError):
        return _ENCODER.encode(safe_repr(value))


def _shrink(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        return truncate(value, cap)
    if isinstance(value, list):
        items = [_shrink(item, cap) for item in value[:cap]]
        if len(value) > cap:
            items.append(f"...[{len(value) - cap} more items]")
        return items
    if isinstance(value, dict):
        return {key: _shrink(item, cap) for key, item in value.items()}
    return value


def to_json(value: Any, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Compact JSON text of ``value`` (already redacted by the caller), at most about ``max_chars`` long."""
    text = _encode(value)
    if len(text) <= max_chars:
        return text
    plain = json.loads(text)
    cap = max(max_chars // 4, 16)
    while cap >= 16:
        shrunk = _encode(_shrink(plain, cap))
        if len(shrunk) <= max_chars:
            return shrunk
        cap //= 4
    return truncate(text, max_chars)


def to_text(value: Any, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """A string value as itself (truncated), anything else as JSON: what a chat message's text should be."""
    if isinstance(value, str):
        return truncate(value, max_chars)
    return to_json(redact(value), max_chars)
