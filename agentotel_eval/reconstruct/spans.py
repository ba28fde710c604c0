"""What a span is (agent run, tool execution, LLM call, handoff) and what a tool-execution span recorded.

A span can carry several conventions at once (``execute_tool`` AND OpenInference ``TOOL`` AND Traceloop
``tool``): it is classified once, so one span is one piece of evidence however many conventions tag it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from agentotel_eval import semconv as sc
from agentotel_eval.frozen import freeze
from agentotel_eval.otlp.records import STATUS_ERROR, SpanRecord
from agentotel_eval.reconstruct.declared import BUILTIN, Convention, Conventions
from agentotel_eval.reconstruct.frameworks import NO_PLUMBING, Plumbing
from agentotel_eval.reconstruct.messages import graph_command, parse_messages, unwrap_tool_result
from agentotel_eval.reconstruct.reprs import parse_call_repr
from agentotel_eval.reconstruct.values import (
    as_dict,
    clean_id,
    error_object_message,
    is_redacted,
    looks_like_error_text,
    looks_like_schema,
    short_type_name,
    text_of,
)

_HANDOFF_SPAN_PREFIX = "handoff to "
_HANDOFF_SPAN_SUFFIX = ".handoff"


@dataclass(frozen=True, slots=True)
class Role:
    """The conventions that mark a span as a run / tool execution / LLM call (None: not one); ``rule``: the
    declared convention that did, whose attribute keys say where each field is."""

    run: str | None = None
    tool: str | None = None
    llm: str | None = None
    rule: Convention | None = None

    @property
    def is_evidence(self) -> bool:
        return self.tool is not None or self.llm is not None


NO_ROLE = Role()


_ROLE_CACHE: dict[tuple[str | None, str | None, str | None], Role] = {}

# classify() runs for every span: what it reads and compares against, as plain module globals. Values are
# compared with ``==`` (``in`` on these tuples), so a malformed non-string value simply matches nothing.
_OP, _OI, _TL, _LF, _AK = (
    sc.GEN_AI_OPERATION_NAME,
    sc.OI_SPAN_KIND,
    sc.TRACELOOP_SPAN_KIND,
    sc.LANGFUSE_OBSERVATION_TYPE,
    sc.AGENTOTEL_KIND,
)
_TL_REQUEST_TYPE = sc.TRACELOOP_LLM_REQUEST_TYPE
_RUN_OPS = (sc.OP_INVOKE_AGENT, sc.OP_INVOKE_WORKFLOW)
_RUN_TL_KINDS = (sc.TRACELOOP_KIND_AGENT, sc.TRACELOOP_KIND_WORKFLOW)
_LLM_OPS = (sc.OP_CHAT, sc.OP_GENERATE_CONTENT, sc.OP_TEXT_COMPLETION)
_LLM_TL_TYPES = ("chat", "completion")
_OI_AGENT, _OI_LLM, _OI_TOOL = sc.OI_KIND_AGENT, sc.OI_KIND_LLM, sc.OI_KIND_TOOL
_LF_AGENT, _LF_GENERATION, _LF_TOOL = (
    sc.LANGFUSE_TYPE_AGENT,
    sc.LANGFUSE_TYPE_GENERATION,
    sc.LANGFUSE_TYPE_TOOL,
)
_AK_AGENT, _AK_LLM, _AK_TOOL = sc.AGENTOTEL_KIND_AGENT, sc.AGENTOTEL_KIND_LLM, sc.AGENTOTEL_KIND_TOOL
_OP_TOOL, _TL_TOOL, _HANDOFF = sc.OP_EXECUTE_TOOL, sc.TRACELOOP_KIND_TOOL, sc.OP_HANDOFF
_TOOL_NAME_GEN_AI, _TOOL_NAME_OI = sc.GEN_AI_TOOL_NAME, sc.OI_TOOL_NAME
_HANDOFF_FROM, _HANDOFF_TO = sc.GEN_AI_HANDOFF_FROM_AGENT, sc.GEN_AI_HANDOFF_TO_AGENT


_DECLARED_ROLES: dict[int, Role] = {}


def _declared_role(rule: Convention) -> Role:
    role = _DECLARED_ROLES.get(id(rule))
    if role is None or role.rule is not rule:
        role = Role(**{rule.role: rule.name}, rule=rule)
        if len(_DECLARED_ROLES) < _ROLE_BY_MARKERS_MAX:
            _DECLARED_ROLES[id(rule)] = role
    return role


def classify(span: SpanRecord, conventions: Conventions = BUILTIN) -> Role:
    """The span's roles, from its attributes alone (one look per span).

    The roles are a function of a few marker values (operation name, span kinds: a small vocabulary) and of
    whether four keys are present, so they are looked up by that tuple (bounded), and worked out by the rules
    in ``_classify_markers`` only for a tuple not seen yet: a third cheaper than applying the
    rules to every span.
    """
    rule = conventions.match(span)
    if rule is not None:
        return _declared_role(rule)
    attrs = span.attributes
    get = attrs.get
    # the rules read this tuple alone (``_Markers`` names its fields): the memo key is all they depend on
    key = (
        get(_OP),
        get(_OI),
        get(_TL),
        get(_LF),
        get(_AK),
        get(_TL_REQUEST_TYPE),
        _TOOL_NAME_GEN_AI in attrs,
        _TOOL_NAME_OI in attrs,
        _HANDOFF_FROM in attrs,
        _HANDOFF_TO in attrs,
    )
    try:
        return _ROLE_BY_MARKERS[key]
    except KeyError:
        role = _classify_markers(_Markers._make(key))
        if len(_ROLE_BY_MARKERS) < _ROLE_BY_MARKERS_MAX:
            _ROLE_BY_MARKERS[key] = role
        return role
    except TypeError:  # an unhashable (AnyValue list/map) marker value: the rules alone
        return _classify_markers(_Markers._make(key))


def roles_of(spans: Mapping[str, SpanRecord], conventions: Conventions = BUILTIN) -> dict[str, Role]:
    """``classify`` of each span, by span id, for the spans that have a role (run, tool or LLM) only."""
    roles: dict[str, Role] = {}
    for span_id, span in spans.items():
        role = classify(span, conventions)
        if role is not NO_ROLE:
            roles[span_id] = role
    return roles


#: Role by the marker tuple ``classify`` reads; values are convention names, so few combinations exist
#: (bounded all the same: a malformed value, say a float NaN that never equals itself, must
#: not grow it forever)
_ROLE_BY_MARKERS: dict[tuple[Any, ...], Role] = {}
_ROLE_BY_MARKERS_MAX = 4096


class _Markers(NamedTuple):
    """What the rules read of a span, in the order ``classify`` builds its memo key: marker values, then
    whether four keys are present."""

    op: Any  # gen_ai.operation.name
    oi: Any  # openinference.span.kind
    tl: Any  # traceloop.span.kind
    lf: Any  # langfuse.observation.type
    ak: Any  # agentotel.kind
    tl_request_type: Any  # llm.request.type
    gen_ai_tool_name: bool
    oi_tool_name: bool
    handoff_from: bool
    handoff_to: bool


def _classify_markers(m: _Markers) -> Role:
    """The rules: the first run marker, then the first LLM marker, else the first tool marker (by convention).
    They see the markers only, not the span: whatever they read is in ``classify``'s memo key."""
    op, oi, tl, lf, ak = m.op, m.oi, m.tl, m.lf, m.ak
    run = llm = tool = None
    if op in _RUN_OPS:
        run = "gen_ai"
    elif oi == _OI_AGENT:
        run = "openinference"
    elif tl in _RUN_TL_KINDS:
        run = "traceloop"
    elif lf == _LF_AGENT:
        run = "langfuse"
    elif ak == _AK_AGENT:
        run = "agentotel"
    if op in _LLM_OPS:
        llm = "gen_ai"
    elif oi == _OI_LLM:
        llm = "openinference"
    elif m.tl_request_type in _LLM_TL_TYPES:
        llm = "traceloop"
    elif lf == _LF_GENERATION:
        llm = "langfuse"
    elif ak == _AK_LLM:
        llm = "agentotel"
    elif op == _OP_TOOL or m.gen_ai_tool_name:
        tool = "gen_ai"
    elif oi == _OI_TOOL or m.oi_tool_name:
        tool = "openinference"
    elif tl == _TL_TOOL:
        tool = "traceloop"
    elif lf == _LF_TOOL:
        tool = "langfuse"
    elif ak == _AK_TOOL:
        tool = "agentotel"
    elif op == _HANDOFF or tl == _HANDOFF or m.handoff_from or m.handoff_to:
        tool = "handoff"
    if run is None and llm is None and tool is None:
        return NO_ROLE
    key = (run, tool, llm)
    role = _ROLE_CACHE.get(key)
    if role is None:
        role = _ROLE_CACHE[key] = Role(run, tool, llm)
    return role


