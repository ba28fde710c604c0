"""The time to score one run against a trajectory spec, against tool correctness on the same run.

    python bench/bench_trajectory.py [--repeat 300]

Cases, each timed ``--repeat`` times in this process (median and p95 of single scorings, after a warm-up). A
run of a shape scored before takes its report from the earlier run (``score_trajectory``): every case but the
last two forgets those first, so it times the alignment of a run seen for the first time.

- ``20 steps x 50 calls``: a realistic spec of 20 steps (argument matchers with $regex, $in, $approx, $type, a
  $ref from a result, an any_of, an unordered and a parallel group, optional steps, a count) against a run of
  50 calls that mostly follows it (repeats, a few extra calls, one wrong argument);
- ``repeats``: a worst case for the state space: 40 calls of one tool against count ranges and unordered
  groups of that tool;
- ``fresh spec``: the first scoring of a spec read for the run (no memoised weights or automata), as a run
  whose span carries a spec the collector has not seen;
- ``parse``: reading the 20-step spec from JSON (the collector keeps what it read);
- ``tool_correctness``: ``ToolCorrectnessMetric`` (default mode) on the same 50 calls against
  the spec's 20 tools;
- ``20 steps x 200 calls``: the same spec against a run of 200 calls (the 50 above, each followed by three
  calls of the spec's repeated tools or an extra lookup): target under 20 ms;
- ``unordered 20 x 50``: 20 expected calls with arguments in one order-free group (``adk:ANY_ORDER``) against
  50 calls of the same tools: target under 2 ms;
- ``hostile``: specs whose exact alignment is exponential (six order-free sequences; 16 nested
  ``unordered``/``parallel`` groups) against 150-200 calls: bounded by the work budget, approximate;
- ``3 calls, shape first seen`` / ``3 calls, shape seen before``: a short run (the online benchmark's: 3 calls
  against a 6-step spec with argument matchers, an unordered group, a count and a forbid rule) aligned, and
  taken from the report of an earlier run of its shape, with its own argument checks;
- with ``--solvers``: the assignment of the ``unordered`` case solved by this package's min-cost flow and by
  networkx's ``max_flow_min_cost`` (if networkx is installed), on the same graph.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_assembly import EXPECTATIONS

from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.test_case import EvalTestCase, ToolCall
from agentotel_eval.trajectory import parse_spec, score_trajectory
from agentotel_eval.trajectory.score import forget_shapes

SPEC: dict[str, Any] = {
    "extra": "penalize",
    "max_calls": 60,
    "forbid": [{"tool": "delete_account"}],
    "steps": [
        {"id": "who", "tool": "find_user", "args": {"zip": {"$regex": r"\d{5}"}}},
        {
            "any_of": [
                {"tool": "get_user_details", "args": {"user_id": {"$ref": "who.result.user_id"}}},
                {"tool": "search_users"},
            ]
        },
        {"tool": "list_orders", "args": {"user_id": {"$ref": "who.result.user_id"}, "limit": {"$lte": 50}}},
        {"parallel": [{"tool": "get_order"}, {"tool": "get_product", "optional": True}]},
        {"tool": "check_policy", "count": {"min": 0, "max": 1}, "weight": 0.5},
        {"tool": "get_shipping", "args": {"order_id": {"$type": "string"}}},
        {"unordered": [{"tool": "notify_customer"}, {"tool": "log_case"}]},
        {"tool": "compute_refund", "args": {"amount": {"$approx": 120.0, "rel": 0.01}}},
        {"tool": "issue_refund", "args": {"method": {"$in": ["paypal", "card"]}}},
        {"tool": "poll_status", "count": {"min": 1, "max": 8}},
        {"tool": "send_receipt", "args": {"email": {"$regex": r"[^@]+@[^@]+"}}},
        {"tool": "update_crm", "optional": True},
        {
            "unordered": [
                {"tool": "audit", "count": {"min": 1}},
                {"tool": "summarise", "count": {"min": 2, "max": 12}},
            ]
        },
        {"tool": "translate", "optional": True},
        {"tool": "close_case"},
    ],
}
TOOLS_IN_ORDER = [
    "find_user",
    "get_user_details",
    "list_orders",
    "get_order",
    "get_product",
    "check_policy",
    "get_shipping",
    "notify_customer",
    "log_case",
    "compute_refund",
    "issue_refund",
    "poll_status",
    "send_receipt",
    "update_crm",
    "close_case",
    "search_users",
    "audit",
    "lookup",
    "summarise",
    "translate",
]


def realistic_run() -> list[ToolCall]:
    calls = [
        ToolCall("find_user", {"zip": "94110"}, output={"user_id": "u-7"}, llm_turn="t0"),
        ToolCall("get_user_details", {"user_id": "u-7"}, output={"tier": "gold"}, llm_turn="t1"),
        ToolCall("list_orders", {"user_id": "u-7", "limit": 10}, output=[{"id": "A-1"}], llm_turn="t2"),
        ToolCall("get_order", {"order_id": "A-1"}, llm_turn="t3"),
        ToolCall("get_product", {"sku": "S-1"}, llm_turn="t3"),
        ToolCall("lookup", {"q": "policy"}, llm_turn="t4"),
        ToolCall("check_policy", {"order_id": "A-1"}, llm_turn="t5"),
        ToolCall("get_shipping", {"order_id": "A-1"}, llm_turn="t6"),
        ToolCall("log_case", {"case": "C-1"}, llm_turn="t7"),
        ToolCall("notify_customer", {"user_id": "u-7"}, llm_turn="t8"),
        ToolCall("compute_refund", {"amount": 120.5}, llm_turn="t9"),
        ToolCall("issue_refund", {"method": "card"}, llm_turn="t10"),
    ]
    calls += [ToolCall("poll_status", {"id": f"R-{k}"}, llm_turn=f"p{k}") for k in range(10)]  # two past max
    calls += [ToolCall("audit", {"k": k}, llm_turn=f"a{k}") for k in range(14)]
    calls += [
        ToolCall("send_receipt", {"email": "nope"}, llm_turn="s0"),  # a wrong argument, then the right one
        ToolCall("send_receipt", {"email": "ana@example.com"}, llm_turn="s1"),
    ]
    calls += [ToolCall("summarise", {"n": k}, llm_turn=f"m{k}") for k in range(10)]
    calls += [ToolCall("update_crm", {}, llm_turn="u"), ToolCall("close_case", {}, llm_turn="c")]
    assert len(calls) == 50, len(calls)
    return calls


REPEATS: dict[str, Any] = {
    "steps": [
        {"tool": "fetch", "count": {"min": 2, "max": 6}},
        {
            "unordered": [
                {"tool": "fetch", "args": {"page": {"$gte": 3}}},
                {"tool": "fetch", "optional": True},
                {"tool": "fetch", "count": {"min": 1, "max": 3}},
            ]
        },
        {"tool": "fetch", "count": {"min": 0}},
        {
            "any_of": [
                {"steps": [{"tool": "fetch"}, {"tool": "fetch"}]},
                {"tool": "fetch", "count": {"min": 3}},
            ]
        },
    ]
}


def long_run() -> list[ToolCall]:
    """200 calls: the realistic run, each call followed by three of the spec's repeated tools or a lookup."""
    calls: list[ToolCall] = []
    filler = ["lookup", "audit", "poll_status", "summarise", "get_order"]
    for k, call in enumerate(realistic_run()):
        calls.append(call)
        calls += [ToolCall(filler[(k + i) % 5], {"k": k}, llm_turn=f"x{k}") for i in range(3)]
    return calls


