"""Measure the tool-error detectors (and the judge) on labelled suites: ``agentotel-eval calibrate``.

Prints, per error type, precision, recall and F1 with 95% intervals and Cohen's kappa, and whether the type
passes the gate (precision > 0.75, recall > 0.75, F1 > 0.80 on at least 10 positives) or is experimental.

Suites (``--suite``, repeatable; default ``bfcl`` and ``tau2``):

- ``bfcl``: BFCL v4's function-calling cases, mutated (a required parameter dropped, an unknown one added, a
  type broken, a value outside the enum, a near and a far wrong name, an optional parameter omitted); BFCL's
  own checker agrees with every label, and the detectors are compared with it too.
- ``tau2``: τ²-bench's golden actions replayed through its domain tools, then dependent calls swapped, an id
  made up, a tool failed with an honest or a success-claiming answer, the failing call repeated, an amount in
  the answer changed.
- ``robustness``: recorded runs of real frameworks (``--traces DIR``, default the repository's fixtures)
  changed the ways users meet errors: a failed call whose answer states a result or owns up (34 phrasings
  each), an answer whose value differs from the result or restates it in another format, an argument found
  nowhere or given in another format, a failing call retried with the argument written
  differently, an unoffered tool.
- a PATH: a JSONL file of saved cases (``--save-cases``), or a local copy of TRAIL or MAST.

Every case goes through spans of both conventions (OpenTelemetry GenAI and OpenInference), trace
reconstruction and the detectors, as a collected run does. The suites' packages are read from this
environment or downloaded as wheels (``pip download --no-deps``) into ``~/.cache/agentotel-eval``.

Exit status: 0 the figures were printed; 2 a usage error or a suite that cannot be read or fetched.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agentotel_eval.cli import options

EXIT_OK, EXIT_USAGE = 0, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        "  agentotel-eval calibrate\n"
        "  agentotel-eval calibrate --suite bfcl --limit 20\n"
        "  agentotel-eval calibrate --suite tau2 --judge --model openai/gpt-4o-mini\n"
        "  agentotel-eval calibrate --suite ~/data/TRAIL"
    )
    parser.add_argument(
        "--suite",
        action="append",
        metavar="bfcl|tau2|robustness|PATH",
        help="a built-in suite or a labelled data file/directory (repeatable; default bfcl and tau2)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="a sample: N BFCL entries per category, N τ² tasks per domain (default: all)",
    )
    parser.add_argument(
        "--traces",
        metavar="DIR",
        help="the recorded OTLP traces the robustness suite changes (default tests/fixtures/traces)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="the sample's and the intervals' seed (default 0)"
    )
    parser.add_argument(
        "--convention",
        choices=("genai", "openinference", "both"),
        default="both",
        help="the span convention cases are written in (default both)",
    )
    parser.add_argument(
        "--judge",
        action="store_true",
        help="also measure the LLM judge (with the detectors' findings as facts it cannot overrule)",
    )
    parser.add_argument("--model", help="the judge's model (litellm name, e.g. openai/gpt-4o-mini)")
    parser.add_argument(
        "--api-base", metavar="URL", help="the judge's API base URL (an OpenAI-compatible server)"
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="the judge's response cache: recorded answers are replayed, new ones recorded",
    )
    parser.add_argument("--save-cases", metavar="FILE", help="also write the cases scored (JSONL) to FILE")
    parser.add_argument(
        "--show-misses", action="store_true", help="list the commonest disagreements by operator"
    )
    options.add_format(parser, ("table", "json"))


def _error(message: str) -> None:
    print(f"agentotel-eval calibrate: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.calibration.sources import SourceUnavailable
    from agentotel_eval.calibration.suites import SuiteError

    if args.judge and not args.model:
        _error("--judge needs --model (e.g. openai/gpt-4o-mini)")
        return EXIT_USAGE
    if args.limit is not None and args.limit < 1:
        _error("--limit must be 1 or more")
        return EXIT_USAGE
    conventions = ("genai", "openinference") if args.convention == "both" else (args.convention,)
    reports: list[dict[str, Any]] = []
    pooled: list[Any] = []
    try:
        for suite in args.suite or ["bfcl", "tau2"]:
            report, scored = _calibrate(suite, args, conventions)
            reports.append(report)
            pooled += scored
    except (SuiteError, SourceUnavailable, OSError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    if (
        len(reports) > 1
    ):  # the gate applies per type over every suite: a type one suite has no case of is no miss
        from agentotel_eval.calibration import report as render
        from agentotel_eval.calibration.runner import summarise

        figures = summarise(pooled, seed=args.seed)
        reports.append(render.as_json("all suites (detectors)", pooled, figures))
        if args.format == "table":
            print(render.render_table("all suites (detectors)", pooled, figures))
    if args.format == "json":
        print(json.dumps(reports if len(reports) > 1 else reports[0], indent=2))
    return EXIT_OK


def _judge_metric(args: argparse.Namespace, rules: Any) -> Any:
    from agentotel_eval.metrics.registry import TOOL_ERRORS

    kwargs: dict[str, Any] = {"tool_rules": list(rules)}
    if args.api_base:
        kwargs["api_base"] = args.api_base
    if args.cache_dir:
        kwargs["cache"] = args.cache_dir
    return TOOL_ERRORS.build(model=args.model, **kwargs)


def _calibrate(
    suite: str, args: argparse.Namespace, conventions: tuple[str, ...]
) -> tuple[dict[str, Any], list[Any]]:
    from agentotel_eval.calibration import report, runner, suites

    path = Path(suite).expanduser()
    traces = None
    if suite in suites.SUITES:
        cases = suites.build_suite(
            suite, limit=args.limit, seed=args.seed, traces=Path(args.traces) if args.traces else None
        )
    elif suites.is_case_file(path):
        cases = suites.load_cases(path)
    elif path.exists():
        from agentotel_eval.calibration import external

        try:
            traces = external.load(path)
        except external.ExternalFormatError as exc:
            raise suites.SuiteError(
                f"{exc} (nor a file of saved cases: JSONL with 'calls' and 'labels')"
            ) from None
        cases = []
    else:
        raise suites.SuiteError(
            f"{suite!r} is neither a suite ({', '.join(suites.SUITES)}) nor an existing path"
        )
    if args.save_cases and cases:
        suites.save_cases(cases, Path(args.save_cases))
    if traces is not None:
        scored, notes = _score_traces(traces, args)
    else:
        scored = runner.score_cases(cases, conventions)
        notes = _oracle_notes(cases, scored) if suite == "bfcl" else []
    title = f"{suite} (detectors)"
    figures = runner.summarise(scored, seed=args.seed)
    out = report.as_json(title, scored, figures)
    if notes:
        out["notes"] = notes
    if args.format == "table":
        print(report.render_table(title, scored, figures, notes))
        if args.show_misses:
            print("\n".join(report.misclassified(scored)))
    judged = None
    if args.judge and cases:
        judged = [
            runner.score_case(case, convention, _judge_metric(args, case.rules))
            for case in cases
            for convention in conventions[:1]
        ]
    elif args.judge and traces:
        metric = _judge_metric(args, ())
        judged = [
            runner.score_text(t.id, t.source, t.labels, t.text, metric)
            if not t.spans
            else runner.score_spans(t.id, t.source, "recorded", t.labels, t.spans, "recorded", metric)
            for t in traces
        ]
    if judged is not None:
        judge_title = f"{suite} (judge {args.model}, over the detectors' findings)"
        judge_figures = runner.summarise(judged, seed=args.seed)
        out["judge"] = report.as_json(judge_title, judged, judge_figures)
        if args.format == "table":
            print()
            print(report.render_table(judge_title, judged, judge_figures))
    if args.format == "table":
        print()
    return out, scored


def _oracle_notes(cases: Any, scored: Any) -> list[str]:
    """BFCL's checker against the detectors on the two types it judges."""
    from agentotel_eval.calibration.bfcl import oracle_types

    judged = {"parameter_error", "invalid_function"}
    by_id = {case.id: case for case in cases}
    disagree = [
        s
        for s in scored
        if by_id[s.id].oracle is not None and oracle_types(by_id[s.id].oracle) != (s.predicted & judged)
    ]
    total = sum(1 for s in scored if by_id[s.id].oracle is not None)
    line = (
        f"BFCL's checker and the detectors agree on {total - len(disagree)} of {total} scored runs "
        "(parameter_error, invalid_function)"
    )
    return [
        line,
        *[
            f"  disagrees: {s.id} [{s.convention}] checker {sorted(oracle_types(by_id[s.id].oracle))} "
            f"detectors {sorted(s.predicted & judged)}"
            for s in disagree[:10]
        ],
    ]


def _score_traces(traces: Any, args: argparse.Namespace) -> tuple[list[Any], list[str]]:
    from agentotel_eval.calibration import external, runner
    from agentotel_eval.metrics.registry import TOOL_ERRORS_DETECTORS

    metric = TOOL_ERRORS_DETECTORS.build()
    with_spans = [t for t in traces if t.spans]
    scored = [
        runner.score_spans(t.id, t.source, "recorded", t.labels, t.spans, "recorded", metric)
        for t in with_spans
    ]
    notes = external.describe(traces)
    if len(with_spans) < len(traces):
        notes.append(
            f"{len(traces) - len(with_spans)} record(s) hold no spans (free-text transcripts): the "
            "detectors cannot read them; --judge measures the judge on them"
        )
    return scored, notes
