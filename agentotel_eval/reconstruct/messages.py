"""Chat messages in every shape instrumentations record them, read into one small model.

One parser serves LLM inputs/outputs, agent inputs/outputs and tool results, so each convention's quirks live
in one place: GenAI ``{role, parts}``; OpenAI chat ``{role, content, tool_calls}``; Bedrock/Strands content
blocks (``text``/``toolUse``/``toolResult``); Anthropic ``tool_use``/``tool_result`` blocks; LangChain dumps
(``{"type": "ai", "data": ...}``) and ``lc`` constructor serialisations; containers (``{"messages": ...}``,
``{"inputs": ...}``, ``generations``, ``choices``); and the flattened OpenInference
(``llm.*_messages.N.message.*``) and Traceloop (``gen_ai.prompt|completion.N.*``) attribute keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentotel_eval.reconstruct.reprs import parse_message_repr
from agentotel_eval.reconstruct.values import parse_json, seq, text_of

_ROLES = {
    "human": "user",
    "humanmessage": "user",
    "user": "user",
    "ai": "assistant",
    "aimessage": "assistant",
    "aimessagechunk": "assistant",
    "assistant": "assistant",
    "model": "assistant",
    "tool": "tool",
    "toolmessage": "tool",
    "function": "tool",
    "ipython": "tool",
    "system": "system",
    "systemmessage": "system",
    "developer": "system",
}
_CONTAINER_KEYS = ("messages", "inputs", "outputs", "update", "input", "output", "replies")
_MAX_DEPTH = 8


@dataclass(slots=True)
class ToolCallPart:
    """A tool call as the model wrote it: name, raw arguments, call id (None when absent)."""

    name: str
    arguments: Any
    call_id: str | None = None


@dataclass(slots=True)
class ToolResultPart:
    """A tool result fed back to the model (or recorded on a tool span)."""

    call_id: str | None
    content: Any
    status: str | None = None  # "error" when the message itself says so; else None
    name: str | None = None
    source: str = "history"  # where it was read: the model's history, or a framework step's output


@dataclass(slots=True, init=False)
class Message:
    role: str
    texts: list[str]
    tool_calls: list[ToolCallPart]
    tool_results: list[ToolResultPart]

    def __init__(
        self,
        role: str,
        texts: list[str] | None = None,
        tool_calls: list[ToolCallPart] | None = None,
        tool_results: list[ToolResultPart] | None = None,
    ) -> None:
        # by hand: one per message read, and the generated __init__ calls a factory per list
        self.role = role
        self.texts = [] if texts is None else texts
        self.tool_calls = [] if tool_calls is None else tool_calls
        self.tool_results = [] if tool_results is None else tool_results

    @property
    def text(self) -> str | None:
        return "\n".join(self.texts) if self.texts else None


def normalize_role(role: Any, default: str = "") -> str:
    if not isinstance(role, str) or not role:
        return default
    known = _ROLES.get(role)  # already lower case (the keys are): the common case
    if known is not None:
        return known
    lowered = role.lower()
    return _ROLES.get(lowered, lowered)


def parse_messages(value: Any, default_role: str = "") -> list[Message]:
    """Every message found in ``value`` (a JSON string, a message, a list of them or a container)."""
    out: list[Message] = []
    _collect(parse_json(value), default_role, out, 0)
    return out


def _collect(value: Any, default_role: str, out: list[Message], depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str) and depth:
        if value.startswith(_MESSAGE_REPR):  # Haystack's ChatMessage written as its repr (OpenInference)
            message = _from_repr(value)
            if message is not None:
                out.append(message)
            return
        value = parse_json(value)
    if isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("parts"), list):  # GenAI: the common case
                out.append(_from_genai(item, item["parts"], default_role))
            else:
                _collect(item, default_role, out, depth + 1)
        return
    if not isinstance(value, dict):
        return
    if "role" in value or "parts" in value:
        message = message_from_mapping(value, default_role)
        if message is not None:
            out.append(message)
        return
    for key in _CONTAINER_KEYS:
        inner = value.get(key)
        if isinstance(inner, (list, tuple, dict)) and not _looks_like_message(value):
            _collect(inner, default_role, out, depth + 1)
            return
    generations = value.get("generations")
    if isinstance(generations, list):
        for gen in _flatten(generations):
            if isinstance(gen, dict):
                msg = gen.get("message")
                if isinstance(msg, dict):
                    _collect(msg, "assistant", out, depth + 1)
                elif isinstance(gen.get("text"), str) and gen["text"]:
                    out.append(Message("assistant", [gen["text"]]))
        return
    choices = value.get("choices")
    if isinstance(choices, list):
        for choice in choices:
            if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                _collect(choice["message"], "assistant", out, depth + 1)
        return
    message = message_from_mapping(value, default_role)
    if message is not None:
        out.append(message)


_MESSAGE_REPR = (
    "ChatMessage(_role="  # Haystack's dataclass repr (LlamaIndex's ChatMessage(role=...) is another)
)


def _from_repr(text: str) -> Message | None:
    found = parse_message_repr(text)
    if found is None:
        return None
    msg = Message(normalize_role(found.role), list(found.texts))
    for call in found.calls:
        msg.tool_calls.append(ToolCallPart(call.name, call.arguments, call.call_id))
    for result in found.results:
        msg.tool_results.append(
            ToolResultPart(result.call_id, result.result, "error" if result.error else None, result.name)
        )
    return msg


def _flatten(items: Iterable[Any]) -> Iterable[Any]:
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from _flatten(item)
        else:
            yield item


_MESSAGE_KEYS = ("role", "parts", "content", "tool_calls", "lc", "data")
_FLAT_MESSAGE_KEYS = ("role", "content", "tool_calls", "function_call", "tool_call_id")


def _looks_like_message(value: Mapping[str, Any]) -> bool:
    return not value.keys().isdisjoint(_MESSAGE_KEYS)


def message_from_mapping(value: Mapping[str, Any], default_role: str = "") -> Message | None:
    """One message from one mapping of any supported shape, or None when it is not a message."""
    if (
        value.get("lc") and value.get("type") == "constructor"
    ):  # LangChain dumpd(): {"lc":1,"id":[..."AIMessage"],"kwargs"}
        kwargs = value.get("kwargs")
        ident = value.get("id")
        cls = ident[-1] if isinstance(ident, list) and ident else ""
        if not isinstance(kwargs, dict):
            return None
        role = normalize_role(kwargs.get("type") or cls, default_role)
        return _from_flat(kwargs, role)
    data = value.get("data")
    if isinstance(data, dict) and isinstance(value.get("type"), str):  # LangChain message_to_dict()
        return _from_flat(data, normalize_role(value["type"], default_role))
    parts = value.get("parts")
    if isinstance(parts, list):
        return _from_genai(value, parts, default_role)
    if not value.keys().isdisjoint(_FLAT_MESSAGE_KEYS):
        role = normalize_role(value.get("role") or value.get("type"), default_role)
        return _from_flat(value, role)
    return None


def _from_genai(value: Mapping[str, Any], parts: list[Any], default_role: str) -> Message:
    msg = Message(normalize_role(value.get("role"), default_role))
    for part in parts:
        if not isinstance(part, dict):
            if isinstance(part, str):
                msg.texts.append(part)
            continue
        kind = part.get("type")
        if kind == "text":
            text = part.get("content", part.get("text"))
            if isinstance(text, str):
                msg.texts.append(text)
        elif kind in ("tool_call", "function_call"):
            name = part.get("name")
            if isinstance(name, str) and name:
                msg.tool_calls.append(ToolCallPart(name, part.get("arguments"), _id(part.get("id"))))
        elif kind in ("tool_call_response", "function_call_response"):
            content = part["response"] if "response" in part else part.get("result")
            msg.tool_results.append(ToolResultPart(_id(part.get("id")), content, None, part.get("name")))
    return msg


def _from_flat(value: Mapping[str, Any], role: str) -> Message:
    """OpenAI / Bedrock / Anthropic / LangChain-kwargs shaped message."""
    msg = Message(role)
    content = value.get("content")
    if isinstance(content, str):
        if role == "tool":
            msg.tool_results.append(
                ToolResultPart(
                    _id(value.get("tool_call_id") or value.get("id")),
                    content,
                    _status(value.get("status")),
                    _str(value.get("name")),
                )
            )
        elif content:
            msg.texts.append(content)
    elif isinstance(content, list):
        _content_blocks(content, msg, value)
    for call in seq(value.get("tool_calls")):
        part = _tool_call(call)
        if part is not None:
            msg.tool_calls.append(part)
    function_call = value.get("function_call")
    if isinstance(function_call, dict) and isinstance(function_call.get("name"), str):
        msg.tool_calls.append(ToolCallPart(function_call["name"], function_call.get("arguments")))
    return msg


def _content_blocks(blocks: list[Any], msg: Message, owner: Mapping[str, Any]) -> None:
    tool_texts: list[str] = []
    for block in blocks:
        if isinstance(block, str):
            tool_texts.append(block) if msg.role == "tool" else msg.texts.append(block)
            continue
        if not isinstance(block, dict):
            continue
        use = block.get("toolUse")
        if isinstance(use, dict) and isinstance(use.get("name"), str):  # Bedrock / Strands
            msg.tool_calls.append(ToolCallPart(use["name"], use.get("input"), _id(use.get("toolUseId"))))
            continue
        result = block.get("toolResult")
        if isinstance(result, dict):
            msg.tool_results.append(
                ToolResultPart(
                    _id(result.get("toolUseId")),
                    text_of(result.get("content")),
                    _status(result.get("status")),
                )
            )
            continue
        call = block.get("tool_call")
        if isinstance(call, dict):  # Haystack ChatMessage: {"tool_call": {"tool_name", "arguments", "id"}}
            part = _tool_call(call)
            if part is not None:
                msg.tool_calls.append(part)
            continue
        done = block.get("tool_call_result")
        if isinstance(done, dict):  # Haystack: {"tool_call_result": {"result", "origin": {...}, "error"}}
            origin: dict[str, Any] = done["origin"] if isinstance(done.get("origin"), dict) else {}
            msg.tool_results.append(
                ToolResultPart(
                    _id(origin.get("id")),
                    done.get("result"),
                    "error" if done.get("error") is True else None,
                    _str(origin.get("tool_name")),
                )
            )
            continue
        kind = block.get("type")
        if kind == "function" and isinstance(block.get("function"), dict) and msg.role != "tool":
            part = _tool_call(block)  # an OpenAI tool call as a content block (Langtrace's completion events)
            if part is not None:
                msg.tool_calls.append(part)
                continue
        if kind == "tool_use" and isinstance(block.get("name"), str):  # Anthropic
            msg.tool_calls.append(ToolCallPart(block["name"], block.get("input"), _id(block.get("id"))))
        elif kind == "tool_result":
            status = "error" if block.get("is_error") is True else None
            msg.tool_results.append(
                ToolResultPart(_id(block.get("tool_use_id")), text_of(block.get("content")), status)
            )
        elif kind == "tool-call" and isinstance(block.get("toolName"), str):  # Vercel AI SDK
            msg.tool_calls.append(
                ToolCallPart(
                    block["toolName"], block.get("input", block.get("args")), _id(block.get("toolCallId"))
                )
            )
        elif (
            kind == "tool-result"
        ):  # Vercel AI SDK: output {"type": "text" | "json" | "error-text" | ..., "value"}
            output = block.get("output", block.get("result"))
            status = None
            if isinstance(output, dict) and "value" in output:
                status = "error" if str(output.get("type", "")).startswith("error") else None
                output = output["value"]
            if block.get("isError") is True:
                status = "error"
            msg.tool_results.append(
                ToolResultPart(_id(block.get("toolCallId")), output, status, _str(block.get("toolName")))
            )
        else:
            text = text_of(block)
            if text:
                tool_texts.append(text) if msg.role == "tool" else msg.texts.append(text)
    if tool_texts and msg.role == "tool":
        msg.tool_results.append(
            ToolResultPart(
                _id(owner.get("tool_call_id") or owner.get("id")),
                "\n".join(tool_texts),
                _status(owner.get("status")),
                _str(owner.get("name")),
            )
        )


def _tool_call(call: Any) -> ToolCallPart | None:
    if not isinstance(call, dict):
        return None
    function = call.get("function")
    if isinstance(function, dict):  # OpenAI {"id", "function": {"name", "arguments"}}
        name = function.get("name")
        args = function.get("arguments")
    # LangChain {"name", "args", "id"}; GenAI-like {"name", "arguments", "id"}; AI SDK / Mastra / Haystack
    else:
        name = call.get("name") or call.get("toolName") or call.get("tool_name")
        args = (
            call["args"]
            if "args" in call
            else call.get("arguments", call.get("input", call.get("toolInput")))
        )
    if not isinstance(name, str) or not name:
        return None
    return ToolCallPart(name, args, _id(call.get("id") or call.get("toolCallId") or call.get("tool_call_id")))


def tool_calls_in(value: Any) -> list[ToolCallPart]:
    """The tool calls in a value that lists them: a list of call objects (``[{"toolCallId", "toolName",
    "input"}]``), an object holding such a list (``{"text": ..., "toolCalls": [...]}``), or messages."""
    value = parse_json(value)
    if isinstance(value, dict):
        for key in ("toolCalls", "tool_calls"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
    if isinstance(value, list) and all(isinstance(c, dict) and not _looks_like_message(c) for c in value):
        return [part for c in value if (part := _tool_call(c)) is not None]
    return [call for message in parse_messages(value, "assistant") for call in message.tool_calls]


def _id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _status(value: Any) -> str | None:
    if isinstance(value, str) and value.lower() in ("error", "failed", "failure"):
        return "error"
    return None


# --- flattened attribute keys -------------------------------------------------------------------------------
# Read by direct look-ups, message by message (``prefix.0.*``, ``prefix.1.*``, ... until one is absent): a
# span has dozens of keys, a scan of all of them per question would cost more than the answer. The key names
# of item N are the same on every span of a convention, so they are built (and hashed) once, not per look-up.

_MAX_INDEX = 10_000
_OI_FIELDS = (
    # the first six mark that message N exists
    "message.role",
    "message.content",
    "message.tool_calls.0.tool_call.function.name",
    "message.contents.0.message_content.type",
    "message.tool_call_id",
    "message.function_call_name",
    "message.function_call_arguments_json",
    "message.name",
    "message.contents",
    "message.tool_calls",  # heads of the nested lists
    "message.contents.0.message_content.text",
    "message.tool_calls.0.tool_call.id",  # their first item
    "function.0",  # AutoGen: a function result as a JSON object beside the message
)
_OI_BLOCK_FIELDS = ("message_content.text", "message_content.type")
_OI_CALL_FIELDS = ("tool_call.function.name", "tool_call.id", "tool_call.function.arguments")
_TRACELOOP_FIELDS = (
    # the first six mark that message N exists
    "role",
    "content",
    "tool_calls.0.name",
    "tool_call_id",
    "finish_reason",
    "function_call.name",
    "function_call.arguments",
    "tool_calls",
    "tool_calls.0.id",
)
_TRACELOOP_CALL_FIELDS = ("name", "id", "arguments")
_OI_SPAN_KIND = "openinference.span.kind"


@lru_cache(maxsize=4096)
def flat_keys(prefix: str, index: int, fields: tuple[str, ...]) -> tuple[str, ...]:
    """``f"{prefix}.{index}.{field}"`` for each field: the key names of one item of a flattened list."""
    base = f"{prefix}.{index}."
    return tuple(base + name for name in fields)


def openinference_messages(attrs: Mapping[str, Any], prefix: str) -> list[Message]:
    """``llm.input_messages`` / ``llm.output_messages`` flattened keys as messages, in index order."""
    out: list[Message] = []
    if _OI_SPAN_KIND not in attrs and flat_keys(prefix, 0, _OI_FIELDS)[0] not in attrs:
        return out  # not an OpenInference span: skip the probes
    get = attrs.get
    present = attrs.keys()
    for i in range(_MAX_INDEX):
        keys = flat_keys(prefix, i, _OI_FIELDS)
        if present.isdisjoint(keys[:6]):
            break
        (
            role_key,
            content_key,
            call0_name_key,
            block0_type_key,
            call_id_key,
            fname_key,
            fargs_key,
            name_key,
            blocks_head,
            calls_head,
            block0_text_key,
            call0_id_key,
            function0_key,
        ) = keys
        role = normalize_role(get(role_key), "")
        msg = Message(role)
        content = get(content_key)
        texts = [content] if isinstance(content, str) and content else []
        if get(block0_text_key) is not None or block0_type_key in attrs:  # else the list is empty
            for k in range(_MAX_INDEX):
                text_key, type_key = flat_keys(blocks_head, k, _OI_BLOCK_FIELDS)
                text = get(text_key)
                if text is None and type_key not in attrs:
                    break
                if isinstance(text, str) and text:
                    texts.append(text)
        if get(call0_name_key) is not None or call0_id_key in attrs:  # else the list is empty
            for j in range(_MAX_INDEX):
                call_name_key, call_id_key_j, arguments_key = flat_keys(calls_head, j, _OI_CALL_FIELDS)
                name = get(call_name_key)
                if name is None and call_id_key_j not in attrs:
                    break
                if isinstance(name, str) and name:
                    msg.tool_calls.append(ToolCallPart(name, get(arguments_key), _id(get(call_id_key_j))))
        fname = get(fname_key)
        if isinstance(fname, str) and fname:
            msg.tool_calls.append(ToolCallPart(fname, get(fargs_key)))
        if function0_key in attrs:
            _function_results(attrs, f"{prefix}.{i}.function", msg)
        elif role == "tool":
            msg.tool_results.append(
                ToolResultPart(
                    _id(get(call_id_key)), "\n".join(texts) if texts else None, None, _str(get(name_key))
                )
            )
        if role != "tool":
            msg.texts.extend(texts)
        out.append(msg)
    return out


def _function_results(attrs: Mapping[str, Any], head: str, msg: Message) -> None:
    """``<prefix>.N.function.K`` = ``{"name", "content", "call_id", "is_error"}`` (OpenInference AutoGen)."""
    for k in range(_MAX_INDEX):
        raw = attrs.get(f"{head}.{k}")
        if raw is None:
            break
        value = parse_json(raw)
        if isinstance(value, dict):
            status = "error" if value.get("is_error") is True else _status(value.get("status"))
            msg.tool_results.append(
                ToolResultPart(
                    _id(value.get("call_id") or value.get("id")),
                    value.get("content"),
                    status,
                    _str(value.get("name")),
                )
            )


def traceloop_messages(attrs: Mapping[str, Any], prefix: str) -> list[Message]:
    """Legacy Traceloop ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` keys as messages, in index order."""
    out: list[Message] = []
    first = flat_keys(prefix, 0, _TRACELOOP_FIELDS)
    if first[0] not in attrs and first[1] not in attrs and first[2] not in attrs:
        return out
    get = attrs.get
    present = attrs.keys()
    default = "assistant" if prefix.endswith("completion") else ""
    for i in range(_MAX_INDEX):
        keys = flat_keys(prefix, i, _TRACELOOP_FIELDS)
        if present.isdisjoint(keys[:6]):
            break
        role = normalize_role(get(keys[0]), default)
        msg = Message(role)
        content = get(keys[1])
        if role == "tool":
            msg.tool_results.append(ToolResultPart(_id(get(keys[3])), content))
        elif isinstance(content, str) and content:
            parsed = parse_json(content)  # some versions store the OpenAI content-block list as JSON
            msg.texts.append(text_of(parsed) or content if isinstance(parsed, list) else content)
        if get(keys[2]) is not None or keys[8] in attrs:  # else no tool call
            for j in range(_MAX_INDEX):
                name_key, id_key, arguments_key = flat_keys(keys[7], j, _TRACELOOP_CALL_FIELDS)
                name = get(name_key)
                if name is None and id_key not in attrs:
                    break
                if isinstance(name, str) and name:
                    msg.tool_calls.append(ToolCallPart(name, get(arguments_key), _id(get(id_key))))
        fname = get(keys[5])
        if isinstance(fname, str) and fname:
            msg.tool_calls.append(ToolCallPart(fname, get(keys[6])))
        out.append(msg)
    return out


# --- tool results -------------------------------------------------------------------------------------------


def unwrap_tool_result(value: Any) -> ToolResultPart:
    """A tool span's recorded result, unwrapped from framework envelopes (LangChain
    ToolMessage, Bedrock blocks).

    LangChain's ``handle_tool_error`` returns status OK with a ToolMessage whose ``status`` is ``"error"``:
    that status is surfaced here, as is the ToolMessage's ``tool_call_id``.
    """
    parsed = parse_json(value)
    if isinstance(parsed, dict):
        output = parsed.get("output")
        if isinstance(output, dict) and set(parsed) <= {"output", "kwargs"}:  # OpenLLMetry LangChain envelope
            parsed = output
        mcp = _mcp_result(parsed)
        if mcp is not None:
            return mcp
        msg = message_from_mapping(parsed, "tool") if _is_message_envelope(parsed) else None
        if msg is not None and msg.tool_results:
            return msg.tool_results[0]
        result = parsed.get("toolResult")
        if isinstance(result, dict):
            return ToolResultPart(
                _id(result.get("toolUseId")), text_of(result.get("content")), _status(result.get("status"))
            )
        return ToolResultPart(None, parsed)
    if isinstance(parsed, list) and parsed and all(isinstance(b, dict) and "text" in b for b in parsed):
        return ToolResultPart(None, text_of(parsed))  # Bedrock/Strands content blocks
    return ToolResultPart(None, parsed)  # a JSON string literal ('"Athens: 29C"') is its text


_CONTENT_PART_KEYS = frozenset({"type", "text", "annotations", "meta", "_meta"})
_MCP_RESULT_KEYS = frozenset(
    {"content", "isError", "is_error", "structuredContent", "structured_content", "meta", "_meta"}
)


def _mcp_result(value: Mapping[str, Any]) -> ToolResultPart | None:
    """A tool result in the MCP / OpenAI content shapes: one text content part (``{"type": "text", "text":
    ...}``, what the OpenAI Agents SDK keeps of an MCP result) is its text; an MCP ``CallToolResult``
    (``{"content": [...], "isError": true}``) is its content's text, failed when ``isError`` says so."""
    if (
        value.get("type") == "text"
        and isinstance(value.get("text"), str)
        and value.keys() <= _CONTENT_PART_KEYS
    ):
        return ToolResultPart(None, value["text"])
    content = value.get("content")
    flag = value.get("isError", value.get("is_error"))
    if isinstance(content, list) and isinstance(flag, bool) and value.keys() <= _MCP_RESULT_KEYS:
        text = text_of(content)
        return ToolResultPart(None, text if text is not None else content, "error" if flag else None)
    return None


@dataclass(frozen=True, slots=True)
class GraphCommand:
    """A LangGraph ``Command`` a tool returned to move control to another node: a handoff to ``goto`` (swarm
    and supervisor handoff tools return one), with the tool message it adds for the call, if any."""

    goto: str
    message: ToolResultPart | None


_GOTO_REPR = re.compile(r"""\bgoto=\[?\(?['"](?P<goto>[^'"]+)['"]""")


def graph_command(value: Any) -> GraphCommand | None:
    """The LangGraph ``Command`` a tool result is (its JSON serialisation ``{"lg_name": "Command", "goto":
    ...}``, bare or in an ``{"output": ...}`` envelope, or its Python repr ``Command(...,
    goto='x')``), or None."""
    if isinstance(value, str):
        text = value.lstrip()
        if text.startswith("Command("):
            found = _GOTO_REPR.search(text)
            return GraphCommand(found["goto"], None) if found else None
        if "Command" not in text:
            return None
    parsed = parse_json(value)
    if (
        isinstance(parsed, dict)
        and set(parsed) <= {"output", "kwargs"}
        and isinstance(parsed.get("output"), dict)
    ):
        parsed = parsed["output"]
    if not isinstance(parsed, dict) or parsed.get("lg_name") != "Command":
        return None
    goto = parsed.get("goto")
    if isinstance(goto, list) and goto:
        goto = goto[0]
    if not isinstance(goto, str) or not goto:
        return None
    update = parsed.get("update")
    messages = parse_messages(update.get("messages"), "") if isinstance(update, dict) else []
    results = [r for m in messages if m.role == "tool" for r in m.tool_results]
    return GraphCommand(goto, results[-1] if results else None)


def _is_message_envelope(value: Mapping[str, Any]) -> bool:
    if value.get("lc") and value.get("type") == "constructor":
        ident = value.get("id")
        return isinstance(ident, list) and bool(ident) and str(ident[-1]).lower() == "toolmessage"
    if value.get("type") != "tool":
        return False
    # {"type": "tool", "data": {...}}, or a flat ToolMessage dump (LangSmith: content, tool_call_id, status)
    return isinstance(value.get("data"), dict) or ("tool_call_id" in value and "content" in value)
