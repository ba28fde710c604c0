"""Turn stored runs into a dataset: ``agentotel-eval export-cases [--where SQL] [--limit N] -o cases.jsonl``.

Each line is an ``EvalTestCase`` that ``agentotel-eval eval`` and ``evaluate()`` read: the run's input and output,
the tools it called with their arguments, results and status, its expected tools where it had any (from its span,
an expectation rule or the dataset; else an empty list, for a person to fill in), and in ``metadata`` the trace
and span ids, agent, service and start time. ``--where`` is a condition on the columns of ``agent_runs`` (for
example ``agent_name = 'planner' AND start_time > now() - INTERVAL 7 DAY``), run through the same sealed,
read-only query layer as ``agentotel-eval query``: through the running collector when one holds the database,
else on the file read-only. ``-o -`` writes to stdout.

Exit status: 0 written (also when no run matched: the file is then empty); 1 the query failed; 2 a usage error
or the database cannot be opened.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from agentotel_eval.store import DEFAULT_DB_PATH

EXIT_USAGE = 2
#: runs whose calls and scores are read in one statement
_BATCH = 200
_RUN_COLUMNS = ("trace_id", "span_id", "agent_name", "service_name", "input", "output", "start_time",
                "expected_tools", "status", "parent_run_span_id")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        "  agentotel-eval export-cases -o cases.jsonl\n"
        "  agentotel-eval export-cases --where \"agent_name = 'planner' AND start_time > now() - INTERVAL 7 DAY\" "
        "-o planner.jsonl\n"
        "  agentotel-eval export-cases --where \"(trace_id, span_id) IN (SELECT trace_id, run_span_id FROM "
        "latest_evaluations WHERE metric = 'tool_correctness' AND NOT success)\" -o failing.jsonl"
    )
    parser.add_argument("--db", default=DEFAULT_DB_PATH, help=f"the database file (default: ./{DEFAULT_DB_PATH})")
    parser.add_argument("--where", default="TRUE", metavar="SQL", help="a condition on agent_runs' columns")
    parser.add_argument("--limit", type=int, default=10_000, metavar="N", help="at most N runs (default 10000)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the JSONL ('-': stdout)")


Read = Callable[[str, Sequence[Any]], Any]


def case_of(run: dict[str, Any], calls: Sequence[dict[str, Any]], expectation: tuple[list[str], str] | None) -> Any:
    """The ``EvalTestCase`` of one stored run (plain rows in, no I/O)."""
    from agentotel_eval.test_case import EvalTestCase, ToolCall

    tool_calls = [
        ToolCall(name=c["tool_name"], input_parameters=c["arguments"] if isinstance(c["arguments"], dict) else None,
                 output=_result(c["result"]), status=c["status"], error=c["error"], call_id=c["call_id"],
                 trace_id=c["trace_id"], span_id=c["span_id"], llm_turn=c["llm_turn"],
                 raw_arguments=None if isinstance(c["arguments"], dict) else c["arguments"])
        for c in calls
    ]
    expected, source = expectation if expectation is not None else ([], "")
    metadata = {"trace_id": run["trace_id"], "span_id": run["span_id"], "agent_name": run["agent_name"],
                "service_name": run["service_name"], "start_time": run["start_time"], "status": run["status"]}
    if run.get("parent_run_span_id"):
        metadata["parent_run_span_id"] = run["parent_run_span_id"]
    metadata["expected_tools_from"] = source or None
    return EvalTestCase(
        input=run["input"] or "", actual_output=run["output"], tools_called=tool_calls,
        expected_tools=[ToolCall(name=name) for name in expected],
        tool_calls=tool_calls, name=f"{run['agent_name'] or 'run'} {run['trace_id']}/{run['span_id']}",
        metadata=metadata,
    )


def _result(value: Any) -> Any:
    """A stored result is text: JSON when it parses as a structure, else the text itself."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, dict | list) else value
    return value


def expectations_of(run: dict[str, Any], scores: Sequence[dict[str, Any]]) -> tuple[list[str], str] | None:
    """A run's expected tools: those its tool-correctness score used (a rule or the dataset may have supplied
    them), else its span's own."""
    for row in scores:
        if isinstance(row.get("expected"), list):
            return [str(n) for n in row["expected"]], str(row.get("source") or "score")
    if run.get("expected_tools") is not None:
        return list(run["expected_tools"]), "span_attribute"
    return None


def export(read: Read, where: str, limit: int) -> Iterator[Any]:
    """The test cases of the runs ``where`` selects, oldest first."""
    from agentotel_eval.access.queries import ALIGNMENT_METRICS, latest_of_few

    runs = read(f"SELECT {', '.join(_RUN_COLUMNS)} FROM agent_runs WHERE ({where}) "
                f"ORDER BY start_time, trace_id, span_id LIMIT {int(limit)}", []).records()
    for start in range(0, len(runs), _BATCH):
        batch = runs[start:start + _BATCH]
        keys = " OR ".join("(trace_id = ? AND run_span_id = ?)" for _ in batch)
        ids = [v for r in batch for v in (r["trace_id"], r["span_id"])]
        calls: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in read(f"SELECT * FROM tool_calls WHERE {keys} ORDER BY trace_id, run_span_id, seq", ids).records():
            calls.setdefault((row["trace_id"], row["run_span_id"]), []).append(row)
        metrics = ", ".join("?" for _ in ALIGNMENT_METRICS)
        of_batch = " OR ".join("(e.trace_id = ? AND e.run_span_id = ?)" for _ in batch)
        latest, params = latest_of_few(f"e.metric IN ({metrics}) AND ({of_batch})", [*ALIGNMENT_METRICS, *ids])
        scores: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in read(
                "SELECT e.trace_id, e.run_span_id, e.metric, json_extract_string(e.details, '$.expected[*]') "
                f"AS expected, e.details->>'expectation' AS source FROM {latest} e WHERE e.status = 'ok' "
                "ORDER BY e.metric DESC", params).records():  # tool_correctness_ordering before tool_correctness
            scores.setdefault((row["trace_id"], row["run_span_id"]), []).append(row)
        for run in batch:
            key = (run["trace_id"], run["span_id"])
            yield case_of(run, calls.get(key, []), expectations_of(run, scores.get(key, [])))


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
    from agentotel_eval.access.client import QueryFailure, execute

    if args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return EXIT_USAGE

    def read(sql: str, params: Sequence[Any]) -> Any:
        return execute(args.db, sql, params=params, limit=max(args.limit, 10_000))

    try:
        cases = list(export(read, args.where, args.limit))
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
    with_expectation = sum(1 for c in cases if c.expected_tools)
    print(f"wrote {len(cases)} case(s) to {args.output}: {with_expectation} with expected tools, "
          f"{len(cases) - with_expectation} to fill in", file=sys.stderr)
    return 0
