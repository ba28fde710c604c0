"""A labelled case as the spans an instrumented agent would export, in one of two conventions.

- ``genai``: OpenTelemetry's GenAI semantic conventions (``invoke_agent`` > ``chat`` and ``execute_tool``
  spans, messages as ``gen_ai.input.messages``/``gen_ai.output.messages`` JSON, ``gen_ai.tool.definitions``).
- ``openinference``: OpenInference (AGENT > LLM and TOOL spans, flattened ``llm.input_messages.N.*`` and
  ``llm.output_messages.N.*`` keys, ``llm.tools.N.tool.json_schema``).

One LLM span per turn requests that turn's calls (a call with ``requested=False`` is left out of the request),
its executed calls follow as tool spans (a failed one with ERROR status and an exception event), and a last
LLM span gives the final answer. Ids and times derive from the case id, so the same case gives the same spans.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval.calibration.cases import CaseCall, LabelledCase
from agentotel_eval.otlp.records import STATUS_ERROR, STATUS_OK, SpanEvent, SpanRecord

CONVENTIONS = ("genai", "openinference")
_STEP_NS = 1_000_000  # 1 ms between consecutive events of a run
_BASE_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
_INTERNAL, _CLIENT = 1, 3


class _Ids:
    def __init__(self, case_id: str, convention: str) -> None:
        seed = hashlib.sha256(f"{convention}:{case_id}".encode()).digest()
        self.trace_id = seed[:16].hex()
        self._prefix = seed[16:20].hex()
        self._n = 0

    def next(self) -> str:
        self._n += 1
        return f"{self._prefix}{self._n:08x}"


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _turns(case: LabelledCase) -> list[list[tuple[int, CaseCall]]]:
    turns: dict[int, list[tuple[int, CaseCall]]] = {}
    for index, call in enumerate(case.calls):
        turns.setdefault(call.turn, []).append((index, call))
    return [turns[t] for t in sorted(turns)]


def _call_id(case: LabelledCase, index: int, call: CaseCall) -> str:
    return call.call_id or f"call_{index}"


def case_spans(case: LabelledCase, convention: str = "genai") -> list[SpanRecord]:
    """The spans of ``case`` in ``convention`` (one of ``CONVENTIONS``), parents before children."""
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {convention!r}; choose one of {', '.join(CONVENTIONS)}")
    ids = _Ids(case.id, convention)
    build = _GenAI(case, ids) if convention == "genai" else _OpenInference(case, ids)
    return build.spans()


class _Builder:
    def __init__(self, case: LabelledCase, ids: _Ids) -> None:
        self.case = case
        self.ids = ids
        self.out: list[SpanRecord] = []
        self.clock = _BASE_NS
        self.resource = {"service.name": f"calibration-{case.suite}"}

    def tick(self) -> int:
        self.clock += _STEP_NS
        return self.clock

    def span(
        self,
        name: str,
        parent: str | None,
        start: int,
        end: int,
        attributes: dict[str, Any],
        *,
        kind: int = _INTERNAL,
        error: str | None = None,
    ) -> SpanRecord:
        events: tuple[SpanEvent, ...] = ()
        if error is not None:
            events = (
                SpanEvent("exception", end, {"exception.type": "ToolError", "exception.message": error}),
            )
        record = SpanRecord(
            trace_id=self.ids.trace_id,
            span_id=self.ids.next(),
            parent_span_id=parent,
            name=name,
            kind=kind,
            start_ns=start,
            end_ns=end,
            status_code=STATUS_ERROR if error is not None else STATUS_OK,
            status_message=error or "",
            attributes=attributes,
            events=events,
            resource=self.resource,
            scope_name="agentotel_eval.calibration",
        )
        self.out.append(record)
        return record

    def spans(self) -> list[SpanRecord]:
        root_start = self.tick()
        root = self.root_span(root_start)
        history: list[dict[str, Any]] = []  # the conversation so far, in a neutral form
        if self.case.system_prompt:
            history.append({"role": "system", "content": self.case.system_prompt})
        history.append({"role": "user", "content": self.case.user_input})
        for turn in _turns(self.case):
            requested = [(i, c) for i, c in turn if c.requested]
            start = self.tick()
            self.llm_span(root.span_id, start, self.tick(), history, requested, None)
            if requested:
                history.append(
                    {
                        "role": "assistant",
                        "tool_calls": [(_call_id(self.case, i, c), c) for i, c in requested],
                    }
                )
            begin = self.tick()
            for k, (index, call) in enumerate(turn):
                if not call.executed:
                    continue
                self.tool_span(root.span_id, begin + k, self.tick(), index, call)  # one turn's calls overlap
                history.append(
                    {
                        "role": "tool",
                        "tool_call_id": _call_id(self.case, index, call),
                        "content": call.error
                        if call.error is not None
                        else ""
                        if call.result is None
                        else _json(call.result),
                    }
                )
        start = self.tick()
        self.llm_span(root.span_id, start, self.tick(), history, [], self.case.answer)
        root.end_ns = self.tick()
        return self.out

    def root_span(self, start: int) -> SpanRecord:
        raise NotImplementedError

    def llm_span(
        self,
        parent: str,
        start: int,
        end: int,
        history: Sequence[Mapping[str, Any]],
        calls: Sequence[tuple[int, CaseCall]],
        answer: str | None,
    ) -> None:
        raise NotImplementedError

    def tool_span(self, parent: str, start: int, end: int, index: int, call: CaseCall) -> None:
        raise NotImplementedError


class _GenAI(_Builder):
    def root_span(self, start: int) -> SpanRecord:
        agent = f"{self.case.suite}_agent"
        return self.span(
            f"invoke_agent {agent}",
            None,
            start,
            start,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent},
        )

    def _message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        role = message["role"]
        if role == "tool":
            return {
                "role": "tool",
                "parts": [
                    {
                        "type": "tool_call_response",
                        "id": message["tool_call_id"],
                        "response": message["content"],
                    }
                ],
            }
        if "tool_calls" in message:
            return {"role": "assistant", "parts": [self._request(cid, c) for cid, c in message["tool_calls"]]}
        return {"role": role, "parts": [{"type": "text", "content": message["content"]}]}

    @staticmethod
    def _request(call_id: str, call: CaseCall) -> dict[str, Any]:
        return {"type": "tool_call", "id": call_id, "name": call.name, "arguments": call.arguments}

    def llm_span(
        self,
        parent: str,
        start: int,
        end: int,
        history: Sequence[Mapping[str, Any]],
        calls: Sequence[tuple[int, CaseCall]],
        answer: str | None,
    ) -> None:
        if calls:
            output = {
                "role": "assistant",
                "finish_reason": "tool_call",
                "parts": [self._request(_call_id(self.case, i, c), c) for i, c in calls],
            }
        else:
            output = {
                "role": "assistant",
                "finish_reason": "stop",
                "parts": [{"type": "text", "content": answer or ""}],
            }
        tools = [{"type": "function", **tool} for tool in self.case.tools]
        self.span(
            "chat calibration-model",
            parent,
            start,
            end,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "calibration-model",
                "gen_ai.input.messages": _json([self._message(m) for m in history]),
                "gen_ai.output.messages": _json([output]),
                "gen_ai.tool.definitions": _json(tools),
                "gen_ai.response.finish_reasons": [output["finish_reason"]],
            },
            kind=_CLIENT,
        )

    def tool_span(self, parent: str, start: int, end: int, index: int, call: CaseCall) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": _call_id(self.case, index, call),
            "gen_ai.tool.call.arguments": _json(call.arguments),
        }
        if call.error is not None:
            attributes["error.type"] = "ToolError"
        elif call.result is not None:
            attributes["gen_ai.tool.call.result"] = _json(call.result)
        self.span(f"execute_tool {call.name}", parent, start, end, attributes, error=call.error)


class _OpenInference(_Builder):
    def root_span(self, start: int) -> SpanRecord:
        return self.span(
            f"{self.case.suite}_agent",
            None,
            start,
            start,
            {
                "openinference.span.kind": "AGENT",
                "input.value": self.case.user_input,
                "output.value": self.case.answer,
            },
        )

    @staticmethod
    def _flat(prefix: str, index: int, message: Mapping[str, Any], out: dict[str, Any]) -> None:
        key = f"{prefix}.{index}.message"
        out[f"{key}.role"] = message["role"]
        if message["role"] == "tool":
            out[f"{key}.tool_call_id"] = message["tool_call_id"]
        for j, (call_id, call) in enumerate(message.get("tool_calls", ())):
            base = f"{key}.tool_calls.{j}.tool_call"
            out[f"{base}.id"] = call_id
            out[f"{base}.function.name"] = call.name
            out[f"{base}.function.arguments"] = _json(call.arguments)
        if "content" in message:
            out[f"{key}.content"] = message["content"]

    def llm_span(
        self,
        parent: str,
        start: int,
        end: int,
        history: Sequence[Mapping[str, Any]],
        calls: Sequence[tuple[int, CaseCall]],
        answer: str | None,
    ) -> None:
        attributes: dict[str, Any] = {
            "openinference.span.kind": "LLM",
            "llm.model_name": "calibration-model",
            "llm.provider": "openai",
        }
        for i, message in enumerate(history):
            self._flat("llm.input_messages", i, message, attributes)
        output: dict[str, Any] = {"role": "assistant"}
        if calls:
            output["tool_calls"] = [(_call_id(self.case, i, c), c) for i, c in calls]
        else:
            output["content"] = answer or ""
        self._flat("llm.output_messages", 0, output, attributes)
        for i, tool in enumerate(self.case.tools):
            attributes[f"llm.tools.{i}.tool.json_schema"] = _json(
                {"type": "function", "function": dict(tool)}
            )
        self.span("ChatCompletion", parent, start, end, attributes, kind=_CLIENT)

    def tool_span(self, parent: str, start: int, end: int, index: int, call: CaseCall) -> None:
        attributes: dict[str, Any] = {
            "openinference.span.kind": "TOOL",
            "tool.name": call.name,
            "tool_call.id": _call_id(self.case, index, call),
            "input.value": _json(call.arguments),
            "input.mime_type": "application/json",
        }
        if call.error is None and call.result is not None:
            attributes["output.value"] = _json(call.result)
        self.span(call.name, parent, start, end, attributes, error=call.error)
