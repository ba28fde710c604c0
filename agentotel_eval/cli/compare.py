"""Compare two versions: ``agentotel-eval compare --baseline SPEC --candidate SPEC [--fail-on-regression 0.05]``.

A SPEC selects scored runs from the database, as comma-separated ``key=value`` terms:

- ``agent=NAME``, ``service=NAME``;
- ``since=7d`` / ``until=1d`` (runs started within the last 7 days / more than 1 day ago), ``from=`` / ``to=``
  (ISO times);
- any other ``key=value``: a resource attribute of the run's span, e.g. ``service.version=1.2`` or
  ``deployment.environment=staging``;
- ``where=SQL``: a condition on ``agent_runs r``'s columns (the last term: it may hold commas).

Or a SPEC is a file written by ``agentotel-eval eval --format json`` (or JSONL of its cases): its cases' scores;
or the file ``pytest --agentotel-results`` writes: its assertions' scores, each test standing for its input.

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
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentotel_eval.comparison import ScoredRun
from agentotel_eval.store import DEFAULT_DB_PATH

EXIT_REGRESSION, EXIT_USAGE, EXIT_EMPTY = 1, 2, 3
_PAGE = 10_000
_SPAN = re.compile(r"^(\d+(?:\.\d+)?)(m|h|d|w)$")
_UNIT = {"m": 60, "h": 3600, "d": 86400, "w": 604800}
_CASE_NAME = re.compile(r"^(.*) ([0-9a-f]{32})/([0-9a-f]{16})$")
_ALIGNED = ("tool_correctness_ordering", "tool_correctness")


class SpecError(ValueError):
    """A SPEC that cannot be read; the message names the term."""


@dataclass(slots=True)
class Selection:
    """A database SPEC: SQL conditions on ``agent_runs r`` (and the run span ``s``) and their parameters."""

    conditions: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    needs_span: bool = False


def _ago(value: str, term: str, now: datetime) -> str:
    match = _SPAN.match(value.strip())
    if not match:
        raise SpecError(f"{term}: expected a span such as 30m, 12h, 7d or 2w, got {value!r}")
    return (now - timedelta(seconds=float(match.group(1)) * _UNIT[match.group(2)])).isoformat()


def _moment(value: str, term: str) -> str:
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise SpecError(f"{term}: expected an ISO time such as 2026-12-01T09:00, got {value!r}") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def parse_spec(spec: str, now: datetime | None = None) -> Selection:
    """A database SPEC's conditions (pure)."""
    now = now or datetime.now(UTC)
    selection = Selection()
    text = spec.strip()
    if not text:
        raise SpecError("empty SPEC: give terms such as agent=planner,service.version=1.2,since=7d")
    where = None
    if "where=" in text:
        text, _, where = text.partition("where=")
        text = text.rstrip(", ")
    terms = [t.strip() for t in text.split(",") if t.strip()]
    for term in terms:
        key, sep, value = term.partition("=")
        key = key.strip()
        if not sep:
            key, value = "agent", term  # a bare word is an agent's name
        if key == "agent":
            selection.conditions.append("coalesce(r.agent_name, '(unnamed)') = ?")
            selection.params.append(value)
        elif key == "service":
            selection.conditions.append("r.service_name = ?")
            selection.params.append(value)
        elif key == "since":
            selection.conditions.append("r.start_time >= CAST(? AS TIMESTAMPTZ)")
            selection.params.append(_ago(value, term, now))
        elif key == "until":
            selection.conditions.append("r.start_time < CAST(? AS TIMESTAMPTZ)")
            selection.params.append(_ago(value, term, now))
        elif key == "from":
            selection.conditions.append("r.start_time >= CAST(? AS TIMESTAMPTZ)")
            selection.params.append(_moment(value, term))
        elif key == "to":
            selection.conditions.append("r.start_time < CAST(? AS TIMESTAMPTZ)")
            selection.params.append(_moment(value, term))
        elif re.fullmatch(r"[A-Za-z_][\w.\-]*", key):
            selection.conditions.append("json_extract_string(s.resource_attributes, ?) = ?")
            selection.params += ['$."' + key + '"', value]
            selection.needs_span = True
        else:
            raise SpecError(f"{term!r}: expected key=value (agent, service, since, until, from, to, where, or a "
                            "resource attribute such as service.version)")
    if where is not None:
        if not where.strip():
            raise SpecError("where=: give a condition on agent_runs' columns")
        selection.conditions.append(f"({where})")
    return selection


Read = Callable[[str, Sequence[Any]], Any]


