"""Deterministic tool-error detectors: what needs no model, found for free.

Pure functions over ``(calls, available_tools)``; no I/O, no litellm. The collector runs them on every agent run
at ingest, and the LLM judge receives their findings as evidence.

- ``invalid_function``: a called tool that is not among the available tools, when those are known.
- ``parameter_error``: arguments that fail the tool's JSON Schema, by subtype (``SCHEMA_SUBTYPES``: missing
  required, unexpected parameter, wrong type, value not allowed, bad format, pattern, out of range).
  A key the schema's ``properties`` do not name is an unexpected parameter even when the schema does not say
  ``additionalProperties: false`` (it is no parameter of the function behind the tool); a schema that allows
  other keys explicitly (``additionalProperties`` given, ``patternProperties``) is followed as written.
  Numbers follow JSON Schema: an int is a valid "number", and 100.0 IS a valid "integer" (drafts 6 and later
  define integers by value, not by spelling; frameworks routinely turn the model's 100 into 100.0).
  Arguments that are not an object where the schema wants one are an error; arguments never recorded (a
  names-only call) are not checked. A tool whose schema is itself invalid is not checked.
- ``sequence_error`` (subtype ``precondition``) and ``parameter_error`` (subtype ``rule_violation``): the config's
  per-tool declarations (``tool_rules``): a call before any successful call of a tool it ``requires``; an argument
  failing its declared matcher.
- ``repeated_failure``: the same tool failing two or more times in a row with the same arguments. "In a row"
  counts that tool's calls: calls of other tools in between do not break the streak, a call of the same tool
  with other arguments or a success does.

Call indices are 0-based positions in the call list (the ``seq`` of the ``tool_calls`` table); descriptions
say ``call #n`` with n = index + 1, as the judge's tool history does.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError, ValidationError

from agentotel_eval.frozen import freeze, thaw
from agentotel_eval.metrics.outcome_detectors import (
    ERROR_HANDLING,
    RESULT_IGNORED,
    RunValues,
    contradicted_results,
    failed,
    false_successes,
    freeze_evidence,
    ignored_errors,
    repeated_failures,
)
from agentotel_eval.metrics.provenance import used_before_produced
from agentotel_eval.metrics.result_usage import SEVERITY as USAGE_SEVERITY
from agentotel_eval.metrics.result_usage import unused_results
from agentotel_eval.metrics.tool_rules import ToolRule, rules_by_tool
from agentotel_eval.test_case import PARTIAL_SOURCE, ToolCall, ToolDefinition
from agentotel_eval.trajectory.align import result_value, value_at
from agentotel_eval.trajectory.matchers import Ref, Refs, check_keys

INVALID_FUNCTION = "invalid_function"
PARAMETER_ERROR = "parameter_error"
REPEATED_FAILURE = "repeated_failure"
SEQUENCE_ERROR = "sequence_error"
#: the detectors that run on every run (the first two need the available tools, error_handling the final answer)
DETECTOR_TYPES = (INVALID_FUNCTION, PARAMETER_ERROR, REPEATED_FAILURE, RESULT_IGNORED, ERROR_HANDLING)
#: findings in this order of types when they concern the same call
_ORDER = (INVALID_FUNCTION, PARAMETER_ERROR, SEQUENCE_ERROR, RESULT_IGNORED, REPEATED_FAILURE, ERROR_HANDLING)

MAX_SCHEMA_ERRORS_PER_CALL = 10
_VALUE_PREVIEW = 80


@dataclass(frozen=True, slots=True)
class Finding:
    """One deterministic finding: its type (one of the six tool-use error types), a subtype saying which kind of
    that error, the rule that found it, the calls it concerns and the values it compared (``evidence``)."""

    type: str
    description: str
    tool_name: str
    call_indices: tuple[int, ...]
    argument: str | None = None  # the offending argument's path ("passengers/0/age") for parameter errors
    subtype: str = ""
    rule: str = ""
    evidence: Mapping[str, Any] | None = None
    severity: str | None = None  # "low" for an observation (``observations``): it never changes a verdict

    def to_dict(self) -> dict[str, Any]:
        out = {
            "type": self.type,
            "subtype": self.subtype,
            "rule": self.rule,
            "description": self.description,
            "tool_name": self.tool_name,
            "call_indices": list(self.call_indices),
            "argument": self.argument,
            "evidence": thaw(self.evidence) if self.evidence is not None else None,
        }
        if self.severity is not None:
            out["severity"] = self.severity
        return out


ToolsLike = Sequence[ToolDefinition | str | Mapping[str, Any]]


def detect(
    calls: Sequence[ToolCall],
    available_tools: ToolsLike | None = None,
    *,
    types: Iterable[str] | None = None,
    rules: Sequence[ToolRule] = (),
    answer: str | None = None,
    reconstruction: Mapping[str, Any] | None = None,
    user_input: str | None = None,
) -> list[Finding]:
    """All findings of the selected detector ``types`` (default: all), ordered by first call index. ``rules``:
    the config's per-tool declarations (argument matchers, required earlier tools, claims); ``answer``: the
    run's final answer (what error_handling reads); ``reconstruction``: requests that never ran and calls that
    ran unrequested, as trace reconstruction found them (``AgentRun.to_test_case``'s metadata); ``user_input``:
    where an id an argument uses may first appear (provenance)."""
    return detect_and_observe(calls, available_tools, types=types, rules=rules, answer=answer,
                              reconstruction=reconstruction, user_input=user_input, observe=False)[0]


def detect_and_observe(
    calls: Sequence[ToolCall],
    available_tools: ToolsLike | None = None,
    *,
    types: Iterable[str] | None = None,
    rules: Sequence[ToolRule] = (),
    answer: str | None = None,
    reconstruction: Mapping[str, Any] | None = None,
    user_input: str | None = None,
    observe: bool = True,
) -> tuple[list[Finding], list[Finding]]:
    """``detect``'s findings and, with ``observe``, the low-severity observations (``observations``), reading
    each call's failure once for both."""
    wanted = set((*DETECTOR_TYPES, SEQUENCE_ERROR) if types is None else types)
    tools = _definitions(available_tools)
    findings: list[Finding] = []
    if INVALID_FUNCTION in wanted and tools is not None:
        findings += _invalid_functions(calls, tools)
    if INVALID_FUNCTION in wanted and reconstruction:
        findings += _unmatched_calls(calls, reconstruction)
    if PARAMETER_ERROR in wanted and tools:
        findings += _parameter_errors(calls, tools)
    by_tool = rules_by_tool(rules)
    if rules:
        if PARAMETER_ERROR in wanted:
            findings += _argument_rules(calls, by_tool)
        if SEQUENCE_ERROR in wanted:
            findings += _preconditions(calls, by_tool)
    if SEQUENCE_ERROR in wanted and calls:
        known = (lambda: _definitions_text(tools)) if tools else ""
        findings += [Finding(**freeze_evidence(f)) for f in used_before_produced(calls, user_input, known)]
    fails = [failed(call) for call in calls] if wanted & {REPEATED_FAILURE, RESULT_IGNORED, ERROR_HANDLING} else []
    values = RunValues(calls, answer)  # results and answer read once for the rules that read values
    observed = [Finding(**freeze_evidence(f), severity=USAGE_SEVERITY)
                for f in unused_results(calls, fails, answer, values)] if observe and RESULT_IGNORED in wanted else []
    if REPEATED_FAILURE in wanted:
        findings += detect_repeated_failures(calls)
        findings += [Finding(**freeze_evidence(f)) for f in repeated_failures(calls, fails)]
    claimed = false_successes(calls, fails, answer, by_tool) if ERROR_HANDLING in wanted or RESULT_IGNORED in wanted \
        else []
    if RESULT_IGNORED in wanted:
        if any(fails):
            findings += [Finding(**freeze_evidence(f)) for f in ignored_errors(calls, fails)]
        if not any(f["subtype"] == "false_success" for f in claimed):
            # an answer claiming a failed action reports that action's (unrecorded) outcome: its numbers are part
            # of the false success, not contradictions of the results on record
            findings += [Finding(**freeze_evidence(f)) for f in contradicted_results(calls, fails, answer,
                                                                                     user_input, values)]
    if ERROR_HANDLING in wanted:
        findings += [Finding(**freeze_evidence(f)) for f in claimed]
    if len(findings) > 1:
        findings.sort(key=lambda f: (f.call_indices[0] if f.call_indices else -1, _ORDER.index(f.type)))
    return findings, observed


def observations(calls: Sequence[ToolCall], *, types: Iterable[str] | None = None,
                 answer: str | None = None) -> list[Finding]:
    """Low-severity observations, kept apart from ``detect``'s findings: they are shown, never scored. Today one
    kind: results no later call and no part of the answer used (``result_ignored``/``result_unused``)."""
    wanted = set((*DETECTOR_TYPES, SEQUENCE_ERROR) if types is None else types)
    if RESULT_IGNORED not in wanted or not calls:
        return []
    fails = [failed(call) for call in calls]
    return [Finding(**freeze_evidence(f), severity=USAGE_SEVERITY) for f in unused_results(calls, fails, answer)]


def could_not_run(calls: Sequence[ToolCall], available_tools: ToolsLike | None, *, types: Iterable[str] | None = None,
                  rules: Sequence[ToolRule] = (), answer: str | None = None) -> list[str]:
    """What the selected detectors could not check on this run, and the data that was missing: a run that passes
    them has passed only what they could see."""
    wanted = set((*DETECTOR_TYPES, SEQUENCE_ERROR) if types is None else types)
    if not calls:
        return []
    tools = _definitions(available_tools)
    notes = []
    if INVALID_FUNCTION in wanted and tools is None:
        notes.append("invalid_function could not run: the tools offered to the model are not recorded")
    if PARAMETER_ERROR in wanted:
        if tools is None or not any(t.parameters for t in tools):
            notes.append("parameter_error (schemas) could not run: no tool schema is recorded")
        unrecorded = sum(1 for c in calls if c.input_parameters is None and c.raw_arguments is None)
        if unrecorded:
            notes.append(f"parameter_error could not check {unrecorded} of {len(calls)} call(s): arguments not "
                         "recorded")
        partial = sum(1 for c in calls if _partial(c))
        if partial:
            notes.append(f"parameter_error could not check required arguments of {partial} call(s): the capture "
                         "keeps only some argument values")
    if ERROR_HANDLING in wanted and not (answer or "").strip():
        notes.append("error_handling could not run: the run's final answer is not recorded")
    if all(c.output is None and not c.error for c in calls):
        if RESULT_IGNORED in wanted:
            notes.append("result_ignored could not run: no call's result or error is recorded")
        if SEQUENCE_ERROR in wanted and len(calls) > 1:
            notes.append("sequence_error (provenance) could not run: no call's result is recorded")
    return notes


# -- per-tool rules ([[tools]]) ------------------------------------------------------------------------------------
def _argument_rules(calls: Sequence[ToolCall], rules: Mapping[str, ToolRule]) -> list[Finding]:
    """Calls whose arguments fail their tool's declared matchers (arguments not recorded: not checked)."""
    out: list[Finding] = []
    for index, call in enumerate(calls):
        rule = rules.get(call.name)
        if rule is None or rule.args is None:
            continue
        present, instance, _problem = _arguments_of(call)
        if not present or not isinstance(instance, Mapping):
            continue  # unparseable or non-object arguments are the schema check's finding
        matchers = dict(rule.args.keys)
        for key, verdict, reason in check_keys(rule.args.keys, instance, False, _latest_call_refs(calls, index)):
            if verdict is not False:
                continue
            out.append(Finding(
                PARAMETER_ERROR, f"call #{index + 1} to {call.name!r}: argument {key!r}: {reason}", call.name,
                (index,), argument=key, subtype="rule_violation", rule=f"tools.{call.name}.args.{key}",
                evidence=freeze({"value": _preview(instance.get(key)), "expected": matchers[key].describe(),
                                 "reason": reason})))
    return out


def _latest_call_refs(calls: Sequence[ToolCall], index: int) -> Refs:
    """``$ref`` in a tool rule names a tool: the value its latest call before ``index`` produced."""

    def resolve(ref: Ref) -> tuple[bool | None, Any, str]:
        source = next((j for j in range(index - 1, -1, -1) if calls[j].name == ref.target), None)
        if source is None:
            return False, None, f"no earlier call of {ref.target}"
        call = calls[source]
        data = call.input_parameters if ref.part == "args" else result_value(call)
        if data is None:
            return None, None, f"the {ref.part} of call #{source + 1} were not recorded"
        found, value = value_at(data, ref.path)
        return (True, value, "") if found else (False, None, f"call #{source + 1} has no {ref.part}.{'.'.join(ref.path)}")

    return resolve


def _preconditions(calls: Sequence[ToolCall], rules: Mapping[str, ToolRule]) -> list[Finding]:
    """A call of a tool before any successful call of a tool it requires (once per tool and requirement)."""
    out: list[Finding] = []
    succeeded: set[str] = set()
    reported: set[tuple[str, str]] = set()
    for index, call in enumerate(calls):
        rule = rules.get(call.name)
        for needed in rule.requires if rule is not None else ():
            if needed in succeeded or (call.name, needed) in reported:
                continue
            reported.add((call.name, needed))
            tried = [j for j in range(index) if calls[j].name == needed]
            why = (f"its earlier call(s) {', '.join(f'#{j + 1}' for j in tried)} failed" if tried
                   else f"{needed!r} was not called before")
            out.append(Finding(
                SEQUENCE_ERROR, f"call #{index + 1} to {call.name!r} needs a successful {needed!r} first: {why}",
                call.name, (index, *tried), subtype="precondition", rule=f"tools.{call.name}.requires",
                evidence=freeze({"requires": needed, "earlier_calls": tried})))
        if call.status != "error":
            succeeded.add(call.name)
    return out


def _definitions_text(tools: Sequence[ToolDefinition]) -> str:
    """The tools' descriptions and schemas as text: an id an argument takes from them (an enum, an example in a
    description) is grounded."""
    return "\n".join(f"{t.description or ''} {json.dumps(t.parameters, default=str) if t.parameters else ''}"
                     for t in tools)


def _definitions(available_tools: ToolsLike | None) -> list[ToolDefinition] | None:
    if available_tools is None:
        return None
    if type(available_tools) is list:  # the metric passes a list of definitions: no conversion per tool
        for t in available_tools:
            if type(t) is not ToolDefinition:
                break
        else:
            return available_tools
    elif isinstance(available_tools, str | bytes | Mapping):
        raise TypeError("available_tools must be a list of tool names or definitions")
    return [ToolDefinition.from_value(t) for t in available_tools]


# -- invalid_function --------------------------------------------------------------------------------------------
def detect_invalid_functions(calls: Sequence[ToolCall], available_tools: ToolsLike | None) -> list[Finding]:
    """Calls of tools that were not available. Unknown availability (None) finds nothing."""
    tools = _definitions(available_tools)
    return [] if tools is None else _invalid_functions(calls, tools)


def _invalid_functions(calls: Sequence[ToolCall], tools: list[ToolDefinition]) -> list[Finding]:
    names = [t.name for t in tools]
    known = set(names)
    out = []
    for index, call in enumerate(calls):
        if call.name in known:
            continue
        close = difflib.get_close_matches(call.name, names, n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        offered = ", ".join(sorted(known)[:20]) or "none"
        out.append(Finding(
            INVALID_FUNCTION,
            f"call #{index + 1} invokes {call.name!r}, which is not an available tool (available: {offered}){hint}",
            call.name,
            (index,),
            subtype="not_offered",
            rule="invalid_function.not_offered",
            evidence=freeze({"called": call.name, "offered": sorted(known)[:20], "closest": close[0] if close else None}),
        ))
    return out


def _not_offered_on_turn(calls: Sequence[ToolCall], by_turn: Mapping[str, Any]) -> list[Finding]:
    """Calls of a tool the run offers on some turn but not on the turn whose LLM output requested the call."""
    everywhere = {name for names in by_turn.values() for name in names}
    out = []
    for index, call in enumerate(calls):
        offered = by_turn.get(call.llm_turn) if call.llm_turn is not None else None
        if offered is None or call.name in offered or call.name not in everywhere:
            continue  # unknown turn, offered, or offered on no turn (not_offered says so)
        out.append(Finding(
            INVALID_FUNCTION, f"call #{index + 1} invokes {call.name!r}, which the turn that requested it did not "
            f"offer (that turn offered: {', '.join(list(offered)[:20]) or 'none'})", call.name, (index,),
            subtype="not_offered_on_turn", rule="invalid_function.not_offered_on_turn",
            evidence=freeze({"called": call.name, "turn": call.llm_turn, "offered": list(offered)[:20]})))
    return out


def _unmatched_calls(calls: Sequence[ToolCall], reconstruction: Mapping[str, Any]) -> list[Finding]:
    out = []
    by_turn = reconstruction.get("offered_by_turn")
    if isinstance(by_turn, Mapping) and by_turn:
        out += _not_offered_on_turn(calls, by_turn)
    for request in reconstruction.get("requests_without_execution") or ():
        name = str(request.get("name") or "?")
        out.append(Finding(
            INVALID_FUNCTION, f"the model requested {name!r} (call id {request.get('call_id') or '?'}) but no "
            "execution of it was recorded", name, (), subtype="requested_not_executed",
            rule="invalid_function.requested_not_executed", evidence=freeze(dict(request))))
    for j in reconstruction.get("executions_without_request") or ():
        if isinstance(j, int) and 0 <= j < len(calls):
            out.append(Finding(
                INVALID_FUNCTION, f"call #{j + 1} to {calls[j].name!r} ran, but no LLM output requested it",
                calls[j].name, (j,), subtype="executed_not_requested", rule="invalid_function.executed_not_requested",
                evidence=freeze({"call_id": calls[j].call_id, "span_id": calls[j].span_id})))
    return out


# -- parameter_error ---------------------------------------------------------------------------------------------
def detect_parameter_errors(calls: Sequence[ToolCall], available_tools: ToolsLike | None) -> list[Finding]:
    """Calls whose arguments fail their tool's JSON Schema, one finding per violation (capped per call)."""
    tools = _definitions(available_tools)
    return _parameter_errors(calls, tools) if tools else []


def _partial(call: ToolCall) -> bool:
    return str((call.sources or {}).get("arguments") or "").endswith(PARTIAL_SOURCE)


def _parameter_errors(calls: Sequence[ToolCall], tools: list[ToolDefinition]) -> list[Finding]:
    schemas = {  # definitions hold FrozenDicts: a dict is told before the (slow) ABC check
        t.name: p for t in tools if (p := t.parameters) is not None and isinstance(p, (dict, Mapping))
    }
    if not schemas:
        return []
    out: list[Finding] = []
    for index, call in enumerate(calls):
        schema = schemas.get(call.name)
        if schema is None:
            continue
        present, instance, problem = _arguments_of(call)
        if not present:
            continue
        if problem is not None:
            out.append(Finding(PARAMETER_ERROR, f"call #{index + 1} to {call.name!r}: {problem}", call.name, (index,),
                               subtype="unparseable_arguments", rule="parameter_error.json",
                               evidence=freeze({"arguments": _preview(call.raw_arguments)})))
            continue
        frozen = freeze(schema)
        declared = _declared(frozen)
        if declared is not None and isinstance(instance, Mapping):
            for key in [k for k in instance if k not in declared][:MAX_SCHEMA_ERRORS_PER_CALL]:
                out.append(Finding(
                    PARAMETER_ERROR, f"call #{index + 1} to {call.name!r}: unexpected argument {key!r} (the tool's "
                                     f"schema declares {', '.join(sorted(declared)) or 'no parameter'})",
                    call.name, (index,), argument=str(key), subtype="unexpected_param",
                    rule="parameter_error.undeclared",
                    evidence=freeze({"value": _preview(instance[key]), "declared": sorted(declared)})))
        quick = _quick_check(frozen)
        if quick is not None and quick(instance):
            continue  # conforms (the common case): no need for the full validator
        validator = _validator(frozen)
        if validator is None:
            continue
        try:
            errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
        except Exception:  # an unresolvable $ref and the like: the schema's problem, not the agent's
            continue
        for error in errors[:MAX_SCHEMA_ERRORS_PER_CALL]:
            path = "/".join(str(p) for p in error.absolute_path) or None
            kind = str(error.validator)
            subtype = SCHEMA_SUBTYPES.get(kind, "schema_violation")
            if subtype == "missing_required" and _partial(call):
                continue  # the capture kept only some values: "missing" may be lost, not left out
            if subtype == "missing_required":
                path = "/".join(filter(None, (path, _missing_property(error)))) or path
            out.append(Finding(
                PARAMETER_ERROR,
                f"call #{index + 1} to {call.name!r}: {_explain(error, error_path(error))}",
                call.name,
                (index,),
                argument=path,
                subtype=subtype,
                rule=f"parameter_error.schema.{kind}",
                evidence=freeze({"value": _preview(error.instance), "schema": {kind: _evidence_value(error)}}),
            ))
        if len(errors) > MAX_SCHEMA_ERRORS_PER_CALL:
            out.append(Finding(
                PARAMETER_ERROR,
                f"call #{index + 1} to {call.name!r}: {len(errors) - MAX_SCHEMA_ERRORS_PER_CALL} more schema violation(s)",
                call.name,
                (index,),
            ))
    return out


@lru_cache(maxsize=1024)
def _declared(schema: Any) -> frozenset[str] | None:
    """The parameter names an object schema declares when it says nothing of others: a key it does not name is
    no parameter of the tool (JSON Schema would let it pass; the function behind the tool would not take it).
    None when the schema allows other keys explicitly (``additionalProperties`` given, ``patternProperties``)."""
    if not isinstance(schema, Mapping) or "additionalProperties" in schema or "patternProperties" in schema \
            or "unevaluatedProperties" in schema:
        return None
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or schema.get("type", "object") != "object":
        return None
    return frozenset(str(k) for k in properties)


#: a JSON Schema keyword that failed -> the kind of parameter error it is (BFCL's checker tells these apart)
SCHEMA_SUBTYPES = {
    "required": "missing_required", "dependentRequired": "missing_required", "dependencies": "missing_required",
    "additionalProperties": "unexpected_param", "unevaluatedProperties": "unexpected_param",
    "propertyNames": "unexpected_param",
    "type": "wrong_type",
    "enum": "value_not_allowed", "const": "value_not_allowed",
    "format": "bad_format",
    "pattern": "pattern_mismatch",
    "minimum": "out_of_range", "maximum": "out_of_range", "exclusiveMinimum": "out_of_range",
    "exclusiveMaximum": "out_of_range", "multipleOf": "out_of_range", "minLength": "out_of_range",
    "maxLength": "out_of_range", "minItems": "out_of_range", "maxItems": "out_of_range",
    "minProperties": "out_of_range", "maxProperties": "out_of_range", "uniqueItems": "out_of_range",
}


def error_path(error: ValidationError) -> str | None:
    return "/".join(str(p) for p in error.absolute_path) or None


def _evidence_value(error: ValidationError) -> Any:
    value = error.validator_value
    text = _preview(value)
    return value if len(text) < _VALUE_PREVIEW and not isinstance(value, Mapping) else text


def _arguments_of(call: ToolCall) -> tuple[bool, Any, str | None]:
    """(recorded?, the arguments as a JSON value, a problem that stops validation)."""
    if call.input_parameters is not None:
        return True, call.input_parameters, None
    raw = call.raw_arguments
    if raw is None:
        return False, None, None
    if isinstance(raw, str | bytes):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            return True, {}, None
        try:
            return True, json.loads(text), None
        except ValueError:
            return True, None, f"arguments are not valid JSON: {_preview(text)}"
    return True, raw, None


# -- a fast path for the common schema shape ----------------------------------------------------------------
# Tool schemas are nearly always a flat object of typed properties. For those, a hand-written check says "valid"
# about ten times faster than jsonschema; anything it does not understand, and every failure, goes to jsonschema,
# so findings and their wording come from one place.

_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "description", "title",
                          "$schema", "default", "examples"})
