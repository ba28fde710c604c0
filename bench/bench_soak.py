"""Soak under faults: ``agentotel-eval serve`` for a bounded time under steady load, with the judge's LLM and
the forward endpoint failing, then an account of every span, run and evaluation.

    python bench/bench_soak.py [--minutes 10] [--rate 200] [--spans-per-request 128] [--outage 30]
                               [--judge-timeout 3] [--judge-concurrency 16] [--seed 1] [--json FILE]
                               [--keep DIR]

It starts, on free ports on 127.0.0.1 and with a temporary database:
  * an LLM stub (tests/support/llm_stub.py, in this process) answering the judge with valid JSON verdicts,
    except 5% of requests answered HTTP 500 and 2% held longer than the judge's timeout (a
    seeded RNG picks which);
  * an OTLP sink (tests/support/otlp_sink.py, in its own process, counting what it receives instead of keeping
    it) that the collector forwards to over gRPC; it is stopped for ``--outage`` seconds in the middle of the
    run and started again on the same ports;
  * the collector as a subprocess (``agentotel-eval serve --config``), with the judge on for every run (no
    sampling, a budget it cannot reach), an expectation rule matching every run, and forwarding to the sink.
Load: the recorded fixture traces (7-13 spans, fresh ids and current times, see bench_ingest.py), open loop at
``--rate`` spans/s in all, half over gRPC and half over OTLP/HTTP protobuf; every answer is recorded (the
spans of a 200 / OK answer, less any ``partial_success`` rejected count, are acknowledged). After the load it
waits until every trace is completed and no judge row is pending (at most ``--drain-timeout``), reads
``/metrics``, stops the collector with SIGTERM and opens the database read-only.

Printed (and written to ``--json FILE``): spans acknowledged against stored (must be equal); the judge's
``tool_errors`` rows by status against the runs (ok + error + skipped must equal the runs, none pending);
every metric's rows by status; RSS of the collector's process tree sampled every ``--sample-every`` seconds,
as a table over time, and whether it levelled off (mean of the last third of the load against the middle
third); spans the sink received against the collector's forward counters; judge calls made to the stub, the
500s and timeouts injected, and the collector's judge counters. Exits 1 when acknowledged != stored or ok +
error + skipped != runs. The default rate is modest on purpose: the machine has 2 cores shared with other
work, and the judge (one litellm call for each run with a user input, about 3 of 4 runs here) is what falls
behind first, not ingest.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import http.client
import json
import math
import multiprocessing as mp
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

RUN_ID = (
    0x5A  # the first two bytes of every trace id this benchmark sends (bench_ingest.trace_prefix's ``run``)
)
EXPECTED_TOOLS = ["get_weather", "search_flights", "book_hotel"]
# judge answers of the shape ToolsErrorMetric validates: one finding, and a clean run
VERDICTS = (
    {
        "detected": True,
        "confidence": 0.9,
        "reason": "booked before confirming the price",
        "error_types": ["result_ignored"],
        "errors": [{"type": "result_ignored", "description": "the price in the search result was ignored"}],
        "error_severity": "medium",
    },
    {
        "detected": False,
        "confidence": 0.0,
        "reason": "no errors",
        "error_types": [],
        "errors": [],
        "error_severity": "none",
    },
)


# ------------------------------------------------------------------------------------------------------------
# the forward sink: its own process, restartable on the same ports, counting instead of keeping


def sink_main(conn: Any) -> None:
    """Serve an OtlpSink until told to exit; ``stop`` / ``start`` take it down and bring
    it back on its ports."""
    from concurrent import futures
    from http.server import ThreadingHTTPServer

    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    from tests.support import otlp_sink

    class CountingStore(otlp_sink._Store):
        """Counts records (and distinct span keys, to see re-sent batches) instead of keeping them: a
        10-minute soak forwards about a million spans."""

        def __init__(self) -> None:
            super().__init__()
            self.counts: Counter[str] = Counter()
            self.span_keys: set[int] = set()

        def add(self, request: Any, records: list[Any]) -> None:
            with self.lock:
                self.counts[f"requests_{'accepted' if request.accepted else 'rejected'}"] += 1
                if not request.accepted:
                    return
                if request.signal == "traces":
                    self.counts["spans"] += len(records)
                    self.span_keys.update(hash((r.trace_id, r.span_id)) for r in records)
                else:
                    self.counts["logs"] += len(records)

        def snapshot(self) -> dict[str, int]:
            with self.lock:
                return {**self.counts, "distinct_spans": len(self.span_keys)}

    class RestartableSink(otlp_sink.OtlpSink):
        """OtlpSink binds fresh ephemeral ports on every start; this one binds the first
        start's ports again."""

        def __init__(self, store: CountingStore) -> None:
            super().__init__()
            self._store = store

        def start(self) -> RestartableSink:
            if self.grpc_port is None:
                super().start()
                return self
            for _ in range(50):  # the old sockets may take a moment to be released
                server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
                trace_service_pb2_grpc.add_TraceServiceServicer_to_server(
                    otlp_sink._TraceServicer(self._store), server
                )
                logs_service_pb2_grpc.add_LogsServiceServicer_to_server(
                    otlp_sink._LogsServicer(self._store), server
                )
                try:
                    if server.add_insecure_port(f"127.0.0.1:{self.grpc_port}") != self.grpc_port:
                        raise RuntimeError(f"gRPC port {self.grpc_port} not bound")
                    http_server = ThreadingHTTPServer(
                        ("127.0.0.1", self.http_port or 0), otlp_sink._make_handler(self._store)
                    )
                    break
                except (OSError, RuntimeError):
                    server.stop(None)
                    time.sleep(0.1)
            else:
                raise RuntimeError("could not bind the sink's ports again")
            server.start()
            self._grpc_server = server
            http_server.daemon_threads = True
            self._http_thread = threading.Thread(
                target=http_server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="otlp-sink-http",
                daemon=True,
            )
            self._http_thread.start()
            self._http_server = http_server
            return self

    store = CountingStore()
    sink = RestartableSink(store).start()
    conn.send((sink.grpc_port, sink.http_port))
    while True:
        command = conn.recv()
        if command == "stop":
            sink.stop()
        elif command == "start":
            sink.start()
        elif command == "exit":
            sink.stop()
            conn.send(store.snapshot())
            return
        conn.send(store.snapshot())


