"""The tool history a judge reads, rendered from a test case. Pure.

Sources, in order of preference: structured ``tool_calls`` (as reconstructed from traces: arguments, result,
error status); ``context``; ``tools_called`` (often names only, which the rendering says); else a text
fallback from ``expected_output``. Each call shows its position, name, arguments, status and result or error.

Every value is cut at ``max_value_chars`` and the whole history at ``max_chars``, with a visible marker, so a
huge tool result cannot blow the judge's context window or the bill. When calls must go, the middle ones go
(the first calls set up the task and the last ones lead to the answer) and the marker says which.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.test_case import ToolCall, as_tool_calls

DEFAULT_MAX_VALUE_CHARS = 2_000
DEFAULT_MAX_CHARS = 24_000

SOURCE_TOOL_CALLS = "tool_calls"
SOURCE_CONTEXT = "context"
SOURCE_TOOLS_CALLED = "tools_called"
SOURCE_EXPECTED_OUTPUT = "expected_output"
SOURCE_NONE = "none"

_SOURCE_NOTES = {
    SOURCE_TOOL_CALLS: (
        "Structured tool calls recorded from the agent's execution (arguments, status, results)."
    ),
    SOURCE_CONTEXT: "No structured calls were recorded; this is the context supplied with the test case.",
    SOURCE_TOOLS_CALLED: "Tool calls as listed by the test case.",
    SOURCE_EXPECTED_OUTPUT: (
        "No tool calls were recorded; this is a text fallback taken from the expected output."
    ),
    SOURCE_NONE: "No tool history is available.",
}


@dataclass(frozen=True, slots=True)
class ToolHistory:
    text: str
    source: str  # one of the SOURCE_* values
    names_only: bool  # the calls carry no arguments, results or statuses
    call_count: int
    truncated: bool

    @property
    def note(self) -> str:
        """One line for the prompt saying where this history came from and what it lacks."""
        note = _SOURCE_NOTES[self.source]
        if self.names_only:
            note += " Only the tool NAMES are known: arguments, results and statuses were not recorded."
        return note


def truncate(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, with a marker saying how much was cut."""
    if limit <= 0 or len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}…[truncated {cut} chars]"


#: ``json.dumps(value, ensure_ascii=False, default=str)`` without building an encoder per value
_dumps: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False, default=str).encode


def render_value(value: Any, limit: int = DEFAULT_MAX_VALUE_CHARS) -> str:
    """A value as the judge sees it: strings as they are, anything else as JSON; cut at ``limit``."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
    else:
        try:  # frozen containers are dict / list subclasses: json serialises them without a copy
            text = _dumps(value)
        except (TypeError, ValueError):  # a key json refuses, a cycle
            text = repr(value)
    return text if limit <= 0 or len(text) <= limit else truncate(text, limit)


def render_text(value: Any) -> str:
    """A test case's input or output as text: multimodal parts joined, images shown as a placeholder."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif getattr(part, "url", None) is not None:
                parts.append(f"[image: {part.url}]")
            else:
                parts.append(render_value(part))
        return "\n".join(parts)
    return render_value(value)


_CONTINUATION = "\n      "


def _field(label: str, value: Any, limit: int) -> str:
    """``   label: value``, continuation lines indented further, so a value cannot pose as another call."""
    return f"   {label}: " + render_value(value, limit).replace("\n", _CONTINUATION)


def render_call(position: int, call: ToolCall, max_value_chars: int = DEFAULT_MAX_VALUE_CHARS) -> str:
    """One call: ``#n name`` then its arguments, status, error and result on indented lines."""
    name = call.name
    if type(name) is not str or len(name) > 200 or "\n" in name:
        name = render_value(name, 200).replace("\n", " ")
    lines = [f"#{position} {name}"]
    params = call.input_parameters
    if (
        params is not None
    ):  # _field("arguments", ...) and _field("result", ...) in line: they run for every call
        lines.append("   arguments: " + render_value(params, max_value_chars).replace("\n", _CONTINUATION))
    elif call.raw_arguments is not None:
        lines.append(_field("arguments (as recorded, not parsed)", call.raw_arguments, max_value_chars))
    status = call.status
    if status is not None:
        lines.append(f"   status: {status}")
    if call.error:
        lines.append(_field("error", call.error, max_value_chars))
    output = call.output
    if output is not None:
        if type(output) is not str or 0 < max_value_chars < len(output):
            output = render_value(output, max_value_chars)
        lines.append("   result: " + output.replace("\n", _CONTINUATION))
    elif status == "ok":
        lines.append("   result: (none recorded)")
    if call.description:
        lines.append(_field("description", call.description, max_value_chars))
    if call.reasoning:
        lines.append(_field("reasoning", call.reasoning, max_value_chars))
    return "\n".join(lines)


