"""Python reprs of framework objects, read safely (never evaluated): LlamaIndex's own OpenTelemetry records a
call only as ``ToolCall(tool_name='search_flights', tool_kwargs={'origin': ...}, tool_id='call_...')``, capped
at 200 characters (then cut, ending in ``...``)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

_STRING_FIELD = r"{key}=(?P<q>['\"])(?P<value>(?:\\.|(?!(?P=q)).)*)(?P=q)"


@dataclass(frozen=True, slots=True)
class ReprCall:
    name: str
    arguments: dict[str, Any] | None  # None when the repr was cut before the arguments ended
    call_id: str | None


def parse_call_repr(text: Any, type_name: str = "ToolCall") -> ReprCall | None:
    """The call a ``ToolCall(...)`` repr describes, or None when the text is not one."""
    if not isinstance(text, str) or not text.startswith(type_name + "("):
        return None
    fields = _literal_keywords(text)
    if fields is None:  # cut short: what the complete fields before the cut say
        fields = {}
        for key in ("tool_name", "tool_id"):
            found = re.search(_STRING_FIELD.format(key=key), text)
            if found is not None:
                fields[key] = found["value"]
        kwargs = _cut_literal(text, "tool_kwargs=")
        if kwargs is not None:
            fields["tool_kwargs"] = kwargs
    name = fields.get("tool_name")
    if not isinstance(name, str) or not name:
        return None
    kwargs = fields.get("tool_kwargs")
    call_id = fields.get("tool_id")
    return ReprCall(name, kwargs if isinstance(kwargs, dict) else None,
                    call_id if isinstance(call_id, str) and call_id else None)


def _literal_keywords(text: str) -> dict[str, Any] | None:
    """Keyword arguments of a call expression whose values are literals; None when the text is not one."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    call = tree.body
    if not isinstance(call, ast.Call):
        return None
    out: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        try:
            out[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue  # a nested object repr: not a literal, left out
    return out


def _cut_literal(text: str, marker: str) -> Any:
    """The complete ``{...}`` literal right after ``marker``, or None when the text was cut inside it."""
    start = text.find(marker)
    if start < 0 or text[start + len(marker):start + len(marker) + 1] != "{":
        return None
    begin = start + len(marker)
    depth = 0
    quote: str | None = None
    escaped = False
    for i in range(begin, len(text)):
        ch = text[i]
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth == 0:
                try:
                    return ast.literal_eval(text[begin:i + 1])
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    return None
    return None
