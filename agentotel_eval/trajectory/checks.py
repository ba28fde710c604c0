"""A run's calls checked against a spec's tool steps, once: what the alignment may pair, and
the report's checks.

Each call is checked against the tool steps of its tool (``check_keys``): a call may take a step unless a key
fails. The verdicts are kept, so the report shows the very checks the alignment decided on instead of running
the matchers again. A ``$ref`` to a step id depends on which call the alignment bound that id to: such a
step's checks are decided in the scan, and again for the report with the bindings it chose. Everything that
depends only on the spec (its tool steps by tool, the binding slots, the matchers' descriptions) is worked out
once per spec (``plan_of``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory.matchers import KeyOutcome, Ref, check_keys
from agentotel_eval.trajectory.spec import Step, TrajectorySpec

UNBOUND = -1
NOT_RECORDED = "not recorded"

#: one key's check: (key, verdict, reason); verdict True, False, or None (not recorded, so not decided)
RawCheck = tuple[str, KeyOutcome, str]


def result_value(call: ToolCall) -> Any:
    """A call's result as data: JSON text is parsed (tools often return JSON as a string)."""
    output = call.output
    if isinstance(output, str):
        text = output.strip()
        if text[:1] in ("{", "[", '"') or text in ("true", "false", "null") or text[:1].isdigit():
            try:
                return json.loads(text)
            except ValueError:
                return output
    return output


def value_at(data: Any, path: Sequence[str]) -> tuple[bool, Any]:
    """``(found, value)`` at a dotted path: object keys, or array indices written as numbers."""
    for part in path:
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        elif (
            isinstance(data, list | tuple)
            and part.lstrip("-").isdigit()
            and -len(data) <= int(part) < len(data)
        ):
            data = data[int(part)]
        else:
            return False, None
    return True, data


@dataclass(frozen=True, slots=True)
class KeyCheck:
    """One argument key of one call against its matcher."""

    key: str
    verdict: KeyOutcome  # True, False, or None: not recorded
    reason: str
    expected: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    """What checking needs from a spec alone, the same for every run (``plan_of``)."""

    steps: tuple[Step, ...]  # the tool steps, in written order (a step's index here is its leaf number)
    leaf_of: Mapping[int, int]  # id(step) -> leaf number
    by_tool: Mapping[str, tuple[int, ...]]  # tool name -> its tool steps' leaf numbers
    slot_of: Mapping[str, int]  # the binding slot of each step id a ``$ref`` names
    reads: Mapping[int, tuple[int, ...]]  # per leaf: the slots its matchers read
    forbid_by_tool: Mapping[str, tuple[Step, ...]]  # tool name -> its forbid rules, in written order
    expected: dict[
        int, Mapping[str, str]
    ]  # id(step) -> each matched key's matcher described, filled as needed


def plan_of(spec: TrajectorySpec) -> Plan:
    """The spec's ``Plan``, memoised on it."""
    known: Plan | None = spec.memo.get("plan")
    if known is None:
        steps = tuple(s for s in spec.root.walk() if s.kind == "tool")
        by_tool: dict[str, list[int]] = {}
        for k, step in enumerate(steps):
            by_tool.setdefault(step.tool or "", []).append(k)
        referenced = {r.target for step in steps for r in step.refs}
        ids = spec.ids
        slot_of = {name: k for k, name in enumerate(sorted(t for t in referenced if t in ids))}
        reads = {
            k: tuple(slot_of[r.target] for r in step.refs if r.target in slot_of)
            for k, step in enumerate(steps)
        }
        forbid: dict[str, list[Step]] = {}
        for rule in spec.forbid:
            forbid.setdefault(rule.tool or "", []).append(rule)
        known = spec.memo["plan"] = Plan(
            steps,
            {id(step): k for k, step in enumerate(steps)},
            {t: tuple(ks) for t, ks in by_tool.items()},
            slot_of,
            reads,
            {t: tuple(rules) for t, rules in forbid.items()},
            {},
        )
    return known


def expected_texts(plan: Plan, step: Step) -> Mapping[str, str]:
    """Each key ``step`` constrains, with its matcher described (what a check's ``expected`` shows)."""
    known = plan.expected.get(id(step))
    if known is None:
        known = plan.expected[id(step)] = {k: m.describe() for k, m in step.args.keys} if step.args else {}
    return known


