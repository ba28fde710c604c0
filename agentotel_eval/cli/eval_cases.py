"""Score a JSONL file of test cases offline: ``agentotel-eval eval CASES.jsonl [--metric NAME ...]``.

Each line is one test case object (``EvalTestCase`` fields: ``input``, ``tools_called``, ``expected_tools``,
...). A line that is not a valid case is reported on stderr with its line number and left out; the other
lines are still scored and reported, and the exit status says the input was bad.

Exit status, as pytest: 0 all cases passed; 1 some case failed (or a metric raised on it); 2 usage or input
error (unknown metric, unreadable file, invalid lines — the valid lines are still scored and shown); 5 no
test cases in the file, or none that could be scored. A case no metric could score (no expectation to compare
with) is shown as "not scored" and left out of the pass rate. ``--exit-zero`` turns 1 into 0 (report without
failing a CI step).

``--junit PATH`` also writes a JUnit XML report (one testcase per case and metric: a failure for a failed
score, an error for a metric that raised, skipped for a case it could not score), which CI systems show as
test results.
"""

from __future__ import annotations

import argparse
import sys

from agentotel_eval.cli import options
from agentotel_eval.metrics.registry import ON_COMMAND_LINE, TOOL_CORRECTNESS

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_CASES = 0, 1, 2, 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "cases", metavar="CASES.jsonl", help="test cases, one JSON object per line ('-' = stdin)"
    )
    parser.add_argument(
        "--metric",
        "-m",
        action="append",
        metavar="NAME",
        help=f"metric to run (repeatable, or comma-separated); default {TOOL_CORRECTNESS.name}. One of: "
        f"{', '.join(ON_COMMAND_LINE)}",
    )
    parser.add_argument(
        "--exact", action="store_true", help="tool correctness: exact match (no extra, none missing)"
    )
    parser.add_argument(
        "--ordering", action="store_true", help="tool correctness: the order of calls matters"
    )
    parser.add_argument(
        "--threshold", type=float, metavar="X", help="passing score in [0, 1] for every metric"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="tool correctness strict mode: threshold 1, any imperfect score 0",
    )
    parser.add_argument(
        "--params",
        action="append",
        choices=["input_parameters", "output"],
        default=[],
        metavar="FIELD",
        help="tool correctness: also compare input_parameters and/or output of calls (repeatable)",
    )
    parser.add_argument("--model", help="model for LLM-judge metrics (e.g. openai/gpt-4o-mini)")
    parser.add_argument(
        "--api-base", metavar="URL", help="LLM-judge API base URL (an OpenAI-compatible server)"
    )
    options.add_format(parser, ("table", "json"))
    parser.add_argument("--quiet", "-q", action="store_true", help="table: only failures and the summary")
    parser.add_argument(
        "--concurrency", type=int, default=16, metavar="N", help="metric runs in flight (default 16)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="LLM judge response cache (default $AGENTOTEL_CACHE_DIR or ./.agentotel-cache)",
    )
    cache.add_argument("--no-cache", action="store_true", help="do not cache LLM judge responses")
    parser.add_argument(
        "--junit", metavar="PATH", help="also write a JUnit XML report (a testcase per case and metric)"
    )
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when cases fail")
    parser.epilog = (
        "exit status: 0 every case passed, 1 a case failed or a metric raised (0 with --exit-zero), "
        "2 usage or input error (invalid lines are reported, the valid ones still scored), "
        "5 no test cases, or none with an expectation to score"
    )


def _error(message: str) -> None:
    print(f"agentotel-eval eval: error: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.case_files import read_cases
    from agentotel_eval.evaluate import evaluate_sync
    from agentotel_eval.evaluation_reports import render_json, render_junit, render_table
    from agentotel_eval.metrics.registry import MetricOptions, MetricUnavailable, build_metrics

    options = MetricOptions(
        threshold=args.threshold,
        exact=args.exact,
        ordering=args.ordering,
        strict=args.strict,
        params=tuple(args.params),
        model=args.model,
        api_base=args.api_base,
    )
    try:
        metrics = build_metrics(args.metric or [TOOL_CORRECTNESS.name], options)
    except (MetricUnavailable, TypeError, ValueError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    if args.concurrency < 1:
        _error("--concurrency must be at least 1")
        return EXIT_USAGE

    try:
        if args.cases == "-":
            parsed = read_cases(sys.stdin.buffer)
        else:
            with open(args.cases, "rb") as stream:
                parsed = read_cases(stream)
    except OSError as exc:
        _error(f"cannot read {args.cases}: {exc.strerror or exc}")
        return EXIT_USAGE
    source = "<stdin>" if args.cases == "-" else args.cases
    for err in parsed.errors:
        print(f"{source}:{err.line}: {err.error}", file=sys.stderr)
    if parsed.errors:
        print(
            f"{source}: {len(parsed.errors)} invalid line(s) left out; the valid ones are scored",
            file=sys.stderr,
        )

    cache: bool | str = False if args.no_cache else (args.cache_dir or True)
    result = evaluate_sync(
        parsed.cases, metrics, concurrency=args.concurrency, show_progress=not args.no_progress, cache=cache
    )
    if args.junit:
        try:
            with open(args.junit, "w", encoding="utf-8") as out:
                out.write(render_junit(result, parsed.lines, source))
        except OSError as exc:
            _error(f"cannot write {args.junit}: {exc.strerror or exc}")
            return EXIT_USAGE
    if args.format == "json":
        print(render_json(result, parsed.lines, parsed.errors))
    else:
        print(render_table(result, parsed.lines, quiet=args.quiet))
        if parsed.errors:
            print(f"{len(parsed.errors)} invalid line(s) in {source} were not scored (see stderr)")

    if parsed.errors:
        return EXIT_USAGE
    if not parsed.cases:
        _error(f"no test cases in {source}")
        return EXIT_NO_CASES
    if not result.scored:
        _error(
            f"no case in {source} could be scored: none has an expectation to compare with "
            "(expected_tools or expected_trajectory)"
        )
        return EXIT_NO_CASES
    if not result.success and not args.exit_zero:
        return EXIT_FAILED
    return EXIT_OK
