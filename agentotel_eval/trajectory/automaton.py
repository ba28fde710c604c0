"""The automaton a trajectory spec compiles to, read by the alignment's scan over a run's calls.

``consume(state, j, ctx, earns)`` lists the ways a node can take call ``j`` from ``state``: (new state, value
gained, the tool step that took the call or -1, notes). ``settle(state, t, ctx, earns)`` is the value a state
still holds when it is left at call ``t`` (a later member of its sequence took a call, a new round began, the
run ended). Only ``_Assign`` holds value there: an order-free group of tool steps with no order-free group
above it (after nested plain ``unordered`` groups are flattened into it). While it is open no other step can
take a call, so its calls are assigned at once when it is left, as a maximum-value matching (``assignment``),
instead of remembering which of its members have been matched (2^members states). Other order-free groups keep
one state per member, as a product: exact, but exponential in the members, which is what the caller's
work budget bounds.

``earns`` is False in the rounds of a ``count`` past its ``min``: calls there earn no weight (they are still
matched). Values are whole numbers: a call earns its step's gain × ``ctx.weight_unit`` + 1 (the +1: fewer
extra calls break ties), a ``parallel`` group split over LLM turns costs ``ctx.split_unit``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentotel_eval.trajectory.assignment import Capacity, GrowingAssignment, best_assignment
from agentotel_eval.trajectory.spec import Step

if TYPE_CHECKING:
    from agentotel_eval.trajectory.align import Context

#: (new state, value gained, leaf that took the call or -1, notes: ("split", path) / ("open", node, earns) /
#: ("close", node, start, end, earns, bindings))
Move = tuple[Any, int, int, tuple[tuple[Any, ...], ...]]
_NOTHING: tuple[int, tuple[tuple[Any, ...], ...]] = (0, ())
_CLOSED, _OPEN = -1, -2
#: an assignment's arcs scanned per unit of the scan's work (a unit: about one state expanded)
ARC_WORK = 16


class Node:
    step: Step
    can: list[bool]  # per call: whether some tool step below may take it
    start: Any
    defers = False  # holds an ``_Assign`` whose value is settled when its state is left

    def consume(self, state: Any, j: int, ctx: Context, earns: bool) -> list[Move]:
        raise NotImplementedError

    def settle(
        self, state: Any, t: int, ctx: Context, earns: bool
    ) -> tuple[int, tuple[tuple[Any, ...], ...]]:
        return _NOTHING


class Leaf(Node):
    __slots__ = ("can", "gain", "idx", "slots", "start", "step")

    def __init__(self, step: Step, idx: int) -> None:
        self.step, self.idx, self.start = step, idx, 0
        self.gain = 0
        self.slots: tuple[int, ...] = ()  # binding slots this leaf's call fills (its id, ids of its groups)
        self.can = []

    def consume(self, state: Any, j: int, ctx: Context, earns: bool) -> list[Move]:
        if state == 0 and ctx.matches(self.idx, j):
            return [(1, ctx.leaf_value[self.idx] if earns else 1, self.idx, ())]
        return []


class Repeat(Node):
    __slots__ = ("can", "defers", "inner", "least", "most", "start", "step")

    def __init__(self, step: Step, inner: Node, least: int, most: int | None) -> None:
        self.step, self.inner, self.least, self.most = step, inner, least, most
        self.start = (0, inner.start)
        self.can = inner.can
        self.defers = inner.defers

    def consume(self, state: Any, j: int, ctx: Context, earns: bool) -> list[Move]:
        rounds, inner_state = state
        inner, least = self.inner, self.least
        ctx.work += 1
        out: list[Move] = []
        if rounds >= 1:
            for s, value, leaf, notes in inner.consume(inner_state, j, ctx, earns and rounds <= least):
                out.append(((rounds, s), value, leaf, notes))
        if self.most is None or rounds < self.most:
            following = rounds + 1
            left = inner.settle(inner_state, j, ctx, earns and rounds <= least) if rounds >= 1 else _NOTHING
            if self.most is None and following > least + 1:
                following = least + 1  # past ``min`` with no ``max``: every further round is alike
            for s, value, leaf, notes in inner.consume(inner.start, j, ctx, earns and rounds + 1 <= least):
                out.append(((following, s), value + left[0], leaf, left[1] + notes))
        return out

    def settle(
        self, state: Any, t: int, ctx: Context, earns: bool
    ) -> tuple[int, tuple[tuple[Any, ...], ...]]:
        rounds, inner_state = state
        return (
            self.inner.settle(inner_state, t, ctx, earns and rounds <= self.least)
            if rounds >= 1
            else _NOTHING
        )


class Sequence_(Node):
    __slots__ = ("by_call", "can", "defers", "members", "start", "step")

    def __init__(self, step: Step, members: list[Node], calls: int) -> None:
        self.step, self.members = step, members
        self.start = (0, members[0].start) if members else (0, None)
        self.by_call = [[k for k, m in enumerate(members) if m.can[j]] for j in range(calls)]
        self.can = [bool(ks) for ks in self.by_call]
        self.defers = any(m.defers for m in members)

    def consume(self, state: Any, j: int, ctx: Context, earns: bool) -> list[Move]:
        at, at_state = state
        ctx.work += 1
        out: list[Move] = []
        left: tuple[int, tuple[tuple[Any, ...], ...]] | None = None
        for k in self.by_call[j]:
            if k < at:
                continue
            member = self.members[k]
            if k == at:
                out.extend(
                    ((k, s), value, leaf, notes)
                    for s, value, leaf, notes in member.consume(at_state, j, ctx, earns)
                )
                continue
            if left is None:
                left = (
                    self.members[at].settle(at_state, j, ctx, earns)
                    if self.defers and self.members
                    else _NOTHING
                )
            for s, value, leaf, notes in member.consume(member.start, j, ctx, earns):
                out.append(((k, s), value + left[0], leaf, left[1] + notes))
        return out

    def settle(
        self, state: Any, t: int, ctx: Context, earns: bool
    ) -> tuple[int, tuple[tuple[Any, ...], ...]]:
        at, at_state = state
        return self.members[at].settle(at_state, t, ctx, earns) if self.defers and self.members else _NOTHING


class Unordered(Node):
    """An order-free group as a product of its members' states (members interleave)."""

    __slots__ = ("by_call", "can", "members", "parallel", "start", "step")

    def __init__(self, step: Step, members: list[Node], calls: int) -> None:
        self.step, self.members, self.parallel = step, members, step.kind == "parallel"
        states = tuple(m.start for m in members)
        self.start = (states, None, False) if self.parallel else states
        self.by_call = [[k for k, m in enumerate(members) if m.can[j]] for j in range(calls)]
        self.can = [bool(ks) for ks in self.by_call]

    def consume(self, state: Any, j: int, ctx: Context, earns: bool) -> list[Move]:
        states, turn, split = state if self.parallel else (state, None, False)
        ctx.work += 1
        out: list[Move] = []
        for k in self.by_call[j]:
            for s, value, leaf, notes in self.members[k].consume(states[k], j, ctx, earns):
                changed = (*states[:k], s, *states[k + 1 :])
                if not self.parallel:
                    out.append((changed, value, leaf, notes))
                    continue
                call_turn = ctx.turns[j]
                new_turn, now_split = turn, split
                if call_turn is not None:
                    if turn is None:
                        new_turn = call_turn
                    elif call_turn != turn:
                        now_split = True
                if now_split and not split:
                    value -= ctx.split_unit
                    notes = (*notes, ("split", self.step.path))
                out.append(((changed, new_turn, now_split), value, leaf, notes))
        return out


