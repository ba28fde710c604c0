"""Reading an LLM span: the tool calls the model requested, its text, its input messages, the tools offered.

Each reader tries the conventions in a fixed order and takes the FIRST that has content, so the same call
recorded by two conventions on one span (pydantic-ai + OpenInference: ``gen_ai.output.messages`` AND
``llm.output_messages.*``) is read once. Input messages are history: they are read only on demand (user input,
tool results for request-only calls), never as calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.declared import Convention
from agentotel_eval.reconstruct.messages import (
    Message,
    flat_keys,
    message_from_mapping,
    normalize_role,
    openinference_messages,
    parse_messages,
    tool_calls_in,
    traceloop_messages,
)
from agentotel_eval.reconstruct.values import as_dict, as_list, parse_json, text_of
from agentotel_eval.test_case import PARTIAL_SOURCE, ToolDefinition

_EVENT_ROLES = {
    sc.EVENT_SYSTEM_MESSAGE: "system",
    sc.EVENT_USER_MESSAGE: "user",
    sc.EVENT_ASSISTANT_MESSAGE: "assistant",
    sc.EVENT_TOOL_MESSAGE: "tool",
}


@dataclass(slots=True)
class Request:
    """One tool call the model asked for in one LLM span's output."""

    name: str
    arguments: Any
    call_id: str | None
    index: int  # position in that output (parallel calls keep this order)
    span: SpanRecord
    source: str
    normalized: Any = None  # Arguments, computed once by the assembly


@dataclass(slots=True, init=False)
class LLMOutput:
    requests: list[Request]
    text: str | None
    source: str | None

    def __init__(
        self, requests: list[Request] | None = None, text: str | None = None, source: str | None = None
    ) -> None:
        # by hand: one per LLM span, and the generated __init__ calls a factory for the list
        self.requests = [] if requests is None else requests
        self.text, self.source = text, source


def _choice_message(payload: Mapping[str, Any]) -> Message | None:
    """A ``gen_ai.choice`` event/log: ``message`` is an OpenAI-style message, a content-block list or text."""
    message = parse_json(payload.get("message"))
    if isinstance(message, dict):
        if payload.get("tool_calls") and not message.get("tool_calls"):  # OpenLLMetry: beside the message
            message = {**message, "tool_calls": payload["tool_calls"]}
        return message_from_mapping(message, "assistant") or Message("assistant")
    if isinstance(message, list):  # parse_messages() of this one message, without the container walk
        return message_from_mapping({"role": "assistant", "content": message}, "assistant")
    if isinstance(message, str) and message.strip():
        return Message("assistant", [message])
    if payload.get("tool_calls"):  # legacy body without the "message" wrapper
        return message_from_mapping({"role": "assistant", **payload}, "assistant")
    return None


