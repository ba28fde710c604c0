"""Ingest benchmark: the real collector against a bare receiver that only decodes, under the same load.

    python bench/bench_ingest.py [--seconds 15] [--exporters 8] [--transports grpc,http] [--grace 2]
                                 [--scoring on|off|both] [--rate SPANS_PER_S] [--untune SETTING]
                                 [--sinks off|on|both] [--source DIR]

For each transport it runs, one after the other and each in its own process:
  * a bare receiver (same server stack: grpc / uvicorn's HTTP protocol under Starlette) that decodes every
    request into records with the same ``agentotel_eval.otlp`` decoder and answers; that is the ceiling;
  * the collector (receivers, Arrow conversion, DuckDB group commit, and in its assembler process: assembly,
    reconstruction, run rows, and
    with ``--scoring on`` (the default) deterministic scoring of every run: tool correctness in all three
    modes against an expectation that matches every run, the error detectors, scores written back on the run
    spans; ``--scoring both`` also runs it without scoring and reports the difference).
Several exporter processes send agent-like traces closed-loop (the next request after the answer, as the SDK's
BatchSpanProcessor does), 512 spans per request. The traces are the recorded real-framework fixtures with 7-13
spans each (their attributes as the frameworks emit them), given fresh ids and current
times for every request.

Printed per transport: sustained spans/s (acknowledged = committed for the collector; excluding a warm-up) and
the ratio collector/bare; the time from a run's last span being acknowledged to its tool_calls rows being
committed (p50/p99; it includes the grace period); peak RSS of each server process (the collector's is its own
process plus its assembler process); the exporters' own CPU a span (the share of the machine the load
generator takes from the server). ``--set assembler.process=false`` runs the single-process collector instead.
Run it a few times: the machine is shared, so look at the ratios.

``--sinks on`` configures all three score sinks (Phoenix, MLflow, Langfuse: each evaluation and every span go
to them) with Phoenix and MLflow answered by a stand-in process that takes every request as the tools answer
it and Langfuse down (nothing listens on its port); ``--sinks both`` alternates collector phases without and
with them and reports the ratio, which is what the sinks cost ingest.

``--source DIR`` runs another checkout's collector (its ``agentotel_eval``) under this checkout's load:
alternate it with runs of this one to compare two versions' throughput.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing as mp
import os
import resource
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))
from source import inherited_source  # noqa: E402

inherited_source()  # in a process a --source run spawned (this module is its main module again)

TRACE_PATH = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
WARMUP = 2.0


# ------------------------------------------------------------------------------------------------------------
# load generator


def _templates() -> list[list]:
    from tests.support.fixture_traces import fixtures

    out = []
    for fx in fixtures():
        if 7 <= fx.entry["span_count"] <= 13 and fx.entry["trace_count"] == 1:
            out.append(fx.spans("protobuf"))
    return out


_WEB_RESOURCE = {
    "service.name": "orders-api",
    "service.version": "2.14.1",
    "deployment.environment.name": "prod",
    "telemetry.sdk.name": "opentelemetry",
    "telemetry.sdk.language": "python",
    "telemetry.sdk.version": "1.27.0",
    "host.name": "orders-api-7d9f8b6c4-x2k8q",
}


def _web_templates() -> list[list]:
    """Traces of a web service exporting to the same endpoint (no agent in them): an HTTP request through
    middleware to database queries, a cache and an outbound call, with the attributes the OTel
    instrumentations (ASGI, SQLAlchemy, Redis, httpx) set."""
    from agentotel_eval.otlp.records import SpanRecord

    out = []
    for variant, (route, queries) in enumerate(
        (("/orders/{order_id}", 3), ("/orders", 6), ("/customers/{id}", 2))
    ):
        tid = f"{variant + 1:032x}"
        ms = 1_000_000
        root = SpanRecord(
            tid,
            f"{1:016x}",
            None,
            f"GET {route}",
            kind=2,
            start_ns=0,
            end_ns=40 * ms,
            attributes={
                "http.request.method": "GET",
                "http.route": route,
                "url.path": route.replace("{order_id}", "7"),
                "url.scheme": "https",
                "server.address": "orders.internal",
                "server.port": 443,
                "http.response.status_code": 200,
                "network.protocol.version": "1.1",
                "user_agent.original": (
                    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36"
                ),
                "client.address": "10.0.3.17",
            },
            resource=_WEB_RESOURCE,
            scope_name="opentelemetry.instrumentation.asgi",
            scope_version="0.48b0",
        )
        spans = [
            root,
            SpanRecord(
                tid,
                f"{2:016x}",
                root.span_id,
                "auth middleware",
                start_ns=ms,
                end_ns=3 * ms,
                attributes={"enduser.id": "u-4821"},
                resource=_WEB_RESOURCE,
                scope_name="orders_api.middleware",
            ),
        ]
        spans.append(
            SpanRecord(
                tid,
                f"{3:016x}",
                root.span_id,
                "GET",
                kind=3,
                start_ns=3 * ms,
                end_ns=4 * ms,
                attributes={
                    "db.system.name": "redis",
                    "db.operation.name": "GET",
                    "db.query.text": "GET session:u-4821",
                    "server.address": "redis.internal",
                    "server.port": 6379,
                },
                resource=_WEB_RESOURCE,
                scope_name="opentelemetry.instrumentation.redis",
            )
        )
        for q in range(queries):
            spans.append(
                SpanRecord(
                    tid,
                    f"{4 + q:016x}",
                    root.span_id,
                    "SELECT orders",
                    kind=3,
                    start_ns=(5 + 4 * q) * ms,
                    end_ns=(8 + 4 * q) * ms,
                    attributes={
                        "db.system.name": "postgresql",
                        "db.namespace": "orders",
                        "db.operation.name": "SELECT",
                        "db.query.text": "SELECT orders.id, orders.status, orders.total FROM orders "
                        "WHERE orders.customer_id = %(customer_id)s ORDER BY orders.created_at DESC",
                        "server.address": "pg.internal",
                        "server.port": 5432,
                    },
                    resource=_WEB_RESOURCE,
                    scope_name="opentelemetry.instrumentation.sqlalchemy",
                )
            )
        spans.append(
            SpanRecord(
                tid,
                f"{20:016x}",
                root.span_id,
                "POST",
                kind=3,
                start_ns=30 * ms,
                end_ns=38 * ms,
                attributes={
                    "http.request.method": "POST",
                    "url.full": "https://pricing.internal/v1/quote",
                    "server.address": "pricing.internal",
                    "server.port": 443,
                    "http.response.status_code": 200,
                },
                resource=_WEB_RESOURCE,
                scope_name="opentelemetry.instrumentation.httpx",
            )
        )
        out.append(spans)
    return out


class RequestFactory:
    """One protobuf request of ~``spans_per_request`` spans, re-stamped in place with new ids and times."""

    def __init__(
        self,
        exporter: int,
        spans_per_request: int,
        run: int = 0,
        web_share: float = 0.0,
        time_scale: float = 1.0,
    ) -> None:
        from agentotel_eval.otlp.encode import encode_traces

        templates = _templates()
        web = _web_templates() if web_share > 0 else []
        chosen: list[list] = []
        total = 0
        web_spans = 0
        i = exporter
        while total < spans_per_request:
            if web and web_spans < web_share * (total + 1):  # about web_share of the spans are web traces'
                trace = web[i % len(web)]
                web_spans += len(trace)
            else:
                trace = templates[i % len(templates)]
            chosen.append(trace)
            total += len(trace)
            i += 1
        spans = []
        for k, trace in enumerate(chosen):
            fake_tid = f"{k:032x}"  # the index of the trace; replaced by a fresh id on every request
            for s in trace:
                spans.append(
                    type(s)(**{**{f: getattr(s, f) for f in s.__dataclass_fields__}, "trace_id": fake_tid})
                )
        self.request = encode_traces(spans)
        self.messages = []
        for rs in self.request.resource_spans:
            for ss in rs.scope_spans:
                for msg in ss.spans:
                    k = int(msg.trace_id.hex(), 16)
                    # times relative to the trace's end (scaled): a trace is exported once it
                    # ran, so it ends now
                    end = max(max(s.end_ns, s.start_ns) for s in chosen[k])
                    self.messages.append(
                        (
                            msg,
                            k,
                            int((msg.start_time_unix_nano - end) * time_scale),
                            int((msg.end_time_unix_nano - end) * time_scale),
                        )
                    )
        self.traces = len(chosen)
        self.spans = len(self.messages)
        self.exporter = exporter
        self.run = run
        self.seq = 0

    def next(self) -> tuple[bytes, int]:
        """The next request's bytes and the sequence number its trace ids were made from."""
        self.seq += 1
        seq = self.seq
        prefix = trace_prefix(self.run, self.exporter, seq)
        ids = [struct.pack(">QQ", prefix, k + 1) for k in range(self.traces)]
        now = time.time_ns()
        for msg, k, start, end in self.messages:
            msg.trace_id = ids[k]
            msg.start_time_unix_nano = now + start
            msg.end_time_unix_nano = now + end
        return self.request.SerializeToString(), seq


