"""The exact alignment of a run's calls to a trajectory spec.

The spec is compiled into a small automaton: a tool step takes one call; ``steps`` runs its members in order
(a member may be skipped, the calls between members are extra); ``unordered`` and ``parallel`` advance any
member, so members interleave; ``any_of`` commits to the alternative that takes its first call; ``count``
repeats a step. The calls are read once, in order, and for every reachable automaton state the best value so
far is kept (dynamic programming over states), so the optimum is exact, never greedy.

The value of an alignment is, in this order of importance: the matched weight, fewer ``parallel`` groups split
over LLM turns, fewer extra calls. Weights are exact rationals turned into integers over a common denominator,
so equal optima are truly equal and the tie-breaks decide.

A ``$ref`` to a step id depends on which call the alignment gave that step, so the ids that are referenced are
part of the state (the call each is bound to); a ``$ref`` to a tool name reads that tool's latest earlier call.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory.matchers import Ref, Verdict, check_keys
from agentotel_eval.trajectory.spec import Step, TrajectorySpec

_UNBOUND = -1
_NOT_RECORDED = "not recorded"

#: one way for a node to take a call: (new state, weight units earned, parallel groups split, leaf that took it)
Move = tuple[Any, int, tuple[str, ...], int]


def _fraction(value: float) -> Fraction:
    return Fraction(str(value))  # 0.1 is one tenth, not the binary float nearest to it


# --- reading values out of calls ------------------------------------------------------------------------------


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
        elif isinstance(data, list | tuple) and part.lstrip("-").isdigit() and -len(data) <= int(part) < len(data):
            data = data[int(part)]
        else:
            return False, None
    return True, data


# --- the compiled automaton -----------------------------------------------------------------------------------


class _Node:
    step: Step
    can: list[bool]  # per call: whether some tool step below may take it
    start: Any

    def consume(self, state: Any, j: int, ctx: _Context) -> list[Move]:
        raise NotImplementedError


class _Leaf(_Node):
    __slots__ = ("can", "gain", "idx", "slots", "start", "step")

    def __init__(self, step: Step, idx: int) -> None:
        self.step, self.idx, self.start = step, idx, 0
        self.gain = 0
        self.slots: tuple[int, ...] = ()  # binding slots this leaf's call fills (its id, ids of its groups)
        self.can = []

    def consume(self, state: Any, j: int, ctx: _Context) -> list[Move]:
        if state == 0 and ctx.matches(self.idx, j):
            return [(1, self.gain, (), self.idx)]
        return []


class _Repeat(_Node):
    __slots__ = ("can", "inner", "least", "most", "start", "step")

    def __init__(self, step: Step, inner: _Node, least: int, most: int | None) -> None:
        self.step, self.inner, self.least, self.most = step, inner, least, most
        self.start = (0, inner.start)
        self.can = inner.can

    def consume(self, state: Any, j: int, ctx: _Context) -> list[Move]:
        rounds, inner_state = state
        inner, least = self.inner, self.least
        out: list[Move] = []
        if rounds >= 1:
            earns = rounds <= least
            for s, gain, split, leaf in inner.consume(inner_state, j, ctx):
                out.append(((rounds, s), gain if earns else 0, split, leaf))
        if self.most is None or rounds < self.most:
            following = rounds + 1
            earns = following <= least
            if self.most is None and following > least + 1:
                following = least + 1  # past ``min`` with no ``max``: every further round is alike
            for s, gain, split, leaf in inner.consume(inner.start, j, ctx):
                out.append(((following, s), gain if earns else 0, split, leaf))
        return out


class _Sequence(_Node):
    __slots__ = ("by_call", "can", "members", "start", "step")

    def __init__(self, step: Step, members: list[_Node], calls: int) -> None:
        self.step, self.members = step, members
        self.start = (0, members[0].start) if members else (0, None)
        self.by_call = [[k for k, m in enumerate(members) if m.can[j]] for j in range(calls)]
        self.can = [bool(ks) for ks in self.by_call]

    def consume(self, state: Any, j: int, ctx: _Context) -> list[Move]:
        at, at_state = state
        out: list[Move] = []
        for k in self.by_call[j]:
            if k < at:
                continue
            member = self.members[k]
            for s, gain, split, leaf in member.consume(at_state if k == at else member.start, j, ctx):
                out.append(((k, s), gain, split, leaf))
        return out


class _Unordered(_Node):
    __slots__ = ("by_call", "can", "members", "parallel", "start", "step")

    def __init__(self, step: Step, members: list[_Node], calls: int) -> None:
        self.step, self.members, self.parallel = step, members, step.kind == "parallel"
        states = tuple(m.start for m in members)
        self.start = (states, None, False) if self.parallel else states
        self.by_call = [[k for k, m in enumerate(members) if m.can[j]] for j in range(calls)]
        self.can = [bool(ks) for ks in self.by_call]

    def consume(self, state: Any, j: int, ctx: _Context) -> list[Move]:
        states, turn, split = state if self.parallel else (state, None, False)
        out: list[Move] = []
        for k in self.by_call[j]:
            for s, gain, inner_split, leaf in self.members[k].consume(states[k], j, ctx):
                changed = (*states[:k], s, *states[k + 1:])
                if not self.parallel:
                    out.append((changed, gain, inner_split, leaf))
                    continue
                call_turn = ctx.turns[j]
                new_turn, now_split = turn, split
                if call_turn is not None:
                    if turn is None:
                        new_turn = call_turn
                    elif call_turn != turn:
                        now_split = True
                splits = inner_split + ((self.step.path,) if now_split and not split else ())
                out.append(((changed, new_turn, now_split), gain, splits, leaf))
        return out


class _AnyOf(_Node):
    __slots__ = ("alternatives", "can", "start", "step")

    def __init__(self, step: Step, alternatives: list[_Node], calls: int) -> None:
        self.step, self.alternatives = step, alternatives
        self.start = (-1, None)
        self.can = [any(a.can[j] for a in alternatives) for j in range(calls)]

    def consume(self, state: Any, j: int, ctx: _Context) -> list[Move]:
        chosen, inner_state = state
        if chosen >= 0:
            return [((chosen, s), g, v, leaf)
                    for s, g, v, leaf in self.alternatives[chosen].consume(inner_state, j, ctx)]
        out: list[Move] = []
        for k, alternative in enumerate(self.alternatives):
            if alternative.can[j]:
                out.extend(((k, s), g, v, leaf) for s, g, v, leaf in alternative.consume(alternative.start, j, ctx))
        return out


# --- matching a call to a tool step ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyCheck:
    """One argument key of one call against its matcher."""

    key: str
    verdict: Verdict  # True, False, or None: not recorded
    reason: str
    expected: str = ""


class _Context:
    """What matching reads: the calls, the binding slots of referenced ids, and memoised verdicts."""

    def __init__(self, spec: TrajectorySpec, calls: Sequence[ToolCall], steps: Sequence[Step]) -> None:
        self.calls, self.steps = calls, steps  # ``steps``: the tool steps, in written order
        self.turns = [c.llm_turn for c in calls]
        self.slot_of, self._dynamic_leaves = _slots_of(spec, steps)
        self.bindings: tuple[int, ...] = ()
        self._latest: dict[str, list[int]] = {}  # tool -> per call index, its latest earlier call (or -1)
        self._static: list[list[bool]] = []
        self._dynamic: dict[tuple[int, int, tuple[int, ...]], bool] = {}

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

    def resolver(self, j: int, bindings: tuple[int, ...] | None) -> Callable[[Ref], tuple[Verdict, Any, str]]:
        """Refs for call ``j``; with ``bindings`` None, refs to step ids are undecided (the static pass)."""

        def resolve(ref: Ref) -> tuple[Verdict, Any, str]:
            slot = self.slot_of.get(ref.target)
            if slot is not None:
                if bindings is None:
                    return None, None, "depends on the alignment"
                source = bindings[slot]
                if source == _UNBOUND:
                    return False, None, f"step {ref.target!r} took no call before this one"
            else:
                source = self.latest_before(ref.target, j)
                if source < 0:
                    return False, None, f"no earlier call of {ref.target}"
            call = self.calls[source]
            data = call.input_parameters if ref.part == "args" else result_value(call)
            if data is None:
                return None, None, f"the {'arguments' if ref.part == 'args' else 'result'} of call #{source + 1} " \
                                   f"({call.name}) {_NOT_RECORDED}"
            found, value = value_at(data, ref.path)
            if not found:
                return False, None, f"call #{source + 1} ({call.name}) has no {ref.part}.{'.'.join(ref.path)}"
            return True, value, ""

        return resolve

    def checks(self, step: Step, j: int, bindings: tuple[int, ...] | None) -> list[KeyCheck]:
        """Each constrained key of call ``j`` against ``step``'s matchers."""
        if step.args is None:
            return []
        params = self.calls[j].input_parameters
        if params is None:  # arguments not captured: nothing can be decided about them
            return [KeyCheck(k, None, f"arguments {_NOT_RECORDED}", m.describe()) for k, m in step.args.keys]
        if not isinstance(params, Mapping):
            params = {"": params}
        matchers = dict(step.args.keys)
        return [KeyCheck(k, v, r, matchers[k].describe() if k in matchers else "")
                for k, v, r in check_keys(step.args.keys, params, step.args.strict, self.resolver(j, bindings))]

    def holds(self, step: Step, j: int, bindings: tuple[int, ...] | None) -> bool:
        """Whether no constrained key of call ``j`` fails ``step``'s matchers (``checks`` without the report)."""
        if step.args is None:
            return True
        params = self.calls[j].input_parameters
        if params is None:
            return True
        if not isinstance(params, Mapping):
            params = {"": params}
        return all(v is not False for _, v, _ in check_keys(step.args.keys, params, step.args.strict,
                                                             self.resolver(j, bindings)))

    def static_table(self) -> tuple[tuple[bool, ...], ...]:
        """Per tool step, per call: whether the call may take the step, before any ``$ref`` to a step id."""
        names = [call.name for call in self.calls]
        for step in self.steps:
            tool = step.tool
            self._static.append([name == tool and self.holds(step, j, None) for j, name in enumerate(names)])
        return tuple(tuple(row) for row in self._static)

    def matches(self, leaf: int, j: int) -> bool:
        if not self._static[leaf][j]:
            return False
        slots = self._dynamic_leaves[leaf]
        if not slots:
            return True
        key = (leaf, j, tuple(self.bindings[s] for s in slots))
        known = self._dynamic.get(key)
        if known is None:
            known = self.holds(self.steps[leaf], j, self.bindings)
            self._dynamic[key] = known
        return known


