"""A database to look at: the demo's scripted agents (every kind of tool-use mistake, scored) and every
recorded fixture trace, served by a real collector. Shared by the UI, browser and report tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.collector_harness import post_otlp, running_collector, wait_until
from tests.support.fixture_traces import fixtures

ROOT = Path(__file__).resolve().parents[2]
DEMO_RUNS = 8


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )


def demo_database(directory: Path) -> Path:
    """``agentotel-eval demo --exit --db`` into ``directory``: the scripted runs, scored, in a closed file."""
    db = directory / "demo.duckdb"
    done = cli("demo", "--exit", "--db", str(db))
    assert done.returncode == 0, done.stdout + done.stderr
    return db


def copy_database(db: Path, directory: Path) -> Path:
    target = directory / db.name
    shutil.copyfile(db, target)
    return target


@contextmanager
def populated_collector(db: Path) -> Iterator[Any]:
    """A collector on ``db`` after every fixture trace (and its logs) was posted and its runs were scored."""
    with running_collector(db, http="127.0.0.1:0") as collector:
        before = collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0]
        for fx in fixtures():
            assert post_otlp(collector.http_endpoint, "traces", fx.body("protobuf")).status == 200
            logs = fx.logs_body("protobuf")
            if logs:
                assert post_otlp(collector.http_endpoint, "logs", logs).status == 200

        def settled() -> bool:  # every trace completed and written, every run scored
            if collector.assembler.open_traces or collector.writer.queued_records:
                return False
            runs = collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0]
            scored = collector.query(
                "SELECT count(DISTINCT (trace_id, run_span_id)) FROM evaluations "
                "WHERE metric = 'tool_errors_detectors'"
            )["rows"][0][0]
            return runs > before + 100 and scored == runs

        wait_until(settled, timeout=90, interval=0.2, what="the fixtures' runs, scored")
        yield collector


def with_new_trace_ids(body: bytes) -> bytes:
    """An OTLP traces body whose traces are new ones: each trace id replaced,
    consistently, by a random one."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest.FromString(body)
    new: dict[bytes, bytes] = {}
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                span.trace_id = new.setdefault(span.trace_id, os.urandom(16))
                for link in span.links:
                    link.trace_id = new.setdefault(link.trace_id, os.urandom(16))
    return request.SerializeToString()
