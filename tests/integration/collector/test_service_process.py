"""The collector as users run it: ``python -m agentotel_eval.collector`` in its own process, signals, bad
config, and a crash."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import pytest

from agentotel_eval.access import discovery
from agentotel_eval.otlp.encode import encode_traces
from agentotel_eval.otlp.records import SpanRecord
from tests.support.collector_harness import (
    grpc_export,
    metric_samples,
    post_otlp,
    running_collector,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[3]


def start(db: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentotel_eval.collector",
            "--db",
            str(db),
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def wait_for_collector(proc: subprocess.Popen, db: Path) -> discovery.CollectorInfo:
    def ready():
        if proc.poll() is not None:
            raise AssertionError(f"the collector exited early: {proc.stderr.read()}")
        info = discovery.read_sidecar(db)
        return info if info and info.pid == proc.pid else None

    return wait_until(ready, timeout=30, interval=0.05, what="the collector to listen")


def agent_trace(n: int, t0: int) -> list[SpanRecord]:
    trace_id = f"{n:032x}"
    root = SpanRecord(
        trace_id,
        f"{n:08x}{0:08x}",
        None,
        "invoke_agent a",
        start_ns=t0,
        end_ns=t0 + 3000,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"},
    )
    tool = SpanRecord(
        trace_id,
        f"{n:08x}{1:08x}",
        root.span_id,
        "execute_tool t",
        start_ns=t0 + 1000,
        end_ns=t0 + 2000,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
    )
    return [tool, root]


def test_serve_prints_where_it_listens_stores_and_stops_cleanly_on_sigterm(tmp_path):
    db = tmp_path / "p.duckdb"
    proc = start(db, "--grace-period", "60s")  # runs complete only because the shutdown flushes them
    try:
        info = wait_for_collector(proc, db)
        spans = agent_trace(1, time.time_ns())
        assert (
            post_otlp(f"http://{info.http}", "traces", encode_traces(spans).SerializeToString()).status == 200
        )
        grpc_export(info.grpc, "traces", encode_traces(agent_trace(2, time.time_ns())).SerializeToString())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert f"OTLP/gRPC  {info.grpc}" in out and f"http://{info.http}" in out
    assert f"database   {db}" in out and 'agentotel-eval query "SELECT' in out
    assert not discovery.sidecar_path(db).exists()
    assert len(err.splitlines()) < 10  # concise: no line per span
    with running_collector(db) as collector:  # the file was closed cleanly and reopens
        assert collector.query("SELECT count(*) FROM spans")["rows"] == [[4]]
        assert collector.query("SELECT trace_id FROM agent_runs ORDER BY trace_id")["rows"] == [
            [f"{1:032x}"],
            [f"{2:032x}"],
        ]


def test_a_second_signal_exits_at_once(tmp_path):
    db = tmp_path / "twice.duckdb"
    proc = start(db, "--grace-period", "60s")
    try:
        info = wait_for_collector(proc, db)
        t0 = time.time_ns()
        for batch in range(
            10
        ):  # open traces the first stop will have to reconstruct and write: it takes a while
            spans = [s for k in range(1500) for s in agent_trace(batch * 10_000 + k, t0)]
            assert (
                post_otlp(f"http://{info.http}", "traces", encode_traces(spans).SerializeToString()).status
                == 200
            )
        proc.send_signal(signal.SIGINT)
        wait_until(
            lambda: "stopping" in proc.stderr.readline(), timeout=30, interval=0, what="the stop to begin"
        )
        proc.send_signal(
            signal.SIGINT
        )  # Python runs one handler for signals that arrive together: send it after
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGINT  # not the clean exit (0) of a completed stop


def test_an_invalid_config_fails_at_start_naming_the_key(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[assembler]\ngrace_periodd = 3\n")
    proc = start(tmp_path / "c.duckdb", "--config", str(config))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "assembler.grace_periodd" in err and "unknown setting" in err


@pytest.mark.parametrize("taken", ["grpc", "http"])
def test_a_taken_port_is_one_clear_line_and_creates_nothing(tmp_path, taken):
    """No gRPC C-core log lines, and no database file or lock left by a start that could not listen."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("GRPC_VERBOSITY", None)
        ports = {"grpc": "127.0.0.1:0", "http": "127.0.0.1:0", taken: f"127.0.0.1:{port}"}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentotel_eval.collector",
                "--db",
                str(tmp_path / "t.duckdb"),
                "--grpc",
                ports["grpc"],
                "--http",
                ports["http"],
            ],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
            cwd=ROOT,
        )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"error: cannot start the collector: port {port} is in use: cannot listen for "
        f"{ {'grpc': 'OTLP/gRPC', 'http': 'OTLP/HTTP'}[taken] } on 127.0.0.1:{port} (another collector? "
        f"choose another address with --{taken} HOST:PORT)"
    ]
    assert list(tmp_path.iterdir()) == []  # neither t.duckdb nor its lock


