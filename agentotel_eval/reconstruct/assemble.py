"""One run's spans -> its ordered ToolCalls, handoffs, tool definitions, input and output (an AgentRun).

Counting rule (CONVENTIONS.md traps 1-5): an execution span is the evidence that a call ran; the model's
request for it (LLM output), copies on other conventions and history are the same call. Requests are matched
to executions by call id, else by name, arguments and order (latest LLM turn first). A request with no
execution counts as a call only when the run has no execution spans at all (plain client loops), or when a
later LLM input carries its result (the call ran, its span is missing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.frozen import FrozenDict
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.arguments import Arguments, normalize_arguments
from agentotel_eval.reconstruct.llm import (
    LLMOutput,
    Request,
    first_request_text,
    last_assistant_text,
    last_user_text,
    read_definitions,
    read_input,
    read_output,
)
from agentotel_eval.reconstruct.messages import (
    ToolResultPart,
    openinference_messages,
    parse_messages,
)
from agentotel_eval.reconstruct.model import AgentRun, Handoff
from agentotel_eval.reconstruct.runs import Scope
from agentotel_eval.reconstruct.spans import TRANSFER_PREFIX, Execution, Role, read_execution
from agentotel_eval.reconstruct.tree import TraceTree, span_order
from agentotel_eval.reconstruct.values import (
    as_dict,
    as_list,
    looks_like_error_text,
    numeric_equal,
    parse_json,
    seq,
    text_of,
)
from agentotel_eval.test_case import ToolCall, ToolDefinition


@dataclass(slots=True)
class TraceContext:
    """Per-trace caches, so each span's JSON is parsed at most once however many questions are asked of it."""

    tree: TraceTree
    roles: dict[str, Role]
    llm_parent: dict[str, str] = field(default_factory=dict)  # LLM span -> LLM span it is nested in
    outputs: dict[str, LLMOutput] = field(default_factory=dict)

    def logs(self, span: SpanRecord) -> Sequence[LogRecord]:
        return self.tree.logs.get(span.span_id, ())

    def output(self, span: SpanRecord) -> LLMOutput:
        found = self.outputs.get(span.span_id)
        if found is None:
            found = self.outputs[span.span_id] = read_output(span, self.logs(span))
        return found

    def requests_tools(self, span: SpanRecord) -> bool:
        return bool(self.output(span).requests)


@dataclass(slots=True)
class _Call:
    """A call being assembled: its execution and/or the request that asked for it."""

    execution: Execution | None
    request: Request | None
    turn: str | None = None  # LLM span id that requested it
    turn_source: str | None = None
    result: ToolResultPart | None = None  # from history, when the execution did not record one

    @property
    def start(self) -> int:
        if self.execution is not None:
            return self.execution.span.start_ns
        assert self.request is not None
        return self.request.span.end_ns

    @property
    def span_id(self) -> str:
        return (self.execution.span if self.execution is not None else self.request.span).span_id  # type: ignore[union-attr]


