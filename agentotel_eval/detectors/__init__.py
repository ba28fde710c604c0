"""Deterministic tool-use error detectors: what needs no model, found for free.

Pure functions over one run's data (``RunView``): its calls, the tools offered, the ``[[tools]]``
declarations, the final answer, the input, the system prompt and assistant text when recorded, and what trace
reconstruction found. No I/O, no litellm. The collector runs them on every agent run at ingest; the LLM judge
receives their findings as evidence. Each rule is one module under ``rules`` with its declaration
(``rule.Rule``: type, subtypes, the data it needs, severity, confidence), listed in ``registry.RULES``.

Call indices are 0-based positions in the call list (the ``seq`` of the ``tool_calls`` table); descriptions
say ``call #n`` with n = index + 1, as the judge's tool history does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentotel_eval.detectors.declarations import ToolRule
from agentotel_eval.detectors.finding import UNCERTAIN_BELOW, Finding
from agentotel_eval.detectors.registry import RULES, rules_for
from agentotel_eval.detectors.types import ERROR_TYPES, TABLE_ORDER
from agentotel_eval.detectors.view import RunView
from agentotel_eval.test_case import ToolCall, ToolDefinition

ToolsLike = Sequence[ToolDefinition | str | Mapping[str, Any]]


def definitions(available_tools: ToolsLike | None) -> list[ToolDefinition] | None:
    if available_tools is None:
        return None
    if type(available_tools) is list:  # the metric passes a list of definitions: no conversion per tool
        for t in available_tools:
            if type(t) is not ToolDefinition:
                break
        else:
            return available_tools
    elif isinstance(available_tools, str | bytes | Mapping):
        raise TypeError("available_tools must be a list of tool names or definitions")
    return [ToolDefinition.from_value(t) for t in available_tools]


def run_view(
    calls: Sequence[ToolCall],
    available_tools: ToolsLike | None = None,
    *,
    rules: Sequence[ToolRule] = (),
    answer: str | None = None,
    reconstruction: Mapping[str, Any] | None = None,
    user_input: str | None = None,
    system_prompt: str | None = "",
    assistant_texts: Sequence[str] = (),
    service: str | None = None,
    agent: str | None = None,
    started: dt.datetime | None = None,
) -> RunView:
    """One run's data as the rules read it (see ``RunView``); a text an exporter put in place of the content
    ("null", "__REDACTED__") is not recorded. ``system_prompt``: "" for none, None when
    it was not recorded."""
    return RunView(
        calls,
        definitions(available_tools),
        tuple(rules),
        recorded(answer),
        recorded(user_input),
        recorded(system_prompt) if system_prompt else system_prompt,
        tuple(assistant_texts),
        reconstruction,
        service,
        agent,
        started,
    )


#: what exporters write where the content was not recorded
_PLACEHOLDERS = frozenset(
    {
        "null",
        "none",
        "undefined",
        "nil",
        "__redacted__",
        "<redacted>",
        "[redacted]",
        "redacted",
        "[hidden]",
        "<hidden>",
        "__hidden__",
        "***",
        "[filtered]",
    }
)


def recorded(text: str | None) -> str | None:
    """The text, or None where it only holds an exporter's placeholder for content it did not record, or an
    empty structure (``{}``: a function's arguments when it had none)."""
    if text is None:
        return None
    stripped = text.strip()
    if (
        stripped.lower() in _PLACEHOLDERS
        or not stripped.strip("{}[]()\"' ,:")
        or stripped.replace(" ", "") in ('{"args":[],"kwargs":{}}', '{"kwargs":{},"args":[]}')
    ):
        return None
    return text


def detect_view(
    view: RunView, types: Iterable[str] | None = None, *, observe: bool = True, disabled: Iterable[str] = ()
) -> tuple[list[Finding], list[Finding]]:
    """The findings of the selected rules, ordered by first call index then type, and, with ``observe``, the
    low-severity observations (never part of a verdict)."""
    findings: list[Finding] = []
    observed: list[Finding] = []
    if not view.calls and not view.declarations:
        return findings, observed
    for rule in rules_for(types, disabled=disabled):
        if rule.observation and not observe:
            continue
        if rule.missing(view):
            continue
        try:
            found = rule.find(view)
        except (
            Exception
        ) as exc:  # a rule's bug must not cost the run its other rules, nor the collector its run
            view.failures.append(f"{rule.name} failed on this run ({type(exc).__name__}: {exc})"[:300])
            continue
        if rule.observation:
            observed += [_observation(f, rule.severity) for f in found]
        else:
            findings += found
    if len(findings) > 1:
        findings.sort(key=lambda f: (f.call_indices[0] if f.call_indices else -1, TABLE_ORDER.index(f.type)))
    return findings, observed


def _observation(found: Finding, severity: str) -> Finding:
    return Finding(
        found.type,
        found.description,
        found.tool_name,
        found.call_indices,
        found.argument,
        found.subtype,
        found.rule,
        found.evidence,
        severity,
        found.confidence,
    )


def detect(
    calls: Sequence[ToolCall],
    available_tools: ToolsLike | None = None,
    *,
    types: Iterable[str] | None = None,
    **run: Any,
) -> list[Finding]:
    """All findings of the selected detector ``types`` (default: all) on one run; ``run``: the rest of its
    data (``run_view``'s keywords: ``rules``, ``answer``, ``reconstruction``, ``user_input``, ...)."""
    return detect_view(run_view(calls, available_tools, **run), types, observe=False)[0]


def detect_and_observe(
    calls: Sequence[ToolCall],
    available_tools: ToolsLike | None = None,
    *,
    types: Iterable[str] | None = None,
    observe: bool = True,
    **run: Any,
) -> tuple[list[Finding], list[Finding]]:
    """``detect``'s findings and, with ``observe``, the low-severity observations."""
    return detect_view(run_view(calls, available_tools, **run), types, observe=observe)


def observations(
    calls: Sequence[ToolCall], *, types: Iterable[str] | None = None, answer: str | None = None, **run: Any
) -> list[Finding]:
    """Low-severity observations only: shown, never scored."""
    view = run_view(calls, answer=answer, **run)
    return [
        f
        for rule in rules_for(types)
        if rule.observation and not rule.missing(view)
        for f in (_observation(x, rule.severity) for x in rule.find(view))
    ]


def could_not_run_view(
    view: RunView, types: Iterable[str] | None = None, *, disabled: Iterable[str] = ()
) -> list[str]:
    """What the selected rules could not check on this run, and the data that was missing: a run that passes
    them has passed only what they could see."""
    if not view.calls:
        return []
    notes: list[str] = list(view.failures)
    for rule in rules_for(types, disabled=disabled):
        if rule.observation:
            continue
        notes += [f"{rule.label} could not run: {why}" for why in rule.missing(view) if why]
        if rule.unchecked is not None:
            notes += rule.unchecked(view)
    return list(dict.fromkeys(notes))


def could_not_run(
    calls: Sequence[ToolCall],
    available_tools: ToolsLike | None = None,
    *,
    types: Iterable[str] | None = None,
    **run: Any,
) -> list[str]:
    return could_not_run_view(run_view(calls, available_tools, **run), types)


__all__ = [
    "ERROR_TYPES",
    "RULES",
    "UNCERTAIN_BELOW",
    "Finding",
    "RunView",
    "ToolRule",
    "could_not_run",
    "could_not_run_view",
    "definitions",
    "detect",
    "detect_and_observe",
    "detect_view",
    "observations",
    "run_view",
]
