"""Score a JSONL file of test cases offline: ``agentotel-eval eval CASES.jsonl [--metric NAME ...]``.

Each line is one test case object (``EvalTestCase`` fields: ``input``, ``tools_called``, ``expected_tools``,
...). A line that is not a valid case is reported on stderr with its line number and left out; the other
lines are still scored and reported, and the exit status says the input was bad.

Exit status, as pytest: 0 all cases passed; 1 some case failed (or a metric raised on it); 2 usage or input
error (unknown metric, unreadable file, invalid lines — the valid lines are still scored and shown); 5 no
test cases in the file. ``--exit-zero`` turns 1 into 0 (report without failing a CI step).

``--junit PATH`` also writes a JUnit XML report (one testcase per case and metric: a failure for a failed
score, an error for a metric that raised, skipped for a case it could not score), which CI systems show as
test results.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # heavy imports stay inside run(), so `agentotel-eval --help` stays fast
    from agentotel_eval.evaluate import EvaluationResult
    from agentotel_eval.metrics.base import BaseMetric

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_CASES = 0, 1, 2, 5


# --- metric registry ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricOptions:
    """The command-line options a metric factory may use."""

    threshold: float | None = None
    exact: bool = False
    ordering: bool = False
    strict: bool = False
    params: tuple[str, ...] = ()
    model: str | None = None
    api_base: str | None = None


class MetricUnavailable(Exception):
    """A registered metric that cannot be built here (a missing optional part, a missing option)."""


MetricFactory = Callable[[MetricOptions], "BaseMetric"]


def _tool_correctness(exact: bool, ordering: bool) -> MetricFactory:
    def build(options: MetricOptions) -> BaseMetric:
        from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric

        return ToolCorrectnessMetric(
            threshold=0.5 if options.threshold is None else options.threshold,
            exact_match=exact or options.exact,
            check_ordering=ordering or options.ordering,
            strict_mode=options.strict,
            evaluation_params=options.params,
        )

    return build


def _tool_errors(judge: bool) -> MetricFactory:
    """The tool-error metric; with ``judge=False`` only its deterministic detectors (no model, no cost).

    Imported only when asked for: the judge's litellm alone takes seconds to import.
    """

    def build(options: MetricOptions) -> BaseMetric:
        from agentotel_eval.metrics.tool_errors import ToolsErrorMetric

        kwargs: dict[str, Any] = {"judge": judge}
        if options.threshold is not None:
            kwargs["threshold"] = options.threshold
        if judge:
            if not options.model:
                raise MetricUnavailable("tool_errors needs a judge model: --model (e.g. openai/gpt-4o-mini)")
            if options.api_base:
                kwargs["api_base"] = options.api_base
        return ToolsErrorMetric(options.model if judge else None, **kwargs)

    return build


#: name -> (factory, help). ``--exact`` / ``--ordering`` / ``--params`` / ``--strict`` apply to the
#: tool_correctness family; ``--threshold`` to every metric; ``--model`` to LLM-judge metrics.
#: To add a metric, register a factory here; import its module inside the factory (keep ``--help`` fast).
METRICS: dict[str, tuple[MetricFactory, str]] = {
    "tool_correctness": (_tool_correctness(False, False), "expected tools were called (default mode)"),
    "tool_correctness_exact": (_tool_correctness(True, False), "called tools equal the expected ones"),
    "tool_correctness_ordering": (_tool_correctness(False, True), "expected tools called in order (LCS)"),
    "tool_correctness_exact_ordering": (_tool_correctness(True, True), "called sequence equals the expected"),
    "tool_errors": (_tool_errors(True), "LLM judge of tool-use errors (needs --model; --api-base optional)"),
    "tool_errors_detectors": (_tool_errors(False), "deterministic tool-error detectors only (no LLM)"),
}


def build_metrics(names: Iterable[str], options: MetricOptions) -> list[BaseMetric]:
    """Metrics for the given names (comma-separated allowed), without duplicates after flags apply."""
    metrics: list[BaseMetric] = []
    seen: set[str] = set()
    for raw in names:
        for name in filter(None, (part.strip() for part in raw.split(","))):
            if name not in METRICS:
                raise MetricUnavailable(f"unknown metric {name!r}; choose from: {', '.join(METRICS)}")
            metric = METRICS[name][0](options)
            key = getattr(metric, "metric_name", name)
            if key not in seen:
                seen.add(key)
                metrics.append(metric)
    return metrics


# --- reading cases --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LineError:
    line: int
    error: str


@dataclass
class CasesFile:
    """The valid cases of a JSONL file with their line numbers, and the lines that were not valid."""

    cases: list[Any] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


def read_cases(stream: IO[bytes]) -> CasesFile:
    """Parse JSONL test cases; every invalid line becomes a ``LineError`` and reading goes on."""
    from agentotel_eval.test_case import EvalTestCase

    out = CasesFile()
    for number, raw in enumerate(stream, start=1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            out.errors.append(LineError(number, f"not UTF-8 ({exc.reason} at byte {exc.start})"))
            continue
        if not text:
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            out.errors.append(LineError(number, f"invalid JSON: {exc.msg} (column {exc.colno})"))
            continue
        if not isinstance(data, dict):
            out.errors.append(LineError(number, f"expected a JSON object, got {type(data).__name__}"))
            continue
        try:
            out.cases.append(EvalTestCase.from_dict(data))
        except (TypeError, ValueError) as exc:
            out.errors.append(LineError(number, f"invalid test case: {exc}"))
            continue
        out.lines.append(number)
    return out


# --- output ---------------------------------------------------------------------------------------------------


def _label(case: Any, width: int = 40) -> str:
    text = getattr(case, "name", None) or str(getattr(case, "input", "") or "")
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _cell(result: Any) -> str:
    if result.status == "error":
        return "ERROR"
    if result.status == "skipped" or result.score is None:
        return "skip"
    return f"{result.score:.2f} {'pass' if result.success else 'FAIL'}"


def render_table(result: EvaluationResult, lines: list[int], *, quiet: bool = False) -> str:
    """One row per case (``--quiet``: none), then the reasons of failures, then the summary."""
    from agentotel_eval.evaluate import summary_lines

    out: list[str] = []
    if not quiet and result.cases:
        names = [r.metric for r in result.cases[0].results]
        header = ["line", "case", *names, "result"]
        rows = [
            [str(lines[c.index]), _label(c.test_case), *(_cell(r) for r in c.results), "PASS" if c.success else "FAIL"]
            for c in result.cases
        ]
        widths = [max(len(row[k]) for row in [header, *rows]) for k in range(len(header))]
        for row in [header, *rows]:
            cells = [cell.rjust(w) if k == 0 else cell.ljust(w) for k, (cell, w) in enumerate(zip(row, widths, strict=True))]
            out.append("  ".join(cells).rstrip())
        out.append("")
    failures = [c for c in result.cases if not c.success]
    for c in failures:
        for r in c.results:
            if r.status == "error" or (r.status == "ok" and not r.success):
                score = "error" if r.status == "error" else f"{r.score:.2f} < {r.threshold:g}"
                name = f" ({c.name})" if c.name else ""
                out.append(f"FAILED line {lines[c.index]}{name} {r.metric} [{score}]: {r.reason}")
    if failures:
        out.append("")
    out.extend(summary_lines(result))
    return "\n".join(out)


def render_json(result: EvaluationResult, lines: list[int], errors: list[LineError]) -> str:
    cases = []
    for c in result.cases:
        item = c.to_dict()
        item["line"] = lines[c.index]
        cases.append(item)
    document = {
        "cases": cases,
        "invalid_lines": [{"line": e.line, "error": e.error} for e in errors],
        "summary": result.summary(),
    }
    return json.dumps(document, ensure_ascii=False, default=str)


def render_junit(result: EvaluationResult, lines: list[int], source: str) -> str:
    """JUnit XML: a testsuite of one testcase per case and metric."""
    import xml.etree.ElementTree as ET

    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    suite = ET.Element("testsuite", name=f"agentotel-eval {source}", time=f"{result.duration_s:.3f}")
    for case in result.cases:
        label = f"line {lines[case.index]}: {_label(case.test_case, 80)}"
        for r in case.results:
            counts["tests"] += 1
            testcase = ET.SubElement(suite, "testcase", classname=f"agentotel-eval.{r.metric}", name=label,
                                     time=f"{r.latency_s or 0.0:.6f}")
            if r.status == "error":
                counts["errors"] += 1
                ET.SubElement(testcase, "error", message=r.reason or "the metric raised").text = r.reason
            elif r.status != "ok" or r.score is None:
                counts["skipped"] += 1
                ET.SubElement(testcase, "skipped", message=r.reason or r.status)
            elif not r.success:
                counts["failures"] += 1
                message = f"{r.metric} {r.score:.2f} < {r.threshold:g}"
                ET.SubElement(testcase, "failure", message=message).text = f"{message}: {r.reason}"
    for key, value in counts.items():
        suite.set(key, str(value))
    root = ET.Element("testsuites", {k: suite.get(k, "") for k in ("tests", "failures", "errors", "skipped")})
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# --- the command ----------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("cases", metavar="CASES.jsonl", help="test cases, one JSON object per line ('-' = stdin)")
    parser.add_argument(
        "--metric", "-m", action="append", metavar="NAME",
        help=f"metric to run (repeatable, or comma-separated); default tool_correctness. One of: {', '.join(METRICS)}",
    )
    parser.add_argument("--exact", action="store_true", help="tool correctness: exact match (no extra, none missing)")
    parser.add_argument("--ordering", action="store_true", help="tool correctness: the order of calls matters")
    parser.add_argument("--threshold", type=float, metavar="X", help="passing score in [0, 1] for every metric")
    parser.add_argument(
        "--strict", action="store_true", help="tool correctness strict mode: threshold 1, any imperfect score 0"
    )
    parser.add_argument(
        "--params", action="append", choices=["input_parameters", "output"], default=[], metavar="FIELD",
        help="tool correctness: also compare input_parameters and/or output of calls (repeatable)",
    )
    parser.add_argument("--model", help="model for LLM-judge metrics (e.g. openai/gpt-4o-mini)")
    parser.add_argument("--api-base", metavar="URL", help="LLM-judge API base URL (an OpenAI-compatible server)")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="output format (default table)")
    parser.add_argument("--quiet", "-q", action="store_true", help="table: only failures and the summary")
    parser.add_argument("--concurrency", type=int, default=16, metavar="N", help="metric runs in flight (default 16)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", metavar="DIR", help="LLM judge response cache (default $AGENTOTEL_CACHE_DIR "
                       "or ./.agentotel-cache)")
    cache.add_argument("--no-cache", action="store_true", help="do not cache LLM judge responses")
    parser.add_argument("--junit", metavar="PATH", help="also write a JUnit XML report (a testcase per case and metric)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when cases fail")
    parser.epilog = ("exit status: 0 every case passed, 1 a case failed or a metric raised (0 with --exit-zero), "
                     "2 usage or input error (invalid lines are reported, the valid ones still scored), "
                     "5 no test cases")


def _error(message: str) -> None:
    print(f"agentotel-eval eval: error: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.evaluate import evaluate_sync

    options = MetricOptions(
        threshold=args.threshold, exact=args.exact, ordering=args.ordering, strict=args.strict,
        params=tuple(args.params), model=args.model, api_base=args.api_base,
    )
    try:
        metrics = build_metrics(args.metric or ["tool_correctness"], options)
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
        print(f"{source}: {len(parsed.errors)} invalid line(s) left out; the valid ones are scored", file=sys.stderr)

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
    if not result.success and not args.exit_zero:
        return EXIT_FAILED
    return EXIT_OK
