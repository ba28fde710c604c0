"""Web UI benchmark: how fast the collector's pages answer with 100,000 agent runs in the database.

    python bench/bench_ui.py [--db /tmp/agentotel-bench-ui.duckdb] [--rebuild] [--runs 100000]
                             [--requests 50] [--budget 20] [--json FILE|-] [--build-only] [--source DIR]

Two steps:

1. Build (or reuse: ``--db PATH``; ``--rebuild`` to force) a DuckDB database of ``--runs`` agent runs. The
   runs go through a real in-process collector (HTTP receiver, DuckDB writer, assembler process,
   reconstruction, deterministic scoring), so ``agent_runs``, ``tool_calls`` and ``evaluations`` are written
   by the real pipeline. The traces are the recorded real-framework fixtures of 4-6 spans
   (``tests/fixtures/traces``, which ``bench/bench_ingest.py`` sends too; its trace-id layout,
   ``trace_prefix``, is reused), each rewritten for one of 20 agents in 5 domains (agent name, the domain's
   tool names, ``service.name``: 4 services) and kept only when reconstruction reads it back so. Their tool
   sequences differ (one call, repeats, parallel calls, a failing call then a retry, none); expectations come
   from ``[[expectations]]`` rules (three domains), from the run span's ``agentotel.eval.expected_tools``
   attribute (one domain) or from nothing (one domain), so runs pass and fail. Runs end over the last
   ``--days`` (30) days and are sent oldest first, as a collector running that long would have received them;
   some agents are busier than others. Printed: the build time and the table counts (the build's figures are
   also kept in ``<db>.build.json`` and shown when the database is reused).
2. Measure: start ``agentotel-eval serve`` on that database as a subprocess (ephemeral ports, the HTTP port
   read from its banner), wait for ``GET /healthz``, then time each page on one plain ``http.client``
   keep-alive connection per route, over ``--requests`` requests after 3 warm-up requests (fewer, but at least
   ``--min-requests`` and one warm-up, once a route spent its share of ``--budget`` seconds: a slow page does
   not make the run slow): the overview (default range, ``since=all``, one agent), the runs table (no filter,
   one agent, ``result=fail``, a metric failing, ``q=`` text, page 200), run pages (a different random run
   each request, picked with ``POST /v1/query``) and ``/api/runs/latest``; and, as baselines in the same run,
   ``GET /healthz`` and ``POST /v1/query`` with ``SELECT count(*) FROM agent_runs``. Printed per route: p50,
   p95 and max in ms (to the whole answer read), the p95 as a multiple of the ``/v1/query`` baseline's p95,
   the p50 and p95 to the status line and headers (``hdr``: the server's work without the body's transfer),
   the answer's size and the server process's CPU time a request (``cpu ms``, warm-ups included, counted
   in the kernel's clock ticks, 10 ms on most: steadier than the times when the machine is shared); routes
   whose p95 is over 300 ms are marked.

A route the server does not have (a 404 "no route for ...") is reported as not served, not as an error. The
exit status is non-zero only on errors (the build, the server, an answer that is not a 200 of the right
content type), never on slowness. The machine may be shared: compare the ratios to the baseline, not the ms.

``--source DIR`` serves the database with another checkout's ``agentotel_eval`` (``bench/source.py``; the
server is started as ``python -m agentotel_eval.collector`` from the link's directory, and where it imports
the package from is checked first): alternate it with runs of this one on the same ``--db`` to compare two
versions' pages. A database it has to build is built by that checkout's collector.
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from source import inherited_source  # noqa: E402

inherited_source()  # in a process a --source run spawned (this module is its main module again)

DEFAULT_DB = os.path.join(tempfile.gettempdir(), "agentotel-bench-ui.duckdb")
SLOW_MS = 300.0
WARMUP = 3
DAY_NS = 86_400 * 10**9

# ------------------------------------------------------------------------------------------------------------
# the synthetic population: 20 agents in 5 domains, each domain with its own tools, service and expectations


@dataclass(frozen=True)
class Domain:
    name: str
    service: str
    #: the fixtures' tool names -> this domain's
    tools: dict[str, str]
    agents: tuple[str, ...]
    expected: tuple[str, ...] | None = None
    #: where the expectation comes from: "rule" ([[expectations]]), "attribute" (the run span's), "none"
    source: str = "none"


DOMAINS = (
    Domain(
        "travel",
        "assistant-web",
        {"get_weather": "get_weather", "convert_currency": "convert_currency"},
        ("travel-planner", "travel-concierge", "travel-booker", "travel-faq"),
        ("get_weather",),
        "rule",
    ),
    Domain(
        "support",
        "helpdesk",
        {"get_weather": "lookup_order", "convert_currency": "issue_refund"},
        ("support-triage", "support-billing", "support-returns", "support-escalation"),
        ("lookup_order", "issue_refund"),
        "rule",
    ),
    Domain(
        "research",
        "research-batch",
        {"get_weather": "search_docs", "convert_currency": "fetch_page"},
        ("research-analyst", "research-summarizer", "research-scout", "research-librarian"),
        ("search_docs", "search_docs"),
        "rule",
    ),
    Domain(
        "ops",
        "ops-bot",
        {"get_weather": "query_metrics", "convert_currency": "page_oncall"},
        ("ops-oncall", "ops-deploy", "ops-capacity", "ops-incident"),
    ),
    Domain(
        "sales",
        "assistant-web",
        {"get_weather": "crm_lookup", "convert_currency": "quote_price"},
        ("sales-qualifier", "sales-quoter", "sales-renewals", "sales-outreach"),
        ("crm_lookup", "quote_price"),
        "attribute",
    ),
)


def expectation_rules() -> list[dict[str, Any]]:
    """The ``[[expectations]]`` rules of the build's collector (the domains whose source is "rule")."""
    return [
        {"name": d.name, "agent": f"{d.name}-*", "expected_tools": list(d.expected or ())}
        for d in DOMAINS
        if d.source == "rule"
    ]