class AnyOf(Node):
    __slots__ = ("alternatives", "can", "defers", "start", "step")

    def __init__(self, step: Step, alternatives: list[Node], calls: int) -> None:
        self.step, self.alternatives = step, alternatives
        self.start = (-1, None)
        self.can = [any(a.can[j] for a in alternatives) for j in range(calls)]
        self.defers = any(a.defers for a in alternatives)

    def consume(self, state: Any, j: int, ctx: Context, earns: bool) -> list[Move]:
        chosen, inner_state = state
        ctx.work += 1
        if chosen >= 0:
            return [
                ((chosen, s), value, leaf, notes)
                for s, value, leaf, notes in self.alternatives[chosen].consume(inner_state, j, ctx, earns)
            ]
        out: list[Move] = []
        for k, alternative in enumerate(self.alternatives):
            if alternative.can[j]:
                out.extend(
                    ((k, s), value, leaf, notes)
                    for s, value, leaf, notes in alternative.consume(alternative.start, j, ctx, earns)
                )
        return out

    def settle(
        self, state: Any, t: int, ctx: Context, earns: bool
    ) -> tuple[int, tuple[tuple[Any, ...], ...]]:
        chosen, inner_state = state
        return self.alternatives[chosen].settle(inner_state, t, ctx, earns) if chosen >= 0 else _NOTHING