# --- tool execution spans -----------------------------------------------------------------------------------


@dataclass(slots=True, init=False)
class Execution:
    """What one tool-execution span recorded, before matching it to the model's request."""

    span: SpanRecord
    name: str
    raw_arguments: Any
    result: Any
    status: str
    error: str | None
    call_id: str | None
    schema: Mapping[str, Any] | None  # the executed tool's parameter schema, when the span carries it
    description: str | None
    plumbing: str | None  # "handoff" | "answer" | "internal" for framework plumbing; None for a real call
    handoff_to: str | None
    result_call_id: str | None  # the call id a wrapped result carries (LangChain ToolMessage)
    result_name: str | None  # the tool name a wrapped result carries
    normalized: Any  # Arguments, computed once by the assembly
    sources: dict[str, str]
    discarded: list[str]  # "field:source:why" for each recorded value that was not a value

    def __init__(self, span: SpanRecord, name: str) -> None:
        # by hand: one per tool span, and the generated __init__ calls a factory for ``sources``
        self.span, self.name = span, name
        self.raw_arguments = self.result = self.error = self.call_id = self.schema = self.description = None
        self.plumbing = self.handoff_to = self.result_call_id = self.result_name = self.normalized = None
        self.status = "ok"
        self.sources = {}
        self.discarded = []