_PROPERTY_KEYS = frozenset({"type", "description", "title", "default", "examples", "enum", "format"})
#: the formats the full validator checks, for the fast path to say "conforms" only where it would too
_FORMATS = validators.Draft202012Validator.FORMAT_CHECKER
_TYPE_CHECKS: dict[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and v.is_integer())),
    "number": lambda v: not isinstance(v, bool) and isinstance(v, int | float),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, Mapping),
}


def _type_check(spec: Any) -> Any:
    """A predicate for a ``type`` value (a name or a list of names); None if it is not one we know."""
    if spec is None:
        return lambda v: True
    names = [spec] if isinstance(spec, str) else list(spec) if isinstance(spec, list | tuple) else None
    if not names or any(n not in _TYPE_CHECKS for n in names):
        return None
    checks = [_TYPE_CHECKS[n] for n in names]
    return checks[0] if len(checks) == 1 else (lambda v: any(c(v) for c in checks))


@lru_cache(maxsize=1024)
def _quick_check(schema: Any) -> Any:
    """``instance -> True`` when it surely conforms to this flat object schema; None for other schema shapes."""
    if not isinstance(schema, Mapping) or not set(schema) <= _OBJECT_KEYS or schema.get("type", "object") != "object":
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", ())
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(required, list | tuple) or not isinstance(extra, bool):
        return None
    checks: dict[str, Any] = {}
    for name, prop in properties.items():
        if not isinstance(prop, Mapping) or not set(prop) <= _PROPERTY_KEYS:
            return None
        type_ok = _type_check(prop.get("type"))
        if type_ok is None:
            return None
        enum = prop.get("enum")
        if enum is not None:
            if not isinstance(enum, list | tuple) or not all(isinstance(e, str) for e in enum):
                return None  # non-string enums compare with JSON (not Python) equality: leave them to jsonschema
            allowed = frozenset(enum)
            checks[name] = lambda v, t=type_ok, a=allowed: isinstance(v, str) and v in a and t(v)
        else:
            checks[name] = type_ok
        fmt = prop.get("format")
        if fmt is not None:
            if not isinstance(fmt, str):
                return None
            checks[name] = lambda v, c=checks[name], f=fmt: c(v) and _FORMATS.conforms(v, f)
    required = tuple(required)
    closed = not extra

    def conforms(instance: Any) -> bool:
        if not isinstance(instance, Mapping):
            return False
        for key in required:
            if key not in instance:
                return False
        for key, value in instance.items():
            check = checks.get(key)
            if check is None:
                if closed:
                    return False
            elif not check(value):
                return False
        return True

    return conforms


