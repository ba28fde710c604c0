"""The deterministic tool-error detectors' CPU per agent run: ``detect_and_observe`` on a 10-call run with
results and an answer (every rule runs), in process CPU time (``time.process_time``), so other work on a
shared machine counts less than in wall time.

    python bench/bench_detectors.py [--runs 300] [--rounds 5] [--source DIR]

Each figure is the best of ``--rounds`` rounds of ``--runs`` runs, after a warm-up:

- ``same run``: one run scored again and again, so what the detectors read once per distinct text (the
  statement reader's and the argument readers' caches) is read once for all rounds;
- ``fresh values``: every run's ids, prices and booking references differ, so those caches miss as they do on
  a collector's stream of new runs.

``--source DIR`` measures another checkout of the repository (its ``agentotel_eval`` put first on the path; an
older layout's ``agentotel_eval.metrics.detectors`` is found too): run it alternately with this one to compare
two versions on a loaded machine, as docs/benchmarks.md does.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

USER_INPUT = "Fly me from Paris to New York"


def _load(source: Path | None) -> tuple[Callable[..., Any], type, type]:
    root = source if source is not None else Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from agentotel_eval import ToolCall, ToolDefinition

    if (root / "agentotel_eval" / "detectors").is_dir():
        from agentotel_eval.detectors import detect_and_observe
    else:  # before the detectors had their own package (an installed newer one must not stand in for it)
        from agentotel_eval.metrics.detectors import detect_and_observe  # type: ignore[no-redef]
    import agentotel_eval

    if Path(agentotel_eval.__file__).parent != root / "agentotel_eval":
        raise SystemExit(f"agentotel_eval was imported from {agentotel_eval.__file__}, not from {root}")
    return detect_and_observe, ToolCall, ToolDefinition


def ten_call_run(tool_call: type, n: int = 0) -> tuple[list[Any], str]:
    """A 10-call run with recorded results, a failure and a final answer; ``n`` changes its values (0: the run
    bench_judge.py scores)."""
    first, second, booking, price = (
        (_code(2 * n), _code(2 * n + 1), f"BK-{20931 + n}", 388 + n) if n else ("AF9", "AF7", "BK-20931", 388)
    )
    calls = [
        tool_call(
            "search_flights",
            {"from": "PAR", "to": "NYC"},
            status="ok",
            output={
                "flights": [{"flight_id": first, "price": 420.5 + n}, {"flight_id": second, "price": price}]
            },
        ),
        tool_call("book_flight", {"flight_id": first}, status="error", error="sold out"),
        tool_call(
            "book_flight", {"flight_id": second}, status="ok", output={"booking": booking, "total": price}
        ),
    ]
    calls = calls * 3 + [
        tool_call("search_flights", {"from": "NYC", "to": "PAR"}, status="ok", output={"flights": []})
    ]
    return calls, f"Booked {second} (booking {booking}) for ${price} after {first} sold out."


def _code(n: int) -> str:
    """A flight number shaped as "AF9" (two capitals and a digit: no id to trace), distinct up to 6,760."""
    return f"{chr(65 + n // 10 % 26)}{chr(65 + n // 260 % 26)}{n % 10}"


def tools(tool_definition: type) -> list[Any]:
    return [
        tool_definition(
            "search_flights",
            parameters={
                "type": "object",
                "required": ["from", "to"],
                "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
            },
        ),
        tool_definition(
            "book_flight",
            parameters={
                "type": "object",
                "required": ["flight_id"],
                "properties": {"flight_id": {"type": "string"}},
            },
        ),
    ]


def cpu_per_run(
    detect: Callable[..., Any],
    warm: list[tuple[list[Any], str]],
    rounds: list[list[tuple[list[Any], str]]],
    offered: list[Any],
) -> tuple[float, float]:
    """The best round's process CPU and wall time per run, in µs, after the ``warm`` runs."""
    for calls, answer in warm:
        detect(calls, offered, answer=answer, user_input=USER_INPUT)
    best_cpu = best_wall = float("inf")
    for runs in rounds:
        cpu, wall = time.process_time(), time.perf_counter()
        for calls, answer in runs:
            detect(calls, offered, answer=answer, user_input=USER_INPUT)
        best_cpu = min(best_cpu, (time.process_time() - cpu) / len(runs) * 1e6)
        best_wall = min(best_wall, (time.perf_counter() - wall) / len(runs) * 1e6)
    return best_cpu, best_wall


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--source", type=Path, help="another checkout of the repository to measure")
    args = parser.parse_args()
    detect, tool_call, tool_definition = _load(args.source)
    offered = tools(tool_definition)
    same = ten_call_run(tool_call)
    cpu, wall = cpu_per_run(detect, [same] * 50, [[same] * args.runs] * args.rounds, offered)
    print(f"same run: {cpu:.0f} µs CPU per run ({wall:.0f} µs wall)")
    # fresh values: no run of the warm-up or of any round shares an id, a price or a booking with another
    fresh = [ten_call_run(tool_call, n) for n in range(1, 51 + args.runs * args.rounds)]
    rounds = [fresh[50 + r * args.runs : 50 + (r + 1) * args.runs] for r in range(args.rounds)]
    cpu, wall = cpu_per_run(detect, fresh[:50], rounds, offered)
    print(f"fresh values: {cpu:.0f} µs CPU per run ({wall:.0f} µs wall)")


if __name__ == "__main__":
    main()
