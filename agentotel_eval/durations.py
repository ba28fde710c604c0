"""One grammar for durations and sizes: every command's flags (``--since 1.5h``), the pages' time ranges and
the config file (``grace_period = "500ms"``, ``max_request_size = "20MiB"``) read them the same way.

A duration is a number of seconds (``90``, ``2.5``) or a number with a unit: ``ms``, ``s``, ``m`` (minutes),
``h``, ``d``, ``w`` (``"500ms"``, ``"1.5h"``, ``"30d"``, ``"2w"``). A size is a number of bytes or a number
with a unit: ``B``, ``KB``/``MB``/``GB`` (powers of 1000), ``KiB``/``MiB``/``GiB`` (powers of 1024). Units are
case-insensitive; spaces around the number and the unit are allowed.
"""

from __future__ import annotations

import re

__all__ = [
    "DURATION_EXAMPLES",
    "DurationError",
    "SizeError",
    "format_duration",
    "parse_duration",
    "parse_size",
]

DURATION_EXAMPLES = '90, "500ms", "1.5h", "30d"'
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$", re.IGNORECASE)
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2, "gb": 1000**3, "gib": 1024**3}


class DurationError(ValueError):
    """Not a duration; the message gives examples of one."""


class SizeError(ValueError):
    """Not a size; the message gives examples of one."""


def parse_duration(value: object) -> float:
    """Seconds from a number or a string such as ``"1.5h"``; ``DurationError`` for anything else (booleans,
    negative numbers, unknown units)."""
    if isinstance(value, bool) or (isinstance(value, int | float) and (value < 0 or value != value)):
        raise DurationError(f"expected a duration such as {DURATION_EXAMPLES}, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        raise DurationError(f"expected a duration such as {DURATION_EXAMPLES}, got {value!r}")
    unit = (match.group(2) or "s").lower()
    return float(match.group(1)) * _DURATION_UNITS[unit]


def format_duration(seconds: float) -> str:
    """The shortest exact spelling of ``seconds`` in the grammar: ``"7d"``, ``"1.5h"``,
    ``"500ms"``, ``"90s"``."""
    for unit in ("w", "d", "h", "m", "s"):
        count = seconds / _DURATION_UNITS[unit]
        if count >= 1 and round(count, 3) == count:
            return f"{count:g}{unit}"
    return f"{seconds * 1000:g}ms"


def parse_size(value: object) -> int:
    """Bytes from a whole number or a string such as ``"20MiB"``; ``SizeError`` for anything else."""
    if isinstance(value, bool) or (isinstance(value, int) and value < 0):
        raise SizeError(f'expected a size such as 20971520 or "20MiB", got {value!r}')
    if isinstance(value, int):
        return value
    match = _SIZE.match(value) if isinstance(value, str) else None
    if match is None:
        raise SizeError(f'expected a size such as 20971520 or "20MiB", got {value!r}')
    unit = (match.group(2) or "b").lower()
    return int(float(match.group(1)) * _SIZE_UNITS[unit])
