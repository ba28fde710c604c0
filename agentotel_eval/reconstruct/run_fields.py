"""Run-level fields: the agent's name, the user input and final output (for the judge and dataset matching),
the tools offered to the model, the run's status and its expected tools."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import STATUS_ERROR, SpanRecord
from agentotel_eval.reconstruct.context import TraceContext
from agentotel_eval.reconstruct.llm import (
    definitions_from_list,
    first_request_text,
    last_assistant_text,
    last_user_text,
    read_definitions,
)
from agentotel_eval.reconstruct.messages import Message, openinference_messages, parse_messages
from agentotel_eval.reconstruct.runs import Scope
from agentotel_eval.reconstruct.spans import Execution
from agentotel_eval.reconstruct.values import parse_json, seq, short_type_name, text_of
from agentotel_eval.test_case import ToolDefinition


def _declared(span: SpanRecord, ctx: TraceContext, field: str) -> Any:
    """The span's value for a field of the declared convention that classified it, or None."""
    role = ctx.roles.get(span.span_id)
    rule = role.rule if role is not None else None
    return rule.get(span, field) if rule is not None else None


def declared_text(value: Any, pick: Callable[[list[Message]], str | None]) -> str | None:
    """Text of a declared input/output value: a string (or JSON string), an object's ``prompt`` / ``text``, or
    the user / assistant text of the messages it holds."""
    value = parse_json(value)
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        for key in ("prompt", "text", "task", "input", "query"):
            inner = value.get(key)
            if isinstance(inner, str) and inner.strip():
                return inner.strip()
    return pick(parse_messages(value)) if isinstance(value, (dict, list)) else None


def _tool_list(value: Any) -> Any:
    """The tools list in a declared value: the list itself, or a request body's ``tools``
    (``{"body": {"tools"}}``)."""
    if isinstance(value, str) and not value.lstrip().startswith("{"):
        return value
    body = parse_json(value)
    if isinstance(body, dict):
        inner = body.get("body")
        body = inner if isinstance(inner, dict) else body
        return body.get("tools") if isinstance(body.get("tools"), list) else ()
    return value


def offered_definitions(
    chain: Sequence[SpanRecord],
    llm_spans: Sequence[SpanRecord],
    executions: Sequence[Execution],
    ctx: TraceContext,
) -> list[ToolDefinition]:
    """Tools offered to the model, merged by name; a names-only list is completed from the
    tool spans' schemas."""
    merged: dict[str, ToolDefinition] = {}
    seen: set[int] = set()
    for span in (*chain, *llm_spans):
        declared = _declared(span, ctx, "tools")
        found = (
            definitions_from_list(_tool_list(declared)) if declared is not None else read_definitions(span)
        )
        if id(found) in seen:
            continue  # the same parsed list (cached by its text), as on an earlier span: nothing new
        seen.add(id(found))
        for definition in found:
            known = merged.get(definition.name)
            if known is None:
                merged[definition.name] = definition
            elif known.parameters is None and definition.parameters is not None:
                merged[definition.name] = ToolDefinition(
                    known.name, known.description or definition.description, definition.parameters
                )
    for e in executions:
        known = merged.get(e.name)
        if known is not None and known.parameters is None and e.schema is not None:
            merged[e.name] = ToolDefinition(known.name, known.description or e.description, e.schema)
    return list(merged.values())


def offered_by_turn(llm_spans: Sequence[SpanRecord], ctx: TraceContext) -> dict[str, tuple[str, ...]]:
    """The tool names each LLM turn offered, by LLM span id, when turns offered different sets (tools added or
    withdrawn between turns); empty when every turn that records its tools offered the same ones."""
    offered: dict[str, tuple[str, ...]] = {}
    for span in llm_spans:
        declared = _declared(span, ctx, "tools")
        found = (
            definitions_from_list(_tool_list(declared)) if declared is not None else read_definitions(span)
        )
        if found:
            offered[span.span_id] = tuple(sorted({d.name for d in found}))
    return offered if len(set(offered.values())) > 1 else {}


