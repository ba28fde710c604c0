"""The best assignment of calls to the tool steps of an order-free group: a maximum-value b-matching.

Each call may take one of the steps it is eligible for, or none; a step takes at most ``most`` calls (None: no
limit), and the first ``least`` it takes are worth ``high`` each, the others 1. Calls with the same eligible
steps are interchangeable, and so are steps eligible for the same calls with the same ``high``: both sides are
merged into classes first, so a group of twenty steps over fifty calls is usually a handful of nodes. What
remains is a min-cost flow (source -> call class -> step class -> sink, two arcs per step class: its ``least``
valuable slots and its other slots), solved by successive shortest paths on exact integers: the optimum,
never a greedy pairing.

Cost: O(F·V·E) for the merged graph (F augmenting paths, each a Bellman-Ford over V nodes and E arcs); the
returned ``work`` counts the arcs scanned, for the caller's budget.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Capacity:
    """What one step of the group may take: ``high`` for each of its first ``least``
    calls, 1 for later ones."""

    high: int
    least: int
    most: int | None


@dataclass(frozen=True, slots=True)
class Assignment:
    value: int
    taken: tuple[int, ...]  # per call: the step that took it, or -1
    work: int


def best_assignment(eligible: Sequence[Sequence[int]], steps: Sequence[Capacity]) -> Assignment:
    """The assignment of maximum value; ``eligible[c]``: the steps call ``c`` may take (by
    index in ``steps``)."""
    classes: dict[tuple[int, ...], list[int]] = {}
    for c, options in enumerate(eligible):
        if options:
            classes.setdefault(tuple(sorted(options)), []).append(c)
    if not classes:
        return Assignment(0, (-1,) * len(eligible), 1)
    class_keys = list(classes)
    # steps eligible for the same call classes with the same value per call are
    # interchangeable: one step class
    member_of: dict[int, list[int]] = {}
    for k, key in enumerate(class_keys):
        for step in key:
            member_of.setdefault(step, []).append(k)
    groups: dict[tuple[tuple[int, ...], int], list[int]] = {}
    for step, in_classes in member_of.items():
        groups.setdefault((tuple(in_classes), steps[step].high), []).append(step)
    group_list = list(groups.items())
    taken = [-1] * len(eligible)
    if all(len(key) == 1 for key in class_keys):  # no call is wanted by two steps: nothing to trade
        counts = {key[0]: len(in_class) for key, in_class in classes.items()}
        flows = {
            (k, g): counts[members[0]] for g, ((where, _), members) in enumerate(group_list) for k in where
        }
        work = len(eligible)
    else:
        flows, work = _flow(class_keys, classes, group_list, steps, len(eligible))
    value = 0
    cursor = dict.fromkeys(range(len(class_keys)), 0)
    for g, ((where, high), members) in enumerate(group_list):
        chosen: list[int] = []
        for k in where:  # the earliest calls of each class: any would do, the earliest keep reports stable
            n = flows.get((k, g), 0)
            chosen.extend(classes[class_keys[k]][cursor[k] : cursor[k] + n])
            cursor[k] += n
        value += _fill(sorted(chosen), members, steps, high, taken)
    return Assignment(value, tuple(taken), work)


def _fill(
    calls: list[int], members: list[int], steps: Sequence[Capacity], high: int, taken: list[int]
) -> int:
    """Hands a step class's calls to its steps, their valuable slots first, and returns
    what they are worth."""
    value, k = 0, 0
    had = dict.fromkeys(members, 0)
    for valuable in (True, False):
        for step in members:
            limit = steps[step].least if valuable else steps[step].most
            while k < len(calls) and (limit is None or had[step] < limit):
                taken[calls[k]] = step
                had[step] += 1
                value += high if valuable else 1
                k += 1
    return value


def _flow(
    class_keys: list[tuple[int, ...]],
    classes: dict[tuple[int, ...], list[int]],
    group_list: list[tuple[tuple[tuple[int, ...], int], list[int]]],
    steps: Sequence[Capacity],
    calls: int,
) -> tuple[dict[tuple[int, int], int], int]:
    """Flow per (call class, step class) of a maximum-value flow, and the work done."""
    n_classes, n_groups = len(class_keys), len(group_list)
    source, sink = 0, n_classes + n_groups + 1
    to: list[int] = []
    cap: list[int] = []
    cost: list[int] = []
    adjacent: list[list[int]] = [[] for _ in range(sink + 1)]

    def arc(a: int, b: int, capacity: int, price: int) -> int:
        """An arc and its residual twin (index ^ 1)."""
        index = len(to)
        to.extend((b, a))
        cap.extend((capacity, 0))
        cost.extend((price, -price))
        adjacent[a].append(index)
        adjacent[b].append(index + 1)
        return index

    for k, key in enumerate(class_keys):
        arc(source, 1 + k, len(classes[key]), 0)
    middle: dict[tuple[int, int], int] = {}
    for g, ((where, high), members) in enumerate(group_list):
        node = 1 + n_classes + g
        for k in where:
            middle[(k, g)] = arc(1 + k, node, calls, 0)
        least = sum(steps[s].least for s in members)
        most = (
            None if any(steps[s].most is None for s in members) else sum(steps[s].most or 0 for s in members)
        )
        arc(node, sink, least, -high)
        arc(node, sink, calls if most is None else most - least, -1)
    work = 0
    while True:
        dist: list[int | None] = [None] * (sink + 1)
        via = [-1] * (sink + 1)
        dist[source] = 0
        queue, queued = deque([source]), [False] * (sink + 1)
        queued[source] = True
        while queue:
            node = queue.popleft()
            queued[node] = False
            here = dist[node]
            assert here is not None
            for a in adjacent[node]:
                work += 1
                if cap[a] > 0 and to[a]:  # a path never comes back through the source
                    head, d = to[a], here + cost[a]
                    known = dist[head]
                    if known is None or d < known:
                        dist[head], via[head] = d, a
                        if not queued[head]:
                            queued[head] = True
                            queue.append(head)
        reached = dist[sink]
        if reached is None or reached >= 0:
            break
        push, node = calls, sink
        while node != source:
            a = via[node]
            push = min(push, cap[a])
            node = to[a ^ 1]
        node = sink
        while node != source:
            a = via[node]
            cap[a] -= push
            cap[a ^ 1] += push
            node = to[a ^ 1]
    return {pair: cap[a ^ 1] for pair, a in middle.items() if cap[a ^ 1]}, work


class GrowingAssignment:
    """The best assignment's value as calls are added one at a time. A call's value depends only on the step
    slot it fills, so the optimum after one more call is the optimum before plus the best augmenting path from
    it, if that path gains: one Bellman-Ford a call. Calls with the same eligible steps share one node."""

    __slots__ = ("_adjacent", "_cap", "_classes", "_cost", "_to", "value", "work")

    def __init__(self, steps: Sequence[Capacity]) -> None:
        self._to: list[int] = []
        self._cap: list[int] = []
        self._cost: list[int] = []
        self._adjacent: list[list[int]] = [[] for _ in range(len(steps) + 2)]  # source 0, sink 1, steps 2..
        self._classes: dict[tuple[int, ...], int] = {}  # eligible steps -> the arc from the source
        self.value = 0
        self.work = 0
        for k, step in enumerate(steps):
            self._arc(2 + k, 1, step.least, -step.high)
            self._arc(2 + k, 1, _UNLIMITED if step.most is None else step.most - step.least, -1)

    def _arc(self, a: int, b: int, capacity: int, price: int) -> int:
        index = len(self._to)
        self._to.extend((b, a))
        self._cap.extend((capacity, 0))
        self._cost.extend((price, -price))
        self._adjacent[a].append(index)
        self._adjacent[b].append(index + 1)
        return index

    def add(self, options: Sequence[int]) -> int:
        """Adds a call that may take the steps ``options``; returns the best value now."""
        if not options:
            return self.value
        key = tuple(options)
        supply = self._classes.get(key)
        if supply is None:
            node = len(self._adjacent)
            self._adjacent.append([])
            supply = self._classes[key] = self._arc(0, node, 0, 0)
            for k in key:
                self._arc(node, 2 + k, _UNLIMITED, 0)
        self._cap[supply] += 1
        to, cap, cost, adjacent = self._to, self._cap, self._cost, self._adjacent
        dist: list[int | None] = [None] * len(adjacent)
        via = [-1] * len(adjacent)
        dist[0] = 0
        queue, queued = deque([0]), [False] * len(adjacent)
        while queue:
            node = queue.popleft()
            queued[node] = False
            here = dist[node]
            assert here is not None
            for a in adjacent[node]:
                self.work += 1
                if cap[a] > 0 and to[a]:  # a path never comes back through the source
                    head, d = to[a], here + cost[a]
                    known = dist[head]
                    if known is None or d < known:
                        dist[head], via[head] = d, a
                        if not queued[head]:
                            queued[head] = True
                            queue.append(head)
        gained = dist[1]
        if gained is not None and gained < 0:
            node = 1
            while node != 0:
                a = via[node]
                cap[a] -= 1
                cap[a ^ 1] += 1
                node = to[a ^ 1]
            self.value -= gained
        return self.value


_UNLIMITED = 1 << 62