def assemble_run(scope: Scope, parent: Scope | None, ctx: TraceContext) -> AgentRun:
    chain = scope.chain
    llm_spans = sorted(scope.llm_spans, key=span_order)
    tool_spans = sorted(scope.tool_spans, key=span_order)
    executions = [read_execution(s, ctx.roles[s.span_id]) for s in tool_spans]
    real = [e for e in executions if e.plumbing is None]
    requests = _requests(llm_spans, ctx)
    handoff_requests = [r for r in requests if r.name.startswith(TRANSFER_PREFIX)]
    requests = [r for r in requests if not r.name.startswith(TRANSFER_PREFIX)]
    definitions = _definitions(chain, llm_spans, executions, ctx)
    schemas = {d.name: d.parameters for d in definitions if d.parameters}
    for e in real:
        if e.schema and e.name not in schemas:
            schemas[e.name] = e.schema

    for e in real:
        if e.call_id is None and isinstance(e.raw_arguments, str) and "tool_call_id" in e.raw_arguments:
            embedded = _arguments(e, schemas.get(e.name)).call_id  # OpenLLMetry LangChain: kwargs.tool_call_id
            if embedded:
                e.call_id, e.sources["call_id"] = embedded, e.sources.get("arguments", "arguments")
    history = _History(llm_spans, ctx)
    calls = [_Call(e, None) for e in real]
    unmatched = _match(calls, requests, schemas)
    extra: dict[str, Any] = {"chain": [s.span_id for s in chain]}
    if executions:
        counted = [r for r in unmatched if r.call_id and history.result(r.call_id, r.span.end_ns) is not None]
        dropped = [r for r in unmatched if not any(r is c for c in counted)]
        if dropped:
            extra["unexecuted_requests"] = [r.name for r in dropped]
    else:
        output_tools = _output_tool_names(llm_spans)
        counted = [r for r in unmatched if r.name not in output_tools]
    calls.extend(_Call(None, r) for r in counted)
    _assign_turns(calls, llm_spans)
    for call in calls:
        needs = call.execution is None or call.execution.result is None
        call_id = _call_id(call)
        if needs and call_id:
            done = call.execution.span.end_ns if call.execution is not None else call.start
            call.result = history.result(call_id, done)
    calls.sort(key=_order_key(calls))
    tool_calls = tuple(_tool_call(c, schemas, ctx.tree.trace_id) for c in calls)
    plumbing = [e for e in executions if e.plumbing == "internal"]
    if plumbing:
        extra["plumbing_spans"] = [e.span.span_id for e in plumbing]
    if scope.container_span_id:
        extra["container_span_id"] = scope.container_span_id

    agent_name = _agent_name(scope, llm_spans, tool_spans)
    run_input, input_source = _run_input(chain, llm_spans, ctx)
    run_output, output_source = _run_output(chain, llm_spans, ctx)
    run_input = run_input.strip() or None if run_input else None
    run_output = run_output.strip() or None if run_output else None
    extra["input_source"], extra["output_source"] = input_source, output_source
    status, error = _run_status(chain)
    anchor = scope.anchor
    return AgentRun(
        trace_id=ctx.tree.trace_id,
        span_id=anchor.span_id,
        agent_name=agent_name,
        start_time_ns=anchor.start_ns,
        end_time_ns=max(s.end_ns for s in chain),
        status=status,
        error=error,
        service_name=next((s.service_name for s in chain if s.service_name), None),
        input=run_input,
        output=run_output,
        tool_calls=tool_calls,
        handoffs=_handoffs(executions, handoff_requests, agent_name),
        tool_definitions=tuple(definitions),
        expected_tools=_expected_tools(chain),
        parent_run_span_id=parent.anchor.span_id if parent is not None else None,
        convention=scope.convention,
        span_name=anchor.name,
        extra=extra,
    )


# --- requests and matching ---------------------------------------------------------------------------------------


def _requests(llm_spans: Sequence[SpanRecord], ctx: TraceContext) -> list[Request]:
    """Requests of the run's LLM spans, skipping a nested LLM span that re-records its parent's inference."""
    ids = {s.span_id for s in llm_spans}
    out: list[Request] = []
    for span in llm_spans:
        above = ctx.llm_parent.get(span.span_id)
        if above in ids and ctx.output(ctx.tree.spans[above]).requests:
            continue
        out.extend(ctx.output(span).requests)
    return out


def _arguments(item: Execution | Request, schema: Mapping[str, Any] | None) -> Arguments:
    """Normalised once per execution / request (the schema of a tool name is fixed within a run)."""
    if item.normalized is None:
        raw = item.raw_arguments if isinstance(item, Execution) else item.arguments
        item.normalized = normalize_arguments(raw, schema)
    return item.normalized


