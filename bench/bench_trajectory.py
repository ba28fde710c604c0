"""The time to score one run against a trajectory spec, against tool correctness on the same run.

    python bench/bench_trajectory.py [--repeat 300]

Cases, each timed ``--repeat`` times in this process (median and p95 of single scorings, after a warm-up):

- ``20 steps x 50 calls``: a realistic spec of 20 steps (argument matchers with $regex, $in, $approx, $type, a
  $ref from a result, an any_of, an unordered and a parallel group, optional steps, a count) against a run of 50
  calls that mostly follows it (repeats, a few extra calls, one wrong argument);
- ``repeats``: a worst case for the state space: 40 calls of one tool against count ranges and unordered groups
  of that tool;
- ``fresh spec``: the first scoring of a spec read for the run (no memoised weights or automata), as a run whose
  span carries a spec the collector has not seen;
- ``parse``: reading the 20-step spec from JSON (the collector keeps what it read);
- ``tool_correctness``: ``ToolCorrectnessMetric`` (default mode) on the same 50 calls against the spec's 20 tools.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.test_case import EvalTestCase, ToolCall
from agentotel_eval.trajectory import parse_spec, score_trajectory

SPEC: dict[str, Any] = {"extra": "penalize", "max_calls": 60, "forbid": [{"tool": "delete_account"}], "steps": [
    {"id": "who", "tool": "find_user", "args": {"zip": {"$regex": r"\d{5}"}}},
    {"any_of": [{"tool": "get_user_details", "args": {"user_id": {"$ref": "who.result.user_id"}}},
                {"tool": "search_users"}]},
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
    {"unordered": [{"tool": "audit", "count": {"min": 1}}, {"tool": "summarise", "count": {"min": 2, "max": 12}}]},
    {"tool": "translate", "optional": True},
    {"tool": "close_case"},
]}
TOOLS_IN_ORDER = ["find_user", "get_user_details", "list_orders", "get_order", "get_product", "check_policy",
                  "get_shipping", "notify_customer", "log_case", "compute_refund", "issue_refund", "poll_status",
                  "send_receipt", "update_crm", "close_case", "search_users", "audit", "lookup", "summarise",
                  "translate"]


def realistic_run() -> list[ToolCall]:
    calls = [ToolCall("find_user", {"zip": "94110"}, output={"user_id": "u-7"}, llm_turn="t0"),
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
             ToolCall("issue_refund", {"method": "card"}, llm_turn="t10")]
    calls += [ToolCall("poll_status", {"id": f"R-{k}"}, llm_turn=f"p{k}") for k in range(10)]  # two past max
    calls += [ToolCall("audit", {"k": k}, llm_turn=f"a{k}") for k in range(14)]
    calls += [ToolCall("send_receipt", {"email": "nope"}, llm_turn="s0"),  # a wrong argument, then the right one
              ToolCall("send_receipt", {"email": "ana@example.com"}, llm_turn="s1")]
    calls += [ToolCall("summarise", {"n": k}, llm_turn=f"m{k}") for k in range(10)]
    calls += [ToolCall("update_crm", {}, llm_turn="u"), ToolCall("close_case", {}, llm_turn="c")]
    assert len(calls) == 50, len(calls)
    return calls


REPEATS: dict[str, Any] = {"steps": [
    {"tool": "fetch", "count": {"min": 2, "max": 6}},
    {"unordered": [{"tool": "fetch", "args": {"page": {"$gte": 3}}}, {"tool": "fetch", "optional": True},
                   {"tool": "fetch", "count": {"min": 1, "max": 3}}]},
    {"tool": "fetch", "count": {"min": 0}},
    {"any_of": [{"steps": [{"tool": "fetch"}, {"tool": "fetch"}]}, {"tool": "fetch", "count": {"min": 3}}]},
]}


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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    calls = realistic_run()
    spec = parse_spec(SPEC)
    outcome = score_trajectory(spec, calls)
    steps = sum(1 for s in spec.steps() if s.kind == "tool")
    print(f"spec: {steps} tool steps; run: {len(calls)} calls; score {outcome.score:.3f}, "
          f"{len(outcome.details['extra'])} extra, violations {[v['type'] for v in outcome.violations]}")
    text = json.dumps(SPEC)
    repeats_spec = parse_spec(REPEATS)
    fetches = [ToolCall("fetch", {"page": k}) for k in range(40)]
    metric = ToolCorrectnessMetric()
    case = EvalTestCase("q", tools_called=calls, expected_tools=[ToolCall(n) for n in TOOLS_IN_ORDER])

    ours = row("20 steps x 50 calls", timings(lambda: score_trajectory(spec, calls), args.repeat))
    row("repeats (40 calls of one tool)", timings(lambda: score_trajectory(repeats_spec, fetches), args.repeat))
    row("fresh spec, 50 calls", timings(lambda: score_trajectory(parse_spec(text), calls), args.repeat))
    row("parse the spec (JSON)", timings(lambda: parse_spec(text), args.repeat))
    theirs = row("tool_correctness, 50 calls", timings(lambda: metric.measure(case), args.repeat))
    print(f"  trajectory / tool_correctness time: {ours / theirs:.1f}x")


if __name__ == "__main__":
    main()