# --- compiling ------------------------------------------------------------------------------------------------


def _slots_of(spec: TrajectorySpec, steps: Sequence[Step]) -> tuple[dict[str, int], dict[int, tuple[int, ...]]]:
    """The binding slot of each step id a ``$ref`` names, and the slots each tool step's matchers read;
    the same for every run of a spec, so memoised on it."""
    known = spec.memo.get("slots")
    if known is None:
        referenced = {r.target for step in steps for r in step.refs}
        ids = spec.ids
        slot_of = {name: k for k, name in enumerate(sorted(t for t in referenced if t in ids))}
        reads = {k: tuple(slot_of[r.target] for r in step.refs if r.target in slot_of) for k, step in enumerate(steps)}
        known = spec.memo["slots"] = (slot_of, reads)
    return known


@dataclass(frozen=True, slots=True)
class _Weights:
    """What a spec's weights come to, the same for every run: computed once per spec (``TrajectorySpec.memo``)."""

    gains: tuple[int, ...]  # per tool step in written order: weight units a call earns it (within ``min``)
    required: int  # total required weight, in units
    unit: int  # units per 1.0 of weight
    holders: Mapping[str, tuple[int, ...]]  # per step id: the tool steps whose calls bind it


def _weigh(step: Step, scale: Fraction, gains: list[Fraction], holders: dict[str, tuple[int, ...]]) -> Fraction:
    """``step``'s required weight in its parent's units; appends each tool step's gain per call (``scale``: the
    root's units per unit here) in written order and notes, per step id, the tool steps below it."""
    first = len(gains)
    if step.kind == "tool":
        inner_required = Fraction(1)
        required: list[Fraction] = []
    else:
        required = [_required(m) for m in step.members]
        if step.kind == "any_of":  # as heavy as its heaviest alternative; optional if any alternative is
            inner_required = Fraction(0) if any(r == 0 for r in required) else max(required)
        else:
            inner_required = sum(required, Fraction(0))
    weight = _fraction(step.weight) if step.weight is not None else inner_required
    least = step.least
    contributes = least > 0 and inner_required > 0 and weight > 0
    # calls of the first ``min`` rounds share the step's weight; later ones (and optional steps) earn nothing
    inner_scale = scale * weight / inner_required / least if contributes else Fraction(0)
    if step.kind == "tool":
        gains.append(inner_scale)
    else:
        for member, member_required in zip(step.members, required, strict=True):
            member_scale = inner_scale
            if step.kind == "any_of":  # a fully matched alternative earns the whole group's weight
                member_scale = inner_scale * inner_required / member_required if member_required else Fraction(0)
            _weigh(member, member_scale, gains, holders)
    if step.id is not None:
        holders[step.id] = tuple(range(first, len(gains)))
    return weight if contributes else Fraction(0)


