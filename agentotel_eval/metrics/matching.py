"""The pure core of tool correctness: how alike two calls are, and the best way to pair two lists of calls.

Everything here works on plain sequences and indices, never on a metric or a test case, so each piece is
testable against a brute-force oracle. Calls are identified by their position: two equal calls in a list are
two calls (they are matched by index, never deduplicated by value).

Four pairings, one per scoring mode:

- ``multiset_match``: default mode without evaluation params. Every pair weighs 0 or 1, so the maximum
  matching is a multiset intersection of names, found in O(|E| + |C|).
- ``weighted_match``: default mode with evaluation params. An exact maximum-weight assignment (Hungarian
  algorithm), solved separately per tool name because calls with different names never pair.
- ``lcs_match`` / ``weighted_lcs_match``: ordering mode. The (maximum-weight) common subsequence.
- ``call_key``: exact mode. A hashable key under which two calls are equal exactly when they are the same call
  for the considered fields, so a multiset or a sequence comparison of keys decides exact match.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from agentotel_eval.frozen import FrozenDict
from agentotel_eval.test_case import ToolCall

#: ``(expected_index, called_index, weight)``: one expected call satisfied by one called call.
Pair = tuple[int, int, float]

_INF = float("inf")


# --- value equality -----------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


# Exact types checked before the (slow) ABC isinstance: JSON values are almost always these.
_SCALARS = frozenset({str, int, float, type(None)})
_MAPPINGS = frozenset({dict, FrozenDict})


def _is_mapping(value: Any) -> bool:
    return type(value) in _MAPPINGS or isinstance(value, Mapping)


def values_equal(a: Any, b: Any) -> bool:
    """Equality as a user means it for JSON-like tool arguments.

    Numbers compare by value (``100 == 100.0``), but a bool is not a number (``True != 1``); mappings and
    sequences compare structurally with the same rule, so ``{"n": True}`` differs from ``{"n": 1}``.
    """
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta in _SCALARS and tb in _SCALARS:
        return a == b
    a_bool, b_bool = ta is bool or isinstance(a, bool), tb is bool or isinstance(b, bool)
    if a_bool or b_bool:
        return a_bool and b_bool and a == b
    if _is_mapping(a):
        if not _is_mapping(b) or len(a) != len(b):
            return False
        return all(k in b and values_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        if not isinstance(b, list | tuple) or len(a) != len(b):
            return False
        return all(map(values_equal, a, b))
    if _is_mapping(b) or isinstance(b, list | tuple):
        return False
    try:
        return bool(a == b)
    except Exception:  # e.g. array-likes whose == is elementwise
        return False


def canonical(value: Any) -> Hashable:
    """A hashable form of a JSON-like value with the equality of ``values_equal``.

    Numbers keep their value under a ``num`` tag (Python already hashes ``100`` and ``100.0`` alike), bools
    get their own tag, mappings become frozensets of items, sequences tuples; unhashable
    leftovers use ``repr``.
    """
    if value is None or type(value) is str:
        return value
    if isinstance(value, bool):
        return ("bool", value)
    if _is_number(value):
        return ("num", value)
    if isinstance(value, Mapping):
        return ("map", frozenset((k, canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("seq", tuple(canonical(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("repr", type(value).__name__, repr(value))
    return value


# --- how alike two calls are --------------------------------------------------------------------------------


def _as_params(value: Any) -> Any:
    """Missing parameters are an empty set of parameters."""
    return {} if value is None else value


def parameter_similarity(expected: Any, called: Any) -> float:
    """The fraction of parameter keys, over the union of both sides' keys, whose values are equal.

    A key whose values are mappings on both sides counts its own fraction (so a half-right nested filter
    counts 0.5), two empty parameter sets are fully alike (1.0), and non-mapping arguments compare whole.
    """
    expected, called = _as_params(expected), _as_params(called)
    if not _is_mapping(expected) or not _is_mapping(called):
        return 1.0 if values_equal(expected, called) else 0.0
    if not expected and not called:
        return 1.0
    total = 0.0
    union = len(expected)
    for key, e_value in expected.items():
        if key not in called:
            continue
        c_value = called[key]
        if _is_mapping(e_value) and _is_mapping(c_value):
            total += parameter_similarity(e_value, c_value)
        elif values_equal(e_value, c_value):
            total += 1.0
    for key in called:
        if key not in expected:
            union += 1
    return total / union


def parameter_differences(expected: Any, called: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the parameters that differ (for reasons): ``["filters.stars", "q"]``."""
    expected, called = _as_params(expected), _as_params(called)
    if not isinstance(expected, Mapping) or not isinstance(called, Mapping):
        return [] if values_equal(expected, called) else [prefix.rstrip(".") or "<arguments>"]
    out: list[str] = []
    for key, e_value in expected.items():
        path = f"{prefix}{key}"
        if key not in called:
            out.append(path)
            continue
        c_value = called[key]
        if isinstance(e_value, Mapping) and isinstance(c_value, Mapping):
            out.extend(parameter_differences(e_value, c_value, f"{path}."))
        elif not values_equal(e_value, c_value):
            out.append(path)
    out.extend(f"{prefix}{key}" for key in called if key not in expected)
    return out


