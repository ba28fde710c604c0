"""Values as text, and whole-token search in text: what tells an id that was copied from
one that was made up."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

_ID_LIKE = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)#?[A-Za-z0-9][A-Za-z0-9_\-:.]{3,62}[A-Za-z0-9]$")
_DIGITS_ID = re.compile(r"^\d{7,20}$")
_DATE_OR_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([T ].*)?$|^\d{1,2}:\d{2}(:\d{2})?$")


def id_like(value: Any) -> bool:
    """An identifier: 5 to 64 characters mixing letters and digits, no spaces, not a date, time or number
    ("A-1042", "u_7731", a UUID), or a long run of digits written as text ("1656367028")."""
    if not isinstance(value, str):
        return False
    if _DIGITS_ID.match(value) is not None:
        # a long run of digits passed as text is an identifier by intent ("1656367028"); a
        # round one a quantity
        return not value.endswith("000")
    return _ID_LIKE.match(value) is not None and _DATE_OR_TIME.match(value) is None and not _is_number(value)


def _is_number(value: str) -> bool:
    try:
        float(value)  # "1.257e-06": a number written as a string
    except ValueError:
        return False
    return True


def string_values(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > 6:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | Mapping):  # a dict (frozen or not) is told before the ABC check
        for v in value.values():
            yield from string_values(v, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from string_values(v, depth + 1)


def value_text(value: Any) -> str:
    """A recorded value as text to search: a string as it is, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, ValueError, orjson.JSONEncodeError):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)  # an integer beyond 64 bits
        except (TypeError, ValueError):
            return str(value)


def contains_token(text: str, value: str) -> bool:
    """``value`` as a whole token of ``text`` (not inside a longer id)."""
    start = text.find(value)
    while start >= 0:
        before = text[start - 1] if start else " "
        end = start + len(value)
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before in "_-") and not (after.isalnum() or after in "_-"):
            return True
        start = text.find(value, start + 1)
    return False