def _arguments_match(execution: Execution, request: Request, schema: Mapping[str, Any] | None) -> bool:
    mine = _arguments(execution, schema)
    theirs = _arguments(request, schema)
    if mine.params is not None and theirs.params is not None:
        return numeric_equal(mine.params, theirs.params)
    if mine.encoding == "scalar" and theirs.params is not None and len(theirs.params) == 1:
        scalar = parse_json(execution.raw_arguments)
        (value,) = theirs.params.values()
        return numeric_equal(scalar, value) or str(value) == str(scalar)
    return False


def _match(calls: list[_Call], requests: list[Request], schemas: Mapping[str, Any]) -> list[Request]:
    """Pair executions with requests: by call id; else by name in the latest LLM turn that asked for the tool
    before the execution started, the arguments (then the output order) telling parallel calls apart.
    Return the requests left unmatched."""
    used: set[int] = set()
    by_id: dict[str, list[int]] = {}
    for i, r in enumerate(requests):
        if r.call_id:
            by_id.setdefault(r.call_id, []).append(i)
    for call in calls:
        e = call.execution
        if e is not None and e.call_id:
            for i in by_id.get(e.call_id, ()):
                if i not in used:
                    used.add(i)
                    call.request = requests[i]
                    break
    for call in calls:
        e = call.execution
        if e is None or call.request is not None:
            continue
        pool = [
            i for i, r in enumerate(requests)
            if i not in used and r.name == e.name and not (e.call_id and r.call_id)
        ]
        if not pool:
            continue
        before = [i for i in pool if requests[i].span.start_ns <= e.span.start_ns] or pool
        before.sort(key=lambda i: (-requests[i].span.start_ns, requests[i].span.span_id, requests[i].index))
        latest = requests[before[0]].span.span_id  # the latest turn that asked for this tool
        turn = [i for i in before if requests[i].span.span_id == latest]
        if len(turn) == 1:
            pick = turn[0]
        else:  # parallel calls of one tool: the arguments tell them apart, else the output order
            schema = schemas.get(e.name)
            pick = next((i for i in turn if _arguments_match(e, requests[i], schema)), turn[0])
        used.add(pick)
        call.request = requests[pick]
    return [r for i, r in enumerate(requests) if i not in used]


def _assign_turns(calls: list[_Call], llm_spans: Sequence[SpanRecord]) -> None:
    """The requesting LLM span; for an execution with no matched request, the last LLM span started before it.

    (Start, not end: ADK runs tools inside its ``generate_content`` span.)
    """
    starts = sorted((s.start_ns, s.span_id) for s in llm_spans)
    for call in calls:
        if call.request is not None:
            call.turn, call.turn_source = call.request.span.span_id, call.request.source
            continue
        start = call.start
        previous = [span_id for begin, span_id in starts if begin <= start]
        if previous:
            call.turn, call.turn_source = previous[-1], "inferred"


def _order_key(calls: list[_Call]):
    """Start order; the calls of one LLM turn stay together, in the order of that turn's output (DESIGN.md)."""
    group_start: dict[str, int] = {}
    for call in calls:
        if call.turn is not None:
            group_start[call.turn] = min(group_start.get(call.turn, call.start), call.start)

    def key(call: _Call) -> tuple:
        start = call.start
        index = call.request.index if call.request is not None else None
        return (
            group_start.get(call.turn, start) if call.turn else start,
            call.turn or "",
            0 if index is not None else 1,
            index or 0,
            start,
            call.span_id,
        )

    return key


def _call_id(call: _Call) -> str | None:
    if call.execution is not None and call.execution.call_id:
        return call.execution.call_id
    return call.request.call_id if call.request is not None else None