# (attribute, convention that supplied it), in priority order: module constants, not rebuilt per span
_TOOL_NAME_KEYS = ((sc.GEN_AI_TOOL_NAME, "gen_ai"), (sc.OI_TOOL_NAME, "openinference"))
_ARGUMENT_KEYS = (
    (sc.GEN_AI_TOOL_CALL_ARGUMENTS, "gen_ai"),
    (sc.OI_INPUT_VALUE, "openinference"),
    (sc.TRACELOOP_ENTITY_INPUT, "traceloop"),
    (sc.LANGFUSE_OBSERVATION_INPUT, "langfuse"),
    (sc.AGENTOTEL_INPUT, "agentotel"),
    (sc.GEN_AI_PROMPT, "langsmith"),  # LangSmith's OpenTelemetry mode: a tool's input as its span's prompt
)
_RESULT_KEYS = (
    (sc.GEN_AI_TOOL_CALL_RESULT, "gen_ai"),
    (sc.OI_OUTPUT_VALUE, "openinference"),
    (sc.TRACELOOP_ENTITY_OUTPUT, "traceloop"),
    (sc.LANGFUSE_OBSERVATION_OUTPUT, "langfuse"),
    (sc.AGENTOTEL_OUTPUT, "agentotel"),
    (
        sc.GEN_AI_COMPLETION,
        "langsmith",
    ),  # ... and its output (``{"output": <ToolMessage>}``) as the completion
)
_CALL_ID_KEYS = ((sc.GEN_AI_TOOL_CALL_ID, "gen_ai"), (sc.OI_TOOL_CALL_ID, "openinference"))
_JSON_OPENERS = ("", "{", "[", '"')  # a result starting otherwise (after no whitespace) is plain text
_SCHEMA_KEYS = (sc.GEN_AI_TOOL_JSON_SCHEMA, sc.OI_TOOL_JSON_SCHEMA, sc.OI_TOOL_PARAMETERS)
_DESCRIPTION_KEYS = (sc.GEN_AI_TOOL_DESCRIPTION, sc.OI_TOOL_DESCRIPTION)