@lru_cache(maxsize=1024)
def _validator(schema: Any) -> Any:
    """A compiled validator per distinct schema (schemas are frozen, hence hashable); None if the schema is invalid."""
    plain = thaw(schema)
    cls = validators.validator_for(plain, default=validators.Draft202012Validator)
    try:
        cls.check_schema(plain)
    except SchemaError:
        return None
    # Integers by value in every draft (draft 4's checker would reject 100.0): one documented rule for all.
    checker = cls.TYPE_CHECKER.redefine("integer", _is_integer)
    # formats are checked (a date that is no date is a parameter error), with the formats jsonschema knows
    return validators.extend(cls, type_checker=checker)(plain, format_checker=cls.FORMAT_CHECKER)


def _is_integer(checker: Any, instance: Any) -> bool:
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())


def _explain(error: ValidationError, path: str | None) -> str:
    where = f"argument {path!r}" if path else "the arguments"
    kind = error.validator
    if kind == "required":
        missing = _missing_property(error)
        parent = f" of {path!r}" if path else ""
        return f"missing required argument {missing!r}{parent}" if missing else error.message
    verb = "are" if path is None else "is"
    if kind == "type":
        return f"{where} {verb} {_json_type(error.instance)} {_preview(error.instance)}, expected {_expected(error.validator_value)}"
    if kind == "enum":
        return f"{where} {verb} {_preview(error.instance)}, not one of {_preview(error.validator_value)}"
    if kind == "const":
        return f"{where} {verb} {_preview(error.instance)}, expected {_preview(error.validator_value)}"
    if kind == "additionalProperties":
        return f"{error.message}" if len(error.message) <= 200 else error.message[:200] + "…"
    message = error.message if len(error.message) <= 200 else error.message[:200] + "…"
    return f"{where}: {message}" if path else message