def _tool_call(call: _Call, schemas: Mapping[str, Any], trace_id: str) -> ToolCall:
    e, r = call.execution, call.request
    sources: dict[str, str] = {}
    name = e.name if e is not None else r.name  # type: ignore[union-attr]
    sources["name"] = e.sources.get("name", "") if e is not None else f"request:{r.source}"  # type: ignore[union-attr]
    schema = schemas.get(name) or (e.schema if e is not None else None)  # the same schema _match used
    params: dict[str, Any] | None = None
    raw: Any = None
    if e is not None and e.raw_arguments is not None:
        raw = e.raw_arguments
        normalized = _arguments(e, schema)
        if normalized.params is not None:
            params = normalized.params
            sources["arguments"] = e.sources.get("arguments", "")
            if normalized.encoding == "scalar":
                sources["arguments"] += "+schema"
    if params is None and r is not None:
        normalized = _arguments(r, schema)
        if normalized.params is not None:
            params = normalized.params
            sources["arguments"] = f"request:{r.source}"
        if raw is None:
            raw = r.arguments
    output: Any = None
    status = "ok"
    error: str | None = None
    if e is not None:
        status, error = e.status, e.error
        sources["status"] = e.sources.get("status", "span_status")
        if e.result is not None:
            output = e.result
            sources["result"] = e.sources.get("result", "")
    if output is None and call.result is not None:
        output = text_of(call.result.content) if isinstance(call.result.content, list) else call.result.content
        sources["result"] = "history"
    if e is None:
        if call.result is not None and call.result.status == "error":
            status, error = "error", text_of(output) or "error"
            sources["status"] = "history"
        elif call.result is not None and looks_like_error_text(output):  # a loop feeding back "Error: ..."
            status, error = "error", output.strip()
            sources["status"] = "result_text"
        else:
            sources["status"] = "history" if call.result is not None else "default"
    call_id = None
    if e is not None and e.call_id:
        call_id = e.call_id
        sources["call_id"] = e.sources.get("call_id", "")
    elif r is not None and r.call_id:
        call_id = r.call_id
        sources["call_id"] = f"request:{r.source}"
    if call.turn_source:
        sources["llm_turn"] = call.turn_source if call.turn_source == "inferred" else f"request:{call.turn_source}"
    span = e.span if e is not None else r.span  # type: ignore[union-attr]
    return ToolCall(
        name,
        input_parameters=_frozen(params),
        output=output,
        status=status,
        error=error,
        call_id=call_id,
        trace_id=trace_id,
        span_id=span.span_id,
        llm_turn=call.turn,
        start_time_ns=call.start,
        raw_arguments=raw,
        sources=FrozenDict(sources),
    )


_SCALARS = (str, int, float, bool, type(None))


def _frozen(value: Any) -> Any:
    """A flat dict of scalars frozen in one C-level copy (ToolCall deep-freezes anything else itself)."""
    if type(value) is dict and all(isinstance(v, _SCALARS) for v in value.values()):
        return FrozenDict(value)
    return value


def _output_tool_names(llm_spans: Sequence[SpanRecord]) -> frozenset[str]:
    """pydantic-ai structured output is a tool call (``final_result``) that is not a tool of the agent."""
    names: set[str] = set()
    for span in llm_spans:
        params = as_dict(span.attributes.get(sc.PYDANTIC_AI_MODEL_REQUEST_PARAMETERS))
        for tool in (as_list(params.get("output_tools")) or ()) if params else ():
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                names.add(tool["name"])
    return frozenset(names)


class _History:
    """Tool results fed back to the model, by call id, read lazily from the run's latest LLM input.

    Only an LLM call that started after the tool call ended can carry its result, so nothing is parsed when
    the run's last LLM call came before it (a run that ended on the call, a one-span plain-loop trace).
    """

    __slots__ = ("_ctx", "_last", "_results")

    def __init__(self, llm_spans: Sequence[SpanRecord], ctx: TraceContext) -> None:
        self._ctx = ctx
        self._last = max(llm_spans, key=span_order) if llm_spans else None
        self._results: dict[str, ToolResultPart] | None = None

    def result(self, call_id: str, after_ns: int) -> ToolResultPart | None:
        if self._last is None or self._last.start_ns < after_ns:
            return None
        if self._results is None:
            self._results = {}
            for message in read_input(self._last, self._ctx.logs(self._last)):  # holds every earlier result
                for part in message.tool_results:
                    if part.call_id and part.call_id not in self._results:
                        self._results[part.call_id] = part
        return self._results.get(call_id)