def _tool_name(span: SpanRecord, convention: str) -> tuple[str | None, str]:
    attrs = span.attributes
    for key, source in _TOOL_NAME_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value, source
    if convention == "traceloop":
        value = attrs.get(sc.TRACELOOP_ENTITY_NAME)
        if isinstance(value, str) and value:
            return value, "traceloop"
    name = span.name
    if name.startswith("execute_tool "):
        name = name[len("execute_tool ") :]
    elif name.endswith(".tool"):
        name = name[: -len(".tool")]
    elif name.endswith(
        ".__call__"
    ):  # a span named after the method that ran the tool (DSPy: "get_weather.__call__")
        name = name[: -len(".__call__")]
    return (name or None), "span_name"


def read_execution(
    span: SpanRecord,
    role: Role,
    plumbing: Plumbing = NO_PLUMBING,
    placeholders: frozenset[str] = sc.TOOL_CALL_ID_PLACEHOLDERS,
    text_failures: bool = True,
) -> Execution:
    """Everything a tool-execution span says about its call, from whichever conventions it carries."""
    rule = role.rule
    described = None
    if rule is not None:
        value = rule.get(span, "tool_name")
        if (
            rule.call_repr is not None
            and (described := parse_call_repr(rule.get(span, "call_repr"))) is not None
        ):
            value = described.name
        # a span the rule calls a tool execution, without the name attribute: named after
        # the tool, as most are
        name, name_source = (
            (value, rule.name) if isinstance(value, str) and value else (span.name or None, "span_name")
        )
    else:
        name, name_source = _tool_name(span, role.tool or "gen_ai")
    execution = Execution(span, name or span.name)
    execution.sources["name"] = name_source
    if name is not None and plumbing.frameworks and (model_name := plumbing.model_name(name)) != name:
        execution.name, execution.sources["name"] = model_name, f"{name_source}:model_name"
    if rule is None and _handoff_span(span, execution, name_source):
        return execution
    if name is None:
        execution.plumbing = "internal"
        return execution
    kind = execution.plumbing = plumbing.kind(execution.name)
    if kind == "internal":
        return execution
    if rule is not None:
        _read_declared(span, execution, rule, placeholders, text_failures)
        if described is not None:
            if described.arguments is not None:
                _argument_value(execution, described.arguments, rule.name)
            else:
                execution.discarded.append(f"arguments:{rule.name}:cut")
            if described.call_id and not execution.call_id:
                execution.call_id, execution.sources["call_id"] = described.call_id, rule.name
    else:
        _read_arguments(span, execution)
        _read_result(span, execution)
        _read_status(span, execution, text_failures)
        _read_call_id(span, execution, placeholders)
        _read_schema(span, execution)
    if execution.result_name and execution.result_name != execution.name and name_source in WEAK_NAME_SOURCES:
        execution.name = (
            execution.result_name
        )  # a class name (DynamicStructuredTool): the tool message names it
        execution.sources["name"] = "result"
    if kind == "handoff":
        execution.handoff_to = plumbing.handoff_target(execution.name, as_dict(execution.raw_arguments))
    return execution


#: where a tool name may be a class or a framework's label rather than the name the model called
WEAK_NAME_SOURCES = ("traceloop", "span_name")


def _read_declared(
    span: SpanRecord,
    execution: Execution,
    rule: Convention,
    placeholders: frozenset[str],
    text_failures: bool = True,
) -> None:
    """A span of a declared convention: each field from the attribute the rule names."""
    arguments = rule.get(span, "arguments")
    if arguments is not None:
        _argument_value(execution, arguments, rule.name)
    result = rule.get(span, "result")
    if result is not None:
        if is_redacted(result):
            execution.discarded.append(f"result:{rule.name}:redacted")
        else:
            execution.sources["result"] = rule.name
            _take_result(execution, result)
    failed = rule.get(span, "error")
    if failed is True or (
        isinstance(failed, str) and failed.strip().lower() in ("true", "1", "yes", "error")
    ):
        execution.status = "error"
        execution.error = execution.error or (
            text_of(execution.result) if execution.result is not None else None
        )
        execution.sources["status"] = rule.name
    _read_status(span, execution, text_failures)
    call_id = clean_id(rule.get(span, "call_id"), placeholders)
    if call_id:
        execution.call_id, execution.sources["call_id"] = call_id, rule.name
    elif execution.result_call_id is not None and (
        from_result := clean_id(execution.result_call_id, placeholders)
    ):
        execution.call_id, execution.sources["call_id"] = from_result, "result"


