"""``invalid_function``/``not_offered``: a call of a tool the run did not offer the model.

A tool counts as offered when it is in the recorded tool list (names compare exactly: the list and the calls
come from one framework, which names the tool the same way in both), or when the system prompt names it:
frameworks offer some tools through the prompt (smolagents lists managed agents there as team members).
Unknown availability (the tool list not recorded) finds nothing; an empty list means the agent had no tools,
and every call is one.
"""

from __future__ import annotations

import difflib

from agentotel_eval.detectors.finding import Finding, finding
from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.types import INVALID_FUNCTION
from agentotel_eval.detectors.view import RunView, mentions


def find(view: RunView) -> list[Finding]:
    if view.tools is None:
        return []
    names = [t.name for t in view.tools]
    known = set(names)
    prompt = (view.system_prompt or "").lower()
    out = []
    for index, call in enumerate(view.calls):
        if call.name in known:
            continue
        if prompt and mentions(prompt, call.name.lower()):
            continue  # offered through the prompt
        close = difflib.get_close_matches(call.name, names, n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        offered = sorted(set(names))
        out.append(
            finding(
                INVALID_FUNCTION,
                "not_offered",
                "invalid_function.not_offered",
                call.name,
                (index,),
                f"call #{index + 1} invokes {call.name!r}, which is not an available tool "
                f"(available: {', '.join(offered[:20]) or 'none'}){hint}",
                {"called": call.name, "offered": offered[:20], "closest": close[0] if close else None},
            )
        )
    return out


RULE = Rule(
    "invalid_function.not_offered",
    INVALID_FUNCTION,
    ("not_offered",),
    "a call of a tool that is not among the tools offered to the model (nor named in its system prompt)",
    find,
    needs=("tools",),
    severity="high",
)
