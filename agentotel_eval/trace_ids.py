"""Trace ids as people type them: the whole 32 hex digits, or a unique prefix of at least 8 (the pages, the
pytest plugin's failure messages and ``explain`` show shortened ids)."""

from __future__ import annotations

import re
from collections.abc import Sequence

TRACE_ID_DIGITS = 32
MIN_PREFIX = 8
_HEX = re.compile(r"^[0-9a-f]+$")


class TraceIdError(ValueError):
    """A trace id that cannot be used; the message says why and, for a prefix, which traces it matches."""


def trace_reference(text: str) -> str:
    """``text`` as a trace id or a prefix of one (lower case, stripped); ``TraceIdError`` otherwise."""
    value = text.strip().lower()
    if not _HEX.match(value) or not MIN_PREFIX <= len(value) <= TRACE_ID_DIGITS:
        raise TraceIdError(
            f"not a trace id: {text!r} (32 hex digits, or a unique prefix of at least {MIN_PREFIX})"
        )
    return value


def prefix_bounds(prefix: str) -> tuple[str, str]:
    """The lowest and highest trace ids that start with ``prefix``: a range a sorted column can seek."""
    pad = TRACE_ID_DIGITS - len(prefix)
    return prefix + "0" * pad, prefix + "f" * pad


def the_one(reference: str, matches: Sequence[str], where: str) -> str:
    """The trace a reference names, among the ids that start with it (``matches``, sorted, at most a few more
    than are shown); ``TraceIdError`` when none or several do."""
    if len(reference) == TRACE_ID_DIGITS:
        return reference
    if not matches:
        raise TraceIdError(f"no trace in {where} starts with {reference}")
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise TraceIdError(
            f"{reference} is the start of {'more than 5' if len(matches) > 5 else len(matches)} "
            f"traces in {where}: {shown}; give more digits"
        )
    return matches[0]