# --- handoffs, definitions ---------------------------------------------------------------------------------------


def _handoffs(executions: Sequence[Execution], requests: Sequence[Request], agent: str | None) -> tuple[Handoff, ...]:
    out: list[Handoff] = []
    spans = [e for e in executions if e.plumbing == "handoff"]
    used: set[int] = set()
    for e in spans:
        match = next(
            (i for i, r in enumerate(requests) if i not in used and (
                (e.call_id and r.call_id == e.call_id)
                or (e.handoff_to and r.name == TRANSFER_PREFIX + e.handoff_to)
                or r.name == e.name
            )),
            None,
        )
        name = e.name
        if match is not None:
            used.add(match)
            name = requests[match].name  # the model-facing tool name, e.g. transfer_to_weather_agent
        out.append(Handoff(name, e.handoff_to, agent, e.span.span_id, e.span.start_ns))
    for i, r in enumerate(requests):
        if i not in used:
            target = r.name[len(TRANSFER_PREFIX):] or None
            if r.name == "transfer_to_agent":
                args = normalize_arguments(r.arguments).params or {}
                target = args.get("agent_name") if isinstance(args.get("agent_name"), str) else None
            out.append(Handoff(r.name, target, agent, r.span.span_id, r.span.end_ns))
    out.sort(key=lambda h: (h.start_time_ns or 0, h.span_id or "", h.name))
    return tuple(out)


def _definitions(chain: Sequence[SpanRecord], llm_spans: Sequence[SpanRecord], executions: Sequence[Execution],
                 ctx: TraceContext) -> list[ToolDefinition]:
    """Tools offered to the model, merged by name; a names-only list is completed from the tool spans' schemas."""
    merged: dict[str, ToolDefinition] = {}
    seen: set[int] = set()
    for span in (*chain, *llm_spans):
        found = read_definitions(span)
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


# --- run-level fields ----------------------------------------------------------------------------------------------


def _agent_name(scope: Scope, llm_spans: Sequence[SpanRecord], tool_spans: Sequence[SpanRecord]) -> str | None:
    chain = scope.chain
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
    name = chain[0].name
    for prefix in ("invoke_agent ", "invoke_workflow "):
        if name.startswith(prefix):
            return name[len(prefix):] or None
    for suffix in (".agent", ".workflow"):
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
    """Text of an input/output value when that is cheap to know: a plain or JSON-quoted string, or the one text
    argument of a decorated function (``{"args": ["..."], "kwargs": {}}``). None for message structures, which
    are parsed only when no cheaper source exists (they can hold the whole conversation)."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text[0] == '"' or text.startswith('{"args"'):
            parsed = parse_json(text)
            return parsed if isinstance(parsed, str) else _args_kwargs_text(parsed)
        return None if text[0] in "{[" else value
    return _args_kwargs_text(value)


_IO_KEYS_IN = (sc.AGENTOTEL_INPUT, sc.OI_INPUT_VALUE, sc.TRACELOOP_ENTITY_INPUT, sc.LANGFUSE_OBSERVATION_INPUT)
_IO_KEYS_OUT = (sc.AGENTOTEL_OUTPUT, sc.OI_OUTPUT_VALUE, sc.TRACELOOP_ENTITY_OUTPUT, sc.LANGFUSE_OBSERVATION_OUTPUT)


def _span_input(span: SpanRecord) -> str | None:
    """A run span's own record of the user request, from the conventions that state it directly."""
    attrs = span.attributes
    if sc.GEN_AI_INPUT_MESSAGES in attrs:
        text = last_user_text(parse_messages(attrs[sc.GEN_AI_INPUT_MESSAGES]))
        if text:
            return text
    for event in span.events:
        if event.name == sc.EVENT_INFERENCE_DETAILS and sc.GEN_AI_INPUT_MESSAGES in event.attributes:
            text = last_user_text(parse_messages(event.attributes[sc.GEN_AI_INPUT_MESSAGES]))
            if text:
                return text
    users = [e for e in span.events if e.name == sc.EVENT_USER_MESSAGE]
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
        text = last_assistant_text(parse_messages(attrs[sc.GEN_AI_OUTPUT_MESSAGES], "assistant"))
        if text:
            return text
    for event in reversed(span.events):
        if event.name == sc.EVENT_INFERENCE_DETAILS and sc.GEN_AI_OUTPUT_MESSAGES in event.attributes:
            text = last_assistant_text(parse_messages(event.attributes[sc.GEN_AI_OUTPUT_MESSAGES], "assistant"))
            if text:
                return text
        if event.name == sc.EVENT_CHOICE and "message" in event.attributes:
            text = text_of(parse_json(event.attributes["message"]))
            if text:
                return text.strip() or None
    final = attrs.get(sc.PYDANTIC_AI_FINAL_RESULT)
    if final is not None:
        return final if isinstance(final, str) else str(parse_json(final))
    for key in _IO_KEYS_OUT:
        if key in attrs:
            text = _direct_text(attrs[key])
            if text:
                return text
    return None