_HANDOFF_FROM_TO = re.compile(r"^handoff from (?P<src>.+?) to (?P<dst>.+)$")


def _handoff_target(name: str) -> str | None:
    """The target agent named in a handoff span's name, or None."""
    if name.endswith(_HANDOFF_SPAN_SUFFIX):
        return name[: -len(_HANDOFF_SPAN_SUFFIX)].rpartition("→")[2].strip() or None
    if (found := _HANDOFF_FROM_TO.match(name)) is not None:
        return found["dst"].strip() or None
    if name.startswith(_HANDOFF_SPAN_PREFIX):
        return name[len(_HANDOFF_SPAN_PREFIX) :].strip() or None
    return None


def _handoff_span(span: SpanRecord, execution: Execution, name_source: str) -> bool:
    """Handoff spans of the OpenAI Agents instrumentations: ``handoff to X`` (OpenInference TOOL span with no
    tool name), ``<from> → <to>.handoff`` with ``gen_ai.operation.name=handoff`` / ``gen_ai.handoff.*``
    (OpenLLMetry), ``handoff from A to B`` (Sentry). The target may be unknown (``"unknown"``)."""
    attrs = span.attributes
    name = span.name
    marked = (
        attrs.get(sc.GEN_AI_OPERATION_NAME) == sc.OP_HANDOFF
        or attrs.get(sc.TRACELOOP_SPAN_KIND) == sc.OP_HANDOFF
        or sc.GEN_AI_HANDOFF_FROM_AGENT in attrs
        or sc.GEN_AI_HANDOFF_TO_AGENT in attrs
    )
    by_name = name_source == "span_name" and (
        name.endswith(_HANDOFF_SPAN_SUFFIX)
        or name.startswith(_HANDOFF_SPAN_PREFIX)
        or _HANDOFF_FROM_TO.match(name) is not None
    )
    if not (marked or by_name):
        return False
    target = attrs.get(sc.GEN_AI_HANDOFF_TO_AGENT)
    if not isinstance(target, str) or not target:
        target = _handoff_target(name)
    execution.plumbing = "handoff"
    execution.handoff_to = target if target and target != "unknown" else None
    return True


def _argument_value(execution: Execution, value: Any, source: str) -> bool:
    """Take ``value`` as the call's arguments unless it is not a value (a redaction marker, a schema); a
    discarded value is noted with why, and the next evidence is tried."""
    if is_redacted(value):
        execution.discarded.append(f"arguments:{source}:redacted")
        return False
    if looks_like_schema(value):
        execution.discarded.append(f"arguments:{source}:schema")
        return False
    execution.raw_arguments = value
    execution.sources["arguments"] = source
    return True


_LANGSMITH_HIDDEN = {
    "arguments": "langsmith.metadata.LANGSMITH_HIDE_INPUTS",
    "result": "langsmith.metadata.LANGSMITH_HIDE_OUTPUTS",
}


def _hidden(attrs: Mapping[str, Any], field: str, source: str) -> bool:
    """LangSmith told to hide inputs or outputs still writes ``{}`` there: a placeholder, not the value."""
    return source == "langsmith" and str(attrs.get(_LANGSMITH_HIDDEN[field], "")).lower() == "true"


def _read_arguments(span: SpanRecord, execution: Execution) -> None:
    attrs = span.attributes
    for key, source in _ARGUMENT_KEYS:
        if key in attrs:
            if _hidden(attrs, "arguments", source):
                execution.discarded.append(f"arguments:{source}:redacted")
                continue
            if _argument_value(execution, attrs[key], source):
                return
    params = attrs.get(sc.OI_TOOL_PARAMETERS)  # pydantic-ai's OpenInference: args; openai-agents': the schema
    if (
        params is not None
        and parameters_schema(params) is None
        and _argument_value(execution, params, "openinference")
    ):
        return
    for event in span.events:
        if (
            event.name == sc.EVENT_TOOL_MESSAGE
            and "content" in event.attributes  # Strands default
            and _argument_value(execution, event.attributes["content"], "gen_ai.event")
        ):
            return
        if event.name == sc.EVENT_INFERENCE_DETAILS and sc.GEN_AI_INPUT_MESSAGES in event.attributes:
            for msg in parse_messages(event.attributes[sc.GEN_AI_INPUT_MESSAGES]):
                for call in msg.tool_calls:
                    if _argument_value(execution, call.arguments, "gen_ai.event"):
                        return


