"""``parameter_error``: arguments that fail their tool's JSON Schema, by subtype (``SCHEMA_SUBTYPES``: missing
required, unexpected parameter, wrong type, value not allowed, bad format, pattern, out of range), and
arguments recorded as text that is not JSON.

A key the schema's ``properties`` do not name is an unexpected parameter even when the schema does not say
``additionalProperties: false`` (it is no parameter of the function behind the tool); a schema that allows
other keys explicitly is followed as written. Arguments never recorded are not checked, nor tools without a
schema or with an invalid one (a broken schema is not the agent's fault). A schema an exporter cut short
("[MaxDepth]") is not the tool's schema: its calls are not checked, and ``could_not_run`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentotel_eval.detectors.failure import partial
from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.schemas import (
    SCHEMA_SUBTYPES,
    arguments_of,
    declared,
    error_path,
    evidence_value,
    explain,
    missing_property,
    preview,
    quick_check,
    truncated,
    validator,
)
from agentotel_eval.detectors.types import PARAMETER_ERROR
from agentotel_eval.detectors.view import RunView
from agentotel_eval.frozen import FrozenDict, freeze

MAX_SCHEMA_ERRORS_PER_CALL = 10


def schemas_of(view: RunView) -> dict[str, Any]:
    """Each offered tool's schema by its name (the list and the calls come from one framework: names compare
    exactly; a near name is another tool, found by ``not_offered``)."""
    out: dict[str, Any] = {}
    for t in view.tools or ():
        params = t.parameters
        if params is not None and isinstance(
            params, dict | Mapping
        ):  # FrozenDicts are told before the ABC check
            out.setdefault(t.name, params)
    return out


def _schema_for(schemas: Mapping[str, Any], name: str) -> Any:
    return schemas.get(name)


def find(view: RunView) -> list[Finding]:
    schemas = schemas_of(view)
    if not schemas:
        return []
    out: list[Finding] = []
    for index, call in enumerate(view.calls):
        schema = _schema_for(schemas, call.name)
        if schema is None:
            continue
        present, instance, problem = arguments_of(call)
        if not present:
            continue
        if problem is not None:
            out.append(
                finding(
                    PARAMETER_ERROR,
                    "unparseable_arguments",
                    "parameter_error.json",
                    call.name,
                    (index,),
                    f"call #{index + 1} to {call.name!r}: {problem}",
                    {"arguments": preview(call.raw_arguments)},
                )
            )
            continue
        frozen = _frozen(schema)
        if truncated(frozen):
            continue  # could_not_run says so
        out += _undeclared(index, call.name, frozen, instance)
        quick = quick_check(frozen)
        if quick is not None and quick(instance):
            continue  # conforms (the common case): no need for the full validator
        check = validator(frozen)
        if check is None:
            continue
        try:
            errors = sorted(check.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
        except Exception:  # an unresolvable $ref and the like: the schema's problem, not the agent's
            continue
        for error in errors[:MAX_SCHEMA_ERRORS_PER_CALL]:
            path = "/".join(str(p) for p in error.absolute_path) or None
            kind = str(error.validator)
            subtype = SCHEMA_SUBTYPES.get(kind, "schema_violation")
            if subtype == "missing_required" and partial(call):
                continue  # the capture kept only some values: "missing" may be lost, not left out
            if subtype == "missing_required":
                path = "/".join(filter(None, (path, missing_property(error)))) or path
            out.append(
                finding(
                    PARAMETER_ERROR,
                    subtype,
                    f"parameter_error.schema.{kind}",
                    call.name,
                    (index,),
                    f"call #{index + 1} to {call.name!r}: {explain(error, error_path(error))}",
                    {"value": preview(error.instance), "schema": {kind: evidence_value(error)}},
                    argument=path,
                )
            )
        if len(errors) > MAX_SCHEMA_ERRORS_PER_CALL:
            out.append(
                finding(
                    PARAMETER_ERROR,
                    "schema_violation",
                    "parameter_error.schema",
                    call.name,
                    (index,),
                    f"call #{index + 1} to {call.name!r}: {len(errors) - MAX_SCHEMA_ERRORS_PER_CALL} more "
                    "schema violation(s)",
                )
            )
    return out


def _frozen(schema: Any) -> Any:
    return (
        schema if isinstance(schema, FrozenDict) else freeze(schema)
    )  # definitions hold frozen schemas already


def _undeclared(index: int, name: str, schema: Any, instance: Any) -> list[Finding]:
    names = declared(schema)
    if names is None or not isinstance(instance, dict | Mapping):
        return []
    return [
        finding(
            PARAMETER_ERROR,
            "unexpected_param",
            "parameter_error.undeclared",
            name,
            (index,),
            f"call #{index + 1} to {name!r}: unexpected argument {key!r} (the tool's schema declares "
            f"{', '.join(sorted(names)) or 'no parameter'})",
            {"value": preview(instance[key]), "declared": sorted(names)},
            argument=str(key),
        )
        for key in [k for k in instance if k not in names][:MAX_SCHEMA_ERRORS_PER_CALL]
    ]


def unchecked(view: RunView) -> list[str]:
    notes = []
    calls = view.calls
    unrecorded = sum(1 for c in calls if c.input_parameters is None and c.raw_arguments is None)
    if unrecorded:
        notes.append(
            f"parameter_error could not check {unrecorded} of {len(calls)} call(s): arguments not recorded"
        )
    partial_calls = sum(1 for c in calls if partial(c))
    if partial_calls:
        notes.append(
            f"parameter_error could not check required arguments of {partial_calls} call(s): the capture "
            "keeps only some argument values"
        )
    schemas = schemas_of(view)
    cut = sorted(
        {c.name for c in calls if (s := _schema_for(schemas, c.name)) is not None and truncated(_frozen(s))}
    )
    if cut:
        notes.append(
            f"parameter_error could not check the calls of {', '.join(map(repr, cut))}: the recorded "
            "schema was cut short by the exporter"
        )
    return notes


RULE = Rule(
    "parameter_error.schema",
    PARAMETER_ERROR,
    (
        "missing_required",
        "unexpected_param",
        "wrong_type",
        "value_not_allowed",
        "bad_format",
        "pattern_mismatch",
        "out_of_range",
        "unparseable_arguments",
        "schema_violation",
    ),
    "arguments that fail the tool's JSON Schema, or that are not JSON",
    find,
    needs=("schemas",),
    unchecked=unchecked,
    label="parameter_error (schemas)",
)