def _span_blob(span: SpanRecord, keys: Sequence[str], pick) -> str | None:
    """Last resort: parse the message structures on a run span (LangChain state, pydantic-ai all_messages)."""
    attrs = span.attributes
    for key in keys:
        if key in attrs:
            text = pick(parse_messages(attrs[key]))
            if text:
                return text
    return None


def _run_input(chain: Sequence[SpanRecord], llm_spans: Sequence[SpanRecord], ctx: TraceContext) -> tuple[str | None, str | None]:
    """The user request that started the run: the run span's own input, else the first LLM call's last user text
    (a multi-turn conversation's earlier user messages are history), else the run span's message structures."""
    for span in chain:
        text = _span_input(span)
        if text:
            return text, span.span_id
    for span in llm_spans:
        recorded, text = first_request_text(span, ctx.logs(span))
        if text:
            return text, span.span_id
        if recorded:
            break
    for span in chain:
        if any(span is llm for llm in llm_spans):  # a root fallback anchored on an LLM call: already read
            continue
        text = _span_blob(span, (*_IO_KEYS_IN, sc.PYDANTIC_AI_ALL_MESSAGES), last_user_text)
        if text:
            return text, span.span_id
    return None, None


def _run_output(chain: Sequence[SpanRecord], llm_spans: Sequence[SpanRecord], ctx: TraceContext) -> tuple[str | None, str | None]:
    """The agent's final answer: the run span's own output, else the last LLM text of the run, else the run span's
    message structures."""
    for span in chain:
        text = _span_output(span)
        if text:
            return text, span.span_id
    for span in sorted(llm_spans, key=lambda s: (s.end_ns, s.span_id), reverse=True):
        text = ctx.output(span).text
        if text:
            return text, span.span_id
    for span in chain:
        if any(span is llm for llm in llm_spans):
            continue
        text = _span_blob(span, _IO_KEYS_OUT, last_assistant_text)
        if text:
            return text, span.span_id
    return None, None


def _run_status(chain: Sequence[SpanRecord]) -> tuple[str, str | None]:
    for span in chain:
        level = str(span.attributes.get(sc.LANGFUSE_OBSERVATION_LEVEL, "")).upper()
        if span.is_error or level == "ERROR":
            message = span.status_message or span.attributes.get(sc.LANGFUSE_OBSERVATION_STATUS_MESSAGE)
            if not message:
                exc = next((e for e in span.events if e.name == sc.EXCEPTION_EVENT), None)
                if exc is not None:
                    etype = str(exc.attributes.get(sc.EXCEPTION_TYPE) or "").rsplit(".", 1)[-1]
                    message = ": ".join(p for p in (etype, str(exc.attributes.get(sc.EXCEPTION_MESSAGE) or "")) if p)
            return "error", str(message) if message else "error"
    return "ok", None


