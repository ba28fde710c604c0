"""Run one read-only SQL query on the collector's DuckDB database.

When a collector holds the database, the query goes to its POST /v1/query (DuckDB lets one process open a file
for writing and no other process open it at the same time); otherwise the file is opened read-only. Either way
only a single SELECT / WITH / DESCRIBE / SHOW / SUMMARIZE / EXPLAIN statement runs, with no
file or network access.

Tables: spans, logs, agent_runs, tool_calls, evaluations. Views: latest_evaluations, run_evaluations,
agent_pass_rate_daily, agent_runs_daily, tool_error_rates, traces, llm_usage_daily.
"""

from __future__ import annotations

import argparse
import sys

from agentotel_eval.cli import options

EXIT_NO_DATABASE = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        '  agentotel-eval query "SELECT agent_name, tools_called FROM agent_runs ORDER BY start_time DESC '
        'LIMIT 10"\n  agentotel-eval query "SELECT * FROM tool_error_rates ORDER BY error_rate DESC" '
        '--format csv\n  agentotel-eval query "DESCRIBE spans" --format json'
    )
    parser.add_argument("sql", help="one SELECT / WITH / DESCRIBE / SHOW / SUMMARIZE / EXPLAIN statement")
    options.add_db(parser)
    options.add_url(parser)
    options.add_lake(parser)
    options.add_format(parser, ("table", "json", "csv"))
    parser.add_argument("--limit", type=int, default=None, help="maximum rows returned (default: 10000)")
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds before the query is stopped (default: 30)"
    )


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.access.client import QueryFailure, execute
    from agentotel_eval.store.formats import render

    if args.limit is not None and args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return EXIT_NO_DATABASE
    try:
        result = execute(
            args.db,
            args.sql,
            limit=args.limit,
            timeout=args.timeout,
            url=args.url,
            lake=options.lake_of(args),
        )
    except QueryFailure as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    print(render(result, args.format))
    if result.truncated and args.format != "table":
        print(f"note: output truncated at {result.row_limit} rows (use --limit)", file=sys.stderr)
    return 0