def _output_candidates(span: SpanRecord, logs: Sequence[LogRecord]) -> Iterable[tuple[str, list[Message]]]:
    """(source, messages) for each convention on the span, lazily, in priority order."""
    attrs = span.attributes
    if sc.GEN_AI_OUTPUT_MESSAGES in attrs:
        yield "gen_ai", parse_messages(attrs[sc.GEN_AI_OUTPUT_MESSAGES], "assistant")
    events = span.events
    if events:
        details = [
            e
            for e in events
            if e.name == sc.EVENT_INFERENCE_DETAILS and sc.GEN_AI_OUTPUT_MESSAGES in e.attributes
        ]
        if details:
            yield (
                "gen_ai.event",
                [
                    m
                    for e in details
                    for m in parse_messages(e.attributes[sc.GEN_AI_OUTPUT_MESSAGES], "assistant")
                ],
            )
    yield "openinference", openinference_messages(attrs, sc.OI_LLM_OUTPUT_MESSAGES)
    yield "traceloop", traceloop_messages(attrs, sc.TRACELOOP_COMPLETION_PREFIX)
    if events:
        choices = [m for e in events if e.name == sc.EVENT_CHOICE and (m := _choice_message(e.attributes))]
        if choices:
            yield "gen_ai.event", choices
        legacy = [
            e
            for e in events
            if e.name == sc.EVENT_CONTENT_COMPLETION and sc.GEN_AI_COMPLETION in e.attributes
        ]
        if legacy:
            yield (
                "gen_ai.event",
                [m for e in legacy for m in parse_messages(e.attributes[sc.GEN_AI_COMPLETION], "assistant")],
            )
    if logs:
        choices = [
            m
            for log in sorted((lg for lg in logs if lg.event_name == sc.EVENT_CHOICE), key=_choice_index)
            if (body := _log_body(log)) is not None and (m := _choice_message(body))
        ]
        if choices:
            yield "gen_ai.log", choices
    if (
        attrs.get(sc.LANGFUSE_OBSERVATION_TYPE) == sc.LANGFUSE_TYPE_GENERATION
        and sc.LANGFUSE_OBSERVATION_OUTPUT in attrs
    ):
        yield "langfuse", parse_messages(attrs[sc.LANGFUSE_OBSERVATION_OUTPUT], "assistant")
    if sc.OI_LLM_FUNCTION_CALL in attrs:
        call = as_dict(attrs[sc.OI_LLM_FUNCTION_CALL])
        if call:
            yield "openinference", parse_messages([{"role": "assistant", "function_call": call}], "assistant")
    if sc.OI_OUTPUT_VALUE in attrs and attrs.get(sc.OI_SPAN_KIND) == sc.OI_KIND_LLM:
        yield "openinference", parse_messages(attrs[sc.OI_OUTPUT_VALUE], "assistant")
    if sc.GEN_AI_COMPLETION in attrs:  # LangSmith's OpenTelemetry mode: the answer as the span's attribute
        yield "langsmith", parse_messages(attrs[sc.GEN_AI_COMPLETION], "assistant")


def _log_body(log: LogRecord) -> dict[str, Any] | None:
    """An event log's body as a map: an AnyValue map, or the JSON object text some SDKs
    send (Semantic Kernel)."""
    body = log.body
    if isinstance(body, dict):
        return body
    return as_dict(body) if isinstance(body, str) and body[:1] == "{" else None


def _choice_index(log: LogRecord) -> tuple[int, int]:
    body = _log_body(log) or {}
    index = body.get("index")
    return (index if isinstance(index, int) else 0, log.timestamp_ns)


def _genai_output(span: SpanRecord, raw: Any) -> LLMOutput | None:
    """Fast path for the common case, ``gen_ai.output.messages`` as GenAI JSON; None to use
    the generic reader."""
    value = parse_json(raw)
    if not isinstance(value, list):
        return None
    out = LLMOutput(source="gen_ai")
    requests = out.requests
    texts: list[str] = []
    for message in value:
        if not isinstance(message, dict) or not isinstance(parts := message.get("parts"), list):
            return None
        if message.get("role") not in _ASSISTANT_ROLES:
            continue
        for part in parts:
            if not isinstance(part, dict):
                return None
            kind = part.get("type")
            if kind == "tool_call":
                name = part.get("name")
                if isinstance(name, str) and name:
                    call_id = part.get("id")
                    requests.append(
                        Request(
                            name,
                            part.get("arguments"),
                            call_id if isinstance(call_id, str) and call_id else None,
                            len(requests),
                            span,
                            "gen_ai",
                        )
                    )
            elif kind == "text":
                text = part.get("content")
                if isinstance(text, str) and text:
                    texts.append(text)
            elif kind not in _IGNORED_PARTS:
                return None  # an unusual part: let the generic reader decide
    if not requests and not texts:
        return None
    out.text = "\n".join(texts) if texts else None
    return out


_ASSISTANT_ROLES = ("assistant", "model", "ai", None, "")  # tuples: compared with ==, safe for odd values
_IGNORED_PARTS = ("reasoning", "thinking", "tool_call_response", "blob", "file", "uri")