def trace_prefix(run: int, exporter: int, seq: int) -> int:
    """The first 8 bytes of a trace id: unique per phase (run), exporter and request."""
    return (run << 48) | (exporter << 32) | seq


def latency_sampled(trace_id: str) -> bool:
    """Whether a trace's latency is recorded: its index in its request (the id's last 8 bytes,
    from 1) is 1 mod 16."""
    return int(trace_id[16:], 16) % 16 == 1


def exporter_main(
    index: int,
    transport: str,
    address: str,
    spans_per_request: int,
    seconds: float,
    start_at: float,
    out: mp.Queue,
    run: int = 0,
    web_share: float = 0.0,
    time_scale: float = 1.0,
    rate: float = 0.0,
) -> None:
    factory = RequestFactory(index, spans_per_request, run, web_share, time_scale)
    acks: list[tuple[float, int]] = []  # (monotonic ack time, seq)
    refused = 0
    if transport == "grpc":
        import grpc

        channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20)])
        call = channel.unary_unary(TRACE_PATH)

        def send(body: bytes) -> bool:
            try:
                call(body, timeout=60)
                return True
            except grpc.RpcError:
                return False
    else:
        conn = http.client.HTTPConnection(address, timeout=60)

        def send(body: bytes) -> bool:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            return response.status == 200

    while time.monotonic() < start_at:
        time.sleep(0.001)
    deadline = start_at + seconds
    cpu_from = None  # the exporter's own CPU over the measurement window: what the load generator takes
    # open loop at ``rate`` spans/s (this exporter's share), each request at its slot; 0: the
    # next after the answer
    interval = factory.spans / rate if rate > 0 else 0.0
    slot = start_at + (index % 16) * interval / 16  # the exporters' slots spread over one interval
    while (now := time.monotonic()) < deadline:
        if interval:
            if now < slot:
                time.sleep(slot - now)
            slot += interval
        if cpu_from is None and now >= start_at + WARMUP:
            cpu_from = time.process_time()
        body, seq = factory.next()
        if send(body):
            acks.append((time.monotonic(), seq))
        else:
            refused += 1
            time.sleep(0.01)
    cpu = time.process_time() - cpu_from if cpu_from is not None else 0.0
    out.put(
        {
            "index": index,
            "run": run,
            "acks": acks,
            "refused": refused,
            "spans": factory.spans,
            "traces": factory.traces,
            "cpu_window_s": cpu,
        }
    )