def agent_weights() -> dict[str, float]:
    """Some agents are busier than others: weight 1/rank^0.7, the ranks interleaved across the domains."""
    agents = [a for i in range(4) for d in DOMAINS for a in d.agents[i : i + 1]]
    return {agent: 1 / (rank + 1) ** 0.7 for rank, agent in enumerate(agents)}


@dataclass
class Template:
    fixture: str
    agent: str
    service: str
    spans: list[Any]  # SpanRecord: one trace holding one run


def build_templates(min_spans: int, max_spans: int) -> tuple[list[Template], list[str]]:
    """Every usable fixture rewritten for every agent, each checked by reconstructing it; and the fixtures
    used."""
    from agentotel_eval.reconstruct import reconstruct
    from tests.support.fixture_traces import fixtures

    templates: list[Template] = []
    used: list[str] = []
    for fx in fixtures():
        entry = fx.entry
        if entry["trace_count"] != 1 or not min_spans <= entry["span_count"] <= max_spans:
            continue
        if fx.logs_path("protobuf") is not None:  # content in log records, not sent (nor by bench_ingest)
            continue
        spans = fx.spans("protobuf")
        runs = reconstruct(spans)
        if len(runs) != 1:
            continue
        found = [
            t for d in DOMAINS for agent in d.agents if (t := _rewrite(fx.name, spans, runs[0], d, agent))
        ]
        if found:
            used.append(fx.name)
            templates.extend(found)
    return templates, used


def _rewrite(name: str, spans: Sequence[Any], base: Any, domain: Domain, agent: str) -> Template | None:
    """The fixture's trace as ``agent``'s in ``domain``; None when reconstruction does not read it back so."""
    from agentotel_eval.reconstruct import reconstruct
    from agentotel_eval.semconv import AGENTOTEL_EXPECTED_TOOLS

    subs = {"travel_agent": agent, **domain.tools}
    if base.agent_name:
        subs[base.agent_name] = agent
    pattern = re.compile("|".join(re.escape(k) for k in sorted(subs, key=len, reverse=True)))

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda m: subs[m.group()], value)
        if isinstance(value, list | tuple):
            return type(value)(fix(v) for v in value)
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        return value

    resource = {**spans[0].resource, "service.name": domain.service}
    out = []
    for s in spans:
        attributes = fix(s.attributes)
        if domain.source == "attribute" and s.span_id == base.span_id:
            attributes[AGENTOTEL_EXPECTED_TOOLS] = list(domain.expected or ())
        events = tuple(dataclasses.replace(e, attributes=fix(e.attributes)) for e in s.events)
        out.append(
            dataclasses.replace(
                s,
                name=fix(s.name),
                attributes=attributes,
                events=events,
                resource=resource,
                status_message=fix(s.status_message),
            )
        )
    runs = reconstruct(out)
    if len(runs) != 1:
        return None
    run = runs[0]
    ok = (
        run.agent_name == agent
        and run.service_name == domain.service
        and run.tools_called == [fix(t) for t in base.tools_called]
        and (domain.source != "attribute" or run.expected_tools == domain.expected)
    )
    return Template(name, agent, domain.service, out) if ok else None


# ------------------------------------------------------------------------------------------------------------
# sending (each sender in its own process, closed loop over OTLP/HTTP protobuf)


