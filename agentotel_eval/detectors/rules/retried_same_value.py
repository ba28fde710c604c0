"""``result_ignored``/``retried_same_value``: a failed call whose error names one of its arguments (by name,
or by a value of three characters or more), then the next call of that tool passing that argument unchanged
while changing others (all unchanged is a ``repeated_failure``)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentotel_eval.detectors.failure import error_text
from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.types import RESULT_IGNORED
from agentotel_eval.detectors.view import RunView
from agentotel_eval.test_case import ToolCall


def _named_argument(call: ToolCall, error: str) -> tuple[str, Any] | None:
    params = call.input_parameters
    if not isinstance(params, dict | Mapping) or not error:
        return None
    lowered = error.lower()
    for key, value in params.items():
        if re.search(rf"\b{re.escape(str(key).lower())}\b", lowered):
            return str(key), value
    for key, value in params.items():
        text = str(value)
        if (
            isinstance(value, str | int | float)
            and not isinstance(value, bool)
            and len(text) >= 3
            and text.lower() in lowered
        ):
            return str(key), value
    return None


def find(view: RunView) -> list[Finding]:
    calls, fails = view.calls, view.fails
    if not any(fails):
        return []
    out = []
    for i, call in enumerate(calls):
        if not fails[i]:
            continue
        named = _named_argument(call, error_text(call))
        if named is None:
            continue
        key, value = named
        for j in range(i + 1, len(calls)):
            later = calls[j]
            if later.name != call.name:
                continue
            if not fails[j] and later.input_parameters is None:
                break
            params = later.input_parameters
            if (
                isinstance(params, dict | Mapping)
                and key in params
                and params[key] == value
                and params != call.input_parameters
            ):
                out.append(
                    finding(
                        RESULT_IGNORED,
                        "retried_same_value",
                        "result_ignored.retried_same_value",
                        call.name,
                        (i, j),
                        f"call #{i + 1} to {call.name!r} failed naming {key!r} "
                        f"({error_text(call)[:120]}), and call #{j + 1} passed the same {key} = "
                        f"{json.dumps(value, default=str)[:60]} again",
                        {"argument": key, "value": value, "error": error_text(call)[:200]},
                        argument=key,
                    )
                )
            break  # the first later call of the tool answers whether the error was heeded
    return out


RULE = Rule(
    "result_ignored.retried_same_value",
    RESULT_IGNORED,
    ("retried_same_value",),
    "a failed call's error names an argument, and the next call of the tool passes it unchanged",
    find,
    needs=("results",),
)
