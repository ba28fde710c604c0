"""Turn stored runs into a dataset: ``agentotel-eval export-cases [--where SQL] [--limit N] -o cases.jsonl``.

Each line is an ``EvalTestCase`` that ``agentotel-eval eval`` and ``evaluate()`` read: the run's input and
output, the tools it called with their arguments, results and status, its expected tools where it had any
(from its span, an expectation rule or the dataset; else null, for a person to fill in: ``eval`` reports such
a case as not scored), and in ``metadata`` the trace and span ids, agent, service and start time. ``--where``
is a condition on the columns of ``agent_runs`` (for example ``agent_name = 'planner' AND start_time > now() -
INTERVAL 7 DAY``), run through the same sealed, read-only query layer as ``agentotel-eval query``: through the
running collector when one holds the database, else on the file read-only. ``-o -`` writes to stdout.

Exit status: 0 written (also when no run matched: the file is then empty); 1 the query failed; 2 a usage error
or the database cannot be opened.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from agentotel_eval.cli import options
from agentotel_eval.metrics.registry import TOOL_CORRECTNESS

EXIT_USAGE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        "  agentotel-eval export-cases -o cases.jsonl\n"
        "  agentotel-eval export-cases --where \"agent_name = 'planner' AND start_time > now() - INTERVAL 7 "
        'DAY" -o planner.jsonl\n'
        '  agentotel-eval export-cases --where "(trace_id, span_id) IN (SELECT trace_id, run_span_id FROM '
        f"latest_evaluations WHERE metric = '{TOOL_CORRECTNESS.name}' AND NOT success)\" -o failing.jsonl"
    )
    options.add_db(parser)
    options.add_url(parser)
    options.add_lake(parser)
    parser.add_argument("--where", default="TRUE", metavar="SQL", help="a condition on agent_runs' columns")
    parser.add_argument(
        "--limit", type=int, default=10_000, metavar="N", help="at most N runs (default 10000)"
    )
    parser.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="where to write the JSONL ('-': stdout)"
    )


@contextmanager
def _opened(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield sys.stdout
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as out:
        yield out


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.access.client import QueryFailure, reader
    from agentotel_eval.access.queries import read_stored_cases

    if args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    read = reader(args.db, limit=max(args.limit, 10_000), url=args.url, lake=options.lake_of(args))
    try:
        cases = list(read_stored_cases(read, args.where, args.limit))
    except QueryFailure as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    try:
        with _opened(args.output) as out:
            for case in cases:
                out.write(json.dumps(case.to_dict(), ensure_ascii=False, default=str) + "\n")
    except OSError as exc:
        print(f"error: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    with_expectation = sum(1 for c in cases if c.expected_tools is not None)
    print(
        f"wrote {len(cases)} case(s) to {args.output}: {with_expectation} with expected tools, "
        f"{len(cases) - with_expectation} to fill in",
        file=sys.stderr,
    )
    return 0