@dataclass(frozen=True, slots=True)
class Solved:
    """An ``_Assign``'s calls from ``window``: which member took each (-1: none), and the
    call that split it."""

    value: int
    window: tuple[int, ...]
    taken: tuple[int, ...]
    split_call: int | None


class Assign(Node):
    """An order-free group of tool steps assigned at once (see the module's docstring). Its state is closed,
    or open: where it opened is kept by the scan (``ctx.open``), so open states that differ
    only there compare."""

    __slots__ = ("can", "dynamic", "eligible", "index", "members", "parallel", "start", "step")
    defers = True

    def __init__(self, step: Step, members: list[Leaf], calls: int, index: int, dynamic: bool) -> None:
        self.step, self.members, self.index, self.dynamic = step, members, index, dynamic
        self.parallel = step.kind == "parallel"
        self.start = _CLOSED
        self.can = [any(m.can[j] for m in members) for j in range(calls)]
        self.eligible = [j for j in range(calls) if self.can[j]]

    def consume(self, state: Any, j: int, ctx: Context, earns: bool) -> list[Move]:
        if state == _CLOSED and any(m.can[j] and ctx.matches(m.idx, j) for m in self.members):
            return [(_OPEN, 0, -1, (("open", self, earns),))]
        return []

    def settle(
        self, state: Any, t: int, ctx: Context, earns: bool
    ) -> tuple[int, tuple[tuple[Any, ...], ...]]:
        if state == _CLOSED:
            return _NOTHING
        s = ctx.open
        assert s is not None
        return self.value(s, t, ctx, earns), (("close", self, s, t, earns, ctx.bindings),)

    def value(self, s: int, t: int, ctx: Context, earns: bool) -> int:
        """What ``solve`` would give, from one growing assignment per start: the scan asks for the same start
        with later and later ends, and each further call costs one augmenting path."""
        lo, hi = bisect_left(self.eligible, s), bisect_left(self.eligible, t)
        key = (self.index, lo, earns, ctx.bindings if self.dynamic else ())
        growing = ctx.growing.get(key)
        if growing is None:
            growing = ctx.growing[key] = _Growing(self, earns, ctx)
        return growing.value_at(lo, hi, ctx)

    def solve(self, s: int, t: int, ctx: Context, earns: bool) -> Solved:
        """The best assignment of the calls in ``[s, t)``; with ``parallel``, the best of keeping to one LLM
        turn (each turn in the window, in turn) and of taking the best calls whatever their turns (a split if
        they come from two turns)."""
        lo, hi = bisect_left(self.eligible, s), bisect_left(self.eligible, t)
        key = (self.index, lo, hi, earns, ctx.bindings if self.dynamic else ())
        known: Solved | None = ctx.solved.get(key)
        if known is not None:
            return known
        window = tuple(self.eligible[lo:hi])
        options = [
            [k for k, m in enumerate(self.members) if m.can[j] and ctx.matches(m.idx, j)] for j in window
        ]
        caps = [
            Capacity(ctx.leaf_value[m.idx] if earns else 1, m.step.least, m.step.count_max)
            for m in self.members
        ]
        ctx.work += (
            len(window) * len(self.members) + (best := best_assignment(options, caps)).work
        ) // ARC_WORK
        solved = Solved(best.value, window, best.taken, None)
        turns = [ctx.turns[j] for j in window]
        if self.parallel:
            split_call = _split_call(window, best.taken, turns)
            if split_call is not None:
                solved = Solved(best.value - ctx.split_unit, window, best.taken, split_call)
                for turn in dict.fromkeys(t for t in turns if t is not None):
                    kept = [o if turns[i] in (turn, None) else [] for i, o in enumerate(options)]
                    one = best_assignment(kept, caps)
                    ctx.work += one.work // ARC_WORK
                    if one.value > solved.value:
                        solved = Solved(one.value, window, one.taken, None)
        ctx.solved[key] = solved
        return solved


