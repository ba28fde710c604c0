"""See the product work in one command, offline: a collector on free ports with a temporary database, example
agents whose runs are correct, use a wrong tool, miss a call, add one, call in the wrong order and hit a tool
error; their scores as a table with the SQL that made it; and the web UI, served until Ctrl+C or SIGTERM
(``--exit``: stop after printing). The temporary database is deleted however it stops."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agentotel_eval.cli import options
from agentotel_eval.metrics.registry import (
    TOOL_CORRECTNESS,
    TOOL_CORRECTNESS_EXACT,
    TOOL_CORRECTNESS_ORDERING,
    TOOL_ERRORS_DETECTORS,
    MetricDeclaration,
)

EXIT_FAILED = 1

_PASSED = "CASE WHEN e.success THEN 'pass' ELSE 'FAIL' END"


def _score_column(metric: MetricDeclaration[Any], title: str) -> str:
    """A score and pass/FAIL, its column titled with the metric's direction."""
    return (
        f"any_value(printf('%.2f %s', e.score, {_PASSED}))\n"
        f"           FILTER (WHERE e.metric = '{metric.name}') AS \"{title} {metric.arrow}\""
    )


TABLE_SQL = f"""\
SELECT r.agent_name AS agent,
       r.input,
       r.expected_tools AS expected,
       r.tools_called AS called,
       {_score_column(TOOL_CORRECTNESS, "correctness")},
       {_score_column(TOOL_CORRECTNESS_EXACT, "exact")},
       {_score_column(TOOL_CORRECTNESS_ORDERING, "ordering")},
       any_value(CASE WHEN e.success THEN 'none, pass' ELSE e.details->>'$.error_types[0]' || ', FAIL' END)
           FILTER (WHERE e.metric = '{TOOL_ERRORS_DETECTORS.name}')
           AS "tool errors {TOOL_ERRORS_DETECTORS.arrow}"
FROM agent_runs r
LEFT JOIN latest_evaluations e ON e.trace_id = r.trace_id AND e.run_span_id = r.span_id
GROUP BY ALL
ORDER BY min(r.start_time)"""
#: what the table's arrows and words mean
LEGEND = (
    "scores are 0 to 1; ↑ higher is better, ↓ lower is better; pass/FAIL against the threshold (tool "
    f"correctness passes at {TOOL_CORRECTNESS.threshold:g} or more; tool errors pass when the detectors "
    "found none)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--exit", action="store_true", help="stop after printing the table (do not serve the UI)"
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        default="127.0.0.1:0",
        help="where to serve OTLP/HTTP and the UI (default: a free port on 127.0.0.1)",
    )
    parser.add_argument(
        "--grpc",
        metavar="HOST:PORT",
        default="127.0.0.1:0",
        help="where to serve OTLP/gRPC (default: a free port on 127.0.0.1)",
    )
    options.add_db(
        parser,
        default=None,
        help="keep the database in this file (default: a temporary one, deleted at exit)",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for the scores (default: 60)"
    )


def _config(db: Path, args: argparse.Namespace) -> Any:
    from agentotel_eval.collector.config import default_config

    config = default_config()
    return dataclasses.replace(
        config,
        db=str(db),
        grpc=args.grpc,
        http=args.http,
        # the agents finish at once: a short quiet period scores them in about a second
        assembler=dataclasses.replace(config.assembler, grace_period=0.5),
    )


def _export_to(collector: Any) -> Any:
    """An OpenTelemetry SDK provider of its own, exporting to the collector over gRPC, used by ``@traced``."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    from agentotel_eval.tracing import configure

    provider = TracerProvider(resource=Resource.create({"service.name": "demo-travel-agents"}))
    configure(collector.grpc_endpoint, protocol="grpc", tracer_provider=provider)
    return provider


def _wait_for_scores(collector: Any, runs: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    sql = (
        "SELECT count(DISTINCT run_span_id) FROM evaluations "
        f"WHERE metric IN ('{TOOL_CORRECTNESS.name}', '{TOOL_ERRORS_DETECTORS.name}') GROUP BY metric"
    )
    while time.monotonic() < deadline:
        counts = [row[0] for row in collector.query(sql)["rows"]]
        if len(counts) == 2 and min(counts) >= runs:
            return True
        time.sleep(0.2)
    return False


class _Stopped(BaseException):
    """A SIGINT or SIGTERM: the demo stops wherever it is, and cleans up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signals(workdir: Path | None) -> dict[int, Any]:
    """SIGINT and SIGTERM stop the demo as they stop ``serve``; a second signal exits at once, removing the
    temporary directory first."""

    def stop(signum: int) -> None:
        raise _Stopped(signum)

    def remove() -> None:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)

    return options.on_stop_signals(stop, remove)


def run(args: argparse.Namespace) -> int:
    options.quiet_grpc()
    from agentotel_eval.collector.service import Collector
    from agentotel_eval.demo.agents import run_all
    from agentotel_eval.store.formats import render
    from agentotel_eval.store.query import QueryResult

    workdir = None
    if args.db:
        db = Path(args.db)
    else:
        workdir = Path(tempfile.mkdtemp(prefix="agentotel-demo-"))
        db = workdir / "demo.duckdb"
    previous = _on_signals(workdir)
    collector = Collector(_config(db, args), summary_interval=3600)
    serving = False
    try:
        collector.start()
        kept = f", database {db}" if workdir is None else ""
        print(f"collector: OTLP gRPC {collector.grpc_endpoint}, HTTP {collector.http_endpoint}{kept}")
        provider = _export_to(collector)
        runs = run_all()
        provider.force_flush()
        print(f"ran {runs} example agent runs; waiting for their scores ...", flush=True)
        if not _wait_for_scores(collector, runs, args.timeout):
            print(f"error: the runs were not scored within {args.timeout:g}s", file=sys.stderr)
            return EXIT_FAILED
        result = QueryResult.from_dict(collector.query(TABLE_SQL))
        print()
        print(render(result, "table"))
        print(LEGEND)
        print()
        if (
            workdir is None
        ):  # only what will still exist: the file outlives the demo, the UI and a temp one do not
            print(f'made by this SQL (run it yourself with: agentotel-eval query "..." --db {db}):')
        else:
            print(
                "made by this SQL (keep the database with --db FILE to run it yourself with agentotel-eval "
                "query):"
            )
        print(TABLE_SQL)
        if args.exit:
            return 0
        print()
        print(f"web UI: {collector.http_endpoint}/   runs: {collector.http_endpoint}/runs")
        print("serving; Ctrl+C to stop", flush=True)
        serving = True
        threading.Event().wait()
        return 0
    except _Stopped as stopped:
        return 0 if serving else 128 + stopped.signum
    finally:
        try:
            print(
                "stopping: closing the collector"
                + (" and deleting its temporary database" if workdir else "")
                + " ...",
                file=sys.stderr,
                flush=True,
            )
            collector.shutdown()
        except _Stopped:  # a signal while stopping: finish the cleanup below all the same
            pass
        finally:
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