class SinkProcess:
    def __init__(self) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=sink_main, args=(child,), daemon=True)
        self._proc.start()
        self.grpc_port, self.http_port = self._conn.recv()
        self._lock = threading.Lock()

    def command(self, what: str) -> dict[str, int]:
        with self._lock:
            self._conn.send(what)
            answer: dict[str, int] = self._conn.recv()
        if what == "exit":
            self._proc.join(10)
        return answer


# ------------------------------------------------------------------------------------------------------------
# the judge's LLM: valid verdicts, some 500s, some answers later than the judge waits


@dataclass
class JudgeFaults:
    timeout_s: float
    seed: int
    error_share: float = 0.05
    timeout_share: float = 0.02
    calls: int = 0
    errors_500: int = 0
    timeouts: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> Any:
        from tests.support.llm_stub import Reply

        with self._lock:  # the stub answers on one thread a connection
            self.calls += 1
            draw = self._rng.random()
            verdict = VERDICTS[self._rng.randrange(len(VERDICTS))]
            if draw < self.error_share:
                self.errors_500 += 1
                return Reply.server_error(500)
            if draw < self.error_share + self.timeout_share:
                self.timeouts += 1
                return Reply.json(verdict, delay=self.timeout_s + 2.0)  # litellm gives up before the answer
            self.verdicts["detected" if verdict["detected"] else "clean"] += 1
            return Reply.json(verdict)


# ------------------------------------------------------------------------------------------------------------
# the collector: ``agentotel-eval serve`` as a subprocess


def collector_config(
    path: Path, db: Path, stub_url: str, sink_grpc_port: int, args: argparse.Namespace
) -> None:
    tools = ", ".join(json.dumps(t) for t in EXPECTED_TOOLS)
    path.write_text(f"""\
db = {json.dumps(str(db))}
grpc = "127.0.0.1:0"
http = "127.0.0.1:0"

[judge]
model = "openai/gpt-4o-mini"
api_base = {json.dumps(stub_url)}
api_key = "sk-soak-dummy"
sample_rate = 1.0
max_concurrency = {args.judge_concurrency}
timeout_s = {args.judge_timeout}
max_retries = 3
max_cost_usd_per_day = 1000.0

[forward]
url = "grpc://127.0.0.1:{sink_grpc_port}"

[[expectations]]
name = "every run"
expected_tools = [{tools}]
""")


@dataclass
class Collector:
    proc: subprocess.Popen[bytes]
    grpc: str  # host:port
    http: str  # host:port
    stderr_path: Path

    def get(self, path: str, timeout: float = 10.0) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.http, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def query(self, sql: str) -> list[list[Any]]:
        conn = http.client.HTTPConnection(self.http, timeout=60)
        try:
            conn.request(
                "POST",
                "/v1/query",
                json.dumps({"sql": sql, "timeout": 30}),
                {"Content-Type": "application/json"},
            )
            response = conn.getresponse()
            body = json.loads(response.read())
        finally:
            conn.close()
        if response.status != 200:
            raise RuntimeError(f"/v1/query: {response.status} {body}")
        rows: list[list[Any]] = body["rows"]
        return rows

    def metrics(self) -> dict[str, float]:
        status, body = self.get("/metrics")
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}")
        return parse_prometheus(body.decode())

    def health(self) -> dict[str, Any]:
        _status, body = self.get("/healthz")
        out: dict[str, Any] = json.loads(body)
        return out