class _Growing:
    """An ``Assign``'s values over windows from one start: ``values[i]`` for its first ``i`` eligible calls.
    A ``parallel`` group also grows one assignment per LLM turn (the calls of that turn
    and those with none)."""

    __slots__ = ("caps", "node", "per_turn", "unrestricted", "values")

    def __init__(self, node: Assign, earns: bool, ctx: Context) -> None:
        self.node = node
        self.caps = [
            Capacity(ctx.leaf_value[m.idx] if earns else 1, m.step.least, m.step.count_max)
            for m in node.members
        ]
        self.unrestricted = GrowingAssignment(self.caps)
        self.per_turn: dict[Any, GrowingAssignment] = {}
        self.values = [0]

    def value_at(self, lo: int, hi: int, ctx: Context) -> int:
        node, values = self.node, self.values
        while len(values) <= hi - lo:
            j = node.eligible[lo + len(values) - 1]
            options = [k for k, m in enumerate(node.members) if m.can[j] and ctx.matches(m.idx, j)]
            before = self.unrestricted.work + sum(g.work for g in self.per_turn.values())
            best = self.unrestricted.add(options)
            if node.parallel:
                turn = ctx.turns[j]
                if (
                    turn is not None and turn not in self.per_turn
                ):  # a new turn: it also takes the calls with none
                    growing = self.per_turn[turn] = GrowingAssignment(self.caps)
                    for earlier in node.eligible[lo : lo + len(values) - 1]:
                        if ctx.turns[earlier] is None:
                            growing.add(
                                [
                                    k
                                    for k, m in enumerate(node.members)
                                    if m.can[earlier] and ctx.matches(m.idx, earlier)
                                ]
                            )
                for other, growing in self.per_turn.items():
                    if turn is None or turn == other:
                        growing.add(options)
                if (
                    self.per_turn
                ):  # with turns known, keeping to one turn, or the best whatever the turns, split
                    best = max(best - ctx.split_unit, *(g.value for g in self.per_turn.values()))
            ctx.work += (
                len(node.members)
                + self.unrestricted.work
                + sum(g.work for g in self.per_turn.values())
                - before
            ) // ARC_WORK
            values.append(best)
        return values[hi - lo]


def _split_call(window: Sequence[int], taken: Sequence[int], turns: Sequence[Any]) -> int | None:
    """The first taken call from another LLM turn than the first taken call with a turn, if any."""
    first = None
    for j, k, turn in zip(window, taken, turns, strict=True):
        if k < 0 or turn is None:
            continue
        if first is None:
            first = turn
        elif turn != first:
            return j
    return None


# --- building -----------------------------------------------------------------------------------------------


def _flat_members(step: Step) -> list[Step] | None:
    """The tool steps of an order-free group, nested plain ``unordered`` groups (taken at most once) flattened
    in (their members are order-free among the outer ones too); None when another kind of
    group is among them."""
    out: list[Step] = []
    for member in step.members:
        if member.kind == "tool":
            out.append(member)
        elif member.kind == "unordered" and member.count_max == 1:
            inner = _flat_members(member)
            if inner is None:
                return None
            out.extend(inner)
        else:
            return None
    return out


class Builder:
    """Builds the automaton for one run's shape: ``leaf_of`` numbers the tool steps in written order,
    ``reads`` says which of them read a step id's binding (a ``$ref``)."""

    def __init__(
        self, calls: int, leaves: Sequence[Leaf], leaf_of: Mapping[int, int], reads: Mapping[int, Any]
    ):
        self.calls, self.leaves, self.leaf_of, self.reads = calls, leaves, leaf_of, reads
        self.assigns = 0

    def build(self, step: Step, under_free: bool = False) -> Node:
        node: Node
        if step.kind == "tool":
            leaf = self.leaves[self.leaf_of[id(step)]]
            if step.count_max != 1 and not under_free and not leaf.slots:  # its calls as capacity, not rounds
                node = Assign(step, [leaf], self.calls, self.assigns, bool(self.reads.get(leaf.idx)))
                self.assigns += 1
                return node
            node = leaf
        elif step.kind in ("unordered", "parallel") and not under_free and (flat := self._assignable(step)):
            dynamic = any(self.reads.get(leaf.idx) for leaf in flat)
            node = Assign(step, flat, self.calls, self.assigns, dynamic)
            self.assigns += 1
            return (
                node
                if (step.least, step.count_max) == (1, 1)
                else Repeat(step, node, step.least, step.count_max)
            )
        else:
            free = under_free or step.kind in ("unordered", "parallel")
            members = [self.build(member, free) for member in step.members]
            if step.kind == "steps":
                node = Sequence_(step, members, self.calls)
            elif step.kind == "any_of":
                node = AnyOf(step, members, self.calls)
            else:
                node = Unordered(step, members, self.calls)
        if (step.least, step.count_max) != (1, 1):
            node = Repeat(step, node, step.least, step.count_max)
        return node

    def _assignable(self, step: Step) -> list[Leaf] | None:
        flat = _flat_members(step)
        if flat is None:
            return None
        leaves = [self.leaves[self.leaf_of[id(s)]] for s in flat]
        if any(leaf.slots for leaf in leaves):  # a call here binds a referenced id: the scan must see it
            return None
        return leaves
