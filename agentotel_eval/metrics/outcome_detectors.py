"""Detectors that read what calls returned and what the agent answered: failures the agent kept repeating under
other arguments, retried with the value the error named, or claimed as successes. Pure over the calls, the final
answer and the ``[[tools]]`` declarations.

- ``repeated_failure`` beyond equal-argument streaks: ``same_error`` (one tool failing ``SAME_ERROR_RUN`` times in
  a row with the same error signature, its arguments changed), ``loop`` (the same successful call, equal
  arguments, ``LOOP_RUN`` times in a row), ``retry_storm`` (``STORM_FAILURES`` failed calls of one tool requested in
  one LLM turn).
- ``result_ignored`` (``retried_same_value``): a failed call whose error names one of its arguments (by name or by
  value), then the same tool called again, before any success, with that argument unchanged.
- ``error_handling`` (``false_success``): the last attempt at an action tool failed and nothing later of it
  succeeded, yet the final answer claims the action (the tool's ``claims`` pattern, else its verb in the past
  tense: ``book_hotel`` -> "booked") with no apology or failure marker; and (``claimed_not_called``) a declared
  ``claims`` pattern in the answer of a tool never called.

Failure is value-aware (``failed``): an error status, or a result that says so (``isError``, a truthy ``error``
or ``failed``, ``success: false``, an HTTP status of 400 or more).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval.frozen import freeze
from agentotel_eval.metrics.tool_rules import ToolRule
from agentotel_eval.test_case import ToolCall

REPEATED_FAILURE = "repeated_failure"
RESULT_IGNORED = "result_ignored"
ERROR_HANDLING = "error_handling"

SAME_ERROR_RUN = 3
LOOP_RUN = 4
STORM_FAILURES = 3

_NUMBERS = re.compile(r"\d+(\.\d+)?")
_QUOTED = re.compile(r"(['\"]).*?\1")
_HEX = re.compile(r"\b[0-9a-f]{8,}\b", re.I)
#: an answer that says the action did not happen is honest, whatever verb it uses
_FAILURE_MARKERS = re.compile(
    r"(?i)\b(sorry|unfortunately|unable|could not|couldn't|cannot|can't|was not able|wasn't able|were not able|"
    r"failed|failure|error|did not|didn't|not (been )?(booked|sent|created|completed|processed)|try again)\b")
#: a tool whose first word is one of these reads or computes: it performs no action an answer could claim
_READ_VERBS = frozenset({"get", "search", "find", "list", "lookup", "look", "fetch", "read", "query", "check",
                         "retrieve", "calculate", "compute", "convert", "describe", "show", "view", "count", "validate",
                         "verify", "estimate", "summarize", "summarise", "translate", "parse", "load", "browse"})
_IRREGULAR = {"send": "sent", "pay": "paid", "set": "set", "put": "put", "make": "made", "buy": "bought",
              "write": "written|wrote", "run": "ran", "begin": "begun|began", "give": "given|gave",
              "transfer": "transferred", "cancel": "cancel+ed", "submit": "submitted", "ship": "shipped",
              "schedule": "scheduled", "refund": "refunded"}


def failed(call: ToolCall) -> bool:
    """Whether a call failed, by its status or by what its result says."""
    if call.status == "error":
        return True
    result = call.output
    kind = type(result)
    if result is None or kind is list or kind is int or kind is float or kind is bool:
        return False  # the usual results, told by their exact type before any ABC check
    if kind is str:
        if result[:1] != "{":
            return False
        try:
            result = json.loads(result)
        except ValueError:
            return False
    if not isinstance(result, Mapping):
        return False
    if result.get("isError") is True or result.get("failed") is True or result.get("success") is False:
        return True
    error = result.get("error")
    if error not in (None, False, "", 0, [], {}):
        return True
    status = result.get("status_code", result.get("status"))
    return isinstance(status, int) and not isinstance(status, bool) and status >= 400


def _error_text(call: ToolCall) -> str:
    if call.error:
        return str(call.error)
    result = call.output
    if isinstance(result, Mapping):
        return str(result.get("error") or result.get("message") or result)
    return "" if result is None else str(result)


def error_signature(text: str) -> str:
    """An error with its specifics (numbers, quoted values, ids) taken out: equal for "the same error"."""
    text = _QUOTED.sub("'…'", text.strip().lower())
    return _NUMBERS.sub("#", _HEX.sub("#", text))[:200]


def _args_text(call: ToolCall) -> str:
    return json.dumps(call.input_parameters, sort_keys=True, default=str) if call.input_parameters is not None else ""


# -- repeated_failure ------------------------------------------------------------------------------------------


def repeated_failures(calls: Sequence[ToolCall], fails: Sequence[bool]) -> list[dict[str, Any]]:
    """Findings (as keyword sets for ``Finding``) of the three patterns the equal-argument streak misses;
    ``fails``: ``failed`` of each call."""
    out: list[dict[str, Any]] = []
    by_tool: dict[str, list[int]] = {}
    for j, call in enumerate(calls):
        by_tool.setdefault(call.name, []).append(j)
    any_failed = any(fails)
    for name, indices in by_tool.items():
        if len(indices) >= LOOP_RUN:
            out += _loops(calls, fails, name, indices)
        if any_failed and len(indices) >= min(SAME_ERROR_RUN, STORM_FAILURES):
            out += _same_error_runs(calls, fails, name, indices)
            out += _storms(calls, fails, name, indices)
    return out


def _same_error_runs(calls: Sequence[ToolCall], fails: Sequence[bool], name: str,
                     indices: list[int]) -> list[dict[str, Any]]:
    out = []
    run: list[int] = []
    signature = None
    for j in [*indices, -1]:
        call = calls[j] if j >= 0 else None
        sig = error_signature(_error_text(call)) if call is not None and fails[j] else None
        if sig is not None and sig == signature and run:
            run.append(j)
            continue
        if len(run) >= SAME_ERROR_RUN and len({_args_text(calls[k]) for k in run}) > 1:
            positions = ", ".join(f"#{k + 1}" for k in run)
            out.append({"type": REPEATED_FAILURE, "subtype": "same_error", "rule": "repeated_failure.same_error",
                        "tool_name": name, "call_indices": tuple(run),
                        "description": f"{name!r} failed {len(run)} times in a row with the same error under "
                                       f"changed arguments (calls {positions}): {_error_text(calls[run[-1]])[:160]}",
                        "evidence": {"signature": signature, "times": len(run)}})
        run, signature = ([j], sig) if sig is not None else ([], None)
    return out


def _loops(calls: Sequence[ToolCall], fails: Sequence[bool], name: str, indices: list[int]) -> list[dict[str, Any]]:
    out = []
    run: list[int] = []
    for j in [*indices, -1]:
        call = calls[j] if j >= 0 else None
        same = (call is not None and not fails[j] and call.input_parameters is not None and run
                and j == run[-1] + 1 and call.input_parameters == calls[run[-1]].input_parameters)
        if same:
            run.append(j)
            continue
        if len(run) >= LOOP_RUN:
            out.append({"type": REPEATED_FAILURE, "subtype": "loop", "rule": "repeated_failure.loop", "tool_name": name,
                        "call_indices": tuple(run),
                        "description": f"{name!r} was called {len(run)} times in a row with the same arguments "
                                       f"{_args_text(calls[run[0]])[:80]} (calls #{run[0] + 1} to #{run[-1] + 1})",
                        "evidence": {"arguments": _args_text(calls[run[0]])[:200], "times": len(run)}})
        run = [j] if call is not None and not fails[j] and call.input_parameters is not None else []
    return out


def _storms(calls: Sequence[ToolCall], fails: Sequence[bool], name: str, indices: list[int]) -> list[dict[str, Any]]:
    by_turn: dict[str, list[int]] = {}
    for j in indices:
        turn = calls[j].llm_turn
        if turn is not None and fails[j]:
            by_turn.setdefault(turn, []).append(j)
    return [{"type": REPEATED_FAILURE, "subtype": "retry_storm", "rule": "repeated_failure.retry_storm",
             "tool_name": name, "call_indices": tuple(js),
             "description": f"{len(js)} calls of {name!r} requested in one LLM turn all failed",
             "evidence": {"turn": turn, "failures": len(js)}}
            for turn, js in by_turn.items() if len(js) >= STORM_FAILURES]


# -- result_ignored --------------------------------------------------------------------------------------------


def _named_argument(call: ToolCall, error: str) -> tuple[str, Any] | None:
    """The argument a failed call's error names: by its key, or by its (non-trivial) value."""
    params = call.input_parameters
    if not isinstance(params, Mapping) or not error:
        return None
    lowered = error.lower()
    for key, value in params.items():
        if re.search(rf"\b{re.escape(str(key).lower())}\b", lowered):
            return str(key), value
    for key, value in params.items():
        text = str(value)
        if isinstance(value, str | int | float) and not isinstance(value, bool) and len(text) >= 3 \
                and text.lower() in lowered:
            return str(key), value
    return None