class _RequestPool:
    """Requests of ``runs_per_request`` traces each, encoded once and re-stamped for every send (new trace
    ids, each trace's times moved so that it ends at the time given), as ``bench_ingest.RequestFactory`` does
    for the present; that one is not used: it takes its own 7-13-span templates, as they are, at the current
    time."""

    def __init__(
        self,
        templates: list[Template],
        weights: dict[str, float],
        runs_per_request: int,
        pool_size: int,
        rng: random.Random,
    ) -> None:
        from agentotel_eval.otlp.encode import encode_traces

        by_agent: dict[str, list[Template]] = {}
        for t in templates:
            by_agent.setdefault(t.agent, []).append(t)
        agents = sorted(by_agent)
        agent_w = [weights.get(a, 1.0) for a in agents]
        #: (request, [(span message, trace index, start, end and event times relative to the trace's end)])
        self.requests: list[tuple[Any, list[tuple[Any, int, int, int, list[int]]]]] = []
        for _ in range(pool_size):
            chosen = [rng.choice(by_agent[a]) for a in rng.choices(agents, agent_w, k=runs_per_request)]
            spans: list[Any] = []
            ends: list[int] = []
            for k, t in enumerate(chosen):
                fake = f"{k:032x}"  # the trace's index in the request, replaced by a fresh id on every send
                spans.extend(dataclasses.replace(s, trace_id=fake) for s in t.spans)
                ends.append(max(max(s.end_ns, s.start_ns) for s in t.spans))
            request = encode_traces(spans)
            messages = []
            for rs in request.resource_spans:
                for ss in rs.scope_spans:
                    for msg in ss.spans:
                        k = int(msg.trace_id.hex(), 16)
                        end = ends[k]
                        messages.append(
                            (
                                msg,
                                k,
                                msg.start_time_unix_nano - end,
                                msg.end_time_unix_nano - end,
                                [ev.time_unix_nano - end for ev in msg.events],
                            )
                        )
            self.requests.append((request, messages))

    def stamp(self, index: int, trace_ids: Sequence[bytes], ends_ns: Sequence[int]) -> bytes:
        request, messages = self.requests[index]
        for msg, k, start, end, event_times in messages:
            msg.trace_id = trace_ids[k]
            msg.start_time_unix_nano = ends_ns[k] + start
            msg.end_time_unix_nano = ends_ns[k] + end
            for ev, t in zip(msg.events, event_times, strict=True):
                ev.time_unix_nano = ends_ns[k] + t
        return request.SerializeToString()


def sender_main(
    index: int,
    senders: int,
    address: str,
    templates: list[Template],
    weights: dict[str, float],
    runs: int,
    runs_per_request: int,
    first_end_ns: int,
    slot_ns: float,
    seed: int,
    tag: int,
) -> dict[str, Any]:
    """Send this sender's share: request r holds runs r*R .. r*R+R-1 and sender i sends the r with
    r % senders == i, in order; each run ends in its slot of the time range. Closed loop, 503s retried."""
    from bench_ingest import trace_prefix
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    rng = random.Random(seed * 1000 + index)
    pool = _RequestPool(templates, weights, runs_per_request, 32, rng)
    conn = http.client.HTTPConnection(address, timeout=120)
    sent_runs = sent_spans = retries = 0
    started = time.monotonic()
    for r in range(index, math.ceil(runs / runs_per_request), senders):
        first = r * runs_per_request
        count = min(runs_per_request, runs - first)
        prefix = trace_prefix(tag, index + 1, r + 1)
        ids = [struct.pack(">QQ", prefix, k + 1) for k in range(runs_per_request)]
        ends = [first_end_ns + int((first + k + rng.random()) * slot_ns) for k in range(runs_per_request)]
        pick = rng.randrange(len(pool.requests))
        body = pool.stamp(pick, ids, ends)
        if count < runs_per_request:  # the last request: only its first ``count`` traces
            body = _first_traces(body, set(ids[:count]))
        while True:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            answer = response.read()
            if response.status == 503:
                retries += 1
                time.sleep(float(response.getheader("Retry-After") or 1))
                continue
            if response.status != 200:
                raise RuntimeError(f"POST /v1/traces answered {response.status}: {answer[:300]!r}")
            rejected = ExportTraceServiceResponse.FromString(answer).partial_success.rejected_spans
            if rejected:
                raise RuntimeError(f"the collector rejected {rejected} spans")
            break
        sent_runs += count
        sent_spans += sum(1 for _, k, *_ in pool.requests[pick][1] if k < count)
    conn.close()
    return {"runs": sent_runs, "spans": sent_spans, "retries": retries, "seconds": time.monotonic() - started}


def _first_traces(body: bytes, keep: set[bytes]) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest.FromString(body)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            kept = [s for s in ss.spans if s.trace_id in keep]
            del ss.spans[:]
            ss.spans.extend(kept)
    return request.SerializeToString()