def any_order_case() -> tuple[dict[str, Any], list[ToolCall]]:
    """20 expected calls with arguments in one order-free group, 50 calls of the same tools (seeded)."""
    rnd = random.Random(7)
    tools = ["search", "get_order", "get_user", "refund", "notify", "log", "quote", "book"]
    expected = [{"tool": rnd.choice(tools), "args": {"id": rnd.randint(1, 3)}} for _ in range(20)]
    calls = [ToolCall(rnd.choice(tools), {"id": rnd.randint(1, 3)}, llm_turn=f"t{k}") for k in range(50)]
    return {"preset": "adk:ANY_ORDER", "expected_tools": expected}, calls


def _nest(depth: int) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": "a"}
    for d in range(depth):
        step = {("unordered", "parallel")[d % 2]: [{"tool": "abcd"[d % 4]}, step]}
    return step


HOSTILE: dict[str, tuple[dict[str, Any], list[ToolCall]]] = {
    "six order-free sequences x 150": (
        {"steps": [{"unordered": [{"steps": [{"tool": t} for t in "abcdef"]} for _ in range(6)]}]},
        [ToolCall(t, {}) for t in "abcdef" * 25],
    ),
    "16 nested groups x 200": (
        {"steps": [_nest(16)]},
        [ToolCall("abcd"[k % 4], {}, llm_turn=f"t{k // 3}") for k in range(200)],
    ),
}