def start_collector(config: Path, workdir: Path) -> Collector:
    exe = Path(sys.executable).with_name("agentotel-eval")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "agentotel_eval.cli"]
    stdout_path, stderr_path = workdir / "collector.out", workdir / "collector.err"
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }  # no fetch of litellm's price list at its import
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            [*command, "serve", "--config", str(config)], stdout=out, stderr=err, env=env, cwd=workdir
        )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        text = stdout_path.read_text(errors="replace")
        grpc_match = re.search(r"OTLP/gRPC\s+(\S+)", text)
        http_match = re.search(r"OTLP/HTTP\s+http://(\S+)", text)
        if grpc_match and http_match:
            return Collector(proc, grpc_match.group(1), http_match.group(1), stderr_path)
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"the collector did not start:\n{stderr_path.read_text(errors='replace')[-4000:]}")


def parse_prometheus(text: str) -> dict[str, float]:
    """``name{labels}`` -> value, for every sample line."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        with contextlib.suppress(ValueError):
            out[name] = float(value)
    return out


# ------------------------------------------------------------------------------------------------------------
# load: open loop, both transports


@dataclass
class TransportLoad:
    transport: str
    address: str
    rate: float  # spans/s
    spans_per_request: int
    exporters: tuple[int, ...]  # bench_ingest exporter indices: which templates, and the trace ids' prefix
    requests: int = 0
    offered: int = 0
    acked: int = 0
    rejected: int = 0  # partial_success rejected spans
    refused: Counter[str] = field(default_factory=Counter)  # requests not answered 200 / OK, by why
    latencies: list[float] = field(default_factory=list)
    behind: float = 0.0  # how far the sender fell behind its schedule at most

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def run(self, until: float, stop: threading.Event) -> None:
        from bench_ingest import RequestFactory

        factories = [RequestFactory(e, self.spans_per_request, RUN_ID) for e in self.exporters]
        send = self._sender()
        interval = factories[0].spans / self.rate
        slot = time.monotonic()
        k = 0
        # open loop: a request at each slot whatever the answers to the earlier ones; a pool keeps slow
        # answers (a commit waiting, a 503 after export_timeout) from delaying the next requests
        with ThreadPoolExecutor(max_workers=16, thread_name_prefix=f"load-{self.transport}") as pool:
            while slot < until and not stop.is_set():
                now = time.monotonic()
                if now < slot:
                    stop.wait(slot - now)
                    continue
                self.behind = max(self.behind, now - slot)
                factory = factories[k % len(factories)]
                k += 1
                body, _seq = factory.next()
                pool.submit(self._one, send, body, factory.spans)
                slot += interval

    def _one(self, send: Callable[[bytes], tuple[str, int]], body: bytes, spans: int) -> None:
        started = time.monotonic()
        try:
            outcome, rejected = send(body)
        except Exception as exc:  # a transport error is an answer too: nothing acknowledged
            outcome, rejected = type(exc).__name__, 0
        elapsed = time.monotonic() - started
        with self._lock:
            self.requests += 1
            self.offered += spans
            self.latencies.append(elapsed)
            if outcome == "ok":
                self.acked += spans - rejected
                self.rejected += rejected
            else:
                self.refused[outcome] += 1

    def _sender(self) -> Callable[[bytes], tuple[str, int]]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        if self.transport == "grpc":
            import grpc
            from bench_ingest import TRACE_PATH

            channel = grpc.insecure_channel(
                self.address, options=[("grpc.max_send_message_length", 64 << 20)]
            )
            call = channel.unary_unary(TRACE_PATH)

            def send_grpc(body: bytes) -> tuple[str, int]:
                try:
                    answer = call(body, timeout=60)
                except grpc.RpcError as exc:
                    return f"grpc {exc.code().name}", 0
                return "ok", ExportTraceServiceResponse.FromString(answer).partial_success.rejected_spans

            return send_grpc

        local = threading.local()  # one keep-alive connection a sending thread

        def send_http(body: bytes) -> tuple[str, int]:
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = local.conn = http.client.HTTPConnection(self.address, timeout=60)
            try:
                conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
                response = conn.getresponse()
                answer = response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                local.conn = None
                raise
            if response.status != 200:
                return f"http {response.status}", 0
            return "ok", ExportTraceServiceResponse.FromString(answer).partial_success.rejected_spans

        return send_http


# ------------------------------------------------------------------------------------------------------------
# memory: the collector's whole process tree, from /proc


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        out.setdefault(ppid, []).append(int(entry))
    return out


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "collector"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if "agentotel_eval.collector.pipeline.worker" in cmdline:
        return "assembler"
    if "agentotel_eval.collector.decode" in cmdline:
        return "decode"
    return "other"


def tree_rss_cpu(root: int) -> tuple[dict[str, int], float]:
    """VmRSS (kB) of ``root`` and every process below it, by role (collector, assembler, decode, other), and
    their CPU time (user + system seconds) so far."""
    from bench_ingest import _cpu_seconds

    children = _children()
    rss: Counter[str] = Counter()
    cpu = 0.0
    todo = [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss[_role(pid, root)] += int(line.split()[1])
                        break
        except OSError:
            continue
        cpu += _cpu_seconds(pid)
    return dict(rss), cpu


@dataclass
class Sample:
    t: float  # seconds since the load started
    phase: str
    rss_kb: dict[str, int]
    cpu_pct: float  # the process tree's CPU over the last interval, 100 = one core
    runs: float  # runs completed so far
    judge_pending: float
    judge_calls: int  # requests the LLM stub received so far
    judge_stale: float  # judge answers dropped as stale so far
    forward_queue: float
    forward_dropped: float  # spans and logs
    open_traces: float

    @property
    def total_mb(self) -> float:
        return sum(self.rss_kb.values()) / 1024


class Sampler:
    def __init__(
        self, collector: Collector, every: float, started: float, judge_calls: Callable[[], int]
    ) -> None:
        self.collector = collector
        self.judge_calls = judge_calls
        self.every = every
        self.started = started
        self.phase = "load"
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._on_tick: list[Callable[[], None]] = []

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def on_tick(self, fn: Callable[[], None]) -> None:
        self._on_tick.append(fn)

    def _run(self) -> None:
        last_cpu, last_t = tree_rss_cpu(self.collector.proc.pid)[1], time.monotonic()
        while not self._stop.wait(self.every):
            rss, cpu = tree_rss_cpu(self.collector.proc.pid)
            now = time.monotonic()
            cpu_pct = 100 * (cpu - last_cpu) / (now - last_t)
            last_cpu, last_t = cpu, now
            try:
                m = self.collector.metrics()
            except (OSError, RuntimeError, http.client.HTTPException):
                m = {}
            self.samples.append(
                Sample(
                    now - self.started,
                    self.phase,
                    rss,
                    cpu_pct,
                    m.get("agentotel_runs_completed_total", math.nan),
                    m.get("agentotel_judge_pending", math.nan),
                    self.judge_calls(),
                    m.get("agentotel_judge_stale_total", math.nan),
                    m.get("agentotel_forward_queue_records", math.nan),
                    sum(v for k, v in m.items() if k.startswith("agentotel_forward_dropped_total")),
                    m.get("agentotel_open_traces", math.nan),
                )
            )
            for fn in self._on_tick:
                fn()


def levelled(samples: list[Sample], limit_pct: float) -> dict[str, Any]:
    """The mean RSS of the last third of the load against the middle third."""
    load = [s.total_mb for s in samples if s.phase in ("load", "outage")]
    if len(load) < 6:
        return {"levelled": None, "why": f"{len(load)} samples under load: too few to tell"}
    third = len(load) // 3
    middle = statistics.fmean(load[third : 2 * third])
    last = statistics.fmean(load[-third:])
    growth = 100 * (last - middle) / middle
    return {
        "levelled": growth < limit_pct,
        "middle_mb": middle,
        "last_mb": last,
        "growth_pct": growth,
        "limit_pct": limit_pct,
    }


# ------------------------------------------------------------------------------------------------------------
# the run


def drain(collector: Collector, timeout: float) -> tuple[bool, float, dict[str, Any]]:
    """Wait until every trace is completed and written and no judge row is pending (twice in a row)."""
    started = time.monotonic()
    calm = 0
    state: dict[str, Any] = {}
    while time.monotonic() - started < timeout:
        try:
            health = collector.health()
            m = collector.metrics()
            pending = collector.query(
                "SELECT count(*) FROM evaluations WHERE metric = 'tool_errors' AND status = 'pending'"
            )[0][0]
        except (OSError, RuntimeError, http.client.HTTPException) as exc:
            state = {"error": str(exc)}
            time.sleep(1)
            continue
        state = {
            "open_traces": health.get("open_traces"),
            "write_queue": health.get("write_queue_records"),
            "backlog": m.get("agentotel_assembler_backlog_records"),
            "operations": m.get("agentotel_write_operations_pending"),
            "judge_pending_rows": pending,
            "forward_queue": m.get("agentotel_forward_queue_records"),
        }
        quiet = (
            state["open_traces"] == 0
            and state["write_queue"] == 0
            and state["backlog"] == 0
            and state["operations"] == 0
            and pending == 0
        )
        calm = calm + 1 if quiet else 0
        if calm >= 2:
            return True, time.monotonic() - started, state
        time.sleep(1)
    return False, time.monotonic() - started, state


def stop_collector(collector: Collector, timeout: float = 120) -> tuple[int | None, float]:
    started = time.monotonic()
    collector.proc.send_signal(signal.SIGTERM)  # serve's clean stop: commits, completes traces, closes the db
    try:
        code: int | None = collector.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        collector.proc.kill()
        collector.proc.wait(10)
        code = None
    return code, time.monotonic() - started


def count_database(db: Path) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        # our trace ids' first two bytes: spans the collector stored of its own would differ
        prefix = f"{RUN_ID:04x}"
        spans, ours, distinct = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE starts_with(trace_id, ?)), "
            "(SELECT count(*) FROM (SELECT DISTINCT trace_id, span_id FROM spans)) FROM spans",
            [prefix],
        ).fetchall()[0]
        runs, traces_with_runs = con.execute(
            "SELECT count(*), count(DISTINCT trace_id) FROM agent_runs"
        ).fetchall()[0]
        by_status = con.execute(
            "SELECT metric, status, count(*) FROM evaluations GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        judge_errors = con.execute(
            "SELECT reason, count(*) FROM evaluations WHERE metric = 'tool_errors' AND status IN ('error', "
            "'skipped') GROUP BY ALL ORDER BY 2 DESC LIMIT 5"
        ).fetchall()
    finally:
        con.close()
    evaluations: dict[str, dict[str, int]] = {}
    for metric, status, n in by_status:
        evaluations.setdefault(metric, {})[status] = n
    return {
        "spans": spans,
        "spans_ours": ours,
        "spans_distinct": distinct,
        "runs": runs,
        "traces_with_runs": traces_with_runs,
        "evaluations": evaluations,
        "judge_error_reasons": [[r[:160] if r else r, n] for r, n in judge_errors],
    }


def log_lines(path: Path) -> dict[str, Any]:
    """The collector's warnings and errors: how many, and the first few distinct ones."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        match = re.match(r"\S+ \S+ (WARNING|ERROR|CRITICAL) (\S+): (.*)", line)
        if not match:
            continue
        level, logger, message = match.groups()
        key = f"{level} {logger}"
        counts[key] += 1
        first.setdefault(key, message[:200])
    return {"counts": dict(counts), "first": first}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="load duration (default 10)")
    parser.add_argument(
        "--rate",
        type=float,
        default=200.0,
        help="spans/s offered in all, half a transport (default 200, about 26 runs/s: what the "
        "judge keeps up with here; ingest alone takes far more)",
    )
    parser.add_argument("--spans-per-request", type=int, default=128)
    parser.add_argument(
        "--outage", type=float, default=30.0, help="seconds the forward sink is down, mid-run"
    )
    parser.add_argument("--judge-timeout", type=float, default=3.0, help="the judge's timeout_s")
    parser.add_argument("--judge-concurrency", type=int, default=16, help="the judge's max_concurrency")
    parser.add_argument("--error-share", type=float, default=0.05, help="judge requests answered HTTP 500")
    parser.add_argument("--timeout-share", type=float, default=0.02, help="judge requests answered too late")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument(
        "--rss-growth",
        type=float,
        default=10.0,
        help="growth in percent of the last third over the middle third still called levelled",
    )
    parser.add_argument("--drain-timeout", type=float, default=600.0)
    parser.add_argument("--json", metavar="FILE", help="write every figure to FILE as JSON")
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="copy the database, the collector's config and its output to DIR (to look into)",
    )
    args = parser.parse_args()
    seconds = args.minutes * 60
    outage = min(args.outage, seconds / 2)
    outage_at = (seconds - outage) / 2
    print(
        f"soak: {args.minutes:g} min at {args.rate:,.0f} spans/s ({args.spans_per_request} a request, gRPC + "
        f"HTTP), judge on every run (timeout {args.judge_timeout:g}s, {args.error_share:.0%} HTTP 500, "
        f"{args.timeout_share:.0%} late), forward sink down {outage:g}s from t={outage_at:.0f}s; "
        f"cpus {os.cpu_count()}, load avg {os.getloadavg()[0]:.2f}",
        flush=True,
    )

    from tests.support.llm_stub import LLMStub

    faults = JudgeFaults(args.judge_timeout, args.seed, args.error_share, args.timeout_share)
    with tempfile.TemporaryDirectory(prefix="agentotel-soak-") as tmp, LLMStub(responder=faults) as stub:
        workdir = Path(tmp)
        sink = SinkProcess()
        db = workdir / "soak.duckdb"
        config = workdir / "collector.toml"
        collector_config(config, db, stub.base_url, sink.grpc_port, args)
        collector = start_collector(config, workdir)
        try:
            print(
                f"collector pid {collector.proc.pid}: gRPC {collector.grpc}, HTTP {collector.http}; "
                f"stub {stub.base_url}; sink gRPC :{sink.grpc_port}",
                flush=True,
            )
            loads = [
                TransportLoad("grpc", collector.grpc, args.rate / 2, args.spans_per_request, (1, 17, 33)),
                TransportLoad("http", collector.http, args.rate / 2, args.spans_per_request, (9, 25, 41)),
            ]
            started = time.monotonic()
            sampler = Sampler(collector, args.sample_every, started, lambda: faults.calls)
            sampler.on_tick(stub.clear_requests)  # the stub keeps every prompt otherwise
            sampler.start()
            stop = threading.Event()
            threads = [
                threading.Thread(
                    target=load.run, args=(started + seconds, stop), name=f"load-{load.transport}"
                )
                for load in loads
            ]
            for t in threads:
                t.start()

            sink_events: dict[str, Any] = {}
            try:
                time.sleep(max(0.0, started + outage_at - time.monotonic()))
                sink_events["before_outage"] = sink.command("stop")
                sampler.phase = "outage"
                sink_events["down_at"] = time.monotonic() - started
                print(
                    f"[t={sink_events['down_at']:.0f}s] forward sink stopped "
                    f"({sink_events['before_outage'].get('spans', 0):,} spans received so far)",
                    flush=True,
                )
                time.sleep(max(0.0, started + outage_at + outage - time.monotonic()))
                sink.command("start")
                sampler.phase = "load"
                sink_events["up_at"] = time.monotonic() - started
                print(
                    f"[t={sink_events['up_at']:.0f}s] forward sink started again on the same ports",
                    flush=True,
                )
                for t in threads:
                    t.join()
            except KeyboardInterrupt:
                stop.set()
                for t in threads:
                    t.join()
            load_s = time.monotonic() - started
            sampler.phase = "drain"
            offered = sum(load.offered for load in loads)
            print(f"[t={load_s:.0f}s] load stopped: {offered:,} spans sent; draining...", flush=True)
            drained, drain_s, drain_state = drain(collector, args.drain_timeout)
            print(f"drain: {'done' if drained else 'NOT done'} in {drain_s:.0f}s {drain_state}", flush=True)
            metrics = collector.metrics()
            sampler.stop()
            exit_code, stop_s = stop_collector(collector)
        finally:
            if collector.proc.poll() is None:  # the run failed: leave no collector behind
                collector.proc.kill()
        sink_counts = sink.command("exit")
        counts = count_database(db)
        logs = log_lines(collector.stderr_path)
        if args.keep:
            shutil.copytree(workdir, args.keep, dirs_exist_ok=True)

    report = build_report(
        args,
        loads,
        load_s,
        faults,
        sink_events,
        sink_counts,
        drained,
        drain_s,
        drain_state,
        metrics,
        exit_code,
        stop_s,
        counts,
        logs,
        sampler.samples,
    )
    print_report(report, sampler.samples)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    return 0 if report["ok"] else 1