def _required(step: Step) -> Fraction:
    """A step's required weight in its parent's units (what ``_weigh`` returns, without the gains)."""
    required = [_required(m) for m in step.members]
    if step.kind == "tool":
        inner = Fraction(1)
    elif step.kind == "any_of":
        inner = Fraction(0) if any(r == 0 for r in required) else max(required)
    else:
        inner = sum(required, Fraction(0))
    weight = _fraction(step.weight) if step.weight is not None else inner
    return weight if step.least > 0 and inner > 0 and weight > 0 else Fraction(0)


def weights_of(spec: TrajectorySpec) -> _Weights:
    """The spec's weights in whole units, exact (rationals over a common denominator), memoised on the spec."""
    known = spec.memo.get("weights")
    if known is None:
        gains: list[Fraction] = []
        holders: dict[str, tuple[int, ...]] = {}
        required = _weigh(spec.root, Fraction(1), gains, holders)
        unit = math.lcm(required.denominator, *(g.denominator for g in gains))
        known = _Weights(tuple(int(g * unit) for g in gains), int(required * unit), unit, holders)
        spec.memo["weights"] = known
    return known


def _build(step: Step, calls: int, leaves: Iterator[_Leaf]) -> _Node:
    """The automaton node for ``step``; ``leaves`` hands out the numbered tool steps in written order."""
    node: _Node
    if step.kind == "tool":
        node = next(leaves)
    else:
        members = [_build(member, calls, leaves) for member in step.members]
        if step.kind == "steps":
            node = _Sequence(step, members, calls)
        elif step.kind == "any_of":
            node = _AnyOf(step, members, calls)
        else:
            node = _Unordered(step, members, calls)
    if (step.least, step.count_max) != (1, 1):
        node = _Repeat(step, node, step.least, step.count_max)
    return node