# ------------------------------------------------------------------------------------------------------------
# the build


def build(
    db: str,
    runs: int,
    days: float,
    senders: int,
    runs_per_request: int,
    seed: int,
    min_spans: int,
    max_spans: int,
) -> dict[str, Any]:
    """A fresh database at ``db`` with ``runs`` runs, written by an in-process collector with scoring on."""
    import multiprocessing as mp

    from source import first_module

    from agentotel_eval.collector.process.tuning import TUNED, tune_process
    from agentotel_eval.collector.service import Collector
    from tests.support.collector_harness import fast_config

    # before the collector's restructuring (``--source``) in the score package
    parse_expectations = first_module(
        "agentotel_eval.collector.config_scoring", "agentotel_eval.collector.score.config"
    ).parse_expectations

    started = time.monotonic()
    templates, used = build_templates(min_spans, max_spans)
    if not templates:
        raise RuntimeError(f"no fixture of {min_spans}-{max_spans} spans could be rewritten")
    agents = sum(len(d.agents) for d in DOMAINS)
    print(
        f"templates: {len(templates)} ({len(used)} fixtures x {agents} agents, those reconstruction reads "
        f"back as rewritten) in {time.monotonic() - started:.1f} s",
        flush=True,
    )
    for path in (db, db + ".wal"):
        if os.path.exists(path):
            os.remove(path)
    os.makedirs(os.path.dirname(os.path.abspath(db)), exist_ok=True)
    tune_process(TUNED)  # as ``agentotel-eval serve`` tunes its process
    config = fast_config(db, expectations=parse_expectations(expectation_rules()))
    collector = Collector(config, summary_interval=3600, tuning=TUNED).start()
    try:
        address = collector.http_endpoint.removeprefix("http://")
        first_end = time.time_ns() - int(days * DAY_NS)
        slot = days * DAY_NS / runs
        weights = agent_weights()
        t_send = time.monotonic()
        with ProcessPoolExecutor(senders, mp_context=mp.get_context("spawn")) as pool:
            futures = [
                pool.submit(
                    sender_main,
                    i,
                    senders,
                    address,
                    templates,
                    weights,
                    runs,
                    runs_per_request,
                    first_end,
                    slot,
                    seed,
                    seed & 0x7FFF,
                )
                for i in range(senders)
            ]
            last = time.monotonic()
            while not all(f.done() for f in futures):
                time.sleep(0.5)
                if time.monotonic() - last >= 10:
                    last = time.monotonic()
                    stored_now = _count(collector, "agent_runs")
                    print(f"  {last - t_send:5.0f} s: {stored_now:,} runs stored", flush=True)
            results = [f.result() for f in futures]  # raises a sender's error
        sent = sum(r["runs"] for r in results)
        sent_s = time.monotonic() - t_send
        # a run is written a grace period after its last span: wait until all are (or until progress stops)
        stored, progress_at = -1, time.monotonic()
        while (n := _count(collector, "agent_runs")) < sent:
            if n != stored:
                stored, progress_at = n, time.monotonic()
            elif time.monotonic() - progress_at > 60:
                raise RuntimeError(f"only {n:,} of {sent:,} runs were written (no progress for 60 s)")
            time.sleep(0.2)
        collector.writer.flush(30)
        written_s = time.monotonic() - t_send
    finally:
        collector.shutdown()
    elapsed = time.monotonic() - started
    spans = sum(r["spans"] for r in results)
    print(
        f"build: {sent:,} runs ({spans:,} spans) sent in {sent_s:.1f} s by {senders} senders "
        f"({sum(r['retries'] for r in results)} 503 retries), all written after {written_s:.1f} s; "
        f"{elapsed:.1f} s in all",
        flush=True,
    )
    return {
        "seconds": round(elapsed, 1),
        "send_seconds": round(sent_s, 1),
        "runs_sent": sent,
        "spans_sent": spans,
        "spans_per_s": round(spans / max(written_s, 1e-9)),
        "senders": senders,
        "templates": len(templates),
        "fixtures": used,
    }


def _count(collector: Any, table: str) -> int:
    return int(collector.query(f"SELECT count(*) FROM {table}")["rows"][0][0])