def call_weight(expected: ToolCall, called: ToolCall, *, input_parameters: bool, output: bool) -> float:
    """How much ``called`` satisfies ``expected``: 0 for another tool, else 1 times the parameter similarity
    (when input parameters are considered), and 0 when outputs are considered and differ."""
    if expected.name != called.name:
        return 0.0
    if output and not values_equal(expected.output, called.output):
        return 0.0
    if input_parameters:
        return parameter_similarity(expected.input_parameters, called.input_parameters)
    return 1.0


def call_key(call: ToolCall, *, input_parameters: bool, output: bool) -> Hashable:
    """The identity of a call for exact match: its name plus the considered fields, canonicalised."""
    if not input_parameters and not output:
        return call.name
    return (
        call.name,
        canonical(_as_params(call.input_parameters)) if input_parameters else None,
        canonical(call.output) if output else None,
    )


# --- default mode -------------------------------------------------------------------------------------------


def multiset_match(expected: Sequence[Hashable], called: Sequence[Hashable]) -> list[Pair]:
    """Pair equal keys by order of occurrence: the k-th expected ``x`` with the k-th called ``x``."""
    positions: dict[Hashable, list[int]] = {}
    for j, key in enumerate(called):
        positions.setdefault(key, []).append(j)
    pairs: list[Pair] = []
    taken: dict[Hashable, int] = {}
    for i, key in enumerate(expected):
        slots = positions.get(key)
        if slots:
            k = taken.get(key, 0)
            if k < len(slots):
                taken[key] = k + 1
                pairs.append((i, slots[k], 1.0))
    return pairs


