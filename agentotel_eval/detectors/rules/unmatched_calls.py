"""``invalid_function`` from trace reconstruction: a call the model requested that never ran
(``requested_not_executed``), one that ran with no request in any LLM output (``executed_not_requested``), and
a call of a tool offered on some turn but not on the LLM turn that requested it (``not_offered_on_turn``).

A request and an execution that reconstruction could not pair by id (an instrumentation that records its own
run id on the tool span) are one call when they have the same tool, the same arguments where both are
recorded, and the same order: they are not reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval.detectors.declarations import bare_name
from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.types import INVALID_FUNCTION
from agentotel_eval.detectors.view import RunView
from agentotel_eval.frozen import thaw
from agentotel_eval.test_case import ToolCall


def find(view: RunView) -> list[Finding]:
    found = view.reconstruction
    if not found:
        return []
    calls = view.calls
    out: list[Finding] = []
    by_turn = found.get("offered_by_turn")
    if isinstance(by_turn, Mapping) and by_turn:
        out += _not_offered_on_turn(calls, by_turn)
    requests = [r for r in found.get("requests_without_execution") or () if isinstance(r, Mapping)]
    lonely = [
        j for j in found.get("executions_without_request") or () if isinstance(j, int) and 0 <= j < len(calls)
    ]
    requests, lonely = _unpaired(calls, requests, lonely)
    for request in requests:
        name = str(request.get("name") or "?")
        out.append(
            finding(
                INVALID_FUNCTION,
                "requested_not_executed",
                "invalid_function.requested_not_executed",
                name,
                (),
                f"the model requested {name!r} (call id {request.get('call_id') or '?'}) but no execution of "
                f"it was recorded",
                dict(request),
            )
        )
    for j in lonely:
        out.append(
            finding(
                INVALID_FUNCTION,
                "executed_not_requested",
                "invalid_function.executed_not_requested",
                calls[j].name,
                (j,),
                f"call #{j + 1} to {calls[j].name!r} ran, but no LLM output requested it",
                {"call_id": calls[j].call_id, "span_id": calls[j].span_id},
            )
        )
    return out


def _same_arguments(request: Mapping[str, Any], call: ToolCall) -> bool:
    if "arguments" not in request or call.input_parameters is None:
        return True  # not recorded on one side: the name and the order decide
    return thaw(request["arguments"]) == thaw(call.input_parameters)


def _unpaired(
    calls: Sequence[ToolCall], requests: list[Mapping[str, Any]], lonely: list[int]
) -> tuple[list[Mapping[str, Any]], list[int]]:
    """The requests and executions left once each request is paired with the first unpaired execution of the
    same tool and arguments, in order (the pairing reconstruction makes by id, made here by content)."""
    if not requests or not lonely:
        return requests, lonely
    left = list(lonely)
    kept = []
    for request in requests:
        name = bare_name(str(request.get("name") or ""))
        match = next(
            (j for j in left if bare_name(calls[j].name) == name and _same_arguments(request, calls[j])), None
        )
        if match is None:
            kept.append(request)
        else:
            left.remove(match)
    return kept, left


def _not_offered_on_turn(calls: Sequence[ToolCall], by_turn: Mapping[str, Any]) -> list[Finding]:
    everywhere = {name for names in by_turn.values() for name in names}
    out = []
    for index, call in enumerate(calls):
        offered = by_turn.get(call.llm_turn) if call.llm_turn is not None else None
        if offered is None or call.name in offered or call.name not in everywhere:
            continue  # unknown turn, offered, or offered on no turn (not_offered says so)
        out.append(
            finding(
                INVALID_FUNCTION,
                "not_offered_on_turn",
                "invalid_function.not_offered_on_turn",
                call.name,
                (index,),
                f"call #{index + 1} invokes {call.name!r}, which the turn that requested it did not offer "
                f"(that turn offered: {', '.join(list(offered)[:20]) or 'none'})",
                {"called": call.name, "turn": call.llm_turn, "offered": list(offered)[:20]},
            )
        )
    return out


RULE = Rule(
    "invalid_function.requested_not_executed",
    INVALID_FUNCTION,
    ("requested_not_executed", "executed_not_requested", "not_offered_on_turn"),
    "a call the model requested that never ran, one that ran unrequested, or a tool its turn did not offer",
    find,
    severity="high",
    label="invalid_function (reconstruction)",
)