def db_summary(db: str) -> dict[str, Any]:
    """Table counts and what the runs look like, read from the file (no collector may have it open)."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:

        def one(sql: str) -> Any:
            return con.execute(sql).fetchone()

        tables = ("agent_runs", "tool_calls", "evaluations", "spans")
        counts = {t: one(f"SELECT count(*) FROM {t}")[0] for t in tables}
        agents, services, oldest, newest = one(
            "SELECT count(DISTINCT agent_name), count(DISTINCT service_name), min(start_time), "
            "max(start_time) FROM agent_runs"
        )
        # agent_runs.expected_tools holds the span attribute's expectation only; a rule's shows in the scores
        expected = one(
            "SELECT count(*) FROM (SELECT DISTINCT trace_id, run_span_id FROM evaluations "
            "WHERE metric = 'tool_correctness')"
        )[0]
        metrics = {
            m: {"pass": p, "fail": f}
            for m, p, f in con.execute(
                "SELECT metric, count(*) FILTER (WHERE success), count(*) FILTER (WHERE NOT success) "
                "FROM evaluations GROUP BY metric ORDER BY metric"
            ).fetchall()
        }
        tool_errors = one("SELECT count(*) FROM tool_calls WHERE status = 'error'")[0]
    finally:
        con.close()
    age_h = round((time.time() - newest.timestamp()) / 3600, 2) if newest else None
    return {
        "counts": counts,
        "agents": agents,
        "services": services,
        "oldest_run": str(oldest),
        "newest_run": str(newest),
        "newest_run_age_h": age_h,
        "runs_with_expectation": expected,
        "tool_call_errors": tool_errors,
        "metrics": metrics,
        "db_mb": round(os.path.getsize(db) / 1e6, 1),
    }


def print_summary(summary: dict[str, Any]) -> None:
    c = summary["counts"]
    print(
        f"database: agent_runs {c['agent_runs']:,}, tool_calls {c['tool_calls']:,}, "
        f"evaluations {c['evaluations']:,}, spans {c['spans']:,}; {summary['db_mb']:.0f} MB"
    )
    print(
        f"  {summary['agents']} agents, {summary['services']} services, runs from {summary['oldest_run']} "
        f"to {summary['newest_run']}, {summary['runs_with_expectation']:,} runs with an expectation, "
        f"{summary['tool_call_errors']:,} failed tool calls"
    )
    metrics = summary["metrics"].items()
    print("  " + ", ".join(f"{m} {v['pass']:,} pass / {v['fail']:,} fail" for m, v in metrics), flush=True)


# ------------------------------------------------------------------------------------------------------------
# the server


class Server:
    """``agentotel-eval serve`` on the database, in its own process; its HTTP address read from its banner."""

    def __init__(self, db: str, as_module: bool = False) -> None:
        exe = Path(sys.executable).with_name("agentotel-eval")
        if exe.exists() and not as_module:
            command = [str(exe), "serve"]
        else:  # ``python -m`` imports from the working directory first (``--source``: the link's)
            command = [sys.executable, "-m", "agentotel_eval.collector"]  # this module is ``serve``
        command += [
            "--db",
            db,
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--log-level",
            "warning",
        ]
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by ``stop``)
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.address = ""
        found = threading.Event()

        def read() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:  # read to the end, so that the pipe never fills
                m = re.search(r"OTLP/HTTP\s+http://(\S+)", line)
                if m and not self.address:
                    self.address = m.group(1)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + 120
        while not found.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                errors = self.errors()
                self.stop()
                raise RuntimeError(f"agentotel-eval serve did not start: {errors}")
        self.host, _, port = self.address.rpartition(":")
        self.port = int(port)

    def wait_healthy(self, timeout: float = 60.0) -> float:
        started = time.monotonic()
        while True:
            try:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
                conn.request("GET", "/healthz")
                response = conn.getresponse()
                response.read()
                conn.close()
                if response.status == 200:
                    return time.monotonic() - started
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() - started > timeout:
                raise RuntimeError(f"the collector never answered GET /healthz with 200: {self.errors()}")
            time.sleep(0.1)

    def cpu_seconds(self) -> float:
        """The server process's CPU time so far, user and system (its helper processes idle while pages are
        read, so they are left out)."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-2000:] or "(nothing on stderr)"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr.close()


def served_package() -> Path:
    """Where a ``python -m`` started from here imports ``agentotel_eval`` from (``-c`` puts the working
    directory first on the path as ``-m`` does)."""
    code = "import agentotel_eval, pathlib; print(pathlib.Path(agentotel_eval.__file__).resolve().parent)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


# ------------------------------------------------------------------------------------------------------------
# measuring


@dataclass
class Route:
    name: str
    paths: list[str]  # cycled, one a request
    method: str = "GET"
    body: bytes | None = None
    expect: str = "html"  # html | json
    baseline: bool = False