def read_declared_output(span: SpanRecord, rule: Convention) -> LLMOutput:
    """An LLM span of a declared convention: the calls and text from the attributes the rule names."""
    out = LLMOutput(source=rule.name)
    calls = rule.get(span, "tool_calls")
    if calls is not None:
        for part in tool_calls_in(calls):
            source = rule.name + PARTIAL_SOURCE if rule.partial_arguments else rule.name
            out.requests.append(
                Request(part.name, part.arguments, part.call_id, len(out.requests), span, source)
            )
    raw = rule.get(span, "output_text")
    if raw is not None:
        value = parse_json(raw)
        if isinstance(value, str):
            out.text = value or None
        else:
            out.text = last_assistant_text(parse_messages(value, "assistant")) or (
                text_of(value) if isinstance(value, dict) else None
            )
    return out


def read_declared_input(span: SpanRecord, rule: Convention) -> list[Message]:
    raw = rule.get(span, "input_messages")
    return parse_messages(raw) if raw is not None else []


def read_output(span: SpanRecord, logs: Sequence[LogRecord] = ()) -> LLMOutput:
    """The model's answer on this span: requested tool calls (in output order) and text."""
    raw = span.attributes.get(sc.GEN_AI_OUTPUT_MESSAGES)
    if raw is not None:
        fast = _genai_output(span, raw)
        if fast is not None:
            return fast
    for source, messages in _output_candidates(span, logs):
        assistant: list[Message] = []
        said = False
        for message in messages:  # (one loop, no comprehension: a few messages at most)
            if message.role == "assistant" or message.role == "":
                assistant.append(message)
                said = said or bool(message.tool_calls or message.texts)
        if not said:
            continue  # nothing said here: the next convention
        out = LLMOutput(source=source)
        requests = out.requests
        texts: list[str] = []
        for message in assistant:
            for call in message.tool_calls:
                requests.append(Request(call.name, call.arguments, call.call_id, len(requests), span, source))
            text = "\n".join(message.texts) if message.texts else None  # Message.text
            if text:
                texts.append(text)
        out.text = "\n".join(texts) if texts else None
        return out
    if _OL_TOOL_NAME in span.attributes:
        return _calls_from_tool_attributes(span)
    return LLMOutput()


_OL_TOOL_NAME, _OL_TOOL_IDS = sc.GEN_AI_TOOL_NAME, sc.GEN_AI_TOOL_CALL_ID
_OL_TOOL_ARGS = ("gen_ai.tool.args", sc.GEN_AI_TOOL_CALL_ARGUMENTS)
_JSON_DECODER = json.JSONDecoder()


def _calls_from_tool_attributes(span: SpanRecord) -> LLMOutput:
    """An LLM span that records its output messages nowhere, only the calls it asked for as tool attributes:
    names and ids comma-joined for parallel calls, the arguments as consecutive JSON values (OpenLIT with
    content capture off)."""
    attrs = span.attributes
    names = [n.strip() for n in str(attrs[_OL_TOOL_NAME]).split(",") if n.strip()]
    ids = [i.strip() for i in str(attrs.get(_OL_TOOL_IDS) or "").split(",")]
    raw = next((attrs[k] for k in _OL_TOOL_ARGS if isinstance(attrs.get(k), str)), None)
    arguments = _consecutive_values(raw) if raw is not None else []
    if len(arguments) != len(names):
        arguments = [raw] if len(names) == 1 and raw is not None else [None] * len(names)
    out = LLMOutput(source="gen_ai.tool")
    for n, name in enumerate(names):
        call_id = ids[n] if len(ids) == len(names) and ids[n] else None
        out.requests.append(Request(name, arguments[n], call_id, n, span, "gen_ai.tool"))
    return out


def _consecutive_values(text: str) -> list[Any]:
    """``{"a": 1}, {"b": 2}``: JSON values one after another, separated by commas or
    spaces (empty when not)."""
    values: list[Any] = []
    at = 0
    while at < len(text):
        while at < len(text) and text[at] in " ,\n\t":
            at += 1
        if at >= len(text):
            break
        try:
            value, at = _JSON_DECODER.raw_decode(text, at)
        except ValueError:
            return []
        values.append(value)
    return values


