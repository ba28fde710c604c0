"""The config file's data validated into a ``CollectorConfig`` by pydantic; its errors as a ``ConfigError``.

pydantic validates the frozen dataclasses of ``agentotel_eval.collector.config`` directly: their type hints,
the markers of ``config_fields`` (durations, sizes, sections with their own parser) and ``CollectorConfig``'s
``__pydantic_config__`` (exact types, unknown keys refused). The data goes in as JSON: in strict mode pydantic
takes a table for a dataclass, and a list for a tuple, only from JSON (from Python it wants the instances).

Kept apart from the config types so that the helper processes, which import those, never import pydantic.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import typing
from collections.abc import Mapping
from typing import Any

import pydantic

from agentotel_eval.collector.config import CollectorConfig, ConfigError, default_config

#: how pydantic's error types read in a config error; the rest keep pydantic's message
_MESSAGES = {
    "int_type": "expected an integer, got {value!r}",
    "int_from_float": "expected an integer, got {value!r}",
    "float_type": "expected a number, got {value!r}",
    "bool_type": "expected true or false, got {value!r}",
    "string_type": "expected a string, got {value!r}",
    "tuple_type": "expected a list, got {value!r}",
    "list_type": "expected a list, got {value!r}",
    "dict_type": "expected a table, got {kind}",
    "dataclass_type": "expected a table of settings, got {kind}",
}


@functools.cache
def _adapter() -> pydantic.TypeAdapter[CollectorConfig]:
    return pydantic.TypeAdapter(CollectorConfig)


def config_from_mapping(data: Mapping[str, Any], base: CollectorConfig | None = None) -> CollectorConfig:
    """``base`` (the defaults) with the settings of ``data`` (a parsed TOML file); ``ConfigError`` names the
    first bad key, and says how many more problems there are."""
    base = base or default_config()
    dated = _date_key(data)
    if dated is not None:
        raise ConfigError(dated, "expected a setting, got a TOML date or time")
    try:
        given = _adapter().validate_json(json.dumps(data))
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False)
        key, message = _problem(errors[0])
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more {'problem' if len(errors) == 2 else 'problems'})"
        raise ConfigError(key, message) from None
    return _over(base, given, data)


def _over(base: CollectorConfig, given: CollectorConfig, data: Mapping[str, Any]) -> CollectorConfig:
    """``base`` with what ``data`` sets: a table of plain settings changes only the keys it names; a section
    read whole (judge, forward, redaction, the lists) replaces base's."""
    hints = _hints(CollectorConfig)
    changes = {}
    for name, raw in data.items():
        value = getattr(given, name)
        if (
            isinstance(raw, Mapping)
            and isinstance(hints[name], type)
            and dataclasses.is_dataclass(hints[name])
        ):
            value = dataclasses.replace(getattr(base, name), **{key: getattr(value, key) for key in raw})
        changes[name] = value
    return dataclasses.replace(base, **changes)


def _problem(error: Any) -> tuple[str, str]:
    """The dotted key and the message of one pydantic error."""
    loc, kind, value = tuple(error["loc"]), error["type"], error.get("input")
    if kind == "missing":
        return _key(loc[:-1]), f"{loc[-1]} is required"
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        known = _section(loc[:-1])
        names = ", ".join(sorted(f.name for f in dataclasses.fields(known))) if known else "none"
        return _key(loc), f"unknown setting (known here: {names})"
    if kind in ("value_error", "assertion_error"):
        return _key(loc), str(error["ctx"]["error"])
    if kind in _MESSAGES:
        return _key(loc), _MESSAGES[kind].format(value=value, kind=type(value).__name__)
    return _key(loc), f"{error['msg']}, got {value!r}"


def _key(loc: tuple[Any, ...]) -> str:
    """``("expectations", 0, "modes")`` as ``expectations[0].modes``."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def _section(loc: tuple[Any, ...]) -> type | None:
    """The dataclass of the table at ``loc`` (to list its keys); items of a list share the list's type."""
    section: type | None = CollectorConfig
    for part in loc:
        if section is None:
            break
        if isinstance(part, str):
            section = _table(_hints(section).get(part))
    return section


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def _table(hint: Any) -> type | None:
    """The dataclass inside a hint: ``Annotated[ForwardConfig | None, ...]`` → ``ForwardConfig``."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        found = _table(arg)
        if found is not None:
            return found
    return None


def _date_key(value: Any, key: str = "") -> str | None:
    """The key of a TOML date or time, which no setting takes and JSON cannot carry."""
    if isinstance(value, datetime.date | datetime.time):
        return key
    items = (
        value.items() if isinstance(value, Mapping) else enumerate(value) if isinstance(value, list) else ()
    )
    for name, item in items:
        found = _date_key(item, f"{key}[{name}]" if isinstance(name, int) else f"{key}.{name}".lstrip("."))
        if found is not None:
            return found
    return None