@dataclass
class Result:
    route: Route
    status: str = "ok"  # ok | not served | error
    detail: str = ""
    ms: list[float] = field(default_factory=list)  # to the whole answer read
    headers_ms: list[float] = field(default_factory=list)  # to the status line and headers read
    bytes: int = 0
    sent: int = 0  # requests sent, warm-ups included
    #: the server process's CPU time (user + system, its DuckDB threads included) per request sent
    cpu_ms: float = math.nan

    def pct(self, q: float, headers: bool = False) -> float:
        """Nearest-rank percentile of the latencies (to the headers: ``headers``)."""
        values = sorted(self.headers_ms if headers else self.ms)
        return values[max(0, math.ceil(q * len(values)) - 1)] if values else math.nan


def measure(
    host: str,
    port: int,
    route: Route,
    requests: int,
    warmup: int = WARMUP,
    budget_s: float = math.inf,
    min_requests: int = 5,
) -> Result:
    """``warmup`` + ``requests`` requests on one keep-alive connection, each timed to its whole answer read.
    So that a slow page does not make the whole run slow, the timed ones stop once they took ``budget_s``
    (after at least ``min_requests``), and so do the warm-up ones (after at least one)."""
    result = Result(route)
    headers = {"Accept": "text/html" if route.expect == "html" else "application/json"}
    if route.body is not None:
        headers["Content-Type"] = "application/json"
    conn = http.client.HTTPConnection(host, port, timeout=60)
    sizes: list[int] = []
    phase_from = time.monotonic()
    timed = False
    i = 0
    try:
        while len(result.ms) < requests:
            spent = time.monotonic() - phase_from
            if not timed and (i >= warmup or (i > 0 and spent > budget_s)):
                timed, phase_from, spent = True, time.monotonic(), 0.0
            if timed and len(result.ms) >= min_requests and spent > budget_s:
                break
            path = route.paths[i % len(route.paths)]
            i += 1
            result.sent = i
            started = time.perf_counter()
            conn.request(route.method, path, body=route.body, headers=headers)
            response = conn.getresponse()
            headers_at = time.perf_counter()
            body = response.read()
            elapsed = time.perf_counter() - started
            if response.status == 404 and body.startswith(b"no route for"):
                result.status, result.detail = "not served", body.decode(errors="replace").strip()
                return result
            if response.status != 200:
                text = body[:300].decode(errors="replace")
                result.status, result.detail = "error", f"{route.method} {path}: {response.status} {text}"
                return result
            problem = _check(route.expect, response.getheader("Content-Type") or "", body)
            if problem:
                result.status, result.detail = "error", f"{route.method} {path}: {problem}"
                return result
            if timed:
                result.ms.append(elapsed * 1000)
                result.headers_ms.append((headers_at - started) * 1000)
                sizes.append(len(body))
    except (OSError, http.client.HTTPException) as exc:
        result.status, result.detail = "error", f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    result.bytes = round(sum(sizes) / len(sizes)) if sizes else 0
    return result


def _check(expect: str, content_type: str, body: bytes) -> str:
    """What is wrong with a 200 answer; '' when nothing is."""
    if expect == "html":
        return "" if content_type.startswith("text/html") else f"Content-Type {content_type!r}, not text/html"
    if not content_type.startswith("application/json"):
        return f"Content-Type {content_type!r}, not application/json"
    try:
        json.loads(body)
    except ValueError as exc:
        return f"the body is not JSON: {exc}"
    return ""


