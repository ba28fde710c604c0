"""The best alignment of a run's calls to a trajectory spec, in bounded work.

The spec is compiled into an automaton (``automaton``): a tool step takes one call; ``steps`` runs its members
in order (a member may be skipped, the calls between members are extra); ``unordered`` and ``parallel``
advance any member, so members interleave; ``any_of`` commits to the alternative that takes its first call;
``count`` repeats a step. The calls are read once, in order, and for every reachable automaton state the best
value so far is kept (dynamic programming over states). An order-free group of tool steps is one state while
it is open and is solved as an assignment when it is left, so the common shapes (a group of any size, ordered
steps around such groups, counts) are exact in polynomial time.

The value of an alignment is, in this order of importance: the matched weight, fewer ``parallel`` groups split
over LLM turns, fewer extra calls. Weights are exact rationals turned into integers over a common denominator,
so equal optima are truly equal and the tie-breaks decide.

A ``$ref`` to a step id depends on which call the alignment gave that step, so the ids that are referenced are
part of the state (the call each is bound to); a ``$ref`` to a tool name reads that tool's latest earlier
call. Those bindings, and order-free groups with groups among their members (or nested in one), multiply the
states: the exact problem is hard there. The scan counts its work; past ``WORK_BUDGET`` it starts again
keeping only the best ``BEAM`` states per call, and the alignment says it is approximate and why (the score is
then a lower bound: a real alignment, maybe not the best). If even that runs out of work, the calls not
yet read are extra.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from operator import itemgetter
from typing import Any

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory.automaton import Builder, Leaf, Node, Solved
from agentotel_eval.trajectory.checks import UNBOUND, Checker, KeyCheck, plan_of
from agentotel_eval.trajectory.checks import result_value as result_value  # read by rules that trace values
from agentotel_eval.trajectory.checks import value_at as value_at
from agentotel_eval.trajectory.spec import Step, TrajectorySpec

#: units of work (states expanded, automaton nodes read, moves made, assignment arcs / ``ARC_WORK``) one pass
#: of the scan may take, plus ``WORK_PER_CALL`` a call: a unit is about 5 µs here, so 0.2 s for 200 calls
WORK_BUDGET = 20_000
WORK_PER_CALL = 100
#: states kept per call once the exact scan ran out of work
BEAM = 8


def _fraction(value: float) -> Fraction:
    return Fraction(str(value))  # 0.1 is one tenth, not the binary float nearest to it


class Context:
    """What the scan reads (the checked calls, their LLM turns, the binding slots of referenced ids, memoised
    verdicts of steps that read them), its units of value, and its work so far."""

    def __init__(self, checker: Checker) -> None:
        plan = checker.plan
        self.checker, self.steps = checker, plan.steps  # ``steps``: the tool steps, in written order
        calls = checker.calls
        self.turns = [c.llm_turn for c in calls]
        self.slot_of, self._dynamic_leaves = plan.slot_of, plan.reads
        # a binding nothing can read any more (no later call of a tool whose step reads it) is forgotten, so
        # states that differ only there become one
        last_read = [-1] * len(self.slot_of)
        if last_read:
            reader_tools: dict[str | None, set[int]] = {}  # two steps of one tool may read different ids
            for k, slots in self._dynamic_leaves.items():
                reader_tools.setdefault(self.steps[k].tool, set()).update(slots)
            for j, call in enumerate(calls):
                for slot in reader_tools.get(call.name, ()):
                    last_read[slot] = j
        self.slot_dead_from = [j + 1 for j in last_read]
        self.bindings: tuple[int, ...] = ()
        self._static = checker.can
        self._dynamic: dict[tuple[int, int, tuple[int, ...]], bool] = {}
        m = len(calls)
        self.weight_unit, self.split_unit = (
            (m + 1) ** 2,
            m + 1,
        )  # value = weight·(m+1)² − splits·(m+1) + matched
        self.leaf_value: list[int] = []  # per tool step: what a call it takes earns, in value units
        self.open: int | None = None  # where the open order-free group of the state being read opened
        self.solved: dict[Any, Solved] = {}  # order-free groups' assignments, by window and bindings
        self.growing: dict[Any, Any] = {}  # their values, by start and bindings
        self.work = 0

    def matches(self, leaf: int, j: int) -> bool:
        if not self._static[leaf][j]:
            return False
        slots = self._dynamic_leaves[leaf]
        if not slots:
            return True
        key = (leaf, j, tuple(self.bindings[s] for s in slots))
        known = self._dynamic.get(key)
        if known is None:
            known = self.checker.holds(self.steps[leaf], j, self.bindings)
            self._dynamic[key] = known
        return known


# --- compiling ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Weights:
    """What a spec's weights come to, the same for every run: computed once per spec
    (``TrajectorySpec.memo``)."""

    gains: tuple[int, ...]  # per tool step in written order: weight units a call earns it (within ``min``)
    required: int  # total required weight, in units
    unit: int  # units per 1.0 of weight
    holders: Mapping[str, tuple[int, ...]]  # per step id: the tool steps whose calls bind it


def _weigh(
    step: Step, scale: Fraction, gains: list[Fraction], holders: dict[str, tuple[int, ...]]
) -> Fraction:
    """``step``'s required weight in its parent's units; appends each tool step's gain per call (``scale``:
    the root's units per unit here) in written order and notes, per step id, the tool steps below it."""
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
                member_scale = (
                    inner_scale * inner_required / member_required if member_required else Fraction(0)
                )
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
    """The spec's weights in whole units, exact (rationals over a common denominator),
    memoised on the spec."""
    known = spec.memo.get("weights")
    if known is None:
        gains: list[Fraction] = []
        holders: dict[str, tuple[int, ...]] = {}
        required = _weigh(spec.root, Fraction(1), gains, holders)
        unit = math.lcm(required.denominator, *(g.denominator for g in gains))
        known = _Weights(tuple(int(g * unit) for g in gains), int(required * unit), unit, holders)
        spec.memo["weights"] = known
    return known