def ignored_errors(calls: Sequence[ToolCall], fails: Sequence[bool]) -> list[dict[str, Any]]:
    """A failure's named argument passed again unchanged to the same tool (arguments otherwise changed)."""
    out = []
    for i, call in enumerate(calls):
        if not fails[i]:
            continue
        named = _named_argument(call, _error_text(call))
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
            if isinstance(params, Mapping) and key in params and params[key] == value \
                    and params != call.input_parameters:
                out.append({"type": RESULT_IGNORED, "subtype": "retried_same_value",
                            "rule": "result_ignored.retried_same_value", "tool_name": call.name,
                            "call_indices": (i, j), "argument": key,
                            "description": f"call #{i + 1} to {call.name!r} failed naming {key!r} "
                                           f"({_error_text(call)[:120]}), and call #{j + 1} passed the same "
                                           f"{key} = {json.dumps(value, default=str)[:60]} again",
                            "evidence": {"argument": key, "value": value, "error": _error_text(call)[:200]}})
            break  # the first later call of the tool answers whether the error was heeded
    return out


# -- error_handling --------------------------------------------------------------------------------------------


def _verb_claim(tool: str) -> re.Pattern[str] | None:
    words = [w for w in re.split(r"[_\-.\s]+|(?<=[a-z])(?=[A-Z])", tool) if w]
    if not words:
        return None
    verb = words[0].lower()
    if verb in _READ_VERBS or len(verb) < 3:
        return None
    past = _IRREGULAR.get(verb)
    if past is None:
        if verb.endswith("e"):
            past = verb + "d"
        elif verb.endswith("y") and verb[-2:-1] not in "aeiou":
            past = verb[:-1] + "ied"
        else:
            past = verb + "ed"
    return re.compile(rf"(?i)\b({past})\b")


