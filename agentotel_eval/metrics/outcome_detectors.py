"""Detectors that read what calls returned and what the agent answered: failures the agent kept repeating under
other arguments, retried with the value the error named, or claimed as successes. Pure over the calls, the final
answer and the ``[[tools]]`` declarations.

- ``repeated_failure`` beyond equal-argument streaks: ``same_error`` (one tool failing ``SAME_ERROR_RUN`` times in
  a row with the same error signature, its arguments changed), ``loop`` (the same successful call, equal
  arguments, ``LOOP_RUN`` times in a row), ``retry_storm`` (``STORM_FAILURES`` failed calls of one tool requested in
  one LLM turn).
- ``result_ignored`` (``retried_same_value``): a failed call whose error names one of its arguments (by name or by
  value), then the same tool called again, before any success, with that argument unchanged.
- ``result_ignored`` (``answer_contradicts_result``): the final answer states a number for something a successful
  call's result holds another number for (the answer names the result's key just before the number).
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
#: words that claim an action went through, whatever the action's verb
_SUCCESS_LEXICON = re.compile(r"(?i)\b(successfully|succeeded|confirmed|all set|done|went through|processed|"
                              r"(has|have) been|is now)\b")
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


_ANSWER_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w]|\.\d|,\d)")
#: a currency symbol before a number, or a unit right after it: an upper-case code ("EUR", "C"), or "%"
_UNIT_NUMBER = re.compile(r"([$€£¥])\s?(\d[\d,]*(?:\.\d+)?)|(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s?(°?[A-Z]{1,3}|%)(?![A-Za-z])")
_KEY_WORDS = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])")
_WINDOW = 48  # characters before a number in which the answer names what it is
_GENERIC_WORDS = frozenset({"the", "and", "for", "value", "data", "result", "item", "info", "number", "num", "type"})
_MAX_LEAVES = 400


def parsed_result(result: Any) -> Any:
    if isinstance(result, str) and result[:1] in "{[":
        try:
            return json.loads(result)
        except ValueError:
            return None
    return result


def unit_numbers(text: str) -> list[tuple[int, str, float]]:
    """Numbers written with their unit in text ("92.0 EUR", "18C", "$468", "12 %"): (position, unit, number)."""
    found = []
    for match in _UNIT_NUMBER.finditer(text):
        symbol, before, after, unit = match.groups()
        number = (before or after).replace(",", "")
        found.append((match.start(), symbol or unit, float(number)))
    return found


_DIGIT = re.compile(r"\d")


class RunValues:
    """A run's recorded values, each read once however many rules read it: every successful result's strings and
    numbers (one walk of its parsed value), and the numbers the answer states."""

    __slots__ = ("_answer", "_answer_numbers", "_argument_numbers", "_arguments", "_calls", "_result_numbers",
                 "_results", "answer")

    def __init__(self, calls: Sequence[ToolCall], answer: str | None) -> None:
        self._calls = calls
        self._results: dict[int, tuple[list[tuple[str, float]], list[str]]] = {}
        self._arguments: dict[int, tuple[list[tuple[str, float]], list[str]]] = {}
        self._result_numbers: dict[int, frozenset[float]] = {}
        self._argument_numbers: dict[int, frozenset[float]] = {}
        self._answer_numbers: frozenset[float] | None = None
        self.answer = answer
        self._answer: tuple[list[tuple[int, float]], list[tuple[int, str, float]]] | None = None

    def result(self, j: int) -> tuple[list[tuple[str, float]], list[str]]:
        """(the numbers of call j's result under the keys they sit under, numbers written with a unit in its texts
        under ``unit:<unit>``; its strings)."""
        return self._walked(self._results, j, self._calls[j].output)

    def arguments(self, j: int) -> tuple[list[tuple[str, float]], list[str]]:
        """The same of call j's arguments."""
        call = self._calls[j]
        return self._walked(self._arguments, j,
                            call.input_parameters if call.input_parameters is not None else call.raw_arguments)

    @staticmethod
    def _walked(cache: dict[int, tuple[list[tuple[str, float]], list[str]]], j: int,
                value: Any) -> tuple[list[tuple[str, float]], list[str]]:
        found = cache.get(j)
        if found is None:
            leaves: list[tuple[str, float]] = []
            strings: list[str] = []
            _walk(parsed_result(value), "", leaves, strings, 0)
            found = cache[j] = (leaves, strings)
        return found

    def numbers(self, of: str, j: int = -1) -> frozenset[float]:
        """The numbers, as ``norm_number`` writes them, of call j's "result" or "arguments", or of the "answer"."""
        if of == "answer":
            if self._answer_numbers is None:
                plain, with_units = self.stated()
                self._answer_numbers = frozenset([norm_number(n) for _, n in plain]
                                                 + [norm_number(n) for _, _, n in with_units])
            return self._answer_numbers
        cache = self._result_numbers if of == "result" else self._argument_numbers
        found = cache.get(j)
        if found is None:
            leaves = (self.result(j) if of == "result" else self.arguments(j))[0]
            found = cache[j] = frozenset([norm_number(n) for _, n in leaves])
        return found

    def stated(self) -> tuple[list[tuple[int, float]], list[tuple[int, str, float]]]:
        """The answer's plain numbers and its numbers with a unit (``answer_numbers``, ``unit_numbers``)."""
        if self._answer is None:
            text = self.answer or ""
            self._answer = (answer_numbers(text), unit_numbers(text))
        return self._answer


