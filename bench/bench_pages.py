"""Page rendering benchmark: how long turning a page's data into HTML takes, in-process, with no database.

    python bench/bench_pages.py [--renders 400] [--warmup 40] [--clock wall|cpu] [--json FILE|-]

The data is synthetic, shaped as the pages read it from the database (times of stored rows as ISO text), and
the size ``bench/bench_ui.py``'s database gives a page: an overview of 20 agents (the 6 busiest charted over
28 buckets, 5 metrics), a runs page of 50 runs (4 scores each), a run of 20 tool calls (JSON arguments and
results, evidence, 5 evaluations, a 45-span tree), the error page, the sign-in page, and a report of that
overview with its 10 worst runs. Every text is the same on every run of the script, so two versions of the
pages can be compared: run it with each on ``PYTHONPATH`` in turn, a few times, alternating.

Printed per page: the median and p95 in microseconds over ``--renders`` renders after ``--warmup`` ones, and
the page's size. ``--clock cpu`` times the thread's CPU time instead of the wall clock: on a machine other
work shares, what the render costs rather than how long it waited for a core. Only the public rendering
functions are called (``agentotel_eval.pages.render``, ``agentotel_eval.pages.sign_in``), so the script
measures any version that has them.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH: a version put there first is the one measured

AGENTS = [
    f"{domain}-{role}"
    for domain in ("travel", "support", "research", "ops", "sales")
    for role in ("planner", "triage", "analyst", "oncall")
]
SERVICES = ("assistant-web", "helpdesk", "research-batch", "ops-bot")
METRICS = (
    "tool_correctness",
    "tool_correctness_exact",
    "tool_correctness_ordering",
    "tool_errors_detectors",
    "tool_sequence_match",
)
TOOLS = (
    "search_flights",
    "search_hotels",
    "book_hotel",
    "get_weather",
    "convert_currency",
    "lookup_order",
    "issue_refund",
    "search_docs",
    "fetch_page",
    "query_metrics",
    "page_oncall",
    "crm_lookup",
)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(digits * 4):0{digits}x}"


def make_overview(rng: random.Random) -> Any:
    from agentotel_eval.access.filters import Filters
    from agentotel_eval.access.queries import AgentSummary, Overview

    step = timedelta(hours=6)
    buckets = [NOW - step * (28 - k) for k in range(28)]
    agents = []
    for rank, name in enumerate(AGENTS):
        runs = int(5000 / (rank + 1) ** 0.7)
        metrics = {m: (runs, int(runs * rng.uniform(0.3, 1.0))) for m in METRICS[: 2 + rank % 4]}
        charted = rank < 6
        per_bucket = [rng.randrange(0, runs // 10 + 1) for _ in buckets] if charted else []
        rates = (
            {m: [None if rng.random() < 0.1 else rng.random() for _ in buckets] for m in metrics}
            if charted
            else {}
        )
        agents.append(
            AgentSummary(
                name,
                runs,
                rng.randrange(0, 40),
                NOW - timedelta(minutes=rank),
                metrics,
                buckets if charted else [],
                per_bucket,
                rates,
            )
        )
    departures = [
        (
            tool,
            {
                "missing": rng.randrange(0, 90),
                "extra": rng.randrange(0, 60),
                "out of order": rng.randrange(0, 30),
            },
        )
        for tool in TOOLS[:10]
    ]
    tool_errors = [
        {
            "tool_name": tool,
            "calls": rng.randrange(1000, 20000),
            "errors": rng.randrange(0, 900),
            "error_rate": rng.random() / 10,
        }
        for tool in TOOLS[:10]
    ]
    findings = [
        {"metric": metric, "error_type": kind, "runs": rng.randrange(1, 500)}
        for metric in ("tool_errors", "tool_errors_detectors")
        for kind in ("parameter_error", "repeated_failure", "invalid_function")
    ]
    judge = [
        {"status": "ok", "evaluations": 1200, "cost_usd": 1.234, "models": "gpt-4o-mini"},
        {"status": "error", "evaluations": 12, "cost_usd": 0.0, "models": None},
    ]
    return Overview(
        Filters(),
        NOW,
        21600,
        agents,
        departures,
        "tool_correctness_ordering",
        tool_errors,
        findings,
        judge,
        sum(a.runs for a in agents),
        list(AGENTS),
    )


def _scores(rng: random.Random, expected: list[str]) -> list[dict[str, Any]]:
    out = []
    for metric in METRICS[:4]:
        score = rng.choice((0.0, 0.5, 0.75, 1.0))
        out.append(
            {"metric": metric, "score": score, "success": score >= 0.75, "status": "ok", "expected": expected}
        )
    return out


def run_row(rng: random.Random, k: int) -> dict[str, Any]:
    called = [rng.choice(TOOLS) for _ in range(rng.randrange(1, 5))]
    expected = [*called[:-1], rng.choice(TOOLS)]
    start = NOW - timedelta(minutes=3 * k)
    return {
        "trace_id": _hex(rng, 32),
        "span_id": _hex(rng, 16),
        "agent_name": rng.choice(AGENTS),
        "service_name": rng.choice(SERVICES),
        "start_time": start.isoformat(),
        "end_time": (start + timedelta(seconds=4)).isoformat(),
        "status": "error" if k % 13 == 0 else "ok",
        "tools_called": called,
        "expected_tools": expected,
        "input": " ".join(
            rng.choice(
                (
                    "Find",
                    "a",
                    "flight",
                    "to",
                    "Oslo",
                    "and",
                    "book",
                    "the",
                    "cheapest",
                    "hotel",
                    "near",
                    "the",
                    "centre,",
                    "then",
                    "check",
                    "weather.",
                )
            )
            for _ in range(rng.randrange(15, 40))
        ),
        "tool_call_count": len(called),
        "parent_run_span_id": _hex(rng, 16) if k % 17 == 0 else None,
        "scores": _scores(rng, expected),
    }


def make_runs_page(rng: random.Random) -> Any:
    from agentotel_eval.access.filters import Filters
    from agentotel_eval.access.queries import RunsPage

    return RunsPage(
        Filters(page=3),
        [run_row(rng, k) for k in range(50)],
        100_000,
        True,
        list(AGENTS),
        list(SERVICES),
        list(METRICS),
    )


def make_run_detail(rng: random.Random, calls: int = 20) -> Any:
    from agentotel_eval.access.queries import RunDetail

    row = run_row(rng, 1)
    trace_id, span_id = row["trace_id"], row["span_id"]
    names = [rng.choice(TOOLS) for _ in range(calls)]
    expected = [n for n in names if rng.random() < 0.8] + [rng.choice(TOOLS)]
    start = int(NOW.timestamp() * 1e9)
    spans = [
        {
            "span_id": span_id,
            "parent_span_id": None,
            "name": f"invoke_agent {row['agent_name']}",
            "kind": "INTERNAL",
            "start_time_unix_nano": start,
            "end_time_unix_nano": start + 9 * 10**9,
            "status_code": "UNSET",
            "status_message": "",
            "scope_name": "pydantic-ai",
        }
    ]
    tool_calls, diagnostic_calls = [], []
    for seq, name in enumerate(names):
        llm, tool = _hex(rng, 16), _hex(rng, 16)
        at = start + seq * 4 * 10**8
        spans.append(
            {
                "span_id": llm,
                "parent_span_id": span_id,
                "name": "chat gpt-4o-mini",
                "kind": "CLIENT",
                "start_time_unix_nano": at,
                "end_time_unix_nano": at + 2 * 10**8,
                "status_code": "UNSET",
                "status_message": "",
                "scope_name": "pydantic-ai",
            }
        )
        failed = seq % 7 == 3
        spans.append(
            {
                "span_id": tool,
                "parent_span_id": span_id,
                "name": f"execute_tool {name}",
                "kind": "INTERNAL",
                "start_time_unix_nano": at + 2 * 10**8,
                "end_time_unix_nano": at + 3 * 10**8,
                "status_code": "ERROR" if failed else "UNSET",
                "status_message": "",
                "scope_name": "pydantic-ai",
            }
        )
        sources = {
            "arguments": "gen_ai",
            "call_id": "gen_ai",
            "llm_turn": "request:gen_ai",
            "name": "gen_ai",
            "result": "gen_ai",
            "status": "span_status",
        }
        tool_calls.append(
            {
                "trace_id": trace_id,
                "run_span_id": span_id,
                "seq": seq,
                "tool_name": name,
                "span_id": tool,
                "call_id": f"call_{seq}",
                "status": "error" if failed else "ok",
                "error": f"ValueError: unknown city: Atlantis-{seq}" if failed else None,
                "arguments": {
                    "city": "Oslo",
                    "dates": ["2026-12-01", "2026-12-04"],
                    "guests": seq % 3 + 1,
                    "filters": {"max_price": 180, "stars": [3, 4], "near": "centre"},
                },
                "result": json.dumps(
                    {"results": [{"name": f"Hotel {k}", "price": 90 + k, "rating": 4.1} for k in range(4)]}
                ),
                "start_time": (NOW + timedelta(milliseconds=400 * seq)).isoformat(),
                "sources": sources,
                "agent_name": row["agent_name"],
                "llm_turn": llm,
                "source": "gen_ai",
            }
        )
        diagnostic_calls.append(
            {
                "evidence": sources,
                "execution_span": tool,
                "name": name,
                "request_span": llm,
                **({"discarded": ["result:events:empty"]} if seq % 5 == 0 else {}),
            }
        )
    evaluations = [
        {
            "metric": s["metric"],
            "score": s["score"],
            "threshold": 0.75,
            "success": s["success"],
            "status": "ok",
            "reason": f"{s['metric']}: 17 of 21 expected calls were made in order",
            "source": "agentotel-eval",
            "model": None,
            "cost_usd": None,
            "details": {"expected": expected, "errors": []},
        }
        for s in row["scores"]
    ]
    evaluations.append(
        {
            "metric": "tool_errors",
            "score": 0.8,
            "threshold": 0.5,
            "success": False,
            "status": "ok",
            "reason": "The agent retried a failing call with the same arguments.",
            "source": "agentotel-eval",
            "model": "gpt-4o-mini",
            "cost_usd": 0.00042,
            "details": {"errors": [{"type": "repeated_failure", "description": "get_weather twice"}]},
        }
    )
    run = {
        **row,
        "tools_called": names,
        "expected_tools": expected,
        "tool_call_count": calls,
        "output": "The cheapest hotel near the centre is Hotel 0 at 90 EUR a night; booked.",
        "error": None,
        "span_name": spans[0]["name"],
        "convention": "gen_ai",
        "parent_run_span_id": None,
        "diagnostics": {
            "calls": diagnostic_calls,
            "frameworks": ["pydantic-ai"],
            "requests_without_execution": [{"name": "book_hotel", "llm_span": spans[1]["span_id"]}],
        },
    }
    return RunDetail(
        run, tool_calls, evaluations, spans, False, {span_id: row["agent_name"]}, expected, "rule:travel"
    )


def pages(seed: int = 7) -> dict[str, Callable[[], str]]:
    """Each page's render, over data made once."""
    from agentotel_eval.pages.markup import server_links
    from agentotel_eval.pages.render import message_page, overview_page, report_document, run_page, runs_page
    from agentotel_eval.pages.sign_in import sign_in_page

    rng = random.Random(seed)
    links = server_links()
    ov, rp, detail = make_overview(rng), make_runs_page(rng), make_run_detail(rng)
    worst = [make_run_detail(rng) for _ in range(10)]
    worst_rows = [{k: v for k, v in d.run.items() if k != "diagnostics"} for d in worst]
    version = json.dumps({"runs": 100000, "evaluations": 400000})
    return {
        "overview": lambda: overview_page(ov, links, version),
        "runs (50 runs)": lambda: runs_page(rp, links, version),
        "run (20 calls)": lambda: run_page(detail, links, version),
        "error page": lambda: message_page("Bad request", "unknown time range 'yesterday'", links),
        "sign-in": lambda: sign_in_page("/runs?since=all", "not this collector's token"),
        "report (10 runs)": lambda: report_document(ov, worst, worst_rows, "/tmp/agentotel.duckdb"),
    }


