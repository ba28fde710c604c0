"""Which tools a completed run was expected to call, and which tool-correctness modes to score.

Looked up in the contract's order: the run span's ``agentotel.eval.expected_tools`` attribute; else the first
matching ``[[expectations]]`` rule of the config; else a dataset file matched on the run's input. No expectation
means the tool-correctness metrics do not run (they are not scored 0).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from agentotel_eval.collector.config_fields import Parsed
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.test_case import ToolCall

#: tool-correctness modes, by config name
MODES = ("default", "exact", "ordering")
_WS = re.compile(r"\s+")


class ExpectationConfigError(ValueError):
    """An invalid expectation rule or dataset; the message names the rule index / file line."""


def normalise_input(text: str) -> str:
    """Inputs match exactly after collapsing runs of whitespace and trimming the ends."""
    return _WS.sub(" ", text).strip()


def _named(where: str, message: str) -> str:
    return f"{where}: {message}" if where else message


def parse_tools(value: Any, where: str = "") -> tuple[str, ...]:
    """Tool names from a list, or from a JSON array in a string (a span attribute's form)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ExpectationConfigError(_named(where, "expected_tools must be a list of tool names")) from None
    if not isinstance(value, list | tuple) or not all(isinstance(t, str) for t in value):
        raise ExpectationConfigError(_named(where, f"expected_tools must be a list of tool names, got {value!r}"))
    return tuple(value)


def parse_modes(value: Any, where: str = "") -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not value:
        raise ExpectationConfigError(_named(where, f"modes must be a non-empty list of {list(MODES)}"))
    bad = [m for m in value if m not in MODES]
    if bad:
        raise ExpectationConfigError(_named(where, f"unknown mode(s) {bad}; expected some of {list(MODES)}"))
    return tuple(dict.fromkeys(value))


def parse_input_regex(value: Any) -> re.Pattern[str]:
    if not isinstance(value, str):
        raise ExpectationConfigError(f"expected a regular expression in a string, got {value!r}")
    try:
        return re.compile(value, re.DOTALL)
    except re.error as exc:
        raise ExpectationConfigError(f"not a valid regex: {exc}") from None


@dataclass(frozen=True, slots=True)
class Expectation:
    expected_tools: tuple[str, ...]
    modes: tuple[str, ...]
    source: str  # "span_attribute" | "rule:<name>" | "dataset:<file>:<line>"
    #: the expected tools as calls, made once for every run that shares the expectation
    calls: tuple[ToolCall, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(ToolCall(name) for name in self.expected_tools))


@dataclass(frozen=True, slots=True)
class ExpectationRule:
    """``[[expectations]]``: all given matchers must match (agent/service take shell globs)."""

    expected_tools: Annotated[tuple[str, ...], Parsed(parse_tools)]
    agent: str | None = None
    service: str | None = None
    input_regex: Annotated[re.Pattern[str] | None, Parsed(parse_input_regex)] = None
    modes: Annotated[tuple[str, ...] | None, Parsed(parse_modes)] = None
    #: the config names a rule without a name by its position (``CollectorConfig.expectations``)
    name: str = ""

    def matches(self, run: AgentRun) -> bool:
        if self.agent is not None and not fnmatch.fnmatchcase(run.agent_name or "", self.agent):
            return False
        if self.service is not None and not fnmatch.fnmatchcase(run.service_name or "", self.service):
            return False
        return self.input_regex is None or self.input_regex.search(run.input or "") is not None


@dataclass(frozen=True, slots=True)
class Dataset:
    """A JSONL file of ``{"input": ..., "expected_tools": [...], "modes"?: [...]}``, indexed by normalised input."""

    path: str
    by_input: Mapping[str, tuple[tuple[str, ...], tuple[str, ...] | None, int]]

    @classmethod
    def load(cls, path: str | Path) -> Dataset:
        entries: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None, int]] = {}
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ExpectationConfigError(f"dataset {path}: {exc.strerror or exc}") from None
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"dataset {path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ExpectationConfigError(f"{where}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, Mapping) or not isinstance(row.get("input"), str):
                raise ExpectationConfigError(f"{where}: each line needs a string 'input'")
            tools = parse_tools(row.get("expected_tools"), where)
            modes = parse_modes(row["modes"], where) if "modes" in row else None
            key = normalise_input(row["input"])
            previous = entries.get(key)
            if previous is not None and previous[:2] != (tools, modes):
                raise ExpectationConfigError(
                    f"{where}: the same input already has different expected tools on line {previous[2]}"
                )
            entries.setdefault(key, (tools, modes, number))
        return cls(str(path), entries)

    def lookup(self, text: str | None) -> tuple[tuple[str, ...], tuple[str, ...] | None, int] | None:
        if text is None:
            return None
        return self.by_input.get(normalise_input(text))


class ExpectationFinder:
    """The expectation of a run, in the contract's order, for one configuration. A rule's Expectation is the same
    for every run it matches, so it is made once."""

    __slots__ = ("_dataset", "_modes", "_rules")

    def __init__(self, rules: Sequence[ExpectationRule] = (), dataset: Dataset | None = None,
                 default_modes: tuple[str, ...] = MODES) -> None:
        self._rules = tuple(
            (rule, Expectation(rule.expected_tools, rule.modes or default_modes, f"rule:{rule.name}")) for rule in rules
        )
        self._dataset = dataset
        self._modes = default_modes

    def find(self, run: AgentRun) -> Expectation | None:
        if run.expected_tools is not None:
            return Expectation(tuple(run.expected_tools), self._modes, "span_attribute")
        for rule, expectation in self._rules:
            if rule.matches(run):
                return expectation
        if self._dataset is not None:
            found = self._dataset.lookup(run.input)
            if found is not None:
                tools, modes, line = found
                return Expectation(tools, modes or self._modes, f"dataset:{Path(self._dataset.path).name}:{line}")
        return None


def find_expectation(run: AgentRun, rules: Sequence[ExpectationRule] = (), dataset: Dataset | None = None,
                     default_modes: tuple[str, ...] = MODES) -> Expectation | None:
    return ExpectationFinder(rules, dataset, default_modes).find(run)