def _expected_tools(chain: Sequence[SpanRecord]) -> tuple[str, ...] | None:
    for span in chain:
        value = span.attributes.get(sc.AGENTOTEL_EXPECTED_TOOLS)
        if value is None:
            continue
        value = parse_json(value)
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
    return None


_MODEL_FACING = re.compile(r"^[A-Za-z0-9_.\-]+$")


def name_handoffs(runs: list[AgentRun], ctx: TraceContext) -> list[AgentRun]:
    """Give handoffs seen only as a framework span (OpenLLMetry ``A → unknown.handoff``) the tool call the model
    made, found in the history of the first LLM call after it (the ``transfer_to_*`` call it answered)."""
    pending = [(i, j) for i, run in enumerate(runs) for j, h in enumerate(run.handoffs) if not _MODEL_FACING.match(h.name)]
    if not pending:
        return runs
    llm_spans = sorted((ctx.tree.spans[i] for i, role in ctx.roles.items() if role.llm), key=span_order)
    used: set[str] = set()
    out = list(runs)
    for i, j in pending:
        handoff = out[i].handoffs[j]
        start = handoff.start_time_ns or 0
        later = [s for s in llm_spans if s.start_ns >= start]
        for span in later:
            messages = read_input(span, ctx.logs(span))
            if not messages:
                continue
            found = next(
                (c for m in messages for c in m.tool_calls
                 if c.name.startswith(TRANSFER_PREFIX) and (c.call_id or c.name) not in used
                 and (handoff.to_agent is None or c.name == TRANSFER_PREFIX + handoff.to_agent)),
                None,
            )
            if found is not None:
                used.add(found.call_id or found.name)
                renamed = replace(handoff, name=found.name, to_agent=handoff.to_agent or found.name[len(TRANSFER_PREFIX):])
                handoffs = list(out[i].handoffs)
                handoffs[j] = renamed
                out[i] = replace(out[i], handoffs=tuple(handoffs))
            break
    return out


def complete_from_later_traces(runs: list[AgentRun], contexts: Sequence[TraceContext]) -> list[AgentRun]:
    """A plain client loop with no application span makes each LLM call its own trace: a call requested in one
    trace gets its result fed back in the next. When several traces are reconstructed together, complete such
    request-only calls (no result yet) from the history of LLM calls in other traces, by call id."""
    pending = [
        (i, j) for i, run in enumerate(runs) for j, call in enumerate(run.tool_calls)
        if call.call_id and call.output is None and call.sources and call.sources.get("name", "").startswith("request:")
    ]
    if not pending:
        return runs
    llm = sorted(
        ((ctx.tree.spans[span_id], ctx) for ctx in contexts for span_id, role in ctx.roles.items() if role.llm),
        key=lambda item: span_order(item[0]),
    )
    seen: dict[str, dict[str, ToolResultPart]] = {}
    out = list(runs)
    for i, j in pending:
        call = out[i].tool_calls[j]
        for span, ctx in llm:
            if span.trace_id == call.trace_id or span.start_ns < (call.start_time_ns or 0):
                continue
            results = seen.get(span.span_id)
            if results is None:
                results = seen[span.span_id] = {
                    part.call_id: part for m in read_input(span, ctx.logs(span)) for part in m.tool_results if part.call_id
                }
            part = results.get(call.call_id or "")
            if part is None:
                continue
            output = text_of(part.content) if isinstance(part.content, list) else part.content
            sources = dict(call.sources or {})
            sources["result"] = "history"
            status, error = "ok", None
            if part.status == "error":
                status, error, sources["status"] = "error", text_of(output) or "error", "history"
            elif looks_like_error_text(output):
                status, error, sources["status"] = "error", output.strip(), "result_text"
            else:
                sources["status"] = "history"
            calls = list(out[i].tool_calls)
            calls[j] = replace(call, output=output, status=status, error=error, sources=FrozenDict(sources))
            out[i] = replace(out[i], tool_calls=tuple(calls))
            break
    return out
