"""Real ``agentotel-eval serve`` nodes sharing a lake, and agents traced with the OpenTelemetry SDK, for the
scale-out tests (``tests/integration/lake/test_nodes.py``).

``ServeNode`` is one node as an operator runs it: a ``serve`` process of its own (in a session of its own, so
a kill takes its decode and assembler processes too), its own DuckDB file, its own gRPC and HTTP ports on
127.0.0.1 (fixed at creation, so a restart listens where the router sends), and a TOML config with a
``[lake]`` table naming it. ``AgentTracer`` runs agent-shaped traces through the real SDK and its OTLP/gRPC
exporter and records which spans each export had acknowledged.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentotel_eval import semconv as sc
from agentotel_eval.access import discovery
from tests.support.collector_harness import http_request, metric_samples, wait_until
from tests.support.lake_servers import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class LakeTable:
    """The ``[lake]`` table the nodes share (a fresh catalog database and bucket), as TOML and as settings."""

    catalog: str
    data: str
    s3_endpoint: str
    flush_interval: str = "500ms"
    reconcile_interval: str = "1s"

    def toml(self, node: str) -> str:
        return (
            f'[lake]\ncatalog = "{self.catalog}"\ndata = "{self.data}"\nflush_interval = '
            f'"{self.flush_interval}"\nreconcile_interval = "{self.reconcile_interval}"\nnode = '
            f'"{node}"\n[lake.s3]\nendpoint = "{self.s3_endpoint}"\nkey_id = "test"\nsecret = '
            f'"test"\nurl_style = "path"\nuse_ssl = false\n'
        )

    def settings(self) -> Any:
        from agentotel_eval.store.lake import LakeSettings, S3Settings

        return LakeSettings(
            self.catalog, self.data, S3Settings(self.s3_endpoint, "test", "test", "us-east-1", "path", False)
        )


class ServeNode:
    """One ``agentotel-eval serve`` process on fixed ports; ``start`` again after ``stop`` or ``kill`` reopens
    the same file under the same node name and ports."""

    def __init__(
        self, folder: Path, name: str, lake: LakeTable, *, grace_period: str = "200ms", root: Path = ROOT
    ) -> None:
        self.name = name
        self.root = root  # the checkout it runs from (a benchmark compares another one's)
        self.db = folder / f"{name}.duckdb"
        self.grpc = f"127.0.0.1:{free_port()}"
        self.http = f"127.0.0.1:{free_port()}"
        self.config = folder / f"{name}.toml"
        self.log = folder / f"{name}.log"
        # the assembly settings of tests.support.collector_harness.fast_config: a trace is complete
        # ``grace_period`` (0.2 s) after its run span, or 5 s after its first span without one
        self.config.write_text(
            f'db = "{self.db}"\ngrpc = "{self.grpc}"\nhttp = "{self.http}"\n[assembler]\n'
            f'grace_period = "{grace_period}"\nmax_wait = "5s"\n' + lake.toml(name)
        )
        self.proc: subprocess.Popen | None = None
        self.exits: list[int] = []  # the return code of each process that ended

    @property
    def endpoint(self) -> str:
        """Its gRPC endpoint, as the router's ring names it."""
        return self.grpc

    def start(self) -> ServeNode:
        assert self.proc is None, f"{self.name} is running"
        env = {**os.environ, "PYTHONPATH": str(self.root), "PYTHONUNBUFFERED": "1"}
        with self.log.open("a") as out:
            out.write(f"--- start {self.name}\n")
            out.flush()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "agentotel_eval.cli", "serve", "--config", str(self.config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.root,
                start_new_session=True,
            )
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until it listens: its sidecar names this process (written once both listeners are up)."""
        proc = self.proc
        assert proc is not None

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(
                    f"node {self.name} exited at start ({proc.returncode}):\n{self.output()}"
                )
            info = discovery.read_sidecar(self.db)
            return info is not None and info.pid == proc.pid

        wait_until(ready, timeout=timeout, interval=0.05, what=f"node {self.name} to listen")

    def terminate(self) -> None:
        """SIGTERM, as an orchestrator stops a node: it completes its traces and copies the rest to the lake
        (once: a second signal makes it exit at once)."""
        assert self.proc is not None, f"{self.name} is not running"
        self.proc.send_signal(signal.SIGTERM)

    def wait_stopped(self, timeout: float = 60.0) -> int:
        proc = self.proc
        assert proc is not None
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"node {self.name} did not stop within {timeout}s:\n{self.output()}"
            ) from None
        self._reap(code)
        return code

    def stop(self, timeout: float = 60.0) -> int:
        self.terminate()
        return self.wait_stopped(timeout)

    def kill(self) -> None:
        """SIGKILL to its whole session: the node and the processes it started die at once, mid-work."""
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the group id is its pid
        self._reap(proc.wait(30))

    def _reap(self, code: int) -> None:
        proc = self.proc
        assert proc is not None
        with contextlib.suppress(
            ProcessLookupError
        ):  # what it started and left behind (none after a clean stop)
            os.killpg(proc.pid, signal.SIGKILL)
        self.exits.append(code)
        self.proc = None

    def metric(self, name: str) -> float:
        """One sample of its ``/metrics`` (the Prometheus exposition), by name without the ``agentotel_``
        prefix; 0 when absent."""
        answer = http_request(f"http://{self.http}", "GET", "/metrics")
        assert answer.status == 200, answer.body
        samples = metric_samples(answer.body.decode())
        return float(samples.get(f"agentotel_{name}", 0.0))

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


def start_nodes(nodes: Sequence[ServeNode], *, together: bool = False) -> None:
    """Start them and wait until each listens: one after the other, or all at once (each takes seconds to
    import and attach the lake)."""
    if together:
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_ready()
        return
    for node in nodes:
        node.start().wait_ready()


def stop_nodes(nodes: Sequence[ServeNode]) -> dict[str, int]:
    """SIGTERM to every running node at once, then wait for each; their return codes by name."""
    running = [n for n in nodes if n.proc is not None]
    for node in running:
        node.terminate()
    return {node.name: node.wait_stopped() for node in running}


# -- agents traced with the real SDK -------------------------------------------------------------------------

TOOLS = ("search", "read", "book", "pay")


@dataclass(frozen=True)
class AgentRun:
    """One traced agent run: its trace, its run (root) span, the tools it called and the tools it was expected
    to call, and every span of its trace."""

    trace_id: str
    span_id: str
    called: tuple[str, ...]
    expected: tuple[str, ...]
    spans: frozenset[tuple[str, str]]

    @property
    def tool_correctness(self) -> float:
        """The share of the expected tools the run called (the ``tool_correctness`` metric)."""
        return sum(t in self.called for t in self.expected) / len(self.expected)


@dataclass
class Acks:
    """The spans each export returned SUCCESS for: what the router, and through it a node, acknowledged."""

    spans: set[tuple[str, str]] = field(default_factory=set)
    failed: set[tuple[str, str]] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


class AgentTracer:
    """A ``TracerProvider`` exporting over OTLP/gRPC (insecure) to ``endpoint``; trace ids from a seeded
    generator, so a test's traces (and the nodes the ring gives them) are the same on every run."""

    def __init__(self, endpoint: str, seed: int, service: str = "travel-agents") -> None:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
        from opentelemetry.sdk.trace.id_generator import IdGenerator

        rng = random.Random(seed)

        class SeededIds(IdGenerator):
            def generate_span_id(self) -> int:
                return rng.getrandbits(64) or 1

            def generate_trace_id(self) -> int:
                return rng.getrandbits(128) or 1

        acks = self.acks = Acks()

        class Acknowledged(SpanExporter):
            """The OTLP exporter, noting which spans each call had acknowledged."""

            def __init__(self) -> None:
                self.inner = OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=30)

            def export(self, spans: Sequence[Any]) -> SpanExportResult:
                result = self.inner.export(spans)
                keys = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans}
                with acks.lock:
                    (acks.spans if result is SpanExportResult.SUCCESS else acks.failed).update(keys)
                return result

            def shutdown(self) -> None:
                self.inner.shutdown()

            def force_flush(self, timeout_millis: int = 30_000) -> bool:
                return self.inner.force_flush(timeout_millis)

        self.provider = TracerProvider(
            resource=Resource.create({"service.name": service}), id_generator=SeededIds()
        )
        # a short schedule delay: spans go out while the agents run, as in production, not only at force_flush
        self.provider.add_span_processor(BatchSpanProcessor(Acknowledged(), schedule_delay_millis=100))
        self.tracer = self.provider.get_tracer("tests.support.lake_nodes")
        self.runs: list[AgentRun] = []
        self._n = 0

    def run_agent(self) -> AgentRun:
        """One agent run: an ``invoke_agent`` span with an ``execute_tool`` span per tool; the expected tools
        are all the tools called every other run, and one of them swapped for a tool not called
        otherwise (score 0.5)."""
        from opentelemetry import trace

        n = self._n
        self._n += 1
        called = (TOOLS[0], TOOLS[1 + n % 3]) if n % 3 else (TOOLS[0], TOOLS[1], TOOLS[2])
        expected = called if n % 2 == 0 else (called[0], next(t for t in TOOLS if t not in called))
        ids: set[tuple[str, str]] = set()
        with self.tracer.start_as_current_span(
            f"invoke_agent planner-{n}",
            kind=trace.SpanKind.INTERNAL,
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                sc.GEN_AI_AGENT_NAME: f"planner-{n % 4}",
                sc.AGENTOTEL_EXPECTED_TOOLS: list(expected),
            },
        ) as root:
            context = root.get_span_context()
            for i, tool in enumerate(called):
                with self.tracer.start_as_current_span(
                    f"execute_tool {tool}",
                    attributes={
                        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                        sc.GEN_AI_TOOL_NAME: tool,
                        sc.GEN_AI_TOOL_CALL_ID: f"call-{n}-{i}",
                        sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"run": n, "step": i}),
                        sc.GEN_AI_TOOL_CALL_RESULT: json.dumps({"ok": True}),
                    },
                ) as child:
                    ids.add((f"{context.trace_id:032x}", f"{child.get_span_context().span_id:016x}"))
        trace_id, span_id = f"{context.trace_id:032x}", f"{context.span_id:016x}"
        ids.add((trace_id, span_id))
        run = AgentRun(trace_id, span_id, called, expected, frozenset(ids))
        self.runs.append(run)
        return run

    def flush(self) -> None:
        """Export everything ended so far; the spans are acknowledged when this returns (asserted)."""
        assert self.provider.force_flush(60_000), "the SDK did not flush within 60s"
        sent = {key for run in self.runs for key in run.spans}
        with self.acks.lock:
            assert not self.acks.failed, f"{len(self.acks.failed)} spans were not acknowledged"
            missing = sent - self.acks.spans
        assert not missing, f"{len(missing)} ended spans were not acknowledged after the flush"

    def shutdown(self) -> None:
        self.provider.shutdown()


def split_request(fx: Any, part_of: Callable[[Any, int], int]) -> tuple[bytes, bytes]:
    """A recorded fixture's trace split into two OTLP requests: ``part_of(span, n)`` (the span's protobuf, its
    number in the trace) says which of the two each span goes to."""
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    whole = trace_service_pb2.ExportTraceServiceRequest.FromString(fx.body("protobuf"))
    parts = [trace_service_pb2.ExportTraceServiceRequest(), trace_service_pb2.ExportTraceServiceRequest()]
    dealt = 0
    for rs in whole.resource_spans:
        targets = [p.resource_spans.add(resource=rs.resource, schema_url=rs.schema_url) for p in parts]
        for ss in rs.scope_spans:
            scopes = [t.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url) for t in targets]
            for span in ss.spans:
                scopes[part_of(span, dealt)].spans.add().CopyFrom(span)
                dealt += 1
    return parts[0].SerializeToString(), parts[1].SerializeToString()
