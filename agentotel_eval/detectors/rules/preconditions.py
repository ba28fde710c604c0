"""``sequence_error``/``precondition``: a call of a tool before any successful call of a tool its
``[[tools]]`` declaration ``requires`` (once per tool and requirement). Names compare by the tool's own name,
so a plugin's "travel-search_hotels" satisfies ``requires = ["search_hotels"]``."""

from __future__ import annotations

from agentotel_eval.detectors.declarations import bare_name
from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.types import SEQUENCE_ERROR
from agentotel_eval.detectors.view import RunView


def find(view: RunView) -> list[Finding]:
    rules = view.rules
    if not rules:
        return []
    calls = view.calls
    out: list[Finding] = []
    succeeded: set[str] = set()
    reported: set[tuple[str, str]] = set()
    for index, call in enumerate(calls):
        rule = rules.get(call.name)
        declared = rule.name if rule is not None else call.name
        for needed in rule.requires if rule is not None else ():
            if needed in succeeded or (call.name, needed) in reported:
                continue
            reported.add((call.name, needed))
            tried = [j for j in range(index) if bare_name(calls[j].name) == bare_name(needed)]
            why = (
                f"its earlier call(s) {', '.join(f'#{j + 1}' for j in tried)} failed"
                if tried
                else f"{needed!r} was not called before"
            )
            out.append(
                finding(
                    SEQUENCE_ERROR,
                    "precondition",
                    f"tools.{declared}.requires",
                    call.name,
                    (index, *tried),
                    f"call #{index + 1} to {call.name!r} needs a successful {needed!r} first: {why}",
                    {"requires": needed, "earlier_calls": tried},
                )
            )
        if call.status != "error":
            succeeded.update((call.name, bare_name(call.name)))
    return out


RULE = Rule(
    "sequence_error.precondition",
    SEQUENCE_ERROR,
    ("precondition",),
    "a call before any successful call of a tool its [[tools]] declaration requires",
    find,
)
