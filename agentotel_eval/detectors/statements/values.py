"""The facts a recorded value holds: a tool's result (JSON, or text) or a call's arguments, read with the
words that name each fact (its key, or the words before it in a text) and the names that stand beside it (the
other short strings of its object, or the names earlier in its line), so an answer's statement can be matched
to the one it restates.

``{"hotel": "Roma", "price": 92, "currency": "EUR"}`` holds 92 EUR, named "price", beside "Roma";
``"Paris: 18C cloudy"`` holds 18 °C beside "Paris".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentotel_eval.detectors.statements import lexicon as lx
from agentotel_eval.detectors.statements.scan import CODE, DATE, NUMBER, STATUS, Fact, read

MAX_FACTS = 300  # facts read from one value: a result of thousands of rows is sampled, not read whole
_MAX_DEPTH = 8
_KEY_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])")
_GENERIC_KEYS = frozenset(
    {
        "value",
        "data",
        "result",
        "results",
        "item",
        "items",
        "info",
        "number",
        "num",
        "type",
        "text",
        "content",
        "output",
        "response",
        "the",
        "and",
        "for",
        "of",
        "id",
    }
)
#: key words -> the dimension a number under that key measures
_KEY_DIMS = (
    (
        frozenset(
            {
                "price",
                "cost",
                "amount",
                "total",
                "fare",
                "fee",
                "fees",
                "balance",
                "refund",
                "charge",
                "charged",
                "paid",
                "payment",
                "subtotal",
                "tax",
                "tip",
                "budget",
                "salary",
                "deposit",
                "spend",
                "spent",
                "revenue",
                "income",
                "usd",
                "eur",
                "gbp",
                "money",
                "owed",
                "due",
            }
        ),
        "money",
    ),
    (frozenset({"temp", "temperature", "celsius", "fahrenheit", "feels", "high", "low"}), "temperature"),
    (frozenset({"percent", "percentage", "pct", "probability", "humidity", "chance"}), "percent"),
    (frozenset({"distance", "km", "miles", "meters", "metres"}), "length"),
    (frozenset({"nights"}), "nights"),
    (frozenset({"minutes", "seconds", "hours", "duration", "mins", "secs"}), "duration"),
)
_TEMPERATURE_SUFFIX = {"c": "C", "f": "F", "celsius": "C", "fahrenheit": "F"}


@dataclass(frozen=True, slots=True)
class Recorded:
    """A fact in a recorded value: the fact, the words that name it, the names beside it."""

    fact: Fact
    words: frozenset[str]
    beside: frozenset[str]  # lower-cased short strings of its object, or names before it in its line
    key: str = ""  # the key it sits under in a JSON value


@lru_cache(maxsize=4096)
def key_words(key: str) -> frozenset[str]:
    """The words of a key that say what it holds ("refund_amount" -> {"refund", "amount"})."""
    words = {w.lower() for w in _KEY_WORD.findall(key)}
    return frozenset(w for w in words if len(w) >= 3 and w not in _GENERIC_KEYS)


def parsed(value: Any) -> Any:
    """A value recorded as JSON text, parsed; anything else as it is."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def read_value(value: Any, text: str | None = None) -> tuple[Recorded, ...]:
    """Every fact ``value`` holds, with its naming words and the names beside it (see the module docstring). A
    hashable value (a string, a frozen result) is read once however many runs hold it. ``text``, the value
    written as text (``tokens.value_text``) where the caller has it, keys that cache instead of the value's
    own hash: a string's hash is computed in C, a frozen result's recursively, for a result the
    next run will not hold."""
    if text is not None and not isinstance(value, str):
        return _read_keyed(_ByText(text, value))
    try:
        return _read_hashable(value)
    except TypeError:  # a plain dict or list
        return _read_value(value)


@lru_cache(maxsize=4096)
def _read_hashable(value: Any) -> tuple[Recorded, ...]:
    return _read_value(value)