def _read_result(span: SpanRecord, execution: Execution) -> None:
    attrs = span.attributes
    raw: Any = None
    for key, source in _RESULT_KEYS:
        if key in attrs:
            if is_redacted(attrs[key]) or _hidden(attrs, "result", source):
                execution.discarded.append(f"result:{source}:redacted")
                continue
            raw = attrs[key]
            execution.sources["result"] = source
            break
    else:
        for event in span.events:
            if event.name == sc.EVENT_CHOICE and "message" in event.attributes:  # Strands default
                raw = event.attributes["message"]
                execution.sources["result"] = "gen_ai.event"
                break
            if event.name == sc.EVENT_INFERENCE_DETAILS and sc.GEN_AI_OUTPUT_MESSAGES in event.attributes:
                results = [
                    r
                    for m in parse_messages(event.attributes[sc.GEN_AI_OUTPUT_MESSAGES])
                    for r in m.tool_results
                ]
                if results:
                    raw = results[0].content
                    execution.sources["result"] = "gen_ai.event"
                    break
        else:
            return
    _take_result(execution, raw)


def _take_result(execution: Execution, raw: Any) -> None:
    """The recorded result, unwrapped from its envelope; a tool message's error status or an error object
    (``{"error": ...}``, ``{"message": ..., "code": ...}``) marks the call failed."""
    if isinstance(raw, str) and raw[:1] not in _JSON_OPENERS and not raw[:1].isspace():
        if raw.startswith("Command("):
            _take_command(execution, raw)
        else:
            execution.result = raw  # plain text: what unwrap_tool_result would return for it, without parsing
        return
    if (isinstance(raw, dict) or (isinstance(raw, str) and "Command" in raw)) and _take_command(
        execution, raw
    ):
        return
    unwrapped = unwrap_tool_result(raw)
    content = unwrapped.content
    if isinstance(content, list) and content and all(isinstance(b, dict) and "text" in b for b in content):
        content = text_of(content)
    execution.result = content
    execution.result_call_id = unwrapped.call_id
    execution.result_name = unwrapped.name
    if unwrapped.status == "error":
        execution.status = "error"
        execution.error = text_of(content) if content is not None else "tool message status error"
        execution.sources["status"] = "tool_message"
    elif (message := error_object_message(content)) is not None:
        execution.status = "error"
        execution.error = message
        execution.sources["status"] = "error_object"


def _take_command(execution: Execution, raw: Any) -> bool:
    """A tool that returned a LangGraph ``Command`` moving control to another agent is a handoff (whatever its
    name): the result is the tool message the command adds, which also names the call and gives its id."""
    command = graph_command(raw)
    if command is None:
        execution.result = raw
        return False
    execution.plumbing, execution.handoff_to = "handoff", command.goto
    message = command.message
    if message is not None:
        execution.result, execution.result_call_id, execution.result_name = (
            message.content,
            message.call_id,
            message.name,
        )
    return True


def _exception_text(span: SpanRecord) -> str | None:
    """``Type: message`` of the span's first exception event (type without its module path)."""
    for event in span.events:
        if event.name == sc.EXCEPTION_EVENT:
            etype = short_type_name(event.attributes.get(sc.EXCEPTION_TYPE))
            emsg = str(event.attributes.get(sc.EXCEPTION_MESSAGE) or "")
            return ": ".join(p for p in (etype, emsg) if p) or "exception"
    return None