def _is_names_only(calls: Sequence[ToolCall]) -> bool:
    return all(
        c.input_parameters is None
        and c.raw_arguments is None
        and c.output is None
        and c.status is None
        and not c.error
        for c in calls
    )


def _fit(blocks: list[str], max_chars: int) -> tuple[list[str], bool]:
    """Keep the first and last blocks within ``max_chars``, replacing the middle with a marker."""
    total = sum(map(len, blocks)) + len(blocks)
    if max_chars <= 0 or total <= max_chars:
        return blocks, False
    budget = max_chars - 80  # room for the marker
    head: list[str] = []
    tail: list[str] = []
    used = 0
    lo, hi = 0, len(blocks) - 1
    take_head = True
    while lo <= hi:
        block = blocks[lo] if take_head else blocks[hi]
        if used + len(block) + 1 > budget:
            break
        used += len(block) + 1
        if take_head:
            head.append(block)
            lo += 1
        else:
            tail.append(block)
            hi -= 1
        take_head = not take_head
    omitted = hi - lo + 1
    if omitted <= 0:
        return blocks, False
    marker = f"…[{omitted} call(s) omitted here (#{lo + 1} to #{hi + 1}) to keep the history short]"
    return [*head, marker, *reversed(tail)], True


def render_tool_history(
    case: Any,
    *,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ToolHistory:
    """The history of a test case (an ``EvalTestCase``, a ``ModelTestCase`` or anything with those fields)."""
    structured = getattr(case, "tool_calls", None)
    if structured:
        return _from_calls(structured, SOURCE_TOOL_CALLS, max_value_chars, max_chars)
    context = getattr(case, "context", None)
    if context:
        items = [context] if isinstance(context, str) else list(context)
        blocks = [
            f"context[{i}]: {render_value(render_text(item), max_value_chars)}"
            for i, item in enumerate(items, 1)
        ]
        text = truncate("\n".join(blocks), max_chars)
        return ToolHistory(text, SOURCE_CONTEXT, False, 0, text != "\n".join(blocks))
    listed = getattr(case, "tools_called", None)
    if listed:
        return _from_calls(listed, SOURCE_TOOLS_CALLED, max_value_chars, max_chars)
    expected = getattr(case, "expected_output", None)
    if expected:
        full = render_text(expected)
        text = truncate(full, min(max_chars, max_value_chars * 4) if max_chars > 0 else max_value_chars * 4)
        return ToolHistory(text, SOURCE_EXPECTED_OUTPUT, False, 0, text != full)
    if structured is not None or listed is not None:  # an explicit empty list: the agent called no tool
        return ToolHistory(
            "(the agent called no tools)",
            SOURCE_TOOL_CALLS if structured is not None else SOURCE_TOOLS_CALLED,
            False,
            0,
            False,
        )
    return ToolHistory("(no tool history available)", SOURCE_NONE, False, 0, False)


def _from_calls(calls: Sequence[Any], source: str, max_value_chars: int, max_chars: int) -> ToolHistory:
    tool_calls = as_tool_calls(calls) if type(calls) is list else [ToolCall.from_value(c) for c in calls]
    return render_calls(tool_calls, source, max_value_chars, max_chars)


def render_calls(
    calls: Sequence[ToolCall],
    source: str = SOURCE_TOOL_CALLS,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> ToolHistory:
    """The history of these ToolCalls: ``render_tool_history`` of a case whose ``tool_calls`` they are, for a
    caller that has converted them already."""
    names_only = _is_names_only(calls)
    blocks = [render_call(i, call, max_value_chars) for i, call in enumerate(calls, 1)]
    kept, truncated = _fit(blocks, max_chars)
    return ToolHistory("\n".join(kept), source, names_only, len(calls), truncated)