def query(host: str, port: int, sql: str) -> list[list[Any]]:
    """The rows of ``POST /v1/query``."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    try:
        conn.request("POST", "/v1/query", json.dumps({"sql": sql}), {"Content-Type": "application/json"})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    if response.status != 200:
        raise RuntimeError(f"POST /v1/query {sql!r}: {response.status} {body[:300]!r}")
    return json.loads(body)["rows"]


def routes(host: str, port: int, requests: int, q: str, seed: int) -> list[Route]:
    """The routes measured; the agent is the busiest one, the run pages a random sample of the runs."""
    busiest = "SELECT agent_name FROM agent_runs GROUP BY ALL ORDER BY count(*) DESC LIMIT 1"
    agent = query(host, port, busiest)[0][0]
    sample = query(
        host,
        port,
        f"SELECT trace_id, span_id FROM agent_runs "
        f"USING SAMPLE reservoir({requests + WARMUP} ROWS) REPEATABLE ({seed})",
    )
    if not sample:
        raise RuntimeError("agent_runs is empty")

    def page(path: str, **params: Any) -> list[str]:
        return [f"{path}?{urllib.parse.urlencode(params)}" if params else path]

    count_sql = json.dumps({"sql": "SELECT count(*) FROM agent_runs"}).encode()
    return [
        Route("healthz", ["/healthz"], expect="json", baseline=True),
        Route("query count(*)", ["/v1/query"], "POST", count_sql, "json", baseline=True),
        Route("overview", page("/")),
        Route("overview since=all", page("/", since="all")),
        Route("overview agent", page("/", agent=agent)),
        Route("runs", page("/runs")),
        Route("runs agent", page("/runs", agent=agent)),
        Route("runs result=fail", page("/runs", result="fail")),
        Route("runs metric result=fail", page("/runs", metric="tool_correctness", result="fail")),
        Route("runs q=text", page("/runs", q=q)),
        Route("runs page=200", page("/runs", page=200)),
        Route("run page", [f"/runs/{t}/{s}" for t, s in sample]),
        Route("api runs latest", ["/api/runs/latest"], expect="json"),
    ]


def report(results: list[Result]) -> tuple[list[dict[str, Any]], float]:
    """Print the table; its rows as dicts, and the baseline's p95."""
    base = next((r for r in results if r.route.name == "query count(*)" and r.status == "ok"), None)
    base_p95 = base.pct(0.95) if base else math.nan
    rows = []
    print(
        f"\n{'route':<24} {'path':<42} {'n':>3} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'p95/query':>9} "
        f"{'hdr p50':>8} {'hdr p95':>8} {'bytes':>8} {'cpu ms':>7}"
    )
    for r in results:
        paths = r.route.paths
        path = paths[0] if len(paths) == 1 else f"{paths[0][:26]}... ({len(paths)})"
        row: dict[str, Any] = {
            "route": r.route.name,
            "method": r.route.method,
            "path": paths[0],
            "status": r.status,
            "baseline": r.route.baseline,
        }
        if r.status == "ok":
            p50, p95, top = r.pct(0.5), r.pct(0.95), max(r.ms)
            h50, h95 = r.pct(0.5, headers=True), r.pct(0.95, headers=True)
            ratio = p95 / base_p95 if base_p95 else math.nan
            slow = p95 > SLOW_MS
            row.update(
                n=len(r.ms),
                p50_ms=round(p50, 2),
                p95_ms=round(p95, 2),
                max_ms=round(top, 2),
                p95_vs_query=round(ratio, 2),
                headers_p50_ms=round(h50, 2),
                headers_p95_ms=round(h95, 2),
                bytes=r.bytes,
                server_cpu_ms=round(r.cpu_ms, 2),
                slow=slow,
            )
            print(
                f"{r.route.name:<24} {path:<42} {len(r.ms):3} {p50:8.1f} {p95:8.1f} {top:8.1f} "
                f"{ratio:8.1f}x {h50:8.1f} {h95:8.1f} {r.bytes:8,} {r.cpu_ms:7.1f}"
                f"{'  SLOW: p95 > 300 ms' if slow else ''}"
            )
        else:
            row["detail"] = r.detail
            print(f"{r.route.name:<24} {path:<42} {'':3} {r.status.upper()}: {r.detail[:200]}")
        rows.append(row)
    return rows, base_p95