def _walk(value: Any, key: str, leaves: list[tuple[str, float]], strings: list[str], depth: int) -> None:
    kind = type(value)
    if kind is str:
        strings.append(value)
        if len(leaves) < _MAX_LEAVES and _DIGIT.search(value) is not None:
            leaves += [(f"unit:{unit}", number) for _, unit, number in unit_numbers(value)]
    elif kind is int or kind is float:
        if len(leaves) < _MAX_LEAVES:
            leaves.append((key, float(value)))
    elif depth > 8 or kind is bool or value is None or len(strings) + len(leaves) > 4 * _MAX_LEAVES:
        return
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _walk(v, str(k), leaves, strings, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            _walk(v, key, leaves, strings, depth + 1)


def _key_words(key: str) -> set[str]:
    words = {w.lower() for w in _KEY_WORDS.findall(key)}
    return {w for w in words if len(w) >= 3 and w not in _GENERIC_WORDS}


def answer_numbers(answer: str) -> list[tuple[int, float]]:
    found = []
    for match in _ANSWER_NUMBER.finditer(answer):
        whole = match.group(1).replace(",", "")
        found.append((match.start(), float(whole + (match.group(2) or ""))))
    return found


def norm_number(number: float) -> float:
    """A number as an answer would write it: sign aside, to the cent (results carry float noise: 0.35000000000000003)."""
    return round(abs(number), 2)


def _named_before(window: str, words: set[str]) -> bool:
    return any(re.search(rf"\b{re.escape(w)}(s|es)?\b", window) for w in words)


def _derived(stated: float, values: Sequence[float]) -> bool:
    """Whether a stated number is one the answer may have computed: the sum of all, or the sum or difference of
    two of them (a total, a price difference)."""
    if len(values) > 64:
        return False
    target = abs(stated)
    if abs(abs(sum(values)) - target) < 0.005:
        return True
    return any(abs(abs(a + b) - target) < 0.005 or abs(abs(a - b) - target) < 0.005
               for i, a in enumerate(values) for b in values[i + 1:])


def contradicted_results(calls: Sequence[ToolCall], fails: Sequence[bool], answer: str | None,
                         user_input: str | None = None, values: RunValues | None = None) -> list[dict[str, Any]]:
    """Numbers the final answer states for something a successful call's result gave another number for: the
    answer names the result's key ("the refund of $468" next to ``refund_amount: 486``), states no number any
    result or the input holds, and does not state the recorded one anywhere."""
    if not answer or not calls:
        return []
    values = values if values is not None else RunValues(calls, answer)
    stated, with_units = values.stated()
    if not stated and not with_units:
        return []
    stated = list(stated)
    leaves: list[tuple[int, str, float]] = []
    for j, call in enumerate(calls):
        if not fails[j] and call.output is not None:
            leaves += [(j, key, number) for key, number in values.result(j)[0] if key]
    if not leaves:
        return []
    # every number the answer states is a result's or an argument's: the usual, honest answer
    unexplained = values.numbers("answer").difference(
        *(values.numbers("result", j) for j, call in enumerate(calls) if not fails[j] and call.output is not None))
    if not unexplained or not unexplained.difference(*(values.numbers("arguments", j) for j in range(len(calls)))):
        return []
    from_results = {norm_number(number) for _, _, number in leaves}
    # numbers on record anywhere (results, the agent's own arguments, the input), signs aside: a refund of 414
    # is the -414 a payment history holds
    texts = [user_input or ""]
    for j, call in enumerate(calls):
        texts.append(_args_text(call))
        if not fails[j] and call.output is not None:
            texts.append(call.output if isinstance(call.output, str) else json.dumps(call.output, default=str))
    known = from_results
    for text in texts:
        known.update(norm_number(n) for _, n in answer_numbers(text))
    in_answer = {norm_number(n) for _, n in stated}
    lowered = answer.lower()
    words_of = {key: _key_words(key) for key in {key for _, key, _ in leaves}}
    out: list[dict[str, Any]] = []
    units = {position: f"unit:{unit}" for position, unit, _ in with_units}
    plain = {position for position, _ in stated}
    stated += [(position, number) for position, _, number in with_units
               if position not in plain and position + 1 not in plain]  # "18C": no plain number there
    for position, number in stated:
        if norm_number(number) in known:
            continue
        unit = units.get(position) or units.get(position - 1)  # "$468": the match starts at the symbol
        if unit is not None and any(key == unit for _, key, _ in leaves):
            named = [(j, key, value) for j, key, value in leaves if key == unit]
        else:
            window = lowered[max(0, position - _WINDOW):position]
            window = re.split(r"[.;!?]\s", window)[-1]  # the sentence the number is in
            named = [(j, key, value) for j, key, value in leaves
                     if not key.startswith("unit:") and _named_before(window, words_of[key])]
        if not named or any(norm_number(value) in in_answer for _, _, value in named):
            continue
        if _derived(number, [value for _, _, value in named]):
            continue
        j, key, value = named[-1]
        shown = f"{number:g}"
        key = key.removeprefix("unit:")
        out.append({"type": RESULT_IGNORED, "subtype": "answer_contradicts_result",
                    "rule": "result_ignored.answer_contradicts_result", "tool_name": calls[j].name,
                    "call_indices": (j,), "argument": key,
                    "description": f"the final answer states {shown} for {key!r}, but call #{j + 1} "
                                   f"({calls[j].name}) returned {key} = {value:g}",
                    "evidence": {"stated": number, "recorded": value, "key": key, "call": j}})
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
        if match is None and pattern is not None and rules.get(tool) is None:
            match = _SUCCESS_LEXICON.search(answer)  # an action tool's success in other words
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