def solvers(repeat: int) -> None:
    """The unordered case's assignment by this package's min-cost flow and by networkx's, on one graph."""
    from agentotel_eval.trajectory.assignment import Capacity, best_assignment

    spec, calls = any_order_case()
    steps = parse_spec(spec).root.members[0].members
    eligible = [
        [
            k
            for k, s in enumerate(steps)
            if s.tool == c.name
            and s.args is not None
            and all(c.input_parameters.get(key) == m.value for key, m in s.args.keys)
        ]  # type: ignore[attr-defined]
        for c in calls
    ]
    caps = [Capacity(1000, 1, 1) for _ in steps]
    ours = best_assignment(eligible, caps)
    row("min-cost flow (this package)", timings(lambda: best_assignment(eligible, caps), repeat))
    try:
        import networkx as nx
    except ImportError:
        print("  networkx is not installed: its figure is left out")
        return

    def networkx_flow() -> int:
        graph = nx.DiGraph()
        for c, options in enumerate(eligible):
            graph.add_edge("s", ("c", c), capacity=1, weight=0)
            for k in options:
                graph.add_edge(("c", c), ("k", k), capacity=1, weight=-1000)
        for k in range(len(steps)):
            graph.add_edge(("k", k), "t", capacity=1, weight=0)
        flow = nx.max_flow_min_cost(graph, "s", "t")
        return sum(flow[("c", c)][("k", k)] for c, options in enumerate(eligible) for k in options) * 1000

    assert networkx_flow() == ours.value
    row("networkx max_flow_min_cost", timings(networkx_flow, repeat))


def first_seen(spec: Any, calls: list[ToolCall]) -> Callable[[], object]:
    """Scoring that aligns the run, as for a shape not seen before."""

    def score() -> object:
        forget_shapes()
        return score_trajectory(spec, calls)

    return score


#: the online benchmark's trajectory rule (bench_assembly.py): 6 steps over the ingest load's 1-3 call runs
SHORT: dict[str, Any] = EXPECTATIONS["trajectory"]["trajectory"]


def short_runs() -> list[list[ToolCall]]:
    """Runs of one shape with other argument values (each scored in turn: the checks are each run's own)."""
    return [
        [
            ToolCall("get_weather", {"city": city}, llm_turn="t1"),
            ToolCall("search_flights", {"destination": city}, llm_turn="t2"),
            ToolCall("book_hotel", {"nights": nights}, llm_turn="t3"),
        ]
        for city, nights in (("Paris", 3), ("Lisbon", 2), ("Oslo", 7), ("Rome", 1))
    ]


def timings(fn: Callable[[], object], repeat: int) -> list[float]:
    for _ in range(max(3, repeat // 10)):
        fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def row(name: str, samples: list[float]) -> float:
    ordered = sorted(samples)
    median = statistics.median(ordered)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    print(f"  {name:30s} median {median * 1e3:8.3f} ms   p95 {p95 * 1e3:8.3f} ms")
    return median


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--solvers", action="store_true", help="time the assignment solvers too")
    args = parser.parse_args()
    calls = realistic_run()
    spec = parse_spec(SPEC)
    outcome = score_trajectory(spec, calls)
    steps = sum(1 for s in spec.steps() if s.kind == "tool")
    print(
        f"spec: {steps} tool steps; run: {len(calls)} calls; score {outcome.score:.3f}, "
        f"{len(outcome.details['extra'])} extra, violations {[v['type'] for v in outcome.violations]}"
    )
    text = json.dumps(SPEC)
    repeats_spec = parse_spec(REPEATS)
    fetches = [ToolCall("fetch", {"page": k}) for k in range(40)]
    metric = ToolCorrectnessMetric()
    case = EvalTestCase("q", tools_called=calls, expected_tools=[ToolCall(n) for n in TOOLS_IN_ORDER])

    ours = row("20 steps x 50 calls", timings(first_seen(spec, calls), args.repeat))
    row("repeats (40 calls of one tool)", timings(first_seen(repeats_spec, fetches), args.repeat))
    row("fresh spec, 50 calls", timings(lambda: score_trajectory(parse_spec(text), calls), args.repeat))
    row("parse the spec (JSON)", timings(lambda: parse_spec(text), args.repeat))
    theirs = row("tool_correctness, 50 calls", timings(lambda: metric.measure(case), args.repeat))
    print(f"  trajectory / tool_correctness time: {ours / theirs:.1f}x")
    long = long_run()
    few = max(10, args.repeat // 10)
    row("20 steps x 200 calls", timings(first_seen(spec, long), few))
    any_order, any_calls = any_order_case()
    any_spec = parse_spec(any_order)
    row("unordered 20 x 50 (adk:ANY_ORDER)", timings(first_seen(any_spec, any_calls), args.repeat))
    for name, (hostile, hostile_calls) in HOSTILE.items():
        read = parse_spec(hostile)
        outcome = score_trajectory(read, hostile_calls)
        row(f"hostile: {name}", timings(first_seen(read, hostile_calls), 3))
        print(
            f"    work {outcome.alignment.work:,}, approximate: {outcome.alignment.approximate is not None}"
        )
    short, runs = parse_spec(SHORT), short_runs()
    row("3 calls, shape first seen", timings(first_seen(short, runs[0]), args.repeat))
    turn = iter(range(1 << 62))
    row(
        "3 calls, shape seen before",
        timings(lambda: score_trajectory(short, runs[next(turn) % len(runs)]), args.repeat),
    )
    if args.solvers:
        solvers(args.repeat)


if __name__ == "__main__":
    main()