#: automata kept per spec, by which calls may take which steps: runs of one agent repeat a few shapes
_AUTOMATA_KEPT = 64


def _automaton(
    spec: TrajectorySpec, calls: int, can: tuple[tuple[bool, ...], ...]
) -> tuple[Node, list[Leaf]]:
    """The automaton for runs whose calls may take the tool steps as ``can`` says (per step, per call). It
    holds no other state of a run (the run's calls and bindings are the context's), so it is reused for the
    same ``can``."""
    kept: dict[Any, tuple[Node, list[Leaf]]] = spec.memo.setdefault("automata", {})
    key = (calls, can)
    known = kept.get(key)
    if known is None:
        plan, weights = plan_of(spec), weights_of(spec)
        steps, slot_of, reads = plan.steps, plan.slot_of, plan.reads
        leaves = [Leaf(step, k) for k, step in enumerate(steps)]
        for leaf, row, gain in zip(leaves, can, weights.gains, strict=True):
            leaf.can, leaf.gain = list(row), gain
        for name, slot in slot_of.items():
            for idx in weights.holders.get(name, ()):
                leaves[idx].slots = (*leaves[idx].slots, slot)
        known = (Builder(calls, leaves, plan.leaf_of, reads).build(spec.root), leaves)
        if len(kept) >= _AUTOMATA_KEPT:
            kept.clear()
        kept[key] = known
    return known


def _compile(spec: TrajectorySpec, checker: Checker) -> tuple[Node, list[Leaf], Context, int, int]:
    """(root, leaves, context, total required in integer units, units per 1.0 of weight)."""
    ctx = Context(checker)
    root, leaves = _automaton(spec, len(checker.calls), checker.can)
    weights = weights_of(spec)
    ctx.leaf_value = [gain * ctx.weight_unit + 1 for gain in weights.gains]
    return root, leaves, ctx, weights.required, weights.unit


# --- the search ---------------------------------------------------------------------------------------------

#: a scan state: (automaton state, the call each referenced id is bound to, the open order-free group: (where
#: it opened, the group, whether it earns) or None)
Key = tuple[Any, tuple[int, ...], Any]
#: how a state was reached: (previous state, leaf that took the call or -1, notes, value gained)
Back = tuple[Key, int, tuple[tuple[Any, ...], ...], int]


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
    checker: Checker  # the run's calls, checked
    approximate: str | None = None  # why this may not be the best alignment; None: it is the exact optimum
    work: int = 0  # units of work the search took

    @property
    def matched_weight(self) -> Fraction:
        return Fraction(sum(self.earned), self.unit)

    @property
    def recall(self) -> float:
        return 1.0 if self.required == 0 else sum(self.earned) / self.required

    def checks(self, j: int) -> list[KeyCheck]:
        """Call ``j``'s argument checks against the step that took it (empty for an extra call)."""
        leaf = self.taken_by[j]
        return [] if leaf is None else self.checker.checks(self.leaves[leaf], j, self.bindings[j])


class _OutOfWork(Exception):
    pass


def work_limit(calls: int, budget: int | None = None) -> int:
    """The work one pass of the scan may take for a run of ``calls`` calls."""
    return (WORK_BUDGET if budget is None else budget) + WORK_PER_CALL * calls


