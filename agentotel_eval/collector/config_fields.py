"""Markers on config fields (``Annotated[float, Duration]``) that tell the loader how to validate a value.

The config's section types are imported by the helper processes, which never read a config file, so this
module does not import pydantic: a marker's ``__get_pydantic_core_schema__`` imports ``pydantic_core`` only
when the loader (``agentotel_eval.collector.config_validation``) builds its schema. A ``ValueError`` a
marker's function raises becomes the loader's ``ConfigError`` for that field's key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentotel_eval import durations


class Parsed:
    """The value is what ``parse`` makes of the file's value, in place of the field type's own validation."""

    __slots__ = ("parse",)

    def __init__(self, parse: Callable[[Any], Any]) -> None:
        self.parse = parse

    def _parse(self, value: Any) -> Any:
        try:
            return self.parse(value)
        except (TypeError, AttributeError) as exc:  # a parser handed a value of a shape it does not expect
            raise ValueError(f"invalid value {value!r}: {exc}") from None

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(self._parse)


class Before:
    """``reshape`` turns the file's value into the field type's shape (a URL into a table), then
    the type validates."""

    __slots__ = ("reshape",)

    def __init__(self, reshape: Callable[[Any], Any]) -> None:
        self.reshape = reshape

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_before_validator_function(self.reshape, handler(source))


class After:
    """``check`` takes the validated value and returns it, or a completed copy, or raises ``ValueError``."""

    __slots__ = ("check",)

    def __init__(self, check: Callable[[Any], Any]) -> None:
        self.check = check

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(self.check, handler(source))


class Range(After):
    """A number at least ``low`` (and at most ``high``); an absent optional number passes."""

    __slots__ = ("high", "low")

    def __init__(self, low: float, high: float | None = None) -> None:
        super().__init__(self._within)
        self.low, self.high = low, high

    def _within(self, value: float | None) -> float | None:
        if value is not None and (value < self.low or (self.high is not None and value > self.high)):
            bounds = f"between {self.low} and {self.high}" if self.high is not None else f">= {self.low}"
            raise ValueError(f"must be {bounds}, got {value!r}")
        return value


#: seconds, from a number or a string such as ``"500ms"`` or ``"30d"``
Duration = Parsed(durations.parse_duration)
#: bytes, from a whole number or a string such as ``"20MiB"``
Size = Parsed(durations.parse_size)
