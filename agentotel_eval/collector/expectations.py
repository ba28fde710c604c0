"""Which tools a completed run was expected to call, which tool-correctness modes to score, and the trajectory
spec it should follow.

Each is looked up in the contract's order: the run span's attribute (``agentotel.eval.expected_tools``,
``agentotel.eval.expected_trajectory``); else the first matching ``[[expectations]]`` rule of the config that
has one; else a dataset file matched on the run's input. Expected tools and a trajectory are found
independently (a span may carry expected tools while a rule gives the spec). No expectation means the metrics
that need it do not run (they are not scored 0).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any

from agentotel_eval.collector.config_fields import Parsed
from agentotel_eval.metrics.registry import (
    TOOL_CORRECTNESS,
    TOOL_CORRECTNESS_EXACT,
    TOOL_CORRECTNESS_ORDERING,
    MetricDeclaration,
)
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory.matchers import SpecError
from agentotel_eval.trajectory.spec import (
    CONFIG_LIMITS,
    UNTRUSTED_LIMITS,
    SpecLimits,
    TrajectorySpec,
    parse_spec,
)

if TYPE_CHECKING:
    from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric

#: config name of a tool-correctness mode -> the metric that scores it
MODE_METRICS: Mapping[str, MetricDeclaration[ToolCorrectnessMetric]] = MappingProxyType(
    {"default": TOOL_CORRECTNESS, "exact": TOOL_CORRECTNESS_EXACT, "ordering": TOOL_CORRECTNESS_ORDERING}
)
#: tool-correctness modes, by config name
MODES = tuple(MODE_METRICS)
_WS = re.compile(r"\s+")
#: distinct span-attribute specs remembered (read once each); all forgotten when full
_SPEC_MEMORY = 1024


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
            raise ExpectationConfigError(
                _named(where, "expected_tools must be a list of tool names")
            ) from None
    if not isinstance(value, list | tuple) or not all(isinstance(t, str) for t in value):
        raise ExpectationConfigError(
            _named(where, f"expected_tools must be a list of tool names, got {value!r}")
        )
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


def parse_trajectory(
    value: Any, where: str = "trajectory", limits: SpecLimits = CONFIG_LIMITS
) -> TrajectorySpec:
    """A rule's or a dataset line's trajectory table (``ExpectationConfigError`` names where)."""
    try:
        return parse_spec(value, where, limits)
    except SpecError as exc:
        raise ExpectationConfigError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a run is expected to do: tools (for tool correctness), a trajectory spec, or both.

    ``source`` / ``trajectory_source`` say where each came from: "span_attribute", "rule:<name>" or
    "dataset:<file>:<line>". ``trajectory_error`` is set instead of a spec when the run's own attribute holds
    one that cannot be read (the trajectory metric reports it).
    """

    expected_tools: tuple[str, ...] | None
    modes: tuple[str, ...]
    source: str | None
    trajectory: TrajectorySpec | None = None
    trajectory_source: str | None = None
    trajectory_error: str | None = None
    #: the expected tools as calls, made once for every run that shares the expectation
    calls: tuple[ToolCall, ...] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        calls = None if self.expected_tools is None else tuple(ToolCall(name) for name in self.expected_tools)
        object.__setattr__(self, "calls", calls)

    def merged(self, other: Expectation | None) -> Expectation:
        """This expectation with the parts it lacks taken from ``other`` (a later source in the order)."""
        if other is None:
            return self
        tools = (
            (self.expected_tools, self.modes, self.source)
            if self.expected_tools is not None
            else (other.expected_tools, other.modes, other.source)
        )
        has_trajectory = self.trajectory is not None or self.trajectory_error is not None
        trajectory = (
            (self.trajectory, self.trajectory_source, self.trajectory_error)
            if has_trajectory
            else (other.trajectory, other.trajectory_source, other.trajectory_error)
        )
        return Expectation(*tools, *trajectory)

    @property
    def complete(self) -> bool:
        return self.expected_tools is not None and (
            self.trajectory is not None or self.trajectory_error is not None
        )


@dataclass(frozen=True, slots=True)
class ExpectationRule:
    """``[[expectations]]``: all given matchers must match (agent/service take shell globs). A rule gives
    expected tools, a ``trajectory`` table, or both."""

    expected_tools: Annotated[tuple[str, ...] | None, Parsed(parse_tools)] = None
    trajectory: Annotated[TrajectorySpec | None, Parsed(parse_trajectory)] = None
    agent: str | None = None
    service: str | None = None
    input_regex: Annotated[re.Pattern[str] | None, Parsed(parse_input_regex)] = None
    modes: Annotated[tuple[str, ...] | None, Parsed(parse_modes)] = None
    #: the config names a rule without a name by its position (``CollectorConfig.expectations``)
    name: str = ""

    def __post_init__(self) -> None:
        if self.expected_tools is None and self.trajectory is None:
            raise ValueError("expected_tools or a trajectory table is required")

    def matches(self, run: AgentRun) -> bool:
        if self.agent is not None and not fnmatch.fnmatchcase(run.agent_name or "", self.agent):
            return False
        if self.service is not None and not fnmatch.fnmatchcase(run.service_name or "", self.service):
            return False
        return self.input_regex is None or self.input_regex.search(run.input or "") is not None


