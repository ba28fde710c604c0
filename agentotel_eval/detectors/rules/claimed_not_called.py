"""``error_handling``/``claimed_not_called``: the final answer claims the action of a tool that was never
called: its ``claims`` pattern from ``[[tools]]`` matches a clause of the answer that does not
say something failed."""

from __future__ import annotations

from agentotel_eval.detectors.declarations import bare_name
from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.types import ERROR_HANDLING
from agentotel_eval.detectors.view import RunView


def find(view: RunView) -> list[Finding]:
    if not view.declarations or not (view.answer or "").strip():
        return []
    called = {bare_name(c.name) for c in view.calls} | {c.name for c in view.calls}
    text = view.answer_reading.text
    out = []
    seen: set[str] = set()
    for rule in view.rules.values():
        if rule.claims is None or rule.name in called or rule.name in seen:
            continue
        seen.add(rule.name)
        for clause in view.answer_clauses:
            if clause.discloses:
                continue
            match = rule.claims.search(text[clause.start : clause.end])
            if match is not None:
                out.append(
                    finding(
                        ERROR_HANDLING,
                        "claimed_not_called",
                        f"tools.{rule.name}.claims",
                        rule.name,
                        (),
                        f"the final answer claims {match.group(0)!r}, but {rule.name!r} was never called",
                        {"claim": match.group(0)},
                    )
                )
                break
    return out


RULE = Rule(
    "error_handling.claimed_not_called",
    ERROR_HANDLING,
    ("claimed_not_called",),
    "the final answer claims the action of a declared tool that was never called",
    find,
    needs=("answer",),
)
