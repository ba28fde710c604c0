"""Write the overview and the worst runs, each with its expected-against-called timeline, as ONE
self-contained HTML file: no external script, stylesheet, font or image, so it opens offline and can be
attached to a ticket.

Reads through the running collector when it holds the database, else opens the file read-only."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentotel_eval.cli import options

EXIT_BAD_ARGUMENT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_db(parser)
    options.add_url(parser)
    options.add_lake(parser)
    options.add_since(parser, default="7d", allow_all=True)
    parser.add_argument("--agent", default="", help="only this agent's runs")
    parser.add_argument(
        "--worst", type=int, default=10, metavar="N", help="worst runs to include (default 10)"
    )
    parser.add_argument("--out", required=True, metavar="FILE.html", help="where to write the report")


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.access import queries
    from agentotel_eval.access.client import QueryFailure, locate, reader
    from agentotel_eval.access.filters import FilterError, parse_filters
    from agentotel_eval.pages.render import report_document

    if args.worst < 0:
        print("error: --worst must be 0 or more", file=sys.stderr)
        return EXIT_BAD_ARGUMENT
    try:
        filters = parse_filters({"since": args.since, "agent": args.agent})
    except FilterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGUMENT
    try:
        lake = options.lake_of(args)
        db = f"the lake of {lake}" if lake else locate(args.db, args.url)[0]
        read = reader(None if lake else db, url=args.url, lake=lake)
        overview = queries.read_overview(read, filters)
        worst_rows = queries.read_worst(read, filters, args.worst) if args.worst else []
        details = [d for row in worst_rows if (d := queries.read_run(read, row["trace_id"], row["span_id"]))]
    except QueryFailure as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    html = report_document(overview, details, worst_rows, source=str(db))
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(html, encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_ARGUMENT
    print(
        f"wrote {out} ({len(html.encode()):,} bytes): {overview.total_runs:,} runs, "
        f"{len(details)} worst runs with their timelines"
    )
    return 0