class _ByText:
    """A value as a cache key: hashed by its text, equal to the same value written the same way (1 and 1.0,
    equal values, are written apart)."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Any) -> None:
        self.text = text
        self.value = value

    def __hash__(self) -> int:
        return hash(self.text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByText) and self.text == other.text and self.value == other.value


@lru_cache(maxsize=4096)
def _read_keyed(key: _ByText) -> tuple[Recorded, ...]:
    return _read_value(key.value)


def _read_value(value: Any) -> tuple[Recorded, ...]:
    out: list[Recorded] = []
    _walk(parsed(value), "", frozenset(), out, 0)
    return tuple(out)


def _dim_of(words: frozenset[str]) -> str:
    for names, dim in _KEY_DIMS:
        if words & names:
            return dim
    return ""


def _walk(value: Any, key: str, beside: frozenset[str], out: list[Recorded], depth: int) -> None:
    if len(out) >= MAX_FACTS or depth > _MAX_DEPTH:
        return
    kind = type(value)
    if kind is str:
        _text(value, key, beside, out)
    elif kind is int or kind is float:
        words = key_words(key)
        out.append(
            Recorded(
                Fact(NUMBER, float(value), 0, 0, str(value), dim=_dim_of(words), decimals=_decimals(value)),
                words,
                beside,
                key,
            )
        )
    elif isinstance(value, dict | Mapping):
        names = frozenset(
            v.strip().lower()
            for k, v in value.items()
            if isinstance(v, str)
            and 2 <= len(v.strip()) <= 60
            and not _is_status_key(str(k))
            and v.strip().upper() not in lx.CURRENCY_CODES
        )
        currency = _currency(value)
        temperature = _temperature_unit(value)
        for k, v in value.items():
            k = str(k)
            if isinstance(v, bool):
                _boolean(k, v, names, out)
            elif isinstance(v, int | float) and (currency or temperature):
                words = key_words(k)
                dim = _dim_of(words)
                unit = currency if dim == "money" else temperature if dim == "temperature" else ""
                out.append(
                    Recorded(
                        Fact(NUMBER, float(v), 0, 0, str(v), dim=dim, unit=unit, decimals=_decimals(v)),
                        words,
                        names,
                        k,
                    )
                )
            else:
                _walk(v, k, names, out, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            if len(out) >= MAX_FACTS:
                break
            _walk(item, key, beside, out, depth + 1)


def _decimals(value: int | float) -> int:
    if isinstance(value, int):
        return 0
    text = repr(value)
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def _is_status_key(key: str) -> bool:
    return key.lower() in lx.STATUS_KEYS or key.lower().endswith("_status")


def _currency(obj: Mapping[str, Any]) -> str:
    for key in ("currency", "currency_code", "ccy", "unit_currency"):
        code = obj.get(key)
        if isinstance(code, str) and code.strip().upper() in lx.CURRENCY_CODES:
            return code.strip().upper()
    return ""


def _temperature_unit(obj: Mapping[str, Any]) -> str:
    for key in ("unit", "units", "temperature_unit", "temp_unit"):
        unit = obj.get(key)
        if isinstance(unit, str):
            found = _TEMPERATURE_SUFFIX.get(unit.strip().lower().lstrip("°"))
            if found:
                return found
    return ""


def _boolean(key: str, value: bool, beside: frozenset[str], out: list[Recorded]) -> None:
    groups = lx.BOOLEAN_STATUS.get(key.lower())
    if groups is None:
        return
    group = groups[0] if value else groups[1]
    if not group:
        return
    axes = next((axes for g, axes in lx.STATUS_WORDS.values() if g == group), ())
    out.append(
        Recorded(
            Fact(STATUS, group, 0, 0, f"{key}={value}", unit=",".join(axes)), key_words(key), beside, key
        )
    )


def _text(text: str, key: str, beside: frozenset[str], out: list[Recorded]) -> None:
    words = key_words(key)
    status_key = _is_status_key(key) if key else False
    short = len(text) <= 40
    if not any(ch.isdigit() for ch in text) and not (status_key or short):
        return
    reading = read(text, statuses=status_key or short)
    if not reading.facts:
        return
    lower = reading.lower
    for fact in reading.facts:
        if fact.kind == STATUS and not (status_key or len(reading.facts) == 1 or short):
            continue
        # the words and names before the fact in its line name it: "Paris: 18C", "total 468.50 USD"
        line_start = (
            max(
                lower.rfind("\n", 0, fact.start),
                lower.rfind(";", 0, fact.start),
                lower.rfind(". ", 0, fact.start),
            )
            + 1
        )
        before = lower[line_start : fact.start]
        named = words | frozenset(w for w in _KEY_WORD.findall(before) if len(w) >= 3) if before else words
        near = beside | frozenset(_names(reading.text[line_start : fact.start])) if before else beside
        fact = _with_key_dim(fact, named)
        out.append(Recorded(fact, named, near, key))
        if len(out) >= MAX_FACTS:
            return


def _with_key_dim(fact: Fact, words: frozenset[str]) -> Fact:
    if fact.kind != NUMBER or fact.dim:
        return fact
    dim = _dim_of(words)
    if not dim:
        return fact
    return Fact(
        fact.kind,
        fact.value,
        fact.start,
        fact.end,
        fact.text,
        dim=dim,
        unit=fact.unit,
        decimals=fact.decimals,
        approx=fact.approx,
    )


_NAME = re.compile(r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*|[A-Z0-9]{2,}[-\w]*")


def _names(text: str) -> list[str]:
    """Capitalised names and codes in a piece of text ("Paris", "New York", "LH408"), lower-cased."""
    return [m.group(0).lower() for m in _NAME.finditer(text) if len(m.group(0)) >= 2]


def facts_of_kind(recorded: tuple[Recorded, ...], kind: str) -> list[Recorded]:
    return [r for r in recorded if r.fact.kind == kind]


__all__ = [
    "CODE",
    "DATE",
    "MAX_FACTS",
    "NUMBER",
    "STATUS",
    "Recorded",
    "facts_of_kind",
    "key_words",
    "parsed",
    "read_value",
]