def measure(
    render: Callable[[], str], renders: int, warmup: int, clock: Callable[[], int] = time.perf_counter_ns
) -> tuple[list[float], int]:
    for _ in range(warmup):
        size = len(render())
    times = []
    for _ in range(renders):
        started = clock()
        render()
        times.append((clock() - started) / 1000)
    return times, size


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--renders", type=int, default=400, help="timed renders per page (default 400)")
    parser.add_argument("--warmup", type=int, default=40, help="renders before timing (default 40)")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall clock, or this thread's CPU time (default wall)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE ('-': stdout)")
    args = parser.parse_args()
    import agentotel_eval

    source = str(Path(agentotel_eval.__file__).resolve().parents[1])
    clock = time.perf_counter_ns if args.clock == "wall" else time.thread_time_ns
    print(f"pages of {source}, {args.clock} clock")
    print(f"{'page':<18} {'median µs':>10} {'p95 µs':>10} {'bytes':>10}")
    rows = []
    for name, render in pages().items():
        times, size = measure(render, args.renders, args.warmup, clock)
        median, p95 = pct(times, 0.5), pct(times, 0.95)
        rows.append({"page": name, "median_us": round(median, 1), "p95_us": round(p95, 1), "bytes": size})
        print(f"{name:<18} {median:10.1f} {p95:10.1f} {size:10,}")
    if args.json:
        text = json.dumps(
            {"source": source, "clock": args.clock, "renders": args.renders, "pages": rows}, indent=2
        )
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
