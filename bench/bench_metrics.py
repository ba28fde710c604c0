"""Throughput of the tool-correctness metric on 5-tool sequences, per mode, against naive references.

    python bench/bench_metrics.py [--cases N] [--repeat R]

For each mode this times, on the same pre-built cases, in the same process:

- ``measure``: ``metric.measure(case)``, everything a user gets (score, success, reason, log, result object);
- ``core``: the scoring alone (``score_tool_calls``), no reason, log or result;
- ``naive``: an obvious reference that only computes the score: nested loops with ``list.remove`` for
  multisets, brute force over every assignment for weighted matching, plain recursion for the LCS.

Every naive score is checked against ours before timing. Each figure sums the best time of every short batch
over R rounds (the machine is shared; see ``best_rate``); compare the ratios, not the absolute numbers,
across machines.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric, score_tool_calls
from agentotel_eval.test_case import EvalTestCase, ToolCall

TOOLS = [
    "search_hotels",
    "sort_by_price",
    "book_hotel",
    "get_weather",
    "send_email",
    "validate",
    "pay",
    "cancel",
]
PARAMS = ["input_parameters", "output"]


def build_cases(n: int, length: int = 5, seed: int = 7) -> list[EvalTestCase]:
    """Realistic runs: mostly right, some with a call missing, an extra, a swap or a wrong argument."""
    rnd = random.Random(seed)
    cases = []
    for _ in range(n):
        expected = [
            ToolCall(
                rnd.choice(TOOLS),
                {"q": rnd.choice(["paris", "rome"]), "n": rnd.randint(1, 3)},
                output=rnd.choice(["ok", "none"]),
            )
            for _ in range(length)
        ]
        called = list(expected)
        kind = rnd.random()
        if kind < 0.2:
            del called[rnd.randrange(length)]
            called.insert(rnd.randrange(length), ToolCall(rnd.choice(TOOLS)))
        elif kind < 0.4:
            i, j = rnd.sample(range(length), 2)
            called[i], called[j] = called[j], called[i]
        elif kind < 0.6:
            k = rnd.randrange(length)
            old = called[k]
            called[k] = ToolCall(old.name, {**old.input_parameters, "n": 9}, output=old.output)
        elif kind < 0.7:
            called = [ToolCall(rnd.choice(TOOLS)) for _ in range(length)]
        cases.append(EvalTestCase("q", "a", tools_called=called, expected_tools=expected))
    return cases


# --- naive references (score only) --------------------------------------------------------------------------


def naive_default(expected: Sequence[ToolCall], called: Sequence[ToolCall]) -> float:
    if not expected:
        return 1.0
    used = [False] * len(called)
    hits = 0
    for e in expected:
        for j, c in enumerate(called):
            if not used[j] and c.name == e.name:
                used[j] = True
                hits += 1
                break
    return hits / len(expected)


def naive_exact(expected: Sequence[ToolCall], called: Sequence[ToolCall]) -> float:
    remaining = [e.name for e in expected]
    for c in called:
        if c.name not in remaining:
            return 0.0
        remaining.remove(c.name)
    return 0.0 if remaining else 1.0


def naive_exact_ordering(expected: Sequence[ToolCall], called: Sequence[ToolCall]) -> float:
    return 1.0 if [e.name for e in expected] == [c.name for c in called] else 0.0


def _lcs(e: Sequence[str], c: Sequence[str]) -> int:
    if not e or not c:
        return 0
    if e[0] == c[0]:
        return 1 + _lcs(e[1:], c[1:])
    return max(_lcs(e[1:], c), _lcs(e, c[1:]))


def naive_ordering(expected: Sequence[ToolCall], called: Sequence[ToolCall]) -> float:
    if not expected:
        return 1.0
    return _lcs([e.name for e in expected], [c.name for c in called]) / len(expected)


def _weight(e: ToolCall, c: ToolCall) -> float:
    if e.name != c.name or e.output != c.output:
        return 0.0
    keys = set(e.arguments) | set(c.arguments)
    if not keys:
        return 1.0
    return sum(
        1 for k in keys if k in e.arguments and k in c.arguments and e.arguments[k] == c.arguments[k]
    ) / len(keys)


def naive_weighted_default(expected: Sequence[ToolCall], called: Sequence[ToolCall]) -> float:
    """Exact by brute force: every injective assignment of expected calls to called calls."""
    if not expected:
        return 1.0
    n, m = len(expected), len(called)
    best = 0.0
    if n <= m:
        for cols in itertools.permutations(range(m), n):
            best = max(best, sum(_weight(expected[i], called[j]) for i, j in enumerate(cols)))
    else:
        for rows in itertools.permutations(range(n), m):
            best = max(best, sum(_weight(expected[i], called[j]) for j, i in enumerate(rows)))
    return best / n


def _wlcs(e: Sequence[ToolCall], c: Sequence[ToolCall]) -> float:
    if not e or not c:
        return 0.0
    best = max(_wlcs(e[1:], c), _wlcs(e, c[1:]))
    if e[0].name == c[0].name:
        best = max(best, _weight(e[0], c[0]) + _wlcs(e[1:], c[1:]))
    return best


def naive_weighted_ordering(expected: Sequence[ToolCall], called: Sequence[ToolCall]) -> float:
    return _wlcs(expected, called) / len(expected) if expected else 1.0


# --- timing -------------------------------------------------------------------------------------------------

# (label, metric kwargs, naive reference, longest sequence the naive reference can do in reasonable time)
MODES: list[tuple[str, dict, Callable[[Sequence[ToolCall], Sequence[ToolCall]], float], int]] = [
    ("default", {}, naive_default, 10_000),
    ("exact", {"exact_match": True}, naive_exact, 10_000),
    ("ordering", {"check_ordering": True}, naive_ordering, 8),
    ("exact+ordering", {"exact_match": True, "check_ordering": True}, naive_exact_ordering, 10_000),
    ("default+params", {"evaluation_params": PARAMS}, naive_weighted_default, 7),
    ("ordering+params", {"check_ordering": True, "evaluation_params": PARAMS}, naive_weighted_ordering, 7),
]


def best_rate(fn: Callable[[list], None], items: list, repeat: int, batch: int = 250) -> float:
    """Items per second, from the best time of each short batch over ``repeat`` rounds.

    The machine is shared: a long run always catches some preemption, while a batch of a few milliseconds
    usually runs undisturbed in at least one round. Summing each batch's best time measures the code, not
    the neighbours.
    """
    batches = [items[k : k + batch] for k in range(0, len(items), batch)]
    best = [float("inf")] * len(batches)
    for _ in range(repeat):
        for k, chunk in enumerate(batches):
            start = time.perf_counter()
            fn(chunk)
            best[k] = min(best[k], time.perf_counter() - start)
    return len(items) / sum(best)


def core_function(kwargs: dict) -> Callable[[Sequence[ToolCall], Sequence[ToolCall]], object]:
    """The scoring the metric itself runs for this mode, without reason, log or result object."""
    flags = {
        "exact_match": kwargs.get("exact_match", False),
        "check_ordering": kwargs.get("check_ordering", False),
        "input_parameters": bool(kwargs.get("evaluation_params")),
        "output": bool(kwargs.get("evaluation_params")),
    }
    return lambda e, c: score_tool_calls(e, c, **flags)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2_000, help="distinct cases (default 2000)")
    parser.add_argument("--length", type=int, default=5, help="expected calls per case (default 5)")
    parser.add_argument(
        "--repeat", type=int, default=25, help="rounds; each batch's best is kept (default 25)"
    )
    args = parser.parse_args()
    cases = build_cases(args.cases, args.length)
    pairs = [(c.expected_tools, c.tools_called) for c in cases]
    print(
        f"{args.cases} distinct cases of {args.length} expected / ~{args.length} called calls; "
        f"best batch times of {args.repeat} rounds; Python {sys.version.split()[0]}"
    )
    header = (
        f"{'mode':<16} {'measure/s':>12} {'core/s':>12} {'naive/s':>12} "
        f"{'measure÷naive':>14} {'core÷naive':>11}"
    )
    print(header)
    print("-" * len(header))
    default_rate = 0.0
    for label, kwargs, naive, naive_limit in MODES:
        metric = ToolCorrectnessMetric(**kwargs)
        with_naive = args.length <= naive_limit
        if with_naive:
            for case, (e, c) in zip(
                cases, pairs, strict=True
            ):  # same scores, or the comparison means nothing
                ours, ref = metric.measure(case).score, naive(e, c)
                assert abs(ours - ref) < 1e-9, (label, e, c, ours, ref)
        measure = metric.measure
        core = core_function(kwargs)

        def run_measure(chunk: list, measure=measure) -> None:
            for case in chunk:
                measure(case)

        def run_core(chunk: list, core=core) -> None:
            for e, c in chunk:
                core(e, c)

        def run_naive(chunk: list, naive=naive) -> None:
            for e, c in chunk:
                naive(e, c)

        m_rate = best_rate(run_measure, cases, args.repeat)
        c_rate = best_rate(run_core, pairs, args.repeat)
        if label == "default":
            default_rate = m_rate
        if with_naive:
            n_rate = best_rate(run_naive, pairs, args.repeat)
            print(
                f"{label:<16} {m_rate:>12,.0f} {c_rate:>12,.0f} {n_rate:>12,.0f} {m_rate / n_rate:>14.2f} "
                f"{c_rate / n_rate:>11.2f}"
            )
        else:
            print(f"{label:<16} {m_rate:>12,.0f} {c_rate:>12,.0f} {'(too slow)':>12} {'-':>14} {'-':>11}")
    verdict = (
        ("met" if default_rate >= 100_000 else "NOT met") if args.length == 5 else "applies to 5-call cases"
    )
    print(
        f"\ndefault mode measure(): {default_rate:,.0f} cases/s = {1e6 / default_rate:.1f} µs/case "
        f"(target ≥ 100,000 cases/s: {verdict})"
    )


if __name__ == "__main__":
    main()