def _missing_property(error: ValidationError) -> str | None:
    instance = error.instance
    required = error.validator_value
    if isinstance(instance, Mapping) and isinstance(required, list | tuple):
        for name in required:
            if name not in instance and f"{name!r}" in error.message:
                return str(name)
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _expected(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " or ".join(str(v) for v in value)
    return str(value)


def _preview(value: Any) -> str:
    try:
        text = json.dumps(thaw(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _VALUE_PREVIEW else text[:_VALUE_PREVIEW] + "…"


# -- repeated_failure --------------------------------------------------------------------------------------------
def detect_repeated_failures(calls: Sequence[ToolCall]) -> list[Finding]:
    """Streaks of two or more failed calls of one tool with equal arguments (see the module docstring)."""
    if [call.status for call in calls].count("error") < 2:
        return []  # a streak needs two failures
    streaks: dict[str, list[int]] = {}  # tool name -> indices of the current failing streak
    out: list[Finding] = []

    def close(name: str) -> None:
        indices = streaks.pop(name, None)
        if indices and len(indices) >= 2:
            out.append(_repeated(calls, indices))

    for index, call in enumerate(calls):
        current = streaks.get(call.name)
        if call.status != "error":
            close(call.name)
            continue
        if current and _same_arguments(calls[current[-1]], call):
            current.append(index)
        else:
            close(call.name)
            streaks[call.name] = [index]
    for name in list(streaks):
        close(name)
    return out


def _same_arguments(a: ToolCall, b: ToolCall) -> bool:
    if a.input_parameters is not None or b.input_parameters is not None:
        return a.input_parameters == b.input_parameters
    return a.raw_arguments == b.raw_arguments


def _repeated(calls: Sequence[ToolCall], indices: list[int]) -> Finding:
    first = calls[indices[0]]
    positions = ", ".join(f"#{i + 1}" for i in indices)
    args = _preview(first.input_parameters if first.input_parameters is not None else first.raw_arguments)
    error = calls[indices[-1]].error
    reason = f": {_preview(error) if not isinstance(error, str) else error[:160]}" if error else ""
    return Finding(
        REPEATED_FAILURE,
        f"{first.name!r} failed {len(indices)} times in a row with the same arguments {args} (calls {positions}){reason}",
        first.name,
        tuple(indices),
        subtype="same_arguments",
        rule="repeated_failure.same_arguments",
        evidence=freeze({"arguments": args, "error": reason[2:] or None, "times": len(indices)}),
    )
