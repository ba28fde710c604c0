"""``parameter_error``/``rule_violation``: an argument failing the matcher its tool's ``[[tools]]``
declaration gives it (``args = { nights = { "$gte" = 1 } }``). A ``$ref`` names a tool: the value its latest
earlier call produced. Arguments not recorded, or not an object, are not checked (the schema rule
reports the latter)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.schemas import arguments_of, preview
from agentotel_eval.detectors.types import PARAMETER_ERROR
from agentotel_eval.detectors.view import RunView
from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory.align import result_value, value_at
from agentotel_eval.trajectory.matchers import Ref, Refs, check_keys


def find(view: RunView) -> list[Finding]:
    rules = view.rules
    if not rules:
        return []
    out: list[Finding] = []
    calls = view.calls
    for index, call in enumerate(calls):
        rule = rules.get(call.name)
        if rule is None or rule.args is None:
            continue
        present, instance, _problem = arguments_of(call)
        if not present or not isinstance(instance, dict):
            continue
        matchers = dict(rule.args.keys)
        for key, verdict, reason in check_keys(
            rule.args.keys, instance, False, latest_call_refs(calls, index)
        ):
            if verdict is not False:
                continue
            out.append(
                finding(
                    PARAMETER_ERROR,
                    "rule_violation",
                    f"tools.{rule.name}.args.{key}",
                    call.name,
                    (index,),
                    f"call #{index + 1} to {call.name!r}: argument {key!r}: {reason}",
                    {
                        "value": preview(instance.get(key)),
                        "expected": matchers[key].describe(),
                        "reason": reason,
                    },
                    argument=key,
                )
            )
    return out


def latest_call_refs(calls: Sequence[ToolCall], index: int) -> Refs:
    """``$ref`` in a tool declaration names a tool: the value its latest call before ``index`` produced."""

    def resolve(ref: Ref) -> tuple[bool | None, Any, str]:
        source = next((j for j in range(index - 1, -1, -1) if calls[j].name == ref.target), None)
        if source is None:
            return False, None, f"no earlier call of {ref.target}"
        call = calls[source]
        data = call.input_parameters if ref.part == "args" else result_value(call)
        if data is None:
            return None, None, f"the {ref.part} of call #{source + 1} were not recorded"
        found, value = value_at(data, ref.path)
        return (
            (True, value, "")
            if found
            else (False, None, f"call #{source + 1} has no {ref.part}.{'.'.join(ref.path)}")
        )

    return resolve


RULE = Rule(
    "parameter_error.rule_violation",
    PARAMETER_ERROR,
    ("rule_violation",),
    "an argument failing the matcher its [[tools]] declaration gives it",
    find,
)
