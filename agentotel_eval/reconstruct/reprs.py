"""Python reprs of framework objects, read safely (never evaluated): LlamaIndex's own OpenTelemetry records a
call only as ``ToolCall(tool_name='search_flights', tool_kwargs={'origin': ...}, tool_id='call_...')``, capped
at 200 characters (then cut, ending in ``...``)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentotel_eval.frozen import freeze

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
    return _call_of_text(text)


@lru_cache(maxsize=1024)
def _call_of_text(text: str) -> ReprCall | None:
    """(parsed once per distinct text: a tool step and the tool object it runs record the same repr)"""
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
    return ReprCall(
        name,
        freeze(kwargs) if isinstance(kwargs, dict) else None,  # (cached: shared, so frozen)
        call_id if isinstance(call_id, str) and call_id else None,
    )


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
    if start < 0 or text[start + len(marker) : start + len(marker) + 1] != "{":
        return None
    begin = start + len(marker)
    end = _closing(text, begin)
    if end is None:
        return None
    try:
        return ast.literal_eval(text[begin : end + 1])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _closing(text: str, begin: int) -> int | None:
    """Index of the bracket closing the one at ``begin`` (quotes respected), or None when
    the text ends first."""
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
                return i
    return None


@dataclass(frozen=True, slots=True)
class ReprResult:
    """A tool result a framework object's repr describes, with the call it answers."""

    name: str | None
    arguments: dict[str, Any] | None
    call_id: str | None
    result: Any
    error: bool


_RESULT_OBJECT = "ToolCallResult("


def parse_result_reprs(text: Any) -> list[ReprResult]:
    """Every complete ``ToolCallResult(result=..., origin=ToolCall(tool_name=..., arguments=..., id=...),
    error=...)`` in ``text`` (Haystack's results, written as reprs inside a step's JSON output)."""
    if not isinstance(text, str) or _RESULT_OBJECT not in text:
        return []
    out: list[ReprResult] = []
    at = text.find(_RESULT_OBJECT)
    while at >= 0:
        end = _closing(text, at + len(_RESULT_OBJECT) - 1)
        if end is None:
            break
        found = _result_of(text[at : end + 1])
        if found is not None:
            out.append(found)
        at = text.find(_RESULT_OBJECT, end)
    return out


def _result_of(expression: str) -> ReprResult | None:
    try:
        call = ast.parse(expression, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _result_from_node(call) if isinstance(call, ast.Call) else None


def _result_from_node(call: ast.Call) -> ReprResult:
    fields = {k.arg: k.value for k in call.keywords if k.arg is not None}
    result, error = _literal(fields.get("result")), _literal(fields.get("error"))
    origin = fields.get("origin")
    keys = (
        {k.arg: _literal(k.value) for k in origin.keywords if k.arg} if isinstance(origin, ast.Call) else {}
    )
    name, arguments, call_id = keys.get("tool_name"), keys.get("arguments"), keys.get("id")
    return ReprResult(
        name if isinstance(name, str) and name else None,
        freeze(arguments) if isinstance(arguments, dict) else None,
        call_id if isinstance(call_id, str) and call_id else None,
        freeze(result),
        error is True,
    )


def _literal(node: ast.expr | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


@dataclass(frozen=True, slots=True)
class ReprMessage:
    """A chat message a framework object's repr describes: Haystack's ``ChatMessage(_role=<ChatRole.X: 'x'>,
    _content=[TextContent(...), ToolCall(...), ToolCallResult(...)], ...)``."""

    role: str
    texts: tuple[str, ...]
    calls: tuple[ReprCall, ...]
    results: tuple[ReprResult, ...]


_MESSAGE_OBJECT = "ChatMessage("
_ENUM_MEMBER = re.compile(r"<[A-Za-z_][\w.]*: ('[^'\\]*'|\"[^\"\\]*\")>")  # <ChatRole.USER: 'user'> -> 'user'


def parse_message_repr(text: Any) -> ReprMessage | None:
    """The message a ``ChatMessage(...)`` repr describes, or None when the text is not one (or was cut)."""
    if not isinstance(text, str) or not text.startswith(_MESSAGE_OBJECT):
        return None
    return _message_of(text)


@lru_cache(maxsize=1024)
def _message_of(text: str) -> ReprMessage | None:
    """(parsed once per distinct text: a step's output repeats the conversation its input
    and its wrapper hold)"""
    try:
        call = ast.parse(_ENUM_MEMBER.sub(r"\1", text), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(call, ast.Call):
        return None
    fields = {k.arg: k.value for k in call.keywords if k.arg is not None}
    role = _literal(fields.get("_role", fields.get("role")))
    content = fields.get("_content", fields.get("content"))
    if not isinstance(role, str) or not isinstance(content, ast.List):
        return None
    texts: list[str] = []
    calls: list[ReprCall] = []
    results: list[ReprResult] = []
    for item in content.elts:
        if not isinstance(item, ast.Call) or not isinstance(item.func, ast.Name):
            continue
        keys = {k.arg: k.value for k in item.keywords if k.arg is not None}
        kind = item.func.id
        if kind == "TextContent":
            value = _literal(keys.get("text"))
            if isinstance(value, str) and value:
                texts.append(value)
        elif kind == "ToolCall":
            found = _call_of(keys)
            if found is not None:
                calls.append(found)
        elif kind == "ToolCallResult":
            results.append(_result_from_node(item))
    return ReprMessage(role.lower(), tuple(texts), tuple(calls), tuple(results))


def _call_of(keys: dict[str, ast.expr]) -> ReprCall | None:
    """A ``ToolCall(tool_name=..., arguments=..., id=...)`` node's fields (arguments that are not a literal
    map are not captured)."""
    name, arguments, call_id = (
        _literal(keys.get("tool_name")),
        _literal(keys.get("arguments")),
        _literal(keys.get("id")),
    )
    if not isinstance(name, str) or not name:
        return None
    return ReprCall(
        name,
        freeze(arguments) if isinstance(arguments, dict) else None,
        call_id if isinstance(call_id, str) and call_id else None,
    )
