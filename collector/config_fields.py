"""Markers on config fields (``Annotated[float, Duration]``) that tell the loader how to validate a value.

The config's section types are imported by the helper processes, which never read a config file, so this module
does not import pydantic: a marker's ``__get_pydantic_core_schema__`` imports ``pydantic_core`` only when the loader
(``agentotel_eval.collector.config_validation``) builds its schema. A ``ValueError`` a marker's function raises
becomes the loader's ``ConfigError`` for that field's key.
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


#: seconds, from a number or a string such as ``"500ms"`` or ``"30d"``
Duration = Parsed(durations.parse_duration)
#: bytes, from a whole number or a string such as ``"20MiB"``
Size = Parsed(durations.parse_size)
