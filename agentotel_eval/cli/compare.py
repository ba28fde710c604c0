"""Compare two versions: ``agentotel-eval compare --baseline SPEC --candidate SPEC
[--fail-on-regression 0.05]``.

A SPEC selects scored runs from the database, as comma-separated ``key=value`` terms:

- ``agent=NAME``, ``service=NAME``;
- ``since=7d`` / ``until=1d`` (runs started within the last 7 days / more than 1 day ago; any duration, as
  ``--since`` takes: ``90m``, ``1.5h``, ``2w``), ``from=`` / ``to=`` (ISO times);
- any other ``key=value``: a resource attribute of the run's span, e.g. ``service.version=1.2`` or
  ``deployment.environment=staging``;
- ``where=SQL``: a condition on ``agent_runs r``'s columns (the last term: it may hold commas).

Or a SPEC is a file written by ``agentotel-eval eval --format json`` (or JSONL of its cases): its cases'
scores; or the file ``pytest --agentotel-results`` writes: its assertions' scores, each test
standing for its input.

Printed: per agent and metric, the pass rate and mean score of both and the change; per tool, the share of
runs in which it went missing, extra or out of order in each; the inputs that passed in every baseline run and
fail now. Reads through the running collector when one holds the database, else the file read-only.

Exit status: 0 no regression past the threshold (or no ``--fail-on-regression``); 1 a pass rate fell by more
than ``--fail-on-regression`` (a fraction: 0.05 is five points); 2 a usage error, a bad SPEC, an unreadable
file or database; 3 a SPEC selected no scored run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from agentotel_eval.cli import options

if TYPE_CHECKING:
    from agentotel_eval.comparison import ScoredRun

EXIT_REGRESSION, EXIT_USAGE, EXIT_EMPTY = 1, 2, 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        "  agentotel-eval compare --baseline service.version=1.2 --candidate service.version=1.3\n"
        "  agentotel-eval compare --baseline agent=planner,until=7d --candidate agent=planner,since=7d\n"
        "  agentotel-eval compare --baseline main.json --candidate pr.json --fail-on-regression 0.05"
    )
    parser.add_argument("--baseline", required=True, metavar="SPEC", help="the runs to compare against")
    parser.add_argument("--candidate", required=True, metavar="SPEC", help="the runs to compare")
    options.add_db(parser)
    options.add_url(parser)
    options.add_lake(parser)
    parser.add_argument(
        "--fail-on-regression",
        type=float,
        metavar="X",
        help="exit 1 when an agent's pass rate of a metric falls by more than X (0.05: 5 points)",
    )
    options.add_format(parser, ("table", "json"))


def _load(spec: str, db: str | None, url: str | None, lake: str | None = None) -> list[ScoredRun]:
    """A SPEC's scored runs: a results file's, or those the terms select from the database."""
    from agentotel_eval.access import queries
    from agentotel_eval.access.client import reader
    from agentotel_eval.access.specs import SpecError, parse_spec
    from agentotel_eval.results_files import scored_runs_from_file

    path = Path(spec)
    if ("=" not in spec and path.suffix in (".json", ".jsonl")) or path.is_file():
        if not path.is_file():
            raise SpecError(f"no such results file: {path}")
        return scored_runs_from_file(path)
    return queries.read_scored_runs(
        reader(db, limit=queries.SCORED_RUNS_PAGE, url=url, lake=lake), parse_spec(spec)
    )


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.access.client import QueryFailure
    from agentotel_eval.access.specs import SpecError
    from agentotel_eval.comparison import compare, render
    from agentotel_eval.results_files import ResultsFileError

    threshold = args.fail_on_regression
    if threshold is not None and not 0 <= threshold <= 1:
        print(
            "error: --fail-on-regression must be a fraction from 0 to 1 (0.05: five points)", file=sys.stderr
        )
        return EXIT_USAGE
    loaded = {}
    for side in ("baseline", "candidate"):
        spec = getattr(args, side)
        try:
            loaded[side] = _load(spec, args.db, args.url, options.lake_of(args))
        except (SpecError, ResultsFileError) as exc:
            print(f"error: --{side}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except (OSError, ValueError) as exc:
            print(f"error: --{side}: cannot read {spec}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except QueryFailure as exc:
            print(f"error: --{side}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if not loaded[side]:
            print(f"error: --{side} {spec!r} selects no scored run", file=sys.stderr)
            return EXIT_EMPTY
    result = compare(loaded["baseline"], loaded["candidate"])
    if args.format == "json":
        document = result.to_dict()
        document["fail_on_regression"] = threshold
        print(json.dumps(document, ensure_ascii=False))
    else:
        print(render(result, threshold))
    worst = result.worst_drop()
    if threshold is not None and worst is not None and (worst.pass_rate_change or 0.0) < -threshold:
        fell = -(worst.pass_rate_change or 0) * 100
        print(
            f"regression: {worst.agent} {worst.metric} pass rate fell {fell:.1f} percentage points "
            f"(more than {threshold * 100:.1f})",
            file=sys.stderr,
        )
        return EXIT_REGRESSION
    return 0