def _departures(j: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(j, list) or len(j) < 3:
        return ()
    missing, extra, out_of_order = (x if isinstance(x, list) else [] for x in j[:3])
    return (*(("missing", str(t)) for t in missing), *(("extra", str(t)) for t in extra),
            *(("out of order", str(o.get("name"))) for o in out_of_order if isinstance(o, dict)))


def load_from_db(read: Read, selection: Selection) -> list[ScoredRun]:
    """Every latest ``ok`` score of the selected runs, paged so no row limit cuts it short."""
    from agentotel_eval.access.queries import latest_evaluations, only_own_scores

    span_join = "JOIN spans s ON s.trace_id = r.trace_id AND s.span_id = r.span_id " if selection.needs_span else ""
    where = " AND ".join(selection.conditions) or "TRUE"
    latest, latest_params = latest_evaluations(
        columns="e.trace_id, e.run_span_id, e.metric, e.score, e.success, e.status, e.details",
        only_own=only_own_scores(read))
    marks = ", ".join("?" for _ in _ALIGNED)
    sql = (f"WITH runs AS (SELECT r.trace_id, r.span_id, coalesce(r.agent_name, '(unnamed)') AS agent, "
           f"coalesce(r.input, '') AS input FROM agent_runs r {span_join}WHERE {where}) "
           "SELECT r.trace_id, r.span_id, r.agent, r.input, e.metric, e.score, e.success, "
           f"CASE WHEN e.metric IN ({marks}) THEN json_extract(e.details, ['$.missing', '$.extra', "
           f"'$.out_of_order']) END AS j FROM runs r JOIN {latest} e ON e.trace_id = r.trace_id "
           "AND e.run_span_id = r.span_id WHERE e.status = 'ok' ORDER BY r.trace_id, r.span_id, e.metric")
    params = [*selection.params, *_ALIGNED, *latest_params]
    rows: list[ScoredRun] = []
    offset = 0
    while True:
        page = read(f"{sql} LIMIT {_PAGE} OFFSET {offset}", params).records()
        for row in page:
            rows.append(ScoredRun(row["agent"], row["input"], row["metric"], row["score"], bool(row["success"]),
                                  f"{row['trace_id']}/{row['span_id']}", _departures(row["j"])))
        if len(page) < _PAGE:
            return rows
        offset += _PAGE


def load_from_file(path: Path) -> list[ScoredRun]:
    """The scores of an ``eval --format json`` document (or JSONL of its cases)."""
    text = path.read_text(encoding="utf-8")
    try:
        document = json.loads(text)
        cases = document["cases"] if isinstance(document, dict) else document
    except ValueError:
        cases = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (KeyError, TypeError):
        raise SpecError(f"{path}: not an 'agentotel-eval eval --format json' document") from None
    if isinstance(cases, list) and cases and all(isinstance(c, dict) and "test" in c and "metric" in c
                                                  for c in cases):
        return _assertions(cases)
    rows = []
    for number, case in enumerate(cases, 1):
        if not isinstance(case, dict) or not isinstance(case.get("metrics"), list):
            raise SpecError(f"{path}: case {number} has no metrics list (write it with eval --format json)")
        name = str(case.get("name") or "")
        match = _CASE_NAME.match(name)
        agent, ref = (match.group(1), f"{match.group(2)}/{match.group(3)}") if match else \
            ("(cases)", f"line {case.get('line', number)}")
        for result in case["metrics"]:
            if result.get("status", "ok") != "ok":
                continue
            log = result.get("evaluation_log") or {}
            j = [log.get("missing") or [], log.get("extra") or [], log.get("out_of_order") or []]
            rows.append(ScoredRun(agent, str(case.get("input") or ""), str(result["metric"]), result.get("score"),
                                  bool(result.get("success")), ref, _departures(j)))
    return rows


def _assertions(lines: list[dict[str, Any]]) -> list[ScoredRun]:
    """The lines of ``pytest --agentotel-results``: one assertion each, its test standing for the input (the same
    test on both sides is the same case)."""
    rows = []
    for line in lines:
        ref = f"{line.get('trace_id')}/{line.get('span_id')}" if line.get("trace_id") else str(line["test"])
        rows.append(ScoredRun(str(line.get("agent") or "(tests)"), str(line["test"]), str(line["metric"]),
                              line.get("score"), bool(line.get("success")), ref))
    return rows


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
    parser.add_argument("--db", default=DEFAULT_DB_PATH, help=f"the database file (default: ./{DEFAULT_DB_PATH})")
    parser.add_argument("--fail-on-regression", type=float, metavar="X",
                        help="exit 1 when an agent's pass rate of a metric falls by more than X (0.05: 5 points)")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format")


def _load(spec: str, db: str) -> list[ScoredRun]:
    from agentotel_eval.access.client import execute

    path = Path(spec)
    if ("=" not in spec and path.suffix in (".json", ".jsonl")) or path.is_file():
        if not path.is_file():
            raise SpecError(f"no such results file: {path}")
        return load_from_file(path)

    def read(sql: str, params: Sequence[Any]) -> Any:
        return execute(db, sql, params=params, limit=_PAGE)

    return load_from_db(read, parse_spec(spec))


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.access.client import QueryFailure
    from agentotel_eval.comparison import compare, render

    threshold = args.fail_on_regression
    if threshold is not None and not 0 <= threshold <= 1:
        print("error: --fail-on-regression must be a fraction from 0 to 1 (0.05: five points)", file=sys.stderr)
        return EXIT_USAGE
    loaded = {}
    for side in ("baseline", "candidate"):
        spec = getattr(args, side)
        try:
            loaded[side] = _load(spec, args.db)
        except SpecError as exc:
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
        print(f"regression: {worst.agent} {worst.metric} pass rate fell {-(worst.pass_rate_change or 0):.1%} "
              f"(more than {threshold:.1%})", file=sys.stderr)
        return EXIT_REGRESSION
    return 0