# ------------------------------------------------------------------------------------------------------------
# servers (each in its own process)


def _cpu_seconds(pid) -> float:
    """User + system CPU time of a live process (all its threads), 0 when it is gone."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def _helper_path(pid) -> str:
    """A helper process's working directory and PYTHONPATH, where its ``python -m`` imports come from."""
    if pid is None:
        return "no helper process"
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        return f"cwd {os.readlink(f'/proc/{pid}/cwd')}, PYTHONPATH {env.get(b'PYTHONPATH', b'').decode()}"
    except OSError:
        return "gone"


def _pss_kb(pid) -> int:
    """Proportional set size of a live process (shared pages split between the processes sharing them)."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def _rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _peak_rss_kb(pid: int | None) -> int:
    """Peak RSS of another live process (its VmHWM), 0 when there is none."""
    if pid is None:
        return 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def bare_main(transport: str, conn) -> None:
    from agentotel_eval.otlp import decode

    decoded = [0]
    lock = threading.Lock()

    def handle(body: bytes) -> None:
        n = len(decode("traces", "protobuf", body).records)
        with lock:
            decoded[0] += n

    if transport == "grpc":
        from concurrent import futures

        import grpc

        def export(body, context):
            handle(body)
            return b""

        server = grpc.server(
            futures.ThreadPoolExecutor(16), options=[("grpc.max_receive_message_length", 64 << 20)]
        )
        server.add_generic_rpc_handlers(
            [
                grpc.method_handlers_generic_handler(
                    "opentelemetry.proto.collector.trace.v1.TraceService",
                    {"Export": grpc.unary_unary_rpc_method_handler(export)},
                )
            ]
        )
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        stop = lambda: server.stop(0)  # noqa: E731
    else:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response
        from starlette.routing import Route

        from agentotel_eval.collector.receive.http.answers import Blocking
        from agentotel_eval.collector.receive.http.bodies import read_body
        from agentotel_eval.collector.receive.http.server import HttpServer

        blocking = Blocking(64)

        async def export_http(request: Request) -> Response:
            await blocking.run(handle, await read_body(request, 64 << 20))
            return Response(b"", media_type="application/x-protobuf")

        httpd = HttpServer(
            "127.0.0.1", 0, Starlette(routes=[Route("/v1/traces", export_http, methods=["POST"])])
        )
        httpd.start()
        port = httpd.address[1]
        stop = httpd.shutdown
    conn.send(f"127.0.0.1:{port}")
    conn.recv()  # the measurement window starts
    cpu_start = _cpu_seconds("self")
    conn.send("ok")
    conn.recv()  # the window ended
    cpu_window = _cpu_seconds("self") - cpu_start
    conn.send("ok")
    conn.recv()  # stop
    stop()
    conn.send({"decoded": decoded[0], "rss_kb": _rss_kb(), "cpu_window_s": cpu_window})


def standin_main(conn) -> None:
    """Phoenix's and MLflow's endpoints the sinks use, answered at once as the tools answer (the tools' own
    work is not the collector's cost)."""
    import json
    import socket
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answers = {
        "/api/2.0/mlflow/experiments/get-by-name": {"experiment": {"experiment_id": "1"}},
        "/v1/span_annotations": {"data": []},
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            # headers and body go in two writes: without this, Nagle and delayed ACKs add 40 ms
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, *args) -> None:
            pass

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.split("?")[0]
            body = answers.get(
                path, {"trace": {"trace_info": {"assessments": []}}} if self.command == "GET" else {}
            )
            data = b"" if path == "/v1/traces" else json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    conn.send(server.server_address[1])
    server.serve_forever()


def sink_settings(standin_port: int, down_port: int) -> list[dict]:
    """The three sinks: Phoenix and MLflow at the stand-in, Langfuse where nothing listens."""
    return [
        {"kind": "phoenix", "url": f"http://127.0.0.1:{standin_port}"},
        {"kind": "mlflow", "url": f"http://127.0.0.1:{standin_port}", "experiment": "bench"},
        {
            "kind": "langfuse",
            "url": f"http://127.0.0.1:{down_port}",
            "public_key_env": "BENCH_LANGFUSE_PUBLIC",
            "secret_key_env": "BENCH_LANGFUSE_SECRET",
        },
    ]


def collector_main(
    transport: str,
    grace: float,
    db: str,
    conn,
    memory_limit: str = "",
    scoring: bool = True,
    overrides: dict | None = None,
    untune: tuple[str, ...] = (),
    sinks: tuple[dict, ...] = (),
) -> None:
    import dataclasses

    from agentotel_eval.collector.process.tuning import (
        TRIM_INTERVAL,
        TUNED,
        release_free_memory,
        tune_process,
    )

    # This process stands for ``agentotel-eval serve``'s: tuned as serve tunes its own, less
    # what --untune turns off
    off = {"gc_threshold": 0, "malloc": False}
    tuning = dataclasses.replace(TUNED, **{name: off[name] for name in untune})
    tune_process(tuning)

    def trim() -> None:
        while tuning.malloc:
            time.sleep(TRIM_INTERVAL)
            release_free_memory()

    threading.Thread(target=trim, daemon=True).start()

    from source import first_module

    from agentotel_eval.collector.config import default_config
    from agentotel_eval.collector.service import Collector

    # the scoring settings' module; before the collector's restructuring (``--source``) in the score package
    scoring_config = first_module(
        "agentotel_eval.collector.config_scoring", "agentotel_eval.collector.score.config"
    )
    ScoringSettings, parse_expectations = scoring_config.ScoringSettings, scoring_config.parse_expectations

    config = default_config()
    config = dataclasses.replace(
        config,
        db=db,
        grpc="127.0.0.1:0",
        http="127.0.0.1:0",
        assembler=dataclasses.replace(config.assembler, grace_period=grace),
        writer=dataclasses.replace(config.writer, memory_limit=memory_limit or config.writer.memory_limit),
    )
    for section, values in (overrides or {}).items():  # --set section.key=value
        config = dataclasses.replace(
            config, **{section: dataclasses.replace(getattr(config, section), **values)}
        )
    if (
        scoring
    ):  # deterministic metrics for every run: an expectation matching every run, all modes, detectors
        config = dataclasses.replace(
            config,
            expectations=parse_expectations(
                [{"name": "every run", "expected_tools": ["get_weather", "search_flights", "book_hotel"]}]
            ),
        )
    else:
        config = dataclasses.replace(config, scoring=ScoringSettings(enabled=False, detectors=False))
    if sinks:
        from agentotel_eval.collector.config_sinks import SinkConfig

        os.environ.setdefault("BENCH_LANGFUSE_PUBLIC", "pk-bench")
        os.environ.setdefault("BENCH_LANGFUSE_SECRET", "sk-bench")
        config = dataclasses.replace(config, sinks=tuple(SinkConfig(**s) for s in sinks))
    collector = Collector(config, summary_interval=3600, tuning=tuning).start()
    # The latency records live in the collector's process, whose memory is measured: one trace in 16 is kept
    # (the trace's index in its request is 1 mod 16 there, see ``trace_prefix``), a few
    # thousand samples a phase.
    committed_at: dict[str, float] = {}
    original = collector.run_writer._applied

    def applied(op) -> None:
        now = time.monotonic()
        for trace_id in set(op.calls.column("trace_id").to_pylist()):
            if latency_sampled(trace_id):
                committed_at.setdefault(trace_id, now)
        original(op)

    collector.run_writer._applied = applied
    peak = [0]
    sampling = threading.Event()

    def helpers() -> list:
        return [
            getattr(collector.assembler, "pid", None),
            *(collector.decoders.pids if collector.decoders else []),
        ]

    pss_peak = [0]

    def sample_rss() -> None:
        """Peak of the collector's RSS plus its helper processes' (assembler, decode workers: one collector),
        and of their PSS: shared pages (the interpreter, pyarrow's libraries) counted once,
        split between them."""
        page = os.sysconf("SC_PAGE_SIZE")
        while not sampling.wait(0.2):
            total = pss = 0
            for pid in ("self", *helpers()):
                try:
                    with open(f"/proc/{pid}/statm") as f:
                        total += int(f.read().split()[1]) * page // 1024
                    pss += _pss_kb(pid)
                except (OSError, TypeError):
                    pass
            peak[0] = max(peak[0], total)
            pss_peak[0] = max(pss_peak[0], pss)

    threading.Thread(target=sample_rss, daemon=True).start()
    conn.send(
        collector.grpc_endpoint if transport == "grpc" else collector.http_endpoint.removeprefix("http://")
    )
    conn.recv()  # the measurement window starts
    cpu_start = sum(_cpu_seconds(pid) for pid in ("self", *helpers()))
    conn.send("ok")
    conn.recv()  # the window ended
    cpu_window = sum(_cpu_seconds(pid) for pid in ("self", *helpers())) - cpu_start
    backlog_at_end = collector.assembler.backlog  # marks not yet taken: how far assembly is behind ingest
    conn.send("ok")
    conn.recv()  # load finished
    # wait until every trace is assembled and written: how long that takes says whether assembly kept up
    drain_started = time.monotonic()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (
            collector.assembler.backlog == 0
            and collector.assembler.open_traces == 0
            and collector.writer.queued_records == 0
            and collector.writer.pending_operations == 0
        ):
            break
        time.sleep(0.05)
    collector.writer.flush(30)
    drained_in = time.monotonic() - drain_started
    sampling.set()
    stats = collector.writer.stats
    from source import imported_from

    result = {
        "package": str(imported_from()),
        # helpers run as ``python -m``: they import from their working directory first, then PYTHONPATH
        "helper_path": _helper_path(getattr(collector.assembler, "pid", None)),
        "stored": stats.spans_stored,
        "duplicates": stats.spans_duplicate,
        "commits": stats.commits,
        "reopens": stats.reopens,
        "reopen_s": collector.database.reopen_seconds,
        "flush_avg_ms": 1000 * stats.flush_sum / max(stats.flush_count, 1),
        "runs": collector.assembler.snapshot().assembler.runs_completed,
        "early": collector.assembler.snapshot().buffer.completed.get("early", 0),
        "committed_at": committed_at,
        # the latency records above live in the collector's process and grow with the phase: their size (the
        # dict's table, keys and values), to read its RSS by
        "bookkeeping_kb": (
            sys.getsizeof(committed_at)
            + sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in committed_at.items())
        )
        // 1024,
        # each process's own peak, added: an upper bound of the pair's peak (the sample below is the pair's)
        "rss_main_kb": _rss_kb(),
        "rss_assembler_kb": _peak_rss_kb(getattr(collector.assembler, "pid", None)),
        "rss_decoders_kb": sum(
            _peak_rss_kb(pid) for pid in (collector.decoders.pids if collector.decoders else [])
        ),
        "cpu_window_s": cpu_window,
        "backlog_at_end": backlog_at_end,
        "drained_in": drained_in,
        "rss_sampled_kb": peak[0],
        "pss_sampled_kb": pss_peak[0],
        "overloaded": sum(
            n for (t, s, o), n in collector.ingestor.stats.snapshot()[2].items() if o == "overloaded"
        ),
        "sinks": {
            w.name: (w.stats.sent, w.stats.dropped)  # an older collector (--source) has no sinks
            for w in (collector.sinks.workers if hasattr(collector, "sinks") else ())
        },
    }
    result["rss_kb"] = result["rss_main_kb"] + result["rss_assembler_kb"] + result["rss_decoders_kb"]
    collector.shutdown()
    result["db_mb"] = os.path.getsize(db) / 1e6
    conn.send(result)


