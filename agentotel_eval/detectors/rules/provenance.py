"""``sequence_error``/``used_before_produced``: a call whose id-like argument value (``tokens.id_like``:
"ORD-9931", a UUID) appears neither in the user's input nor in any earlier call's arguments or result, but in
a later call's result: the call used what only a later call produced. The finding names both
calls and the value."""

from __future__ import annotations

import re

from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.tokens import contains_token, id_like, string_values, value_text
from agentotel_eval.detectors.types import SEQUENCE_ERROR
from agentotel_eval.detectors.view import RunView

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")
_MAX_VALUES = 64  # id-like values checked per call


def find(view: RunView) -> list[Finding]:
    calls = view.calls
    ids = [
        list(dict.fromkeys(v for v in string_values(call.input_parameters) if id_like(v)))[:_MAX_VALUES]
        for call in calls
    ]
    if not any(ids):  # most runs pass no id-like value
        return []
    results = view.output_texts
    arguments = [value_text(call.input_parameters) for call in calls]
    given = view.context_text
    if "," in given:
        given += "\n" + _THOUSANDS.sub("", given)  # "$10,000,000" holds the id-like "10000000" too
    out: list[Finding] = []
    for j, values in enumerate(ids):
        call = calls[j]
        for value in values:
            if contains_token(given, value) or any(
                contains_token(results[k], value) or contains_token(arguments[k], value) for k in range(j)
            ):
                continue
            later = next((k for k in range(j + 1, len(calls)) if contains_token(results[k], value)), None)
            if later is not None:
                out.append(
                    finding(
                        SEQUENCE_ERROR,
                        "used_before_produced",
                        "sequence_error.provenance",
                        call.name,
                        (j, later),
                        f"call #{j + 1} to {call.name!r} used {value!r}, which first appears "
                        f"in the result of call #{later + 1} ({calls[later].name}), made after it",
                        {"value": value, "used_by": j, "produced_by": later},
                    )
                )
    return out


RULE = Rule(
    "sequence_error.used_before_produced",
    SEQUENCE_ERROR,
    ("used_before_produced",),
    "an id a call used that first appears in the result of a later call",
    find,
    needs=("results", "calls"),
    label="sequence_error (provenance)",
)