def _tool_steps(spec: TrajectorySpec) -> tuple[Step, ...]:
    known = spec.memo.get("tool_steps")
    if known is None:
        known = spec.memo["tool_steps"] = tuple(s for s in spec.root.walk() if s.kind == "tool")
    return known


#: automata kept per spec, by which calls may take which steps: runs of one agent repeat a few shapes
_AUTOMATA_KEPT = 64


def _automaton(spec: TrajectorySpec, calls: int, can: tuple[tuple[bool, ...], ...]) -> tuple[_Node, list[_Leaf]]:
    """The automaton for runs whose calls may take the tool steps as ``can`` says (per step, per call). It holds
    no other state of a run (the run's calls and bindings are the context's), so it is reused for the same
    ``can``."""
    kept: dict[Any, tuple[_Node, list[_Leaf]]] = spec.memo.setdefault("automata", {})
    key = (calls, can)
    known = kept.get(key)
    if known is None:
        steps, weights = _tool_steps(spec), weights_of(spec)
        slot_of, _reads = _slots_of(spec, steps)
        leaves = [_Leaf(step, k) for k, step in enumerate(steps)]
        for leaf, row, gain in zip(leaves, can, weights.gains, strict=True):
            leaf.can, leaf.gain = list(row), gain
        for name, slot in slot_of.items():
            for idx in weights.holders.get(name, ()):
                leaves[idx].slots = (*leaves[idx].slots, slot)
        known = (_build(spec.root, calls, iter(leaves)), leaves)
        if len(kept) >= _AUTOMATA_KEPT:
            kept.clear()
        kept[key] = known
    return known