# ------------------------------------------------------------------------------------------------------------


_PHASES = iter(range(1, 1 << 15))


def overrides(settings: list[str]) -> dict[str, dict]:
    """``["receiver.decode_slots=8"]`` -> ``{"receiver": {"decode_slots": 8}}``."""
    import ast

    out: dict[str, dict] = {}
    for item in settings:
        key, _, value = item.partition("=")
        section, _, name = key.partition(".")
        text = {"true": "True", "false": "False"}.get(value.lower(), value)
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed = value
        out.setdefault(section, {})[name] = parsed
    return out


def run_phase(
    kind: str,
    transport: str,
    args: argparse.Namespace,
    tmp: str,
    scoring: bool = True,
    sinks: tuple[dict, ...] = (),
) -> dict:
    phase_id = next(_PHASES)  # fresh trace ids and a fresh database for every phase
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    if kind == "bare":
        server = ctx.Process(target=bare_main, args=(transport, child))
    else:
        db = os.path.join(tmp, f"bench-{transport}-{phase_id}.duckdb")
        server = ctx.Process(
            target=collector_main,
            args=(
                transport,
                args.grace,
                db,
                child,
                args.duckdb_memory,
                scoring,
                overrides(args.set),
                tuple(args.untune),
                sinks,
            ),
        )
    server.start()
    address = parent.recv()
    out = ctx.Queue()
    start_at = time.monotonic() + args.start_delay  # exporters build their requests first
    clients = [
        ctx.Process(
            target=exporter_main,
            args=(
                i + 1,
                transport,
                address,
                args.spans_per_request,
                args.seconds,
                start_at,
                out,
                phase_id,
                args.web_share,
                args.time_scale,
                args.rate / args.exporters,
            ),
        )
        for i in range(args.exporters)
    ]
    for c in clients:
        c.start()
    window = (start_at + WARMUP, start_at + args.seconds)
    for edge in window:  # the server measures its own CPU time over the same window the rate is counted in
        time.sleep(max(edge - time.monotonic(), 0))
        parent.send(edge)
        parent.recv()
    results = [out.get(timeout=args.seconds + 120) for _ in clients]
    for c in clients:
        c.join()
    parent.send("stop")
    stats = parent.recv()
    server.join()
    spans_per_request = results[0]["spans"]
    acked_in_window = sum(r["spans"] for r in results for t, _ in r["acks"] if window[0] <= t <= window[1])
    total_acked = sum(r["spans"] * len(r["acks"]) for r in results)
    phase = {
        "rate": acked_in_window / (window[1] - window[0]),
        "cpu_us_per_span": 1e6 * stats["cpu_window_s"] / max(acked_in_window, 1),
        "exporter_cpu_us_per_span": 1e6 * sum(r["cpu_window_s"] for r in results) / max(acked_in_window, 1),
        "acked": total_acked,
        "refused": sum(r["refused"] for r in results),
        "spans_per_request": spans_per_request,
        **stats,
    }
    if kind == "collector":
        latencies = []
        committed = stats["committed_at"]
        for r in results:
            for t, seq in r["acks"]:
                prefix = trace_prefix(r["run"], r["index"], seq)
                for k in range(0, r["traces"], 16):  # the sampled ones (``latency_sampled``)
                    trace_id = struct.pack(">QQ", prefix, k + 1).hex()
                    if trace_id in committed:
                        latencies.append(committed[trace_id] - t)
        latencies.sort()
        phase["latency_n"] = len(latencies)
        if latencies:
            phase["p50"] = statistics.median(latencies)
            phase["p99"] = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        del phase["committed_at"]
    return phase


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--exporters", type=int, default=8)
    parser.add_argument("--transports", default="grpc,http")
    parser.add_argument("--spans-per-request", type=int, default=512)
    parser.add_argument("--grace", type=float, default=2.0, help="the collector's grace period (default 2 s)")
    parser.add_argument(
        "--duckdb-memory",
        default="",
        help="writer.memory_limit for the collector (default: the collector's own default)",
    )
    parser.add_argument(
        "--scoring",
        choices=("on", "off", "both"),
        default="on",
        help="deterministic scoring of every run in the collector phases; 'both' runs the collector "
        "with and without it and reports what scoring costs",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="a collector setting for the collector phases, e.g. receiver.decode_slots=8 or "
        "assembler.process=false (a Python literal; repeatable)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="offer this many spans/s in all (open loop, each request at its time) instead of the "
        "next request after each answer: a steady, moderate load for the run -> rows latency",
    )
    parser.add_argument(
        "--untune",
        action="append",
        default=[],
        choices=("gc_threshold", "malloc"),
        help=(
            "leave one of the collector processes' settings (agentotel_eval.collector.process.tuning) at "
            "Python's or glibc's default, for an A/B of what it buys (repeatable)"
        ),
    )
    parser.add_argument(
        "--web-share",
        type=float,
        default=0.0,
        help="the share of spans in traces of a web service with no agent (HTTP, database, cache "
        "spans), exported to the same endpoint; default 0: every trace is an agent's",
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="stretch every trace's span times by this factor (the recorded traces last 10-210 ms; "
        "real agent runs last seconds: 50 makes them 0.5-10 s)",
    )
    parser.add_argument(
        "--start-delay",
        type=float,
        default=3.0,
        help="seconds the exporters get to start and build their requests before the load starts "
        "(default 3; more on a machine busy with other work, or a phase may count no span)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="bare/collector pairs per transport, alternated; the machine is shared, so the "
        "median ratio is reported",
    )
    parser.add_argument(
        "--sinks",
        choices=("off", "on", "both"),
        default="off",
        help="configure the three score sinks (Phoenix and MLflow answered by a stand-in, Langfuse "
        "down); 'both' alternates phases without and with them and reports the ratio",
    )
    parser.add_argument(
        "--source", type=Path, help="another checkout whose agentotel_eval (collector) to run"
    )
    args = parser.parse_args()
    from source import imported_from, use_source

    print(f"agentotel_eval from {use_source(args.source) if args.source else imported_from()}")
    sinks: tuple[dict, ...] = ()
    if args.sinks != "off":
        from tests.support.lake_servers import free_port

        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        standin = ctx.Process(target=standin_main, args=(child,), daemon=True)
        standin.start()
        sinks = tuple(sink_settings(parent.recv(), free_port()))
    print(
        f"{args.exporters} exporters x {args.seconds:g}s per phase, ~{args.spans_per_request} spans/request, "
        f"grace {args.grace:g}s, web share {args.web_share:g}, time scale {args.time_scale:g}, {args.rounds} "
        f"rounds, cpus {os.cpu_count()}, load avg {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for transport in args.transports.split(","):
            ratios, scoring_costs, sink_ratios = [], [], []
            for round_ in range(1, args.rounds + 1):
                if args.sinks == "both":  # the two collector phases only: their ratio is the figure
                    # which goes first alternates too, so that a load that drifts over a round favours neither
                    order = ((), sinks) if round_ % 2 else (sinks, ())
                    done = {
                        bool(s): run_phase("collector", transport, args, tmp, args.scoring != "off", s)
                        for s in order
                    }
                    plain, with_sinks = done[False], done[True]
                    assert with_sinks["stored"] == with_sinks["acked"]
                    sink_ratios.append(with_sinks["rate"] / plain["rate"])
                    print(
                        f"[{transport} #{round_}] no sinks {plain['rate']:,.0f} spans/s | three sinks (one "
                        f"down) {with_sinks['rate']:,.0f} spans/s = {sink_ratios[-1]:.2f} x | sent, dropped "
                        f"per sink: {with_sinks['sinks']} | runs {plain['runs']:,} / {with_sinks['runs']:,}",
                        flush=True,
                    )
                    continue
                bare = run_phase("bare", transport, args, tmp)
                phases = {}
                for scoring in (False, True) if args.scoring == "both" else (args.scoring == "on",):
                    coll = run_phase("collector", transport, args, tmp, scoring, sinks)
                    assert coll["stored"] == coll["acked"], (coll["stored"], coll["acked"])
                    phases[scoring] = coll
                    label = "scoring on" if scoring else "scoring off"
                    print(
                        f"[{transport} #{round_} {label}] bare decode {bare['rate']:,.0f} spans/s "
                        f"({bare['cpu_us_per_span']:.1f} µs CPU/span, rss {bare['rss_kb'] / 1024:.0f} MB) | "
                        f"collector {coll['rate']:,.0f} spans/s stored ({coll['cpu_us_per_span']:.1f} µs "
                        f"CPU/span) = {coll['rate'] / bare['rate']:.2f} x bare"
                        f" | run->tool_calls rows p50 {coll.get('p50', float('nan')):.2f}s"
                        f" p99 {coll.get('p99', float('nan')):.2f}s ({coll['latency_n']} runs)"
                        f" | peak rss: sum of each process's peak {coll['rss_kb'] / 1024:.0f} MB (collector "
                        f"{coll['rss_main_kb'] / 1024:.0f}, of which this benchmark's latency records "
                        f"{coll['bookkeeping_kb'] / 1024:.0f}, + assembler "
                        f"{coll['rss_assembler_kb'] / 1024:.0f} + decode "
                        f"{coll['rss_decoders_kb'] / 1024:.0f}); their sum sampled every 0.2 s: "
                        f"{coll['rss_sampled_kb'] / 1024:.0f} MB, PSS {coll['pss_sampled_kb'] / 1024:.0f} "
                        f"MB\n    assembly: {coll['backlog_at_end']:,} committed records not yet taken at "
                        f"the end of the window, every run written {coll['drained_in']:.1f} s after the load "
                        f"stopped\n    {coll['acked']:,} spans acked and stored, {coll['commits']} commits "
                        f"(avg {coll['flush_avg_ms']:.1f} ms), database reopened {coll['reopens']} times "
                        f"({coll['reopen_s']:.2f} s in all), {coll['runs']:,} runs, {coll['early']} "
                        f"completed early, {coll['overloaded']} refusals, db {coll['db_mb']:.0f} MB, load "
                        f"avg {os.getloadavg()[0]:.2f}\n    the collector's agentotel_eval: "
                        f"{coll['package']}; its assembler's {coll['helper_path']}\n    the exporters' own "
                        f"CPU: {bare['exporter_cpu_us_per_span']:.1f} µs/span against the bare receiver, "
                        f"{coll['exporter_cpu_us_per_span']:.1f} against the collector",
                        flush=True,
                    )
                ratios.append(phases[max(phases)]["rate"] / bare["rate"])
                if len(phases) == 2:
                    scoring_costs.append(1 - phases[True]["rate"] / phases[False]["rate"])
            if sink_ratios:
                print(
                    f"[{transport}] median with sinks / without {statistics.median(sink_ratios):.2f} "
                    f"(rounds: {', '.join(f'{r:.2f}' for r in sink_ratios)})",
                    flush=True,
                )
                continue
            print(
                f"[{transport}] median collector/bare ratio {statistics.median(ratios):.2f} "
                f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})",
                flush=True,
            )
            if scoring_costs:
                print(
                    f"[{transport}] scoring costs {statistics.median(scoring_costs):.1%} of ingest "
                    f"throughput (rounds: {', '.join(f'{c:.1%}' for c in scoring_costs)})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
