"""Build ``gen_ai.input.messages`` / ``gen_ai.output.messages`` values (GenAI message JSON) from plain values.

Pure functions. The shapes follow the GenAI schemas ``gen-ai-input-messages.json`` /
``gen-ai-output-messages.json``: ``[{"role": ..., "parts": [{"type": "text", "content": ...}, ...],
"finish_reason": ... (output only)}]``.

An agent's input and output are a user and an assistant text message. An LLM function's arguments and return
value are understood when they look like chat messages (OpenAI-style ``{"role", "content", "tool_calls"}``
dicts, a chat completion with ``choices``, or messages already in GenAI ``parts`` form), so that the tool
calls a scripted or hand-wrapped model requested are visible to any GenAI backend; anything else
falls back to text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.tracing.capture import redact, to_json, to_text


def text_message(role: str, text: str, finish_reason: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return message


def dump_messages(messages: list[dict[str, Any]], max_chars: int) -> str:
    return to_json(messages, max_chars * 2)


def _plain(value: Any) -> Any:
    """Objects of client libraries (pydantic models) as plain dicts; plain values unchanged."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(mode="json", exclude_none=True)
        except Exception:
            return value
    return value


def _arguments(raw: Any) -> Any:
    """Tool-call arguments as an object when they are a JSON object string (the spec prefers objects)."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw
        return parsed if isinstance(parsed, dict) else raw
    return raw


def _content_parts(content: Any, max_chars: int) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": to_text(content, max_chars)}]
    if isinstance(content, Sequence) and all(isinstance(p, Mapping) for p in content):
        parts = []
        for part in content:
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append({"type": "text", "content": to_text(part["text"], max_chars)})
            else:
                parts.append(dict(part))
        return parts
    return [{"type": "text", "content": to_text(content, max_chars)}]


def _tool_call_parts(tool_calls: Any) -> list[dict[str, Any]]:
    parts = []
    for raw in tool_calls or ():
        call = _plain(raw)
        if not isinstance(call, Mapping):
            continue
        function = _plain(call.get("function")) or {}
        if not isinstance(function, Mapping):
            function = {}
        part: dict[str, Any] = {"type": "tool_call", "name": function.get("name") or call.get("name")}
        if call.get("id") is not None:
            part["id"] = call["id"]
        arguments = function.get("arguments", call.get("arguments"))
        if arguments is not None:
            part["arguments"] = _arguments(arguments)
        parts.append(part)
    return parts


def chat_message(raw: Any, max_chars: int) -> dict[str, Any] | None:
    """One chat message in GenAI form, or None when ``raw`` is not recognisably a message."""
    message = _plain(raw)
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        return None
    message = redact(message)
    if isinstance(message.get("parts"), list):  # already GenAI form
        return dict(message)
    role = message["role"]
    if role == "tool":
        part = {"type": "tool_call_response", "response": message.get("content")}
        if message.get("tool_call_id") is not None:
            part["id"] = message["tool_call_id"]
        return {"role": "tool", "parts": [part]}
    parts = _content_parts(message.get("content"), max_chars) + _tool_call_parts(message.get("tool_calls"))
    out: dict[str, Any] = {"role": role, "parts": parts}
    if isinstance(message.get("name"), str):
        out["name"] = message["name"]
    return out


def llm_input_messages(
    arguments: Mapping[str, Any], fallback_text: str, max_chars: int
) -> list[dict[str, Any]]:
    """The input of an LLM function: its ``messages`` argument if it holds chat messages,
    else one user text."""
    messages = arguments.get("messages")
    if isinstance(messages, Sequence) and not isinstance(messages, str) and messages:
        converted = [chat_message(m, max_chars) for m in messages]
        if all(m is not None for m in converted):
            return converted  # type: ignore[return-value]
    prompt = arguments.get("prompt")
    if isinstance(prompt, str):
        return [text_message("user", to_text(prompt, max_chars))]
    return [text_message("user", fallback_text)]


def llm_output_messages(result: Any, max_chars: int) -> list[dict[str, Any]]:
    """The output of an LLM function: chat-completion choices or a message if it returned one, else text."""
    value = _plain(result)
    if isinstance(value, Mapping) and isinstance(value.get("choices"), list):
        out = []
        for choice in value["choices"]:
            choice = _plain(choice)
            message = chat_message(choice.get("message"), max_chars) if isinstance(choice, Mapping) else None
            if message is None:
                continue
            message["finish_reason"] = choice.get("finish_reason") or _finish_reason(message)
            out.append(message)
        if out:
            return out
    message = chat_message(value, max_chars)
    if message is not None:
        message.setdefault("finish_reason", _finish_reason(message))
        return [message]
    return [text_message("assistant", to_text(result, max_chars), "stop")]


def _finish_reason(message: Mapping[str, Any]) -> str:
    parts = message.get("parts") or ()
    return (
        "tool_call" if any(isinstance(p, Mapping) and p.get("type") == "tool_call" for p in parts) else "stop"
    )


def llm_response_attributes(result: Any) -> dict[str, Any]:
    """``gen_ai.response.*`` and token usage from a chat-completion-like return value, when present."""
    value = _plain(result)
    if not isinstance(value, Mapping):
        return {}
    attrs: dict[str, Any] = {}
    if isinstance(value.get("model"), str):
        attrs[sc.GEN_AI_RESPONSE_MODEL] = value["model"]
    if isinstance(value.get("id"), str):
        attrs[sc.GEN_AI_RESPONSE_ID] = value["id"]
    choices = value.get("choices")
    if isinstance(choices, list):
        reasons = [c.get("finish_reason") for c in map(_plain, choices) if isinstance(c, Mapping)]
        if reasons and all(isinstance(r, str) for r in reasons):
            attrs[sc.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
    usage = _plain(value.get("usage"))
    if isinstance(usage, Mapping):
        for key, attr in (
            ("prompt_tokens", sc.GEN_AI_USAGE_INPUT_TOKENS),
            ("input_tokens", sc.GEN_AI_USAGE_INPUT_TOKENS),
            ("completion_tokens", sc.GEN_AI_USAGE_OUTPUT_TOKENS),
            ("output_tokens", sc.GEN_AI_USAGE_OUTPUT_TOKENS),
        ):
            if isinstance(usage.get(key), int) and not isinstance(usage.get(key), bool):
                attrs[attr] = usage[key]
    return attrs