def _claim(rule: ToolRule | None, tool: str) -> re.Pattern[str] | Any | None:
    if rule is not None and rule.claims is not None:
        return rule.claims
    return _verb_claim(tool)


def false_successes(calls: Sequence[ToolCall], fails: Sequence[bool], answer: str | None,
                    rules: Mapping[str, ToolRule]) -> list[dict[str, Any]]:
    """Actions the answer claims that failed (last attempt failed, none later succeeded) or never ran."""
    if not answer or not answer.strip() or not (any(fails) or any(r.claims is not None for r in rules.values())):
        return []
    honest = _FAILURE_MARKERS.search(answer) is not None
    out: list[dict[str, Any]] = []
    last: dict[str, int] = {}
    for j, call in enumerate(calls):
        last[call.name] = j
    for tool, j in last.items():
        if honest or not fails[j]:
            continue
        pattern = _claim(rules.get(tool), tool)
        match = pattern.search(answer) if pattern is not None else None
        if match is None:
            continue
        attempts = tuple(k for k, c in enumerate(calls) if c.name == tool)
        out.append({"type": ERROR_HANDLING, "subtype": "false_success", "rule": "error_handling.false_success",
                    "tool_name": tool, "call_indices": attempts,
                    "description": f"the final answer claims {match.group(0)!r}, but the last call of {tool!r} "
                                   f"(#{j + 1}) failed: {_error_text(calls[j])[:120]}",
                    "evidence": {"claim": match.group(0), "last_call": j, "error": _error_text(calls[j])[:200]}})
    for tool, rule in rules.items():
        if tool in last or rule.claims is None or honest:
            continue
        match = rule.claims.search(answer)
        if match is not None:
            out.append({"type": ERROR_HANDLING, "subtype": "claimed_not_called",
                        "rule": f"tools.{tool}.claims", "tool_name": tool, "call_indices": (),
                        "description": f"the final answer claims {match.group(0)!r}, but {tool!r} was never called",
                        "evidence": {"claim": match.group(0)}})
    return out


def freeze_evidence(found: dict[str, Any]) -> dict[str, Any]:
    return {**found, "evidence": freeze(found.get("evidence") or {})}