# ------------------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--db", default=DEFAULT_DB, help=f"the database to build or reuse (default {DEFAULT_DB})"
    )
    parser.add_argument("--rebuild", action="store_true", help="build the database even when it exists")
    parser.add_argument("--runs", type=int, default=100_000, help="agent runs to build (default 100000)")
    parser.add_argument("--days", type=float, default=30.0, help="the runs end over this many past days (30)")
    parser.add_argument("--senders", type=int, default=2, help="sender processes for the build (default 2)")
    parser.add_argument("--runs-per-request", type=int, default=100, help="traces per OTLP request (100)")
    parser.add_argument("--spans", default="4-6", help="the fixtures used, by their span count (4-6)")
    parser.add_argument("--requests", type=int, default=50, help="timed requests per route (default 50)")
    parser.add_argument(
        "--budget",
        type=float,
        default=20.0,
        help="seconds for the timed requests of all routes (default 20), shared equally: a "
        "route stops before --requests once its share is spent, its warm-ups too",
    )
    parser.add_argument(
        "--min-requests",
        type=int,
        default=5,
        help="timed requests per route even over its share of --budget (default 5)",
    )
    parser.add_argument("--q", default="Atlantis", help="the text runs?q= searches (default Atlantis)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--build-only", action="store_true", help="build (or check) the database only")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE ('-': stdout)")
    parser.add_argument(
        "--source",
        type=Path,
        help="another checkout whose agentotel_eval to serve the database with (and to build it with)",
    )
    args = parser.parse_args()
    args.db = os.path.abspath(args.db)  # ``--source`` changes the working directory
    from source import imported_from, use_source

    package = use_source(args.source) if args.source else imported_from()
    print(f"agentotel_eval from {package}")
    lo, _, hi = args.spans.partition("-")
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "db": args.db,
        "package": str(package),
        "cpus": os.cpu_count(),
        "build": None,
    }
    load_before = round(os.getloadavg()[0], 2)
    print(f"cpus {os.cpu_count()}, load avg {load_before:.2f}, database {args.db}", flush=True)
    try:
        sidecar = Path(args.db + ".build.json")
        if args.rebuild or not os.path.exists(args.db):
            sidecar.unlink(missing_ok=True)
            out["build"] = build(
                args.db,
                args.runs,
                args.days,
                args.senders,
                args.runs_per_request,
                args.seed,
                int(lo),
                int(hi or lo),
            )
            sidecar.write_text(json.dumps({"date": out["date"], **out["build"]}, indent=2) + "\n")
        summary = db_summary(args.db)
        out["database"] = summary
        print_summary(summary)
        if out["build"] is None:
            built = json.loads(sidecar.read_text()) if sidecar.exists() else None
            out["built_before"] = built
            how = f"; built {built['date']} in {built['seconds']} s" if built else ""
            print(
                f"reused {args.db} (--rebuild to build it again); its newest run started "
                f"{summary['newest_run_age_h']} h ago{how}"
            )
            if summary["counts"]["agent_runs"] < args.runs:
                raise RuntimeError(
                    f"{args.db} has {summary['counts']['agent_runs']:,} runs, fewer than "
                    f"--runs {args.runs:,}: use --rebuild"
                )
            if (summary["newest_run_age_h"] or 0) > 24:
                print("  note: its runs are over a day old, so the time filters see fewer of them; --rebuild")
        if args.build_only:
            return _finish(out, args.json, 0)
        if args.source:
            served = served_package()
            print(f"agentotel-eval serve (python -m) imports agentotel_eval from {served}")
            if served != package:
                raise RuntimeError(f"the server would import agentotel_eval from {served}, not {package}")
        server = Server(args.db, as_module=args.source is not None)
        try:
            healthy = server.wait_healthy()
            print(
                f"agentotel-eval serve (pid {server.process.pid}) on http://{server.address}, healthy "
                f"after {healthy:.1f} s; up to {args.requests} requests per route after {WARMUP} warm-up "
                f"(at least {args.min_requests}; {args.budget:g} s budget)",
                flush=True,
            )
            results = []
            started = time.monotonic()
            measured = routes(server.host, server.port, args.requests, args.q, args.seed)
            for route in measured:
                cpu_before = server.cpu_seconds()
                result = measure(
                    server.host,
                    server.port,
                    route,
                    args.requests,
                    budget_s=args.budget / len(measured),
                    min_requests=args.min_requests,
                )
                result.cpu_ms = 1000 * (server.cpu_seconds() - cpu_before) / max(result.sent, 1)
                results.append(result)
            measured_s = time.monotonic() - started
        finally:
            server.stop()
        rows, base_p95 = report(results)
        missing = [r.route.name for r in results if r.status == "not served"]
        failed = [r.route.name for r in results if r.status == "error"]
        slow = [row["route"] for row in rows if row.get("slow")]
        load_after = round(os.getloadavg()[0], 2)
        print(
            f"\nmeasured in {measured_s:.1f} s; baseline POST /v1/query p95 {base_p95:.1f} ms; "
            f"load avg {load_after:.2f}"
        )
        print(f"not served (404): {', '.join(missing) or 'none'}")
        print(f"errors: {', '.join(failed) or 'none'}")
        print(f"p95 over {SLOW_MS:.0f} ms: {', '.join(slow) or 'none'}")
        health = next((r for r in results if r.route.name == "healthz" and r.status == "ok"), None)
        if health and health.pct(0.5) - health.pct(0.5, headers=True) > 20:
            stall = health.pct(0.5) - health.pct(0.5, headers=True)
            out["body_stall_ms"] = round(stall, 1)
            print(
                f"note: GET /healthz's {health.bytes}-byte body comes {stall:.0f} ms after its headers on "
                "a keep-alive connection (headers and body written apart, without TCP_NODELAY: Nagle "
                "waits for the client's delayed ACK); most answers pay it, the 'hdr' columns leave it out"
            )
        out.update(
            load_avg=[load_before, load_after],
            requests=args.requests,
            warmup=WARMUP,
            budget_s=args.budget,
            min_requests=args.min_requests,
            measured_s=round(measured_s, 1),
            routes=rows,
            not_served=missing,
            errors=failed,
            slow=slow,
        )
        return _finish(out, args.json, 1 if failed else 0)
    except Exception as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        out["error"] = f"{type(exc).__name__}: {exc}"
        return _finish(out, args.json, 1)


def _finish(out: dict[str, Any], path: str | None, code: int) -> int:
    if path:
        text = json.dumps(out, indent=2, default=str)
        if path == "-":
            print(text)
        else:
            Path(path).write_text(text + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