@dataclass(frozen=True, slots=True)
class DatasetEntry:
    expected_tools: tuple[str, ...] | None
    modes: tuple[str, ...] | None
    trajectory: TrajectorySpec | None
    line: int

    def same(self, other: DatasetEntry) -> bool:
        spec, other_spec = self.trajectory, other.trajectory
        return (self.expected_tools, self.modes) == (other.expected_tools, other.modes) and (
            (spec.written if spec else None) == (other_spec.written if other_spec else None)
        )


@dataclass(frozen=True, slots=True)
class Dataset:
    """A JSONL file of ``{"input": ..., "expected_tools"?: [...], "modes"?: [...], "expected_trajectory"?:
    {...}}`` (at least one of the two expectations), indexed by normalised input. Other keys (a
    ``name``) are kept aside."""

    path: str
    by_input: Mapping[str, DatasetEntry]

    @classmethod
    def load(cls, path: str | Path) -> Dataset:
        entries: dict[str, DatasetEntry] = {}
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
            except RecursionError:
                raise ExpectationConfigError(f"{where}: nested too deep to read") from None
            if not isinstance(row, Mapping) or not isinstance(row.get("input"), str):
                raise ExpectationConfigError(f"{where}: each line needs a string 'input'")
            if "expected_tools" not in row and "expected_trajectory" not in row:
                raise ExpectationConfigError(
                    f"{where}: each line needs 'expected_tools' or 'expected_trajectory'"
                )
            tools = parse_tools(row["expected_tools"], where) if "expected_tools" in row else None
            modes = parse_modes(row["modes"], where) if "modes" in row else None
            spec = (
                parse_trajectory(
                    row["expected_trajectory"], f"{where}: expected_trajectory", UNTRUSTED_LIMITS
                )
                if "expected_trajectory" in row
                else None
            )
            entry = DatasetEntry(tools, modes, spec, number)
            key = normalise_input(row["input"])
            previous = entries.get(key)
            if previous is not None and not previous.same(entry):
                raise ExpectationConfigError(
                    f"{where}: the same input already has a different expectation on line {previous.line}"
                )
            entries.setdefault(key, entry)
        return cls(str(path), entries)

    def lookup(self, text: str | None) -> DatasetEntry | None:
        if text is None:
            return None
        return self.by_input.get(normalise_input(text))


class ExpectationFinder:
    """The expectation of a run, in the contract's order, for one configuration. A rule's Expectation is the
    same for every run it matches, so it is made once; a spec on a span is read once per distinct text."""

    __slots__ = ("_dataset", "_modes", "_rules", "_span_specs")

    def __init__(
        self,
        rules: Sequence[ExpectationRule] = (),
        dataset: Dataset | None = None,
        default_modes: tuple[str, ...] = MODES,
    ) -> None:
        self._rules = tuple(
            (
                rule,
                Expectation(
                    rule.expected_tools,
                    rule.modes or default_modes,
                    f"rule:{rule.name}" if rule.expected_tools is not None else None,
                    rule.trajectory,
                    f"rule:{rule.name}" if rule.trajectory is not None else None,
                ),
            )
            for rule in rules
        )
        self._dataset = dataset
        self._modes = default_modes
        self._span_specs: dict[str, TrajectorySpec | str] = {}  # attribute text -> spec, or why it is not one

    def _span_trajectory(self, text: str) -> tuple[TrajectorySpec | None, str | None]:
        known = self._span_specs.get(text)
        if known is None:
            try:
                known = parse_spec(text, "expected_trajectory", UNTRUSTED_LIMITS)
            except SpecError as exc:
                known = f"the run's expected_trajectory attribute is not a valid spec: {exc}"
            if len(self._span_specs) >= _SPEC_MEMORY:
                self._span_specs.clear()
            self._span_specs[text] = known
        return (known, None) if isinstance(known, TrajectorySpec) else (None, known)

    def find(self, run: AgentRun) -> Expectation | None:
        found: Expectation | None = None
        if run.expected_tools is not None or run.expected_trajectory is not None:
            spec, error = (
                self._span_trajectory(run.expected_trajectory) if run.expected_trajectory else (None, None)
            )
            found = Expectation(
                None if run.expected_tools is None else tuple(run.expected_tools),
                self._modes,
                "span_attribute" if run.expected_tools is not None else None,
                spec,
                "span_attribute" if run.expected_trajectory is not None else None,
                error,
            )
            if found.complete:
                return found
        for rule, expectation in self._rules:
            if rule.matches(run):
                found = found.merged(expectation) if found is not None else expectation
                if found.complete:
                    return found
        if self._dataset is not None:
            entry = self._dataset.lookup(run.input)
            if entry is not None:
                source = f"dataset:{Path(self._dataset.path).name}:{entry.line}"
                from_dataset = Expectation(
                    entry.expected_tools,
                    entry.modes or self._modes,
                    source if entry.expected_tools is not None else None,
                    entry.trajectory,
                    source if entry.trajectory is not None else None,
                )
                found = found.merged(from_dataset) if found is not None else from_dataset
        return found


def find_expectation(
    run: AgentRun,
    rules: Sequence[ExpectationRule] = (),
    dataset: Dataset | None = None,
    default_modes: tuple[str, ...] = MODES,
) -> Expectation | None:
    return ExpectationFinder(rules, dataset, default_modes).find(run)
