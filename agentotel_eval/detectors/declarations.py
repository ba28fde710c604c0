"""Per-tool declarations for the deterministic detectors: the config's ``[[tools]]`` table.

```toml
[[tools]]
name = "book_hotel"
requires = ["search_hotels"]               # tools that must have succeeded before it is called
args = { nights = { "$gte" = 1, "$lte" = 30 }, hotel_id = { "$regex" = "H-\\d+" } }   # argument matchers
claims = "(?i)\\b(booked|reserved)\\b"      # how a final answer claims this tool's action
services = ["travel-*"]                    # only for runs of these services (globs; default: every run)
agents = ["planner"]                       # only for runs of these agents (globs; default: every run)
```

``name`` matches the names frameworks give the same tool: ``book_hotel`` also matches ``travel-book_hotel``
(a Semantic Kernel plugin's function), ``hotels__book_hotel`` (an MCP server's tool), ``functions.book_hotel``
and ``hotels/book_hotel``; a call whose exact name is declared is read with that declaration first.

``args`` take the trajectory spec's matchers (``$regex``, ``$in``, ``$gt``, ``$ref`` to another tool's latest
earlier call, ...): a call whose argument fails one is a ``parameter_error`` (subtype ``rule_violation``);
``requires`` makes a call with no earlier successful call of a required tool a ``sequence_error`` (subtype
``precondition``); ``claims`` is how an answer claims the tool's action, which ``error_handling`` checks
(``rules.false_success``, ``rules.claimed_not_called``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from agentotel_eval.trajectory.matchers import MAX_PATTERN_CHARS, Nested, SpecError, compile_keys

_KEYS = ("name", "requires", "args", "claims", "services", "agents")
#: what separates a tool's own name from the plugin, server or namespace a framework puts before it
_QUALIFIER = re.compile(r"(?:__|[-./:])")


@dataclass(frozen=True, slots=True)
class ToolRule:
    """One ``[[tools]]`` entry, read. ``written`` is the table it was read from."""

    name: str
    requires: tuple[str, ...] = ()
    args: Nested | None = None
    claims: Any = None  # a compiled pattern
    written: Mapping[str, Any] = field(default_factory=dict, compare=False)
    services: tuple[str, ...] = ()  # globs; empty: every service
    agents: tuple[str, ...] = ()  # globs; empty: every agent

    def applies_to(self, service: str | None, agent: str | None) -> bool:
        """Whether the declaration holds for a run of this service and agent (an unknown
        one matches no glob)."""
        return (not self.services or _matches(service, self.services)) and (
            not self.agents or _matches(agent, self.agents)
        )

    def __repr__(self) -> str:
        return f"ToolRule({dict(self.written)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # matchers are closures: a rule crosses a process boundary as its written form, read again there
        return _read_one, (dict(self.written), "tools")


def _read_one(value: Any, where: str) -> ToolRule:
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: a [[tools]] entry is a table with a name, got {value!r}")
    unknown = [k for k in value if k not in _KEYS]
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{where}.name must be a tool name, got {name!r}")
    requires = value.get("requires", [])
    if not isinstance(requires, list | tuple) or not all(isinstance(r, str) and r for r in requires):
        raise SpecError(f"{where}.requires must be a list of tool names, got {requires!r}")
    args = value.get("args")
    if args is not None and not isinstance(args, Mapping):
        raise SpecError(f"{where}.args must be a table of argument names to matchers, got {args!r}")
    claims = value.get("claims")
    pattern = None
    if claims is not None:
        if not isinstance(claims, str) or not claims or len(claims) > MAX_PATTERN_CHARS:
            raise SpecError(
                f"{where}.claims must be a regular expression of at most {MAX_PATTERN_CHARS} characters"
            )
        try:
            pattern = regex.compile(claims)
        except regex.error as exc:
            raise SpecError(f"{where}.claims is not a valid pattern ({exc})") from None
    scopes = [_globs(value.get(key), f"{where}.{key}") for key in ("services", "agents")]
    return ToolRule(
        name,
        tuple(requires),
        compile_keys(args, f"{where}.args", False) if args else None,
        pattern,
        dict(value),
        scopes[0],
        scopes[1],
    )


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not value or not all(isinstance(v, str) and v for v in value):
        raise SpecError(f"{where} must be a list of names or globs, got {value!r}")
    return tuple(value)


def _matches(name: str | None, globs: Sequence[str]) -> bool:
    return name is not None and any(fnmatch.fnmatchcase(name, glob) for glob in globs)


def parse_tool_rules(value: Any, where: str = "tools") -> tuple[ToolRule, ...]:
    """The config's ``[[tools]]`` list, read; a mistake is a ``SpecError`` naming where
    (``tools[1].args.n``)."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise SpecError(f"{where} must be a list of [[tools]] tables")
    rules = tuple(_read_one(v, f"{where}[{i}]") for i, v in enumerate(value))
    seen: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = set()
    for i, rule in enumerate(rules):
        key = (rule.name, rule.services, rule.agents)
        if key in seen:
            raise SpecError(
                f"{where}[{i}]: tool {rule.name!r} is declared twice for the same services and agents"
            )
        seen.add(key)
    return rules


def bare_name(name: str) -> str:
    """A tool's own name without what a framework put before it ("travel-get_weather" -> "get_weather")."""
    parts = _QUALIFIER.split(name)
    return parts[-1] if len(parts) > 1 and parts[-1] else name


def rules_by_tool(
    rules: Sequence[ToolRule],
    service: str | None = None,
    agent: str | None = None,
    called: Sequence[str] = (),
) -> dict[str, ToolRule]:
    """The declarations that hold for a run of ``service`` and ``agent``, by tool name: by the declared name,
    and by each ``called`` name that is the declared one with a plugin, server or namespace before it. The
    first declaration that holds for a name wins (write narrower scopes first)."""
    out: dict[str, ToolRule] = {}
    for rule in rules:
        if (rule.services or rule.agents) and not rule.applies_to(service, agent):
            continue
        out.setdefault(rule.name, rule)
    for name in called:
        if name not in out:
            found = out.get(bare_name(name))
            if found is not None:
                out[name] = found
    return out