def align(
    spec: TrajectorySpec, calls: Sequence[ToolCall], budget: int | None = None, checker: Checker | None = None
) -> Alignment:
    """The best alignment of ``calls`` (in run order) to ``spec``: exact within ``work_limit``, else the best
    a beam of ``BEAM`` states finds within as much work again (``Alignment.approximate`` says so).
    ``checker``: the calls already checked against the spec (``Checker(spec, calls)``)."""
    root, leaves, ctx, required, unit = _compile(
        spec, checker if checker is not None else Checker(spec, calls)
    )
    m, limit = len(calls), work_limit(len(calls), budget)
    reason = None
    try:
        layer, back, read = _scan(root, leaves, ctx, m, limit, None)
        final = _final(root, ctx, layer, read, limit, None)
    except _OutOfWork:
        reason = (
            f"the exact alignment needed more than {limit:,} units of work (order-free groups with groups "
            f"among their members, or $ref to step ids, multiply its states); this is the best of {BEAM} "
            f"states kept per call"
        )
        limit += ctx.work
        layer, back, read = _scan(root, leaves, ctx, m, limit, BEAM)
        final = _final(root, ctx, layer, read, limit, BEAM)
        if read < m:
            reason += (
                f"; the calls from #{read + 1} on were not read within the work budget and count as extra"
            )
    return _trace(spec, calls, leaves, ctx, back, read, final, required, unit, reason)


def _scan(
    root: Node, leaves: Sequence[Leaf], ctx: Context, m: int, limit: int, beam: int | None
) -> tuple[dict[Key, int], list[dict[Key, Back]], int]:
    """The last layer of states with their values, the way back, and how many calls were read (all, unless a
    beam ran out of work)."""
    no_bindings = (UNBOUND,) * len(ctx.slot_of)
    layer: dict[Key, int] = {(root.start, no_bindings, None): 0}
    dead_from = ctx.slot_dead_from
    dying: dict[int, list[int]] = {}
    for slot, j in enumerate(dead_from):
        dying.setdefault(j, []).append(slot)
    back: list[dict[Key, Back]] = []
    for j in range(m):
        following: dict[Key, int] = {}
        came_from: dict[Key, Back] = {}
        items = layer.items()
        if beam is not None and len(layer) > beam:
            items = dict(heapq.nlargest(beam, items, key=itemgetter(1))).items()
        can = root.can[j]
        for key, value in items:
            ctx.work += 1
            if ctx.work > limit:
                if beam is None:
                    raise _OutOfWork
                return layer, back, j
            old = following.get(key)
            if old is None or value > old:  # the call is extra: the state stays
                following[key] = value
                came_from[key] = (key, -1, (), 0)
            if not can:
                continue
            state, bindings, opened = key
            ctx.bindings, ctx.open = bindings, opened[0] if opened is not None else None
            moves = root.consume(state, j, ctx, True)
            ctx.work += len(moves)
            for new_state, gain, leaf, notes in moves:
                new_bindings = bindings
                if leaf >= 0:
                    slots = leaves[leaf].slots
                    if slots:
                        new_bindings = tuple(
                            j if k in slots and j < dead_from[k] else b for k, b in enumerate(bindings)
                        )
                new_open = opened
                for note in notes:
                    if note[0] == "close":
                        new_open = None
                    elif note[0] == "open":
                        new_open = (j, note[1], note[2])
                new_key = (new_state, new_bindings, new_open)
                new_value = value + gain
                old = following.get(new_key)
                if old is None or new_value > old:
                    following[new_key] = new_value
                    came_from[new_key] = (key, leaf, notes, gain)
        if j + 1 in dying:
            following = _forget(following, came_from, dying[j + 1])
        _drop_dominated(following, ctx)
        layer = following
        back.append(came_from)
    return layer, back, m


def _forget(layer: dict[Key, int], came_from: dict[Key, Back], slots: list[int]) -> dict[Key, int]:
    """The layer with ``slots`` unbound: states alike but for those merge, keeping the best way to them. A
    state whose open order-free group reads bindings keeps them: the group's calls are matched
    when it is settled."""
    out: dict[Key, int] = {}
    ways: dict[Key, Back] = {}  # set once every state is read: a merged state may be one not read yet
    for key, value in layer.items():
        opened = key[2]
        if opened is not None and opened[1].dynamic:
            bindings = key[1]
        else:
            bindings = tuple(UNBOUND if k in slots else b for k, b in enumerate(key[1]))
        new_key = (key[0], bindings, key[2])
        old = out.get(new_key)
        if old is None or value > old:
            out[new_key] = value
            ways[new_key] = came_from[key]
    came_from.update(ways)
    return out