def _read_status(span: SpanRecord, execution: Execution, text_failures: bool = True) -> None:
    """ERROR status, an exception event, Strands ``gen_ai.tool.status``, Langfuse level
    ERROR: the call failed."""
    attrs = span.attributes
    exception = _exception_text(span) if span.events else None
    source: str | None = None
    error: str | None = None
    if span.status_code == STATUS_ERROR:
        source, error = "span_status", span.status_message or None
    elif exception is not None:
        source = "exception"
    elif (tool_status := attrs.get(sc.GEN_AI_TOOL_STATUS)) is not None and str(
        tool_status
    ).lower() == "error":
        source = "gen_ai.tool.status"
    elif (level := attrs.get(sc.LANGFUSE_OBSERVATION_LEVEL)) is not None and str(level).upper() == "ERROR":
        source = "langfuse"
        message = attrs.get(sc.LANGFUSE_OBSERVATION_STATUS_MESSAGE)
        error = message if isinstance(message, str) and message else None
    elif attrs.get(sc.ERROR_TYPE):  # GenAI: execute_tool sets error.type when the operation failed
        source = "error.type"
    elif (
        text_failures and execution.sources.get("status") is None and looks_like_error_text(execution.result)
        # the result is an error report ("Error: ...", MCP's "Error executing tool ..."),
        # whatever OK the span says
    ):
        source, error = "result_text", execution.result.strip()
    if source is None:
        execution.sources.setdefault("status", "span_status")  # a recorded, non-failed execution
        return
    error_type = attrs.get(sc.ERROR_TYPE)
    execution.status = "error"
    execution.error = (
        error or exception or (str(error_type) if error_type else None) or execution.error or "error"
    )
    execution.sources["status"] = source


def _read_call_id(span: SpanRecord, execution: Execution, placeholders: frozenset[str]) -> None:
    attrs = span.attributes
    for key, source in _CALL_ID_KEYS:
        raw = attrs.get(key)
        value = clean_id(raw, placeholders) if raw is not None else None
        if value:
            execution.call_id = value
            execution.sources["call_id"] = source
            return
    if execution.result_call_id is not None:
        from_result = clean_id(execution.result_call_id, placeholders)  # LangChain ToolMessage.tool_call_id
        if from_result:
            execution.call_id = from_result
            execution.sources["call_id"] = "result"
            return
    for event in span.events:
        if event.name in (sc.EVENT_TOOL_MESSAGE, sc.EVENT_CHOICE):
            value = clean_id(event.attributes.get("id"), placeholders)
            if value:
                execution.call_id = value
                execution.sources["call_id"] = "gen_ai.event"
                return


def _parameters_schema(value: Any) -> dict[str, Any] | None:
    """The JSON schema of a tool's parameters in a schema-ish value (bare,
    ``{"parameters"}``, OpenAI function)."""
    schema: Any = as_dict(value)
    if schema is None:
        return None
    if isinstance(schema.get("function"), dict):  # {"type": "function", "function": {...}}
        schema = schema["function"].get("parameters")
    elif isinstance(schema.get("parameters"), dict):
        schema = schema["parameters"]
    ok = (
        isinstance(schema, dict)
        and schema.get("type") == "object"
        and isinstance(schema.get("properties"), dict)
    )
    return schema if ok else None


@lru_cache(maxsize=1024)
def _parameters_schema_of_text(value: str) -> dict[str, Any] | None:
    schema = _parameters_schema(value)
    return freeze(schema) if schema is not None else None  # frozen once: a ToolDefinition of it need not copy


def parameters_schema(value: Any) -> dict[str, Any] | None:
    """``_parameters_schema``, parsed once per distinct text (every span of a tool repeats its schema).

    The returned dict is shared: read it, never change it (parsed from text, it is a FrozenDict).
    """
    return _parameters_schema_of_text(value) if isinstance(value, str) else _parameters_schema(value)


def _read_schema(span: SpanRecord, execution: Execution) -> None:
    attrs = span.attributes
    for key in _SCHEMA_KEYS:
        if key in attrs:
            schema = parameters_schema(attrs[key])
            if schema is not None:
                execution.schema = schema
                break
    for key in _DESCRIPTION_KEYS:
        value = attrs.get(key)
        if isinstance(value, str) and value:
            execution.description = value
            break