def test_grpc_reports_a_port_taken_after_the_check_in_the_same_words():
    """The check and the bind are two moments: a port taken in between gets the same one line."""
    from agentotel_eval.collector.receive.grpc import GrpcReceiver

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        receiver = GrpcReceiver("127.0.0.1", port, ingestor=None, workers=1)  # type: ignore[arg-type]
        with pytest.raises(OSError, match=f"port {port} is in use: cannot listen for OTLP/gRPC"):
            receiver.start()


class Exporter(threading.Thread):
    """Sends small whole traces in a loop and remembers which were acknowledged."""

    def __init__(self, index: int, info: discovery.CollectorInfo, transport: str) -> None:
        super().__init__(daemon=True)
        self.index = index
        self.info = info
        self.transport = transport
        self.acked: list[SpanRecord] = []
        self.stop = threading.Event()

    def run(self) -> None:
        n = self.index * 1_000_000
        while not self.stop.is_set():
            spans = [s for k in range(5) for s in agent_trace(n + k, time.time_ns())]
            n += 5
            body = encode_traces(spans).SerializeToString()
            try:
                if self.transport == "grpc":
                    grpc_export(self.info.grpc, "traces", body, timeout=5)
                else:
                    if post_otlp(f"http://{self.info.http}", "traces", body).status != 200:
                        continue
            except (OSError, grpc.RpcError):
                continue  # not acknowledged: the exporter would retry, and so may lose nothing
            self.acked.extend(spans)


@pytest.mark.timeout(120)
def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_after_sigkill_every_acknowledged_span_is_stored_and_its_run_is_recovered(tmp_path):
    db = tmp_path / "crash.duckdb"
    proc = start(db, "--grace-period", "30s")  # nothing completes before the crash: recovery must find them
    exporters: list[Exporter] = []
    try:
        info = wait_for_collector(proc, db)
        exporters = [Exporter(i + 1, info, "grpc" if i % 2 else "http") for i in range(4)]
        for e in exporters:
            e.start()
        wait_until(
            lambda: sum(len(e.acked) for e in exporters) > 400, timeout=30, what="some acknowledged load"
        )
        with urllib.request.urlopen(f"http://{info.http}/healthz", timeout=5) as answer:
            assembler_pid = json.loads(answer.read())["assembler_pid"]
        assert assembler_pid not in (None, proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        # its assembler process sees the socket close and exits too: no orphan left running
        wait_until(
            lambda: not _alive(assembler_pid), timeout=10, what="the orphaned assembler process to exit"
        )
    finally:
        for e in exporters:
            e.stop.set()
        for e in exporters:
            e.join(10)
        if proc.poll() is None:
            proc.kill()
    acked = {s.key for e in exporters for s in e.acked}
    assert len(acked) > 400
    assert json.loads(discovery.sidecar_path(db).read_text())["pid"] == proc.pid  # left behind by the crash

    with running_collector(db, assembler={"grace_period": 0.2}) as collector:
        stored = {
            tuple(r) for r in collector.query("SELECT trace_id, span_id FROM spans", limit=1_000_000)["rows"]
        }
        missing = acked - stored
        assert not missing, f"{len(missing)} acknowledged spans were lost"
        acked_traces = {trace_id for trace_id, _ in acked}

        def runs() -> set[str]:
            rows = collector.query("SELECT DISTINCT trace_id FROM agent_runs", limit=1_000_000)["rows"]
            return {r[0] for r in rows}

        wait_until(lambda: acked_traces <= runs(), timeout=30, what="the runs of the recovered traces")
        wait_until(
            lambda: collector.assembler.snapshot().assembler.traces_recovered >= len(acked_traces),
            timeout=5,
            what="the recovery counter",
        )


def test_retention_deletes_older_data_in_the_background(tmp_path):
    db = tmp_path / "retention.duckdb"
    now = time.time_ns()
    old, new = agent_trace(1, now - 40 * 86400 * 10**9), agent_trace(2, now)
    with running_collector(db) as collector:
        post_otlp(collector.http_endpoint, "traces", encode_traces(old + new).SerializeToString())
        wait_until(
            lambda: collector.query("SELECT count(*) FROM agent_runs")["rows"] == [[2]], what="both runs"
        )
    with running_collector(db, retention="30d") as collector:  # the first pass runs at startup
        wait_until(lambda: collector.retention_deleted.get("spans") == 2, what="the retention pass")
        assert collector.query("SELECT DISTINCT trace_id FROM spans")["rows"] == [[f"{2:032x}"]]
        assert collector.query("SELECT trace_id FROM agent_runs")["rows"] == [[f"{2:032x}"]]
        assert collector.query("SELECT count(*) FROM tool_calls")["rows"] == [[1]]
        assert (
            metric_samples(collector.metrics_text())['agentotel_retention_deleted_rows_total{table="spans"}']
            == 2
        )