# --- input (history) ----------------------------------------------------------------------------------------


def _event_message(role: str, payload: Mapping[str, Any]) -> Message | None:
    """Deprecated per-message events (span events or log records): body/attributes
    ``{content, tool_calls, id}``."""
    flat: dict[str, Any] = {"role": role, "content": parse_json(payload.get("content"))}
    if payload.get("tool_calls"):
        flat["tool_calls"] = payload["tool_calls"]
    if role == "tool":
        flat["tool_call_id"] = payload.get("id") or payload.get("tool_call_id")
    return message_from_mapping(flat, role)


def read_input(span: SpanRecord, logs: Sequence[LogRecord] = ()) -> list[Message]:
    """The messages sent to the model on this span (the conversation so far: history, not calls)."""
    attrs = span.attributes
    if sc.GEN_AI_INPUT_MESSAGES in attrs:
        msgs = parse_messages(attrs[sc.GEN_AI_INPUT_MESSAGES])
        if msgs:
            return msgs
    msgs = [
        m
        for e in span.events
        if e.name == sc.EVENT_INFERENCE_DETAILS and sc.GEN_AI_INPUT_MESSAGES in e.attributes
        for m in parse_messages(e.attributes[sc.GEN_AI_INPUT_MESSAGES])
    ]
    if msgs:
        return msgs
    for reader, prefix in (
        (openinference_messages, sc.OI_LLM_INPUT_MESSAGES),
        (traceloop_messages, sc.TRACELOOP_PROMPT_PREFIX),
    ):
        msgs = reader(attrs, prefix)
        if msgs:
            return msgs
    msgs = [
        m
        for e in span.events
        if e.name in _EVENT_ROLES and (m := _event_message(_EVENT_ROLES[e.name], e.attributes))
    ]
    if msgs:
        return msgs
    msgs = [
        m
        for log in logs
        if log.event_name in _EVENT_ROLES
        and (body := _log_body(log)) is not None
        and (m := _event_message(_EVENT_ROLES[log.event_name], body))
    ]
    if msgs:
        return msgs
    for key in (sc.LANGFUSE_OBSERVATION_INPUT, sc.OI_INPUT_VALUE):
        if key in attrs:
            msgs = parse_messages(attrs[key])
            if msgs:
                return msgs
    prompt = [
        e for e in span.events if e.name == sc.EVENT_CONTENT_PROMPT and sc.GEN_AI_PROMPT in e.attributes
    ]
    if prompt:
        return [m for e in prompt for m in parse_messages(e.attributes[sc.GEN_AI_PROMPT])]
    if (
        sc.GEN_AI_PROMPT in attrs
    ):  # LangSmith's OpenTelemetry mode: the request as the span's prompt attribute
        return parse_messages(attrs[sc.GEN_AI_PROMPT])
    return []


def first_request_text(span: SpanRecord, logs: Sequence[LogRecord] = ()) -> tuple[bool, str | None]:
    """(whether the span records its input at all, the last user text in it): the request of this LLM call.

    Fast path for GenAI JSON input messages (scanned from the end, no message objects built); anything else
    goes through ``read_input``.
    """
    raw = span.attributes.get(sc.GEN_AI_INPUT_MESSAGES)
    if raw is not None:
        value = parse_json(raw)
        if isinstance(value, list) and _all_genai_messages(value):
            for message in reversed(value):
                if normalize_role(message.get("role")) == "user":
                    texts = []
                    for p in message["parts"]:
                        if (
                            isinstance(p, dict)
                            and p.get("type") == "text"
                            and isinstance(p.get("content"), str)
                            and (p["content"])
                        ):
                            texts.append(p["content"])
                    if texts:
                        return True, "\n".join(texts)
            return bool(value), None
    messages = read_input(span, logs)
    return bool(messages), last_user_text(messages)