class Checker:
    """A run's calls against the spec's tool steps. ``can[leaf][call]``: whether the call may take the step
    before any ``$ref`` to a step id is decided (those are undecided then, so they do not keep a call out)."""

    __slots__ = ("_latest", "_static", "calls", "can", "plan")

    def __init__(self, spec: TrajectorySpec, calls: Sequence[ToolCall]) -> None:
        plan = self.plan = plan_of(spec)
        self.calls = calls
        self._latest: dict[str, list[int]] = {}  # tool -> per call index, its latest earlier call (or -1)
        # the checks of each (leaf, call) of that leaf's tool, for leaves whose checks do
        # not depend on bindings
        self._static: dict[tuple[int, int], list[RawCheck]] = {}
        can = [[False] * len(calls) for _ in plan.steps]
        by_tool, steps, reads = plan.by_tool, plan.steps, plan.reads
        for j, call in enumerate(calls):
            for k in by_tool.get(call.name, ()):
                step = steps[k]
                if step.args is None:
                    can[k][j] = True
                    continue
                found = self.raw(step, j, None)
                if not reads[k]:
                    self._static[(k, j)] = found
                can[k][j] = all(verdict is not False for _, verdict, _ in found)
        self.can = tuple(tuple(row) for row in can)

    def latest_before(self, tool: str, j: int) -> int:
        table = self._latest.get(tool)
        if table is None:
            table, last = [], -1
            for k, call in enumerate(self.calls):
                table.append(last)
                if call.name == tool:
                    last = k
            self._latest[tool] = table
        return table[j] if j < len(table) else -1

    def resolver(
        self, j: int, bindings: Sequence[int] | None
    ) -> Callable[[Ref], tuple[KeyOutcome, Any, str]]:
        """Refs for call ``j``; with ``bindings`` None, refs to step ids are undecided (the static pass)."""
        slot_of = self.plan.slot_of

        def resolve(ref: Ref) -> tuple[KeyOutcome, Any, str]:
            slot = slot_of.get(ref.target)
            if slot is not None:
                if bindings is None:
                    return None, None, "depends on the alignment"
                source = bindings[slot]
                if source == UNBOUND:
                    return False, None, f"step {ref.target!r} took no call before this one"
            else:
                source = self.latest_before(ref.target, j)
                if source < 0:
                    return False, None, f"no earlier call of {ref.target}"
            call = self.calls[source]
            data = call.input_parameters if ref.part == "args" else result_value(call)
            if data is None:
                return (
                    None,
                    None,
                    f"the {'arguments' if ref.part == 'args' else 'result'} of call #{source + 1} "
                    f"({call.name}) {NOT_RECORDED}",
                )
            found, value = value_at(data, ref.path)
            if not found:
                return False, None, f"call #{source + 1} ({call.name}) has no {ref.part}.{'.'.join(ref.path)}"
            return True, value, ""

        return resolve

    def raw(self, step: Step, j: int, bindings: Sequence[int] | None) -> list[RawCheck]:
        """Each constrained key of call ``j`` against ``step``'s matchers; the checks of the static pass when
        they do not depend on the bindings."""
        if step.args is None:
            return []
        leaf = self.plan.leaf_of.get(id(step))
        if leaf is not None:
            known = self._static.get((leaf, j))
            if known is not None:
                return known
        params = self.calls[j].input_parameters
        if params is None:  # arguments not captured: nothing can be decided about them
            return [(k, None, f"arguments {NOT_RECORDED}") for k, _ in step.args.keys]
        if not isinstance(params, Mapping):
            params = {"": params}
        return check_keys(step.args.keys, params, step.args.strict, self.resolver(j, bindings))

    def checks(self, step: Step, j: int, bindings: Sequence[int] | None) -> list[KeyCheck]:
        """``raw`` with each matcher described."""
        expected = expected_texts(self.plan, step)
        return [KeyCheck(k, v, r, expected.get(k, "")) for k, v, r in self.raw(step, j, bindings)]

    def holds(self, step: Step, j: int, bindings: Sequence[int] | None) -> bool:
        """Whether no constrained key of call ``j`` fails ``step``'s matchers."""
        return all(verdict is not False for _, verdict, _ in self.raw(step, j, bindings))