def max_weight_assignment(weights: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """An exact maximum-weight assignment of rows to columns (Hungarian algorithm, O(n²·m)).

    ``weights[i][j] >= 0``. Every row of the smaller side is assigned (a zero-weight pair costs nothing), so
    callers drop the pairs they do not want. Returns ``(row, column)`` pairs sorted by row.
    """
    n = len(weights)
    m = len(weights[0]) if n else 0
    if n == 0 or m == 0:
        return []
    if n > m:
        transposed = [[weights[i][j] for i in range(n)] for j in range(m)]
        return sorted((i, j) for j, i in max_weight_assignment(transposed))
    # Minimise -weight; classic potentials formulation with 1-based rows/columns and a dummy column 0.
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    owner = [0] * (m + 1)  # owner[j]: row assigned to column j (0 = none)
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        owner[0] = i
        j0 = 0
        minv = [_INF] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            row = weights[i0 - 1]
            ui0 = u[i0]
            delta = _INF
            j1 = 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = -row[j - 1] - ui0 - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    return sorted((owner[j] - 1, j - 1) for j in range(1, m + 1) if owner[j])


def weighted_match(
    expected: Sequence[ToolCall], called: Sequence[ToolCall], *, input_parameters: bool, output: bool
) -> list[Pair]:
    """The maximum-weight assignment of expected to called calls (each used at most once).

    Calls of different tools weigh 0, so the problem splits into one small assignment per tool name; a tool
    expected or called once is a simple maximum. Same-name pairs of weight 0 are kept: they say "the tool
    was called, but with other parameters/output", which a reason should tell apart from "not called".
    """
    by_name_e: dict[str, list[int]] = {}
    for i, call in enumerate(expected):
        by_name_e.setdefault(call.name, []).append(i)
    by_name_c: dict[str, list[int]] = {}
    for j, call in enumerate(called):
        by_name_c.setdefault(call.name, []).append(j)
    pairs: list[Pair] = []
    for name, e_idx in by_name_e.items():
        c_idx = by_name_c.get(name)
        if not c_idx:
            continue
        grid = [
            [
                call_weight(expected[i], called[j], input_parameters=input_parameters, output=output)
                for j in c_idx
            ]
            for i in e_idx
        ]
        if len(e_idx) == 1:
            row = grid[0]
            best = max(range(len(row)), key=row.__getitem__)
            pairs.append((e_idx[0], c_idx[best], row[best]))
        elif len(c_idx) == 1:
            column = [row[0] for row in grid]
            best = max(range(len(column)), key=column.__getitem__)
            pairs.append((e_idx[best], c_idx[0], column[best]))
        else:
            pairs.extend((e_idx[r], c_idx[c], grid[r][c]) for r, c in max_weight_assignment(grid))
    pairs.sort()
    return pairs


# --- ordering mode ------------------------------------------------------------------------------------------


def _front_alignment(n: int, m: int, weight: Callable[[int, int], float | None]) -> list[Pair]:
    """Maximum-weight common subsequence with a suffix table, traced from the front.

    Tracing from the front with "match if optimal, else skip the called call if optimal, else skip the
    expected call" keeps the earliest expected calls matched, so the first expected call left out is the
    first one that is truly out of order (the one a reason should name).
    """
    grid = [[weight(i, j) for j in range(m)] for i in range(n)]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        here, below, row = best[i], best[i + 1], grid[i]
        for j in range(m - 1, -1, -1):
            value = here[j + 1] if here[j + 1] > below[j] else below[j]
            w = row[j]
            if w is not None and w + below[j + 1] > value:
                value = w + below[j + 1]
            here[j] = value
    pairs: list[Pair] = []
    i = j = 0
    while i < n and j < m:
        w = grid[i][j]
        if w is not None and best[i][j] == w + best[i + 1][j + 1]:
            pairs.append((i, j, w))
            i += 1
            j += 1
        elif best[i][j] == best[i][j + 1]:
            j += 1
        else:
            i += 1
    return pairs


def lcs_match(expected: Sequence[Hashable], called: Sequence[Hashable]) -> list[Pair]:
    """The longest common subsequence of two key sequences, as index pairs of weight 1.

    The same front trace as ``_front_alignment`` (earliest expected calls kept), specialised to 0/1 weights:
    integer cells, and equal keys always matched (with unit weights a match is always optimal).
    """
    n, m = len(expected), len(called)
    if n == m and list(expected) == list(called):
        return [(i, i, 1.0) for i in range(n)]
    best = [[0] * (m + 1) for _ in range(n + 1)]
    columns = range(m - 1, -1, -1)
    for i in range(n - 1, -1, -1):
        key, here, below = expected[i], best[i], best[i + 1]
        for j in columns:
            if key == called[j]:
                here[j] = below[j + 1] + 1
            else:
                right, down = here[j + 1], below[j]
                here[j] = right if right > down else down
    pairs: list[Pair] = []
    i = j = 0
    while i < n and j < m:
        if expected[i] == called[j]:
            pairs.append((i, j, 1.0))
            i += 1
            j += 1
        elif best[i][j] == best[i][j + 1]:
            j += 1
        else:
            i += 1
    return pairs


def weighted_lcs_match(
    expected: Sequence[ToolCall], called: Sequence[ToolCall], *, input_parameters: bool, output: bool
) -> list[Pair]:
    """The maximum-weight common subsequence: order kept, each pair weighted by ``call_weight``."""

    def weight(i: int, j: int) -> float | None:
        if expected[i].name != called[j].name:
            return None
        return call_weight(expected[i], called[j], input_parameters=input_parameters, output=output)

    return _front_alignment(len(expected), len(called), weight)


# --- exact mode ---------------------------------------------------------------------------------------------


def first_difference(expected: Sequence[Hashable], called: Sequence[Hashable]) -> int | None:
    """The first position where two sequences differ (a length difference counts), or None if equal."""
    for k, (e, c) in enumerate(zip(expected, called, strict=False)):
        if e != c:
            return k
    if len(expected) != len(called):
        return min(len(expected), len(called))
    return None


def total_weight(pairs: Sequence[Pair]) -> float:
    return sum(p[2] for p in pairs)