def _all_genai_messages(value: list[Any]) -> bool:
    """Whether every item is a GenAI message (``{"role", "parts": [...]}``); a loop, not a generator: it runs
    for the first LLM call of every run."""
    for m in value:  # noqa: SIM110 (speed)
        if not (isinstance(m, dict) and isinstance(m.get("parts"), list)):
            return False
    return True


def last_user_text(messages: Sequence[Message]) -> str | None:
    """The last user message that has text: the request that started this turn (tool results are not text)."""
    for message in reversed(messages):
        if message.role == "user" and message.texts:
            return message.text
    return None


def last_assistant_text(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if message.role in ("assistant", "") and message.texts:
            return message.text
    return None


# --- tool definitions ---------------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def _cached(reader: Callable[[Any], tuple[ToolDefinition, ...]], raw: str) -> tuple[ToolDefinition, ...]:
    return reader(raw)


def _parse_once(reader: Callable[[Any], tuple[ToolDefinition, ...]], raw: Any) -> tuple[ToolDefinition, ...]:
    """Definitions parsed once per distinct JSON text: every LLM span of every run of an agent repeats them.

    ToolDefinitions are immutable, so sharing them between runs (and threads) is safe; the cache is bounded.
    Keys are the raw strings (or tuples of strings for flattened attributes); anything unhashable is parsed.
    """
    try:
        return _cached(reader, raw)
    except TypeError:  # an unhashable (AnyValue list/map) attribute value
        return reader(raw)


def _definitions_from_list(raw: Any) -> tuple[ToolDefinition, ...]:
    out: list[ToolDefinition] = []
    for item in as_list(raw) or ():
        item = parse_json(item)
        if isinstance(item, list):  # a list recorded as one JSON text inside the list (Langtrace)
            out.extend(_definitions_from_list(item))
            continue
        if isinstance(item, str) and item:
            out.append(ToolDefinition(item))
            continue
        if not isinstance(item, dict):
            continue
        try:
            out.append(ToolDefinition.from_value(item))
        except (ValueError, TypeError):
            continue
    return tuple(out)


def definitions_from_list(raw: Any) -> tuple[ToolDefinition, ...]:
    """Definitions in a list (or a JSON list) of definitions of any supported shape, parsed once per text (or
    per list of texts: the AI SDK records each definition as a JSON string of an AnyValue array)."""
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return _parse_once(_definitions_from_list, tuple(raw))
    return _parse_once(_definitions_from_list, raw)


def _definitions_from_request_body(raw: Any) -> tuple[ToolDefinition, ...]:
    """The ``tools`` of a provider request body recorded as an LLM span's input (OpenInference Anthropic)."""
    body = as_dict(raw)
    return _definitions_from_list(body.get("tools")) if body and isinstance(body.get("tools"), list) else ()


def _definitions_from_function_tools(raw: Any) -> tuple[ToolDefinition, ...]:
    params = as_dict(raw)
    return _definitions_from_list(params.get("function_tools")) if params else ()


def _definitions_from_langfuse_input(raw: Any) -> tuple[ToolDefinition, ...]:
    data = as_dict(raw)
    return _definitions_from_list(data.get("tools")) if data else ()


def _definition_from_schema(raw: Any) -> tuple[ToolDefinition, ...]:
    spec = raw if isinstance(raw, dict) else as_dict(raw)
    try:
        return (ToolDefinition.from_value(spec),) if spec else ()
    except (ValueError, TypeError):
        return ()


_OI_TOOL_FIELDS = ("tool.json_schema", "tool.name", "tool.description")
_TRACELOOP_FUNCTION_FIELDS = ("name", "description", "parameters")


def _openinference_tools(attrs: Mapping[str, Any]) -> tuple[ToolDefinition, ...]:
    """``llm.tools.N.tool.{json_schema,name,description}``, read by direct look-ups (no key scan)."""
    entries = []
    get = attrs.get
    for i in range(10_000):
        schema_key, name_key, description_key = flat_keys("llm.tools", i, _OI_TOOL_FIELDS)
        schema, name = get(schema_key), get(name_key)
        if schema is None and name is None:
            break
        entries.append((schema, name, get(description_key)))
    return _parse_once(_definitions_from_openinference, tuple(entries)) if entries else ()


def _definitions_from_openinference(entries: tuple[tuple[Any, Any, Any], ...]) -> tuple[ToolDefinition, ...]:
    out: list[ToolDefinition] = []
    for schema, name, description in entries:
        params = as_dict(schema)
        if isinstance(name, str) and name and not (params and ("function" in params or "name" in params)):
            # pydantic-ai: name + description + the bare parameter schema
            out.append(ToolDefinition(name, description if isinstance(description, str) else None, params))
        else:  # OpenAI-style {"type": "function", "function": {...}}
            out.extend(_definition_from_schema(params))
    return tuple(out)


def _traceloop_functions(attrs: Mapping[str, Any]) -> tuple[ToolDefinition, ...]:
    """``llm.request.functions.N.{name,description,parameters}``, read by direct look-ups."""
    entries = []
    get = attrs.get
    for i in range(10_000):
        name_key, description_key, parameters_key = flat_keys(
            "llm.request.functions", i, _TRACELOOP_FUNCTION_FIELDS
        )
        name = get(name_key)
        if name is None:
            break
        entries.append((name, get(description_key), get(parameters_key)))
    return _parse_once(_definitions_from_traceloop, tuple(entries)) if entries else ()


def _definitions_from_traceloop(entries: tuple[tuple[Any, Any, Any], ...]) -> tuple[ToolDefinition, ...]:
    return tuple(
        ToolDefinition(name, description if isinstance(description, str) else None, as_dict(params))
        for name, description, params in entries
        if isinstance(name, str) and name
    )


_REQUEST_TOOLS = "gen_ai.request.tools"


def read_definitions(span: SpanRecord) -> Sequence[ToolDefinition]:
    """Tools offered to the model on this span (LLM span or agent span), from the first
    convention that has any."""
    attrs = span.attributes
    if sc.GEN_AI_TOOL_DEFINITIONS in attrs:
        found = _parse_once(_definitions_from_list, attrs[sc.GEN_AI_TOOL_DEFINITIONS])
        if found:
            return found
    if _REQUEST_TOOLS in attrs:  # Langtrace: the request's tools
        found = _parse_once(_definitions_from_list, attrs[_REQUEST_TOOLS])
        if found:
            return found
    if sc.PYDANTIC_AI_MODEL_REQUEST_PARAMETERS in attrs:
        found = _parse_once(_definitions_from_function_tools, attrs[sc.PYDANTIC_AI_MODEL_REQUEST_PARAMETERS])
        if found:
            return found
    if attrs.get(sc.OI_SPAN_KIND) == sc.OI_KIND_LLM:
        found = _openinference_tools(attrs)
        if found:
            return found
        if "llm.tools" in attrs:  # one JSON list rather than flattened keys (OpenInference CrewAI events)
            found = _parse_once(_definitions_from_list, attrs["llm.tools"])
            if found:
                return found
        raw = attrs.get(sc.OI_INPUT_VALUE)
        if isinstance(raw, str) and '"tools"' in raw:
            found = _parse_once(_definitions_from_request_body, raw)
            if found:
                return found
    if attrs.get(sc.TRACELOOP_LLM_REQUEST_TYPE):
        found = _traceloop_functions(attrs)
        if found:
            return found
    if (
        attrs.get(sc.LANGFUSE_OBSERVATION_TYPE) == sc.LANGFUSE_TYPE_GENERATION
        and sc.LANGFUSE_OBSERVATION_INPUT in attrs
    ):
        found = _parse_once(_definitions_from_langfuse_input, attrs[sc.LANGFUSE_OBSERVATION_INPUT])
        if found:
            return found
    if sc.GEN_AI_AGENT_TOOLS in attrs:  # Strands agent span: names only
        return _parse_once(_definitions_from_list, attrs[sc.GEN_AI_AGENT_TOOLS])
    return ()
