"""JSON text in and out, fast, with the stdlib's meaning.

Every span's attributes are written as JSON on ingest and parsed back when a completed trace is read for
assembly, so both directions run for every span the collector stores. orjson does each several times faster
than the ``json`` module; where it would mean something else, the stdlib does the work instead:

* ``dumps``: NaN and infinities are spelled as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (orjson
  writes ``null``, losing them; the stdlib cannot write them as JSON at all); lone surrogates, integers beyond
  64 bits and dict keys that are not strings, which orjson refuses, go through the stdlib encoder as before.
  Output is compact, keeps non-ASCII characters, and parses to the same value as the stdlib's (numbers may be
  spelled differently: ``1e+300`` is ``1e300``). Values of other types become what ``json_default`` makes of
  them, as with the stdlib encoder, except enums, which orjson writes by their value (the stdlib has no
  spelling for a plain ``Enum``; OTLP values and the collector's own documents hold none).
* ``loads``: NaN/Infinity literals, which orjson refuses, and integers beyond 64 bits, which it reads as
  floats, are parsed by the stdlib (a parsed value holding an integral float of 2**64 or more is read again).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import orjson

_orjson_dumps = orjson.dumps
#: datetimes and dataclasses go to ``json_default`` (their ``str()``, as the stdlib encoder would make them)
#: instead of orjson's own spellings; enums are the one type orjson still writes its own way (by
#: value, not ``str()``)
_DUMPS_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_orjson_loads = orjson.loads
_OrjsonEncodeError = orjson.JSONEncodeError
_OrjsonDecodeError = orjson.JSONDecodeError


def json_default(value: Any) -> Any:
    """What a value JSON has no type for becomes: bytes as base64, other mappings as dicts, sets as lists."""
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    if isinstance(value, float):  # a subclass (numpy.float64): the stdlib writes it as the float it is
        return float(value)
    return str(value)


def finite(value: Any) -> Any:
    """NaN and infinities are not JSON: they become the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {_key(k): finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [finite(v) for v in value]
    return value


def _key(key: Any) -> Any:
    """A dict key as the stdlib encoder writes it (``true``, ``null``, ``1.5``), NaN and
    infinities spelled out."""
    if isinstance(key, str):
        return key
    if key is True or key is False:
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, float):
        return finite(key) if not math.isfinite(key) else float.__repr__(key)
    if isinstance(key, int):
        return int.__repr__(key)
    return key  # the stdlib refuses it, as before


def has_non_finite(value: Any) -> bool:
    """Whether a NaN or infinity is anywhere in the value (``x - x`` is 0.0 for every finite float only).

    Plain dicts, lists and tuples are told by their exact type before the (slow) ABC checks; empty ones and
    scalars are skipped without a call."""
    t = type(value)
    if t is dict:
        items: Any = value.values()
    elif t is list or t is tuple:
        items = value
    elif t is float:
        return value - value != 0.0
    elif isinstance(value, Mapping):
        items = value.values()
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:
        return isinstance(value, float) and value - value != 0.0
    for v in items:
        vt = type(v)
        if vt is str or v is None or vt is bool or vt is int:
            continue
        if vt is float:
            if v - v != 0.0:
                return True
        elif (vt is list or vt is dict) and not v:
            continue
        elif has_non_finite(v):
            return True
    return False


# The stdlib's encoder, built once (decoded attributes cannot be circular, so no circularity check): the
# reference for what ``dumps`` means, and its fallback.
_stdlib_encode: Callable[[Any], str] = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False, default=json_default
).encode


def stdlib_dumps(value: Any) -> str:
    """``dumps`` through the ``json`` module alone (what ``dumps`` falls back to)."""
    try:
        return _stdlib_encode(value)
    except ValueError:  # a NaN or infinity somewhere
        return _stdlib_encode(finite(value))


def dumps(value: Any) -> str:
    """Compact JSON text of a value (see the module docstring for what it means exactly)."""
    try:
        out = _orjson_dumps(value, default=json_default, option=_DUMPS_OPTIONS)
    except (_OrjsonEncodeError, TypeError):  # lone surrogates, huge integers, non-string keys
        return stdlib_dumps(value)
    if b"null" in out and has_non_finite(value):  # orjson wrote a NaN or infinity as null
        return stdlib_dumps(value)
    return out.decode()


def _stdlib_loads(text: str | bytes | bytearray | memoryview) -> Any:
    return json.loads(_as_text(text))


def loads(text: str | bytes) -> Any:
    """The value of one JSON text (ValueError when it is not exactly one JSON value, surrounding whitespace
    aside); NaN/Infinity literals and integers of any size are read as ``json.loads`` reads them."""
    try:
        value = _orjson_loads(text)
    except _OrjsonDecodeError:
        return _stdlib_loads(text)
    t = type(value)
    if t is float:
        if _may_hold_big_integer(value):
            return _stdlib_loads(text)
    elif (t is dict or t is list) and _has_digit_run(text) and _may_hold_big_integer(value):
        return _stdlib_loads(text)
    return value


def loads_stored(text: str | bytes) -> Any:
    """``loads`` for JSON this module wrote from decoded OTLP values (the attributes, events and resources of
    stored spans): their integers fit 64 bits (OTLP's ints are int64), so orjson reads them exactly and the
    search for a huge integer read as a float is skipped. Anything orjson refuses still goes to the stdlib."""
    try:
        return _orjson_loads(text)
    except _OrjsonDecodeError:
        return _stdlib_loads(text)


def _as_text(text: str | bytes | bytearray | memoryview) -> str:
    if isinstance(text, bytes | bytearray | memoryview):
        raw = bytes(text)
        try:  # as json.loads reads bytes: UTF-8 (a BOM skipped), UTF-16 or UTF-32
            text = raw.decode(json.detect_encoding(raw), "strict")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8: {exc}") from None
        text = text.removeprefix("\ufeff")
    return text


_U64 = 2.0**64  # orjson reads integers up to 2**64 - 1 exactly
_I64_MIN = -(2.0**63)  # and down to -2**63; below, as a float that rounds to -2**63 or lower
#: bytes -> b"0" for an ASCII digit, b" " for anything else (UTF-8 continuation bytes are never digits)
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_BIG_INTEGER_DIGITS = b"0" * 19  # the shortest integer literal orjson reads as a float: -9223372036854775809


def _has_digit_run(text: str | bytes | bytearray | memoryview) -> bool:
    """Whether the text holds 19 digits in a row, as every integer literal beyond 64 bits does: without one
    the parsed value need not be walked for a huge integer read as a float (the walk costs more than the
    parse; this C-level scan a fraction of it). A float literal such as ``1e20`` reads the
    same in both parsers."""
    if len(text) < 19:
        return False
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    return _BIG_INTEGER_DIGITS in raw.translate(_DIGITS_AS_ZERO)


def _may_hold_big_integer(value: Any) -> bool:
    """Whether orjson may have read an integer beyond 64 bits (it gives an integral float of 2**64 or more, or
    of -2**63 or less: a literal float of that size is re-read by the stdlib too, which reads it alike)."""
    t = type(value)
    if t is float:
        return (value >= _U64 or value <= _I64_MIN) and value.is_integer()
    if t is dict:
        for v in value.values():
            vt = type(v)
            if (vt is float or vt is dict or vt is list) and _may_hold_big_integer(v):
                return True
        return False
    if t is list:
        for v in value:
            vt = type(v)
            if (vt is float or vt is dict or vt is list) and _may_hold_big_integer(v):
                return True
        return False
    return False
