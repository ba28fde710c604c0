"""Every rule, in one list: what the detectors run, what ``could_not_run`` reports, what the judge's prompt,
the config's validation, ``calibrate``, the pages and docs/judge.md read. Adding a rule is one module under
``rules`` with its ``RULE`` declaration, listed here, and its test."""

from __future__ import annotations

from collections.abc import Iterable

from agentotel_eval.detectors.rule import Rule
from agentotel_eval.detectors.rules import (
    argument_rules,
    claimed_not_called,
    contradicts_result,
    false_success,
    not_offered,
    preconditions,
    provenance,
    repeated_calls,
    repeated_patterns,
    result_unused,
    retried_same_value,
    schema_violation,
    ungrounded,
    unmatched_calls,
)
from agentotel_eval.detectors.types import ERROR_TYPES

RULES: tuple[Rule, ...] = (
    not_offered.RULE,
    unmatched_calls.RULE,
    schema_violation.RULE,
    argument_rules.RULE,
    preconditions.RULE,
    provenance.RULE,
    ungrounded.RULE,
    repeated_calls.RULE,
    repeated_patterns.SAME_ERROR,
    repeated_patterns.LOOP,
    repeated_patterns.RETRY_STORM,
    retried_same_value.RULE,
    contradicts_result.RULE,
    false_success.RULE,
    claimed_not_called.RULE,
    result_unused.RULE,
)
BY_NAME = {rule.name: rule for rule in RULES}
if len(BY_NAME) != len(RULES) or any(rule.type not in ERROR_TYPES for rule in RULES):
    raise RuntimeError("every rule has a name of its own and one of the six error types")


def rules_for(types: Iterable[str] | None = None, *, disabled: Iterable[str] = ()) -> tuple[Rule, ...]:
    """The rules of these types (default: all), less the ``disabled`` ones (by rule name)."""
    wanted = set(ERROR_TYPES if types is None else types)
    off = set(disabled)
    return tuple(rule for rule in RULES if rule.type in wanted and rule.name not in off)


def subtypes() -> dict[str, tuple[str, ...]]:
    """Each error type's subtypes, as the rules declare them."""
    out: dict[str, list[str]] = {t: [] for t in ERROR_TYPES}
    for rule in RULES:
        out[rule.type] += [s for s in rule.subtypes if s not in out[rule.type]]
    return {t: tuple(s) for t, s in out.items()}


def check_rule_names(value: object) -> tuple[str, ...]:
    """A list of rule names (``[scoring] disabled_rules``), validated: ``ValueError``
    names the unknown ones."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"must be a list of rule names, got {value!r}")
    unknown = [v for v in value if v not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown rule(s) {unknown}; the rules are: {', '.join(BY_NAME)}")
    return tuple(value)