def _drop_dominated(layer: dict[Key, int], ctx: Context) -> None:
    """Drops the states of an open order-free group that another state, alike but for where the group opened,
    makes useless: one that opened earlier with no less value (it has every call the later one has), or one
    that opened later with more value than the earlier one could still win in between (what a group wins over
    a window is at most what it wins over its two halves)."""
    groups: dict[Any, list[tuple[int, int, Key]]] = {}
    for key, value in layer.items():
        if key[2] is not None:
            groups.setdefault((key[0], key[1]), []).append((key[2][0], value, key))
    for entries in groups.values():
        if len(entries) < 2:
            continue
        entries.sort(key=itemgetter(0))
        kept: list[tuple[int, int, Key]] = []
        for entry in entries:
            if kept and entry[1] <= kept[-1][1]:  # kept values rise with where they opened
                del layer[entry[2]]
            else:
                kept.append(entry)
        last_opened, last_value, last_key = kept[-1]
        _, node, earns = last_key[2]
        ctx.bindings = last_key[1]
        for opened, value, key in kept[:-1]:
            if value + node.value(opened, last_opened, ctx, earns) <= last_value:
                del layer[key]


def _final(
    root: Node, ctx: Context, layer: dict[Key, int], read: int, limit: int, beam: int | None
) -> tuple[Key, tuple[tuple[Any, ...], ...]]:
    """The best state at the end (its open group settled at call ``read``) and the notes that settled it."""
    items = list(layer.items())
    if beam is not None and len(items) > beam:
        items = heapq.nlargest(beam, items, key=itemgetter(1))
    best: tuple[int, Key, tuple[tuple[Any, ...], ...]] | None = None
    for key, value in items:
        notes: tuple[tuple[Any, ...], ...] = ()
        if root.defers and key[2] is not None:
            ctx.bindings, ctx.open = key[1], key[2][0]
            left, notes = root.settle(key[0], read, ctx, True)
            value += left
            if ctx.work > limit and best is not None:
                if beam is None:
                    raise _OutOfWork
                break
        if best is None or value > best[0]:
            best = (value, key, notes)
    assert best is not None
    return best[1], best[2]


def _trace(
    spec: TrajectorySpec,
    calls: Sequence[ToolCall],
    leaves: Sequence[Leaf],
    ctx: Context,
    back: list[dict[Key, Back]],
    read: int,
    final: tuple[Key, tuple[tuple[Any, ...], ...]],
    required: int,
    unit: int,
    reason: str | None,
) -> Alignment:
    """The alignment the way back from the final state describes."""
    m = len(calls)
    key, closing = final
    taken_by: list[int | None] = [None] * m
    earned = [0] * m
    splits: list[tuple[str, int]] = []
    no_bindings = (UNBOUND,) * len(ctx.slot_of)
    bindings_before: list[tuple[int, ...]] = [no_bindings] * m
    closes = [note for note in closing if note[0] == "close"]
    for j in range(read - 1, -1, -1):
        previous, leaf, notes, gain = back[j][key]
        for note in notes:
            if note[0] == "split":
                splits.append((note[1], j))
                gain += ctx.split_unit
            elif note[0] == "close":
                closes.append(note)
                gain -= _solve(ctx, note).value
        if leaf >= 0:
            taken_by[j] = leaf
            earned[j] = leaves[leaf].gain if gain == ctx.leaf_value[leaf] else 0
        bindings_before[j] = previous[1]
        key = previous
    for note in closes:
        _, node, _s, _t, earns, _bindings = note
        solved = _solve(ctx, note)
        counts = [0] * len(node.members)
        for j, k in zip(solved.window, solved.taken, strict=True):
            if k < 0:
                continue
            member = node.members[k]
            taken_by[j] = member.idx
            counts[k] += 1
            earned[j] = member.gain if earns and counts[k] <= member.step.least else 0
        if solved.split_call is not None:
            splits.append((node.step.path, solved.split_call))
    return Alignment(
        tuple(leaf.step for leaf in leaves),
        tuple(taken_by),
        tuple(earned),
        tuple(sorted(splits, key=itemgetter(1))),
        tuple(bindings_before),
        required,
        unit,
        ctx.checker,
        reason,
        ctx.work,
    )


def _solve(ctx: Context, note: tuple[Any, ...]) -> Solved:
    _, node, s, t, earns, bindings = note
    ctx.bindings = bindings
    solved: Solved = node.solve(s, t, ctx, earns)
    return solved