def build_report(
    args: argparse.Namespace,
    loads: list[TransportLoad],
    load_s: float,
    faults: JudgeFaults,
    sink_events: dict[str, Any],
    sink_counts: dict[str, int],
    drained: bool,
    drain_s: float,
    drain_state: dict[str, Any],
    metrics: dict[str, float],
    exit_code: int | None,
    stop_s: float,
    counts: dict[str, Any],
    logs: dict[str, Any],
    samples: list[Sample],
) -> dict[str, Any]:
    acked = sum(load.acked for load in loads)
    judge = counts["evaluations"].get("tool_errors", {})
    answered = sum(judge.get(s, 0) for s in ("ok", "error", "skipped"))
    judge_spans = judge.get("ok", 0) + judge.get(
        "error", 0
    )  # each answer goes downstream as a child span + a log

    def metric(name: str, **labels: str) -> float:
        key = (
            "agentotel_"
            + name
            + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else "")
        )
        return metrics.get(key, math.nan)

    def total(name: str) -> float:  # summed over every label set
        return sum(v for k, v in metrics.items() if k.split("{")[0] == "agentotel_" + name)

    transports = {}
    for load in loads:
        lat = sorted(load.latencies) or [math.nan]
        transports[load.transport] = {
            "requests": load.requests,
            "offered": load.offered,
            "acked": load.acked,
            "rejected": load.rejected,
            "refused": dict(load.refused),
            "p50_s": lat[len(lat) // 2],
            "p99_s": lat[int(len(lat) * 0.99)],
            "max_s": lat[-1],
            "behind_schedule_max_s": load.behind,
        }
    forwarded_expected = counts["spans"] + judge_spans
    return {
        "ok": acked == counts["spans"] and answered == counts["runs"],
        "settings": {k: v for k, v in vars(args).items()},
        "load_seconds": load_s,
        "spans": {
            "acknowledged": acked,
            "stored": counts["spans"],
            "stored_ours": counts["spans_ours"],
            "stored_distinct": counts["spans_distinct"],
            "equal": acked == counts["spans"],
            "by_transport": transports,
        },
        "runs": counts["runs"],
        "traces_with_runs": counts["traces_with_runs"],
        "evaluations": counts["evaluations"],
        "judge_rows": {
            "runs": counts["runs"],
            "ok+error+skipped": answered,
            "pending": judge.get("pending", 0),
            "by_status": judge,
            "equal": answered == counts["runs"],
            "error_and_skipped_reasons": counts["judge_error_reasons"],
        },
        "drain": {"done": drained, "seconds": drain_s, "state": drain_state},
        "stop": {"exit_code": exit_code, "seconds": stop_s},
        "judge": {
            "stub_calls": faults.calls,
            "injected_500": faults.errors_500,
            "injected_timeouts": faults.timeouts,
            "verdicts": dict(faults.verdicts),
            "collector": {
                "queued": metric("judge_queued_total"),
                "pending": metric("judge_pending"),
                "in_flight": metric("judge_in_flight"),
                "stale": metric("judge_stale_total"),
                "cost_usd_total": metric("judge_cost_usd_total"),
                "results": {
                    k.split('"')[1]: v
                    for k, v in metrics.items()
                    if k.startswith("agentotel_judge_results_total{")
                },
            },
        },
        "forward": {
            "sink": sink_counts,
            "sink_events": sink_events,
            "collector": {
                "sent_spans": metric("forward_sent_total", signal="traces"),
                "sent_logs": metric("forward_sent_total", signal="logs"),
                "dropped_spans": metric("forward_dropped_total", signal="traces"),
                "dropped_logs": metric("forward_dropped_total", signal="logs"),
                "failed_attempts": metric("forward_failed_attempts_total"),
                "queue": metric("forward_queue_records"),
            },
            "expected_spans": forwarded_expected,
            "expected_logs": judge_spans,
            "adds_up": {
                "spans": sink_counts.get("distinct_spans", 0)
                + metric("forward_dropped_total", signal="traces")
                == forwarded_expected,
                "logs": sink_counts.get("logs", 0) + metric("forward_dropped_total", signal="logs")
                == judge_spans,
            },
        },
        "collector_metrics": {
            "spans_received_grpc": metric("spans_received_total", transport="grpc"),
            "spans_received_http": metric("spans_received_total", transport="http"),
            **{
                k: total(k + "_total")
                for k in (
                    "spans_stored",
                    "spans_duplicate",
                    "runs_completed",
                    "database_reopens",
                    "traces_completed_early",
                    "late_records",
                    "helper_restarts",
                )
            },
        },
        "export_outcomes": {
            k.removeprefix("agentotel_export_requests_total"): v
            for k, v in metrics.items()
            if k.startswith("agentotel_export_requests_total") and v
        },
        "rss": {"samples": [dataclasses.asdict(s) for s in samples], **levelled(samples, args.rss_growth)},
        "collector_log": logs,
    }


def print_report(r: dict[str, Any], samples: list[Sample]) -> None:
    s = r["spans"]
    print(
        f"\n== spans: acknowledged {s['acknowledged']:,} vs stored {s['stored']:,}: "
        f"{'OK' if s['equal'] else 'MISMATCH'} (stored with our ids {s['stored_ours']:,}, distinct "
        f"{s['stored_distinct']:,})"
    )
    for name, t in s["by_transport"].items():
        print(
            f"   {name}: {t['requests']:,} requests, {t['offered']:,} spans sent, {t['acked']:,} "
            f"acknowledged, {t['rejected']} rejected in partial successes, refused {t['refused'] or 0}; "
            f"answer p50 {t['p50_s'] * 1000:.0f} ms, p99 {t['p99_s'] * 1000:.0f} ms, max {t['max_s']:.2f} s; "
            f"sender behind schedule at most {t['behind_schedule_max_s']:.2f} s"
        )
    j = r["judge_rows"]
    print(
        f"== judge rows (tool_errors): runs {j['runs']:,} vs ok+error+skipped {j['ok+error+skipped']:,}: "
        f"{'OK' if j['equal'] else 'MISMATCH'}; pending left {j['pending']}; by status {j['by_status']}"
    )
    for reason, n in j["error_and_skipped_reasons"]:
        print(f"   {n} x {reason}")
    print(f"   every metric by status: {r['evaluations']}")
    print(
        f"== drain: {'done' if r['drain']['done'] else 'NOT DONE'} in {r['drain']['seconds']:.0f}s; "
        f"collector stopped in {r['stop']['seconds']:.1f}s, exit code {r['stop']['exit_code']}"
    )
    rss = r["rss"]
    print(
        f"== RSS of the collector's process tree (MB), every {r['settings']['sample_every']:g}s "
        f"(shown: about 15 rows)"
    )
    print(
        f"   {'t (s)':>6}  {'phase':<7}{'total':>7}{'collector':>10}{'assembler':>10}{'decode':>7}"
        f"{'CPU %':>7}{'runs':>8}{'judge pending':>14}{'judge calls':>12}{'stale':>7}{'fwd queue':>10}"
        f"{'fwd dropped':>12}{'open traces':>12}"
    )
    step = max(1, len(samples) // 15)
    shown = samples[::step]
    if samples and shown[-1] is not samples[-1]:
        shown.append(samples[-1])
    for x in shown:
        kb = x.rss_kb
        print(
            f"   {x.t:6.0f}  {x.phase:<7}{x.total_mb:7.0f}{kb.get('collector', 0) / 1024:10.0f}"
            f"{kb.get('assembler', 0) / 1024:10.0f}{kb.get('decode', 0) / 1024:7.0f}"
            f"{x.cpu_pct:7.0f}{x.runs:8.0f}{x.judge_pending:14.0f}{x.judge_calls:12,}{x.judge_stale:7.0f}"
            f"{x.forward_queue:10.0f}{x.forward_dropped:12.0f}{x.open_traces:12.0f}"
        )
    if rss.get("levelled") is None:
        print(f"   levelled: {rss.get('why')}")
    else:
        print(
            f"   mean of the load's middle third {rss['middle_mb']:.0f} MB, last third {rss['last_mb']:.0f} "
            f"MB: {rss['growth_pct']:+.1f}% -> {'levelled' if rss['levelled'] else 'STILL GROWING'} "
            f"(limit {rss['limit_pct']:g}%)"
        )
    f = r["forward"]
    c = f["collector"]
    print(
        f"== forward: the sink received {f['sink'].get('spans', 0):,} spans "
        f"({f['sink'].get('distinct_spans', 0):,} distinct) and {f['sink'].get('logs', 0):,} logs; expected "
        f"{f['expected_spans']:,} spans (stored + one a judge answer) and {f['expected_logs']:,} logs"
    )
    print(
        f"   received + dropped = expected: spans {'yes' if f['adds_up']['spans'] else 'NO'}, logs "
        f"{'yes' if f['adds_up']['logs'] else 'NO'}"
    )
    print(
        f"   collector: sent {c['sent_spans']:,.0f} spans / {c['sent_logs']:,.0f} logs, dropped "
        f"{c['dropped_spans']:,.0f} spans / {c['dropped_logs']:,.0f} logs, failed attempts "
        f"{c['failed_attempts']:,.0f}, queue {c['queue']:,.0f}; "
        f"sink down from t={f['sink_events'].get('down_at', math.nan):.0f}s to "
        f"t={f['sink_events'].get('up_at', math.nan):.0f}s"
    )
    jg = r["judge"]
    jc = jg["collector"]
    print(
        f"== judge: {jg['stub_calls']:,} calls to the stub, {jg['injected_500']:,} answered 500, "
        f"{jg['injected_timeouts']:,} held past the timeout, {sum(jg['verdicts'].values()):,} verdicts; "
        f"collector: queued {jc['queued']:,.0f}, results {jc['results']}, stale {jc['stale']:.0f} "
        f"({jc['stale'] / max(jg['stub_calls'], 1):.0%} of the calls: answers dropped, their row already "
        f"answered), cost ${jc['cost_usd_total']:.4f}"
    )
    print(f"== export answers: {r['export_outcomes']}")
    print(f"== collector log: {r['collector_log']['counts'] or 'no warnings'}")
    for key, message in r["collector_log"]["first"].items():
        print(f"   first {key}: {message}")
    print(f"\n{'OK' if r['ok'] else 'FAILED'}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