def agent_name_of(
    scope: Scope, llm_spans: Sequence[SpanRecord], tool_spans: Sequence[SpanRecord], ctx: TraceContext
) -> str | None:
    chain = scope.chain
    for span in chain:
        value = _declared(span, ctx, "agent_name")
        if isinstance(value, str) and value:
            return value
    for key in (sc.GEN_AI_AGENT_NAME, sc.OI_AGENT_NAME):
        for span in chain:
            value = span.attributes.get(key)
            if isinstance(value, str) and value:
                return value
    for span in chain:
        attrs = span.attributes
        if attrs.get(sc.TRACELOOP_SPAN_KIND) == sc.TRACELOOP_KIND_AGENT:
            value = attrs.get(sc.TRACELOOP_ENTITY_NAME)
            if isinstance(value, str) and value:
                return value
    if scope.convention in ("root", "implicit"):
        for span in (*llm_spans, *tool_spans):
            value = span.attributes.get(sc.GEN_AI_AGENT_NAME)
            if isinstance(value, str) and value:
                return value
    for span in chain:
        attrs = span.attributes
        for key in (sc.GEN_AI_WORKFLOW_NAME, sc.TRACELOOP_WORKFLOW_NAME, sc.TRACELOOP_ENTITY_NAME):
            value = attrs.get(key)
            if isinstance(value, str) and value:
                return value
    role = ctx.roles.get(chain[0].span_id)
    if role is not None and not role.run and (role.llm or role.tool):
        return None  # anchored on a model or tool call (no agent span arrived): its name is not an agent's
    name = chain[0].name
    for prefix in ("invoke_agent ", "invoke_workflow "):
        if name.startswith(prefix):
            return name[len(prefix) :] or None
    for suffix in (".agent", ".workflow", ".run"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or None
    return name or None


def _args_kwargs_text(value: Any) -> str | None:
    """The text argument of a decorated function's ``{"args": [...], "kwargs": {...}}`` input."""
    if not isinstance(value, dict) or not value or not value.keys() <= {"args", "kwargs"}:
        return None
    texts = [v for v in seq(value.get("args")) if isinstance(v, str) and v]
    kwargs = value.get("kwargs")
    if isinstance(kwargs, dict):
        texts.extend(v for v in kwargs.values() if isinstance(v, str) and v)
    return texts[0] if len(texts) == 1 else None


def _direct_text(value: Any) -> str | None:
    """Text of an input/output value when that is cheap to know: a plain or JSON-quoted string, or the one
    text argument of a decorated function (``{"args": ["..."], "kwargs": {}}``). None for message structures,
    which are parsed only when no cheaper source exists (they can hold the whole conversation)."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text[0] == '"' or text.startswith('{"args"'):
            parsed = parse_json(text)
            return parsed if isinstance(parsed, str) else _args_kwargs_text(parsed)
        return None if text[0] in "{[" else value
    return _args_kwargs_text(value)


_END_ORDER = attrgetter("end_ns", "span_id")  # last LLM call first: (end time, span id), a C-level key
_IO_KEYS_IN = (
    sc.AGENTOTEL_INPUT,
    sc.OI_INPUT_VALUE,
    sc.TRACELOOP_ENTITY_INPUT,
    sc.LANGFUSE_OBSERVATION_INPUT,
)
_IO_KEYS_OUT = (
    sc.AGENTOTEL_OUTPUT,
    sc.OI_OUTPUT_VALUE,
    sc.TRACELOOP_ENTITY_OUTPUT,
    sc.LANGFUSE_OBSERVATION_OUTPUT,
)
_BLOB_KEYS_IN = (*_IO_KEYS_IN, sc.PYDANTIC_AI_ALL_MESSAGES)


def _span_input(span: SpanRecord) -> str | None:
    """A run span's own record of the user request, from the conventions that state it directly."""
    attrs = span.attributes
    if sc.GEN_AI_INPUT_MESSAGES in attrs:
        text = last_user_text(parse_messages(attrs[sc.GEN_AI_INPUT_MESSAGES]))
        if text:
            return text
    events = span.events
    if events:
        for event in events:
            if event.name == sc.EVENT_INFERENCE_DETAILS and sc.GEN_AI_INPUT_MESSAGES in event.attributes:
                text = last_user_text(parse_messages(event.attributes[sc.GEN_AI_INPUT_MESSAGES]))
                if text:
                    return text
        users = [e for e in events if e.name == sc.EVENT_USER_MESSAGE]
        if users:
            text = text_of(parse_json(users[-1].attributes.get("content")))
            if text:
                return text
    if attrs.get(sc.OI_SPAN_KIND):
        text = last_user_text(openinference_messages(attrs, sc.OI_LLM_INPUT_MESSAGES))
        if text:
            return text
    for key in _IO_KEYS_IN:
        if key in attrs:
            text = _direct_text(attrs[key])
            if text:
                return text
    return None


def _span_output(span: SpanRecord) -> str | None:
    """A run span's own record of the final answer, from the conventions that state it directly."""
    attrs = span.attributes
    if sc.GEN_AI_OUTPUT_MESSAGES in attrs:
        value = attrs[sc.GEN_AI_OUTPUT_MESSAGES]
        text = last_assistant_text(parse_messages(value, "assistant"))
        if text:
            return text
        if isinstance(value, str) and value.strip() and value.lstrip()[0] not in "[{":
            return (
                value.strip()
            )  # the answer as plain text where messages were not recorded (content capture off)
    for event in reversed(span.events):
        if event.name == sc.EVENT_INFERENCE_DETAILS and sc.GEN_AI_OUTPUT_MESSAGES in event.attributes:
            text = last_assistant_text(
                parse_messages(event.attributes[sc.GEN_AI_OUTPUT_MESSAGES], "assistant")
            )
            if text:
                return text
        if event.name == sc.EVENT_CHOICE and "message" in event.attributes:
            text = text_of(parse_json(event.attributes["message"]))
            if text:
                return text.strip() or None
    for event in reversed(
        span.events
    ):  # a workflow's output event: the result object as the framework printed it
        if event.name.endswith(".output") and isinstance(event.attributes.get("output"), str):
            text = printed_text(event.attributes["output"])
            if text:
                return text
    final = attrs.get(sc.PYDANTIC_AI_FINAL_RESULT)
    if final is not None:
        return final if isinstance(final, str) else str(parse_json(final))
    for key in _IO_KEYS_OUT:
        if key in attrs:
            text = _direct_text(attrs[key])
            if text:
                return text
    return None


_PRINTED_TEXT = re.compile(r"""\b(?:text|content)=(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")""")


def printed_text(value: str) -> str | None:
    """The last text a Python object's printed form holds (``...TextBlock(block_type='text', text='It is
    18C.')``): frameworks that record a result object as ``repr`` keep the answer there."""
    found = None
    for m in _PRINTED_TEXT.finditer(value):
        found = m.group(1) if m.group(1) is not None else m.group(2)
    if not found or not found.strip():
        return None
    try:
        return str(ast.literal_eval(f"'{found}'")).strip() or None  # the escapes the printing added
    except (ValueError, SyntaxError):
        return found.strip()


def _span_blob(
    span: SpanRecord, keys: Sequence[str], pick: Callable[[list[Message]], str | None]
) -> str | None:
    """Last resort: parse the message structures on a run span (LangChain state, pydantic-ai all_messages)."""
    attrs = span.attributes
    for key in keys:
        if key in attrs:
            text = pick(parse_messages(attrs[key]))
            if text:
                return text
    return None


def run_input_of(
    chain: Sequence[SpanRecord], llm_spans: Sequence[SpanRecord], ctx: TraceContext
) -> tuple[str | None, str | None]:
    """The user request that started the run: the run span's own input, else the first LLM call's last user
    text (a multi-turn conversation's earlier user messages are history), else the run span's
    message structures."""
    for span in chain:
        declared = _declared(span, ctx, "input")
        text = declared_text(declared, last_user_text) if declared is not None else _span_input(span)
        if text:
            return text, span.span_id
    for span in llm_spans:
        role = ctx.roles.get(span.span_id)
        if role is not None and role.rule is not None:  # a declared convention's LLM span: its declared input
            messages = ctx.input(span)
            recorded, text = bool(messages), last_user_text(messages)
        else:
            recorded, text = first_request_text(span, ctx.logs(span))
        if text:
            return text, span.span_id
        if recorded:
            break
    for span in chain:
        if llm_spans and _among(span, llm_spans):  # a root fallback anchored on an LLM call: read
            continue
        text = _span_blob(span, _BLOB_KEYS_IN, last_user_text)
        if text:
            return text, span.span_id
    return None, None


def run_output_of(
    chain: Sequence[SpanRecord], llm_spans: Sequence[SpanRecord], ctx: TraceContext
) -> tuple[str | None, str | None]:
    """The agent's final answer: the run span's own output, else the last LLM text of the run, else the run
    span's message structures."""
    for span in chain:
        declared = _declared(span, ctx, "output")
        text = declared_text(declared, last_assistant_text) if declared is not None else _span_output(span)
        if text:
            return text, span.span_id
    for span in sorted(llm_spans, key=_END_ORDER, reverse=True) if len(llm_spans) > 1 else llm_spans:
        text = ctx.output(span).text
        if text:
            return text, span.span_id
    for span in chain:
        if llm_spans and _among(span, llm_spans):
            continue
        text = _span_blob(span, _IO_KEYS_OUT, last_assistant_text)
        if text:
            return text, span.span_id
    return None, None


_MAX_ASSISTANT_TEXTS = 20
_MAX_CONTEXT_CHARS = 32_000  # a framework's system prompt lists its tools and team members: keep it whole


def run_context_of(llm_spans: Sequence[SpanRecord], ctx: TraceContext) -> tuple[str | None, tuple[str, ...]]:
    """What the model was told besides the user's request, and what it said between calls: the system prompt
    of the run's first LLM call whose input is recorded ("" when that input has none; None when no input is
    recorded, so nobody can say), and the text of every LLM output but the last (the final answer)."""
    system: str | None = None
    ordered = sorted(llm_spans, key=_END_ORDER) if len(llm_spans) > 1 else list(llm_spans)
    for span in ordered:
        instructions = span.attributes.get(sc.GEN_AI_SYSTEM_INSTRUCTIONS)
        messages = ctx.input(span)
        if not messages and instructions is None:
            continue
        texts = [m.text for m in messages if m.role in ("system", "developer") and m.text]
        if instructions is not None:
            texts.append(_instructions_text(instructions))
        system = "\n".join(t for t in texts if t)[:_MAX_CONTEXT_CHARS]
        break
    said: list[str] = []
    for span in ordered[:-1]:
        text = ctx.output(span).text
        if text and text.strip():
            said.append(text.strip()[:_MAX_CONTEXT_CHARS])
            if len(said) >= _MAX_ASSISTANT_TEXTS:
                break
    return system, tuple(said)


def _instructions_text(value: Any) -> str:
    """``gen_ai.system_instructions``: a JSON list of parts (``{"type": "text",
    "content": ...}``), or text."""
    parsed = parse_json(value)
    if isinstance(parsed, list):
        return "\n".join(str(p.get("content") or p.get("text") or "") for p in parsed if isinstance(p, dict))
    return text_of(value) or ""


def _among(span: SpanRecord, spans: Sequence[SpanRecord]) -> bool:
    """Whether this very span (not an equal copy) is one of these; a loop, cheaper than a
    generator for a few."""
    for other in spans:  # noqa: SIM110 (speed)
        if other is span:
            return True
    return False


def run_status_of(chain: Sequence[SpanRecord]) -> tuple[str, str | None]:
    for span in chain:
        level = span.attributes.get(sc.LANGFUSE_OBSERVATION_LEVEL)
        if span.status_code == STATUS_ERROR or (level is not None and str(level).upper() == "ERROR"):
            message = span.status_message or span.attributes.get(sc.LANGFUSE_OBSERVATION_STATUS_MESSAGE)
            exc = (
                next((e for e in span.events if e.name == sc.EXCEPTION_EVENT), None) if span.events else None
            )
            if exc is not None:  # the exception's type says what failed: "UnknownCityError: Unknown city: X"
                etype = short_type_name(exc.attributes.get(sc.EXCEPTION_TYPE))
                if not message:
                    message = ": ".join(
                        p for p in (etype, str(exc.attributes.get(sc.EXCEPTION_MESSAGE) or "")) if p
                    )
                elif etype and etype not in str(message):
                    message = f"{etype}: {message}"
            return "error", str(message) if message else "error"
    return "ok", None


def expected_trajectory_of(chain: Sequence[SpanRecord]) -> str | None:
    """The run's trajectory spec as written on its span (JSON text); read, and reported
    if bad, when scored."""
    for span in chain:
        value = span.attributes.get(sc.AGENTOTEL_EXPECTED_TRAJECTORY)
        if value is not None:
            return value if isinstance(value, str) else json.dumps(value)
    return None


def expected_tools_of(chain: Sequence[SpanRecord]) -> tuple[str, ...] | None:
    for span in chain:
        value = span.attributes.get(sc.AGENTOTEL_EXPECTED_TOOLS)
        if value is None:
            continue
        value = parse_json(value)
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple(value)
    return None