def _compile(spec: TrajectorySpec, calls: Sequence[ToolCall]) -> tuple[_Node, list[_Leaf], _Context, int, int]:
    """(root, leaves, context, total required in integer units, units per 1.0 of weight)."""
    ctx = _Context(spec, calls, _tool_steps(spec))
    can = ctx.static_table()
    root, leaves = _automaton(spec, len(calls), can)
    weights = weights_of(spec)
    return root, leaves, ctx, weights.required, weights.unit


# --- the search -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Alignment:
    """The optimum: which tool step (a leaf, by index in written order) took each call, or None (extra)."""

    leaves: tuple[Step, ...]
    taken_by: tuple[int | None, ...]  # per call
    earned: tuple[int, ...]  # per call: weight units it earned (0 for extra calls and calls past ``min``)
    splits: tuple[tuple[str, int], ...]  # (parallel group's path, call that split it)
    bindings: tuple[tuple[int, ...], ...]  # per call: the calls the referenced ids were bound to before it
    required: int  # total required weight, in units
    unit: int  # units per 1.0 of weight
    context: _Context

    @property
    def matched_weight(self) -> Fraction:
        return Fraction(sum(self.earned), self.unit)

    @property
    def recall(self) -> float:
        return 1.0 if self.required == 0 else sum(self.earned) / self.required

    def checks(self, j: int) -> list[KeyCheck]:
        """Call ``j``'s argument checks against the step that took it (empty for an extra call)."""
        leaf = self.taken_by[j]
        return [] if leaf is None else self.context.checks(self.leaves[leaf], j, self.bindings[j])


def align(spec: TrajectorySpec, calls: Sequence[ToolCall]) -> Alignment:
    """The exact best alignment of ``calls`` (in run order) to ``spec``."""
    root, leaves, ctx, required, unit = _compile(spec, calls)
    m = len(calls)
    weight_unit, split_unit = (m + 1) ** 2, m + 1  # value = weight·(m+1)² − splits·(m+1) + matched calls
    no_bindings = (_UNBOUND,) * len(ctx.slot_of)
    layer: dict[Any, int] = {(root.start, no_bindings): 0}
    back: list[dict[Any, tuple[Any, int, tuple[str, ...], int]]] = []
    for j in range(m):
        following: dict[Any, int] = {}
        came_from: dict[Any, tuple[Any, int, tuple[str, ...], int]] = {}
        for key, value in layer.items():
            old = following.get(key)
            if old is None or value > old:  # the call is extra: the state stays
                following[key] = value
                came_from[key] = (key, -1, (), 0)
            if not root.can[j]:
                continue
            state, bindings = key
            ctx.bindings = bindings
            for new_state, gain, split, leaf in root.consume(state, j, ctx):
                slots = leaves[leaf].slots
                new_bindings = bindings
                if slots:
                    new_bindings = tuple(j if k in slots else b for k, b in enumerate(bindings))
                new_key = (new_state, new_bindings)
                new_value = value + gain * weight_unit - len(split) * split_unit + 1
                old = following.get(new_key)
                if old is None or new_value > old:
                    following[new_key] = new_value
                    came_from[new_key] = (key, leaf, split, gain)
        layer = following
        back.append(came_from)
    key = max(layer, key=layer.__getitem__)
    taken_by: list[int | None] = [None] * m
    earned = [0] * m
    splits: list[tuple[str, int]] = []
    bindings_before: list[tuple[int, ...]] = [no_bindings] * m
    for j in range(m - 1, -1, -1):
        previous, leaf, split, gain = back[j][key]
        if leaf >= 0:
            taken_by[j], earned[j] = leaf, gain
            splits.extend((path, j) for path in split)
        bindings_before[j] = previous[1]
        key = previous
    return Alignment(tuple(leaf.step for leaf in leaves), tuple(taken_by), tuple(earned), tuple(reversed(splits)),
                     tuple(bindings_before), required, unit, ctx)
