"""Where an argument value came from: a sequence error when a call used an id that only a later call produced.

An id-like value (a token of 5 to 64 characters with letters and digits, no spaces, not a date or time: "A-1042",
"u_7731", a UUID; or seven digits or more written as a string: "1656367028") in a call's arguments must have appeared before the call: in the user's input, in an earlier
call's arguments or in an earlier result. When its first appearance is a later call's result, the call used a
result before the call that produced it (``sequence_error``, subtype ``used_before_produced``); the finding names
both calls and the value.

A value found nowhere (not in the input, the tool definitions, any call's arguments or result) was made up: an
``ungrounded_argument``. That finding is held to ids that cannot be the model's own vocabulary (six characters or
more, digits mixed into capitals or two digits or more) and to calls whose run input and every earlier result
are recorded; an id given only in a system prompt the spans did not record as the run's input would be reported.
Needs results recorded (``could_not_run`` says so otherwise).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from agentotel_eval.test_case import ToolCall

SEQUENCE_ERROR = "sequence_error"
_ID_LIKE = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)#?[A-Za-z0-9][A-Za-z0-9_\-:.]{3,62}[A-Za-z0-9]$")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")
_DIGITS_ID = re.compile(r"^\d{7,20}$")
_DATE_OR_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}([T ].*)?$|^\d{1,2}:\d{2}(:\d{2})?$")
_MAX_VALUES = 64  # id-like values checked per call


def id_like(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    if _DIGITS_ID.match(value) is not None:
        # a long run of digits passed as text is an identifier by intent ("1656367028"); a round one a quantity
        return not value.endswith("000")
    return _ID_LIKE.match(value) is not None and _DATE_OR_TIME.match(value) is None and not _is_number(value)


def _is_number(value: str) -> bool:
    try:
        float(value)  # "1.257e-06": a number written as a string
    except ValueError:
        return False
    return True


def string_values(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > 6:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from string_values(v, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from string_values(v, depth + 1)


def value_text(value: Any) -> str:
    """A recorded value as text to search: a string as it is, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def contains_token(text: str, value: str) -> bool:
    """``value`` as a whole token of ``text`` (not inside a longer id)."""
    start = text.find(value)
    while start >= 0:
        before = text[start - 1] if start else " "
        end = start + len(value)
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before in "_-") and not (after.isalnum() or after in "_-"):
            return True
        start = text.find(value, start + 1)
    return False


def _grounding_candidate(value: str) -> bool:
    """An id whose every appearance can be trusted to be a copy: long, and mixing digits into capitals or
    carrying two digits or more ("EHGLP3", "u_7731"); short or lowercase-word-like values ("gpt-4o", "utf-8")
    are the model's own vocabulary."""
    digits = sum(ch.isdigit() for ch in value)
    return len(value) >= 6 and (digits >= 2 or (digits >= 1 and any(ch.isupper() for ch in value)))


def used_before_produced(calls: Sequence[ToolCall], user_input: str | None,
                         known_text: str | Callable[[], str] = "") -> list[dict[str, Any]]:
    """Calls whose id-like argument values first appear in a later call's result (``used_before_produced``) or
    nowhere at all (``ungrounded_argument``: not in the user's input, the tool definitions ``known_text``, an
    earlier call's arguments or result, nor a later result). The second needs the input recorded."""
    ids = [list(dict.fromkeys(v for v in string_values(call.input_parameters) if id_like(v)))[:_MAX_VALUES]
           for call in calls]
    if not any(ids):  # most runs pass no id-like value
        return []
    if callable(known_text):  # the tool definitions' text: rendered only for the runs that need it
        known_text = known_text()
    results = [value_text(call.output) for call in calls]
    arguments = [value_text(call.input_parameters) for call in calls]
    given = user_input or ""
    if "," in given:
        given += "\n" + _THOUSANDS.sub("", given)  # "$10,000,000" holds the id-like "10000000" too
    # a call's ids can be said to come from nowhere only when everything before it is on record: the input,
    # and every earlier call's result or error
    recorded = [call.output is not None or bool(call.error) for call in calls]
    grounding = bool(given.strip())
    out: list[dict[str, Any]] = []
    for j, values in enumerate(ids):
        call = calls[j]
        for value in values:
            if contains_token(given, value) or any(contains_token(results[k], value) or contains_token(arguments[k], value)
                                              for k in range(j)):
                continue
            later = next((k for k in range(j + 1, len(calls)) if contains_token(results[k], value)), None)
            if later is not None:
                out.append({"type": SEQUENCE_ERROR, "subtype": "used_before_produced",
                            "rule": "sequence_error.provenance", "tool_name": call.name, "call_indices": (j, later),
                            "description": f"call #{j + 1} to {call.name!r} used {value!r}, which first appears in "
                                           f"the result of call #{later + 1} ({calls[later].name}), made after it",
                            "evidence": {"value": value, "used_by": j, "produced_by": later}})
            elif grounding and all(recorded[:j]) and _grounding_candidate(value) and not contains_token(known_text, value):
                out.append({"type": SEQUENCE_ERROR, "subtype": "ungrounded_argument",
                            "rule": "sequence_error.provenance", "tool_name": call.name, "call_indices": (j,),
                            "description": f"call #{j + 1} to {call.name!r} used {value!r}, which appears nowhere "
                                           "before it: not in the user's input, the tool definitions, nor any "
                                           "earlier call or result",
                            "evidence": {"value": value, "used_by": j}})
    return out
