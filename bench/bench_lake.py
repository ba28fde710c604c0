"""Scale-out benchmark: ``agentotel-eval serve`` nodes sharing a DuckLake (catalog in a real PostgreSQL 15,
Parquet on moto's S3 server, both on loopback), under the load ``bench/bench_ingest.py`` generates.

    python bench/bench_lake.py [--part throughput,lag,pages,recovery,reconciler,flush,versus] [--seconds 15]
                               [--exporters 8] [--runs 20000] [--json FILE]

Run it with the ``[lake]`` environment (DuckDB 1.5.5 and its extension packages), e.g.
``/tmp/v155/bin/python``. Every node is a real ``serve`` process of its own
(``tests/support/lake_nodes.ServeNode``: its own session, file and ports) with scoring on (an expectation
matching every run, as ``bench_ingest`` sets), a 2 s grace period and the ``[lake]`` defaults: flush every 5
s, reconcile every 10 s, peer reads on (the tests' lake table, which reconciles every second, is not used).
Each phase gets a fresh lake (catalog database and bucket) and fresh files. The parts:

* ``throughput``: stored (acknowledged) spans/s with 1 node without a lake (the baseline: the same serve, same
  DuckDB, no ``[lake]``) and 1, 2 and 3 nodes with one, under the same closed-loop load: ``--exporters``
  processes sending the recorded fixture traces with fresh ids, 512 spans a request
  (``bench_ingest.RequestFactory``). The load is routed in the generator, not through a proxy: each request's
  trace ids are drawn so that the OpenTelemetry Collector's load-balancing ring
  (``tests/support/lake_ring.HashRing``, an exact port) sends every one of its traces to the node the request
  goes to, requests taking the nodes in turn: every trace lands where the gateway would send it, each node
  gets 1/N of the traces, in requests of 512 spans as the baseline does. Also measured: the ceiling of
  ``tests/support/lake_ring.TraceRouter`` (the Python gateway, in a process of its own) in front of a bare
  receiver that only decodes, and 3 nodes with the load sent through it (it splits each request in one per
  node, sent one after the other), to show what routing in the generator leaves out. Printed per phase:
  aggregate and per-node spans/s, the CPU each node, the lake's servers and the exporters spent a stored span,
  and the check that every acknowledged span is in the lake (or, without a lake, in the node's file).
* ``lag``: one node under a steady open-loop load (``--lag-rate``) with flush_interval 5 s and 1 s; a marker
  trace sent every 0.37 s, and a reader polling ``lake.spans`` (and ``lake.agent_runs``) for the markers: the
  time from each marker's acknowledgement to the first poll that sees it, p50/p95/max.
* ``pages``: a database of ``--runs`` runs built by ``bench_ui.py --build-only`` (the real pipeline; kept at
  ``--pages-db`` and reused for 12 hours), copied to a fresh lake by a node started and stopped on it (one
  flush: few files, as after ``lake maintain``), and to another as ``--fragments`` flushes would leave it
  (many small files, unmerged); then the same page requests against ``serve`` on the file and ``agentotel-eval
  lake ui`` over each lake (all on DuckDB 1.5.5), route by route, p50/p95; and ``count(*)`` over spans on each
  side (``agentotel-eval query --db`` / ``--lake``, and in process).
* ``reconciler``: the reconciler's search for split traces, before (a scan of the trace id and node of every
  span copied in the window, at each look for 15 minutes after a membership change) and after (the lake's
  index of trace parts: the rows committed since the last look; and once, when a node becomes the searcher,
  the window's), over a lake of ``--look-spans`` spans, in CPU per span.
* ``flush``: a flush's CPU and wall time a span with and without the index of trace parts, in process.
* ``versus``: one lake node's stored spans/s from this checkout and from ``--baseline DIR`` (e.g. ``git
  worktree add /tmp/base HEAD~3``), alternating ``--rounds`` times.
* ``recovery``: 3 nodes behind ``TraceRouter(failover=True)`` under a steady open-loop load
  (``--recovery-rate`` in requests of ``--recovery-request`` spans); one node SIGKILLed 10 s in, restarted on
  the same file 8 s later: export errors and the longest gap between acknowledgements after the kill, the
  spans it had acknowledged but not yet copied, the time from its restart until it listens, until its flush
  mark covers them and until the router sends it traces again, and whether every acknowledged span is in the
  lake (once, whole traces) after all nodes stopped.

The machine this is run on may have few cores: N nodes on the same cores share them, so the aggregate cannot
scale with N here; the per-node figures and the CPU a stored span are what extrapolate to N machines.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import json
import math
import multiprocessing as mp
import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

EXPECTED_TOOLS = [
    "get_weather",
    "search_flights",
    "book_hotel",
]  # bench_ingest's expectation: every run scored
MARKER_EXPORTER = 250  # the exporter number in the markers' trace ids
PAGES_DB = os.path.join(tempfile.gettempdir(), "agentotel-bench-lake-pages.duckdb")
_runs = itertools.count(1)  # a phase's number: the first bytes of its trace ids (bench_ingest.trace_prefix)
_lakes = itertools.count(1)
#: the phases that found an acknowledged span missing from the lake (or the file): the exit status says so
LOST: list[str] = []


# ------------------------------------------------------------------------------------------------------------
# CPU time of processes, from /proc


def _stat(pid: int | str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _cpu_of(fields: list[str]) -> float:
    """utime + stime + cutime + cstime: the process's own CPU and that of the children it reaped."""
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")


def session_cpu(sid: int) -> float:
    """The CPU seconds of every process of a session (a node: serve, its decode workers, its assembler)."""
    total = 0.0
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat(name)) is not None and int(fields[3]) == sid:
            total += _cpu_of(fields)
    return total


def tree_cpu(pid: int) -> float:
    """A process's CPU seconds and its descendants' (PostgreSQL's postmaster and its backends)."""
    stats = {
        int(name): fields
        for name in os.listdir("/proc")
        if name.isdigit() and (fields := _stat(name)) is not None
    }
    tree, grown = {pid}, True
    while grown:
        more = {p for p, fields in stats.items() if int(fields[1]) in tree} - tree
        tree |= more
        grown = bool(more)
    return sum(_cpu_of(stats[p]) for p in tree if p in stats)


def pid_listening(program: str, words: tuple[str, ...]) -> int | None:
    """The process running ``program`` whose command line holds all of ``words`` (moto's server, PostgreSQL's
    postmaster)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        text = [a.decode(errors="replace") for a in argv]
        if os.path.basename(text[0]) == program and all(w in text for w in words):
            return int(name)
    return None


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class Servers:
    """The lake's PostgreSQL and S3 servers, and a fresh lake (catalog database and bucket) for each phase."""

    def __init__(self, pg: Any, s3: Any) -> None:
        self.pg, self.s3 = pg, s3
        self.pg_pid = pid_listening("postgres", ("-p", str(pg.port), "listen_addresses=127.0.0.1"))
        self.s3_pid = pid_listening(os.path.basename(sys.executable), ("moto.server", str(s3.port)))

    def new_lake(self, flush_interval: str = "5s") -> Any:
        from tests.support.lake_nodes import LakeTable

        name = f"benchlake{next(_lakes)}"
        catalog = self.pg.create_database(name)
        self.s3.create_bucket(name)
        return LakeTable(
            catalog=catalog,
            data=f"s3://{name}/data/",
            s3_endpoint=self.s3.endpoint,
            flush_interval=flush_interval,
        )

    def cpu(self) -> dict[str, float]:
        return {
            "postgres": tree_cpu(self.pg_pid) if self.pg_pid else 0.0,
            "s3": tree_cpu(self.s3_pid) if self.s3_pid else 0.0,
        }


# ------------------------------------------------------------------------------------------------------------
# nodes


def make_node(
    folder: Path,
    name: str,
    table: Any,
    *,
    with_lake: bool = True,
    db: str | None = None,
    grace: str = "2s",
    root: Path | None = None,
) -> Any:
    """A ``ServeNode`` whose config is bench_ingest's collector's: scoring every run, a 2 s grace period; run
    from ``root`` (another checkout, the baseline) when given."""
    from tests.support.lake_nodes import ServeNode

    node = ServeNode(folder, name, table, root=root or ROOT)
    if db is not None:
        node.db = Path(db)
    text = (
        f'db = "{node.db}"\ngrpc = "{node.grpc}"\nhttp = "{node.http}"\nlog_level = "warning"\n'
        f'[assembler]\ngrace_period = "{grace}"\n[[expectations]]\nname = "every run"\n'
        f"expected_tools = {json.dumps(EXPECTED_TOOLS)}\n"
    )
    node.config.write_text(text + (lake_toml(table, name) if with_lake else ""))
    return node


def lake_toml(table: Any, node: str) -> str:
    """The ``[lake]`` table of a node: the shared lake's catalog, data and S3 server, this phase's flush
    interval, and the product's own defaults for the rest (reconcile_interval 10 s, read_peer_spans
    on), not the tests'."""
    return (
        f'[lake]\ncatalog = "{table.catalog}"\ndata = "{table.data}"\nflush_interval = '
        f'"{table.flush_interval}"\nnode = "{node}"\n[lake.s3]\nendpoint = "{table.s3_endpoint}"\nkey_id = '
        f'"test"\nsecret = "test"\nurl_style = "path"\nuse_ssl = false\n'
    )


def start_all(nodes: list[Any]) -> float:
    """The first alone (it creates the lake's catalog), the others together; the seconds it took."""
    from tests.support.lake_nodes import start_nodes

    started = time.monotonic()
    start_nodes(nodes[:1])
    start_nodes(nodes[1:], together=True)
    return time.monotonic() - started


def tear_down(nodes: list[Any], router: Any, folder: Path) -> None:
    """Whatever still runs of a phase (its nodes, the router process) killed, and its files removed."""
    for node in nodes:
        node.kill()
    if router.is_alive():
        router.kill()
    shutil.rmtree(folder, ignore_errors=True)


def stop_all(nodes: list[Any]) -> float:
    from tests.support.lake_nodes import stop_nodes

    started = time.monotonic()
    codes = stop_nodes(nodes)
    bad = {n: c for n, c in codes.items() if c != 0}
    if bad:
        logs = "\n".join(f"--- {n.name}\n{n.output()[-3000:]}" for n in nodes if n.name in bad)
        raise RuntimeError(f"nodes exited {bad}:\n{logs}")
    return time.monotonic() - started


def raw_lake(settings: Any) -> Any:
    """A read-only connection to the lake, unsealed (the bench registers its own tables beside it)."""
    from agentotel_eval.store import lake

    con = lake.instance()
    lake.attach(con, settings, read_only=True)
    return con


def check_stored(con: Any, spans_table: str, acked: dict[str, int]) -> dict[str, int]:
    """Of the acknowledged traces (trace id -> its spans): spans expected, distinct spans stored, rows stored
    (a span stored twice counts twice here), traces missing a span."""
    import pyarrow as pa

    con.register("bench_acked", pa.table({"trace_id": list(acked), "n": list(acked.values())}))
    try:
        distinct, rows_, short = con.execute(
            f"WITH got AS (SELECT trace_id, count(DISTINCT span_id) AS got, count(*) AS rows_ FROM "
            f"{spans_table} WHERE trace_id IN (SELECT trace_id FROM bench_acked) GROUP BY trace_id) "
            "SELECT coalesce(sum(got), 0), coalesce(sum(rows_), 0), count(*) FILTER (WHERE coalesce(got, 0) "
            "< n) FROM bench_acked LEFT JOIN got USING (trace_id)"
        ).fetchone()
    finally:
        con.unregister("bench_acked")
    return {
        "expected": sum(acked.values()),
        "stored": int(distinct),
        "rows": int(rows_),
        "short_traces": int(short),
    }


# ------------------------------------------------------------------------------------------------------------
# load generator (each exporter a process of its own)


def _trace_id(ring: Any, endpoint: str, prefix: int, k: int) -> bytes:
    """The trace id for the k-th trace of a request: with a ring, the first of (prefix, salt << 32 | k + 1)
    that the ring sends to ``endpoint``."""
    salt = 0
    while True:
        tid = struct.pack(">QQ", prefix, (salt << 32) | (k + 1))
        if ring is None or ring.endpoint_for(tid) == endpoint:
            return tid
        salt += 1


def exporter_main(
    index: int,
    endpoints: list[str],
    ring_routed: bool,
    spans_per_request: int,
    run: int,
    start_at: float,
    window: tuple[float, float],
    rate: float,
    out: Any,
    stop: Any,
) -> None:
    """Requests of ~``spans_per_request`` spans until ``window[1]``: closed loop (``rate`` 0) or at ``rate``
    spans/s. ``ring_routed``: request n goes to endpoint n % N with trace ids the ring sends there; else every
    request to ``endpoints[0]``. Reports each request (sent, answered, ok, endpoint), the acknowledged traces
    (id -> spans), the errors by status, and this process's CPU over the window. ``stop`` set: the window ends
    there."""
    import grpc
    from bench_ingest import TRACE_PATH, RequestFactory, trace_prefix

    from tests.support.lake_ring import HashRing

    factory = RequestFactory(index, spans_per_request, run)
    spans_of = Counter(k for _, k, _, _ in factory.messages)
    ring = HashRing(endpoints) if ring_routed and len(endpoints) > 1 else None
    options = [("grpc.max_send_message_length", 64 << 20)]
    calls = [grpc.insecure_channel(e, options=options).unary_unary(TRACE_PATH) for e in endpoints]
    records: list[tuple[float, float, bool, int]] = []
    acked: dict[str, int] = {}
    errors: Counter[str] = Counter()
    interval = factory.spans / rate if rate > 0 else 0.0
    slot = start_at + (index % 16) * interval / 16
    while time.monotonic() < start_at:
        time.sleep(0.001)
    cpu_from = None
    seq = 0
    while (now := time.monotonic()) < window[1] and not stop.is_set():
        if interval:
            if now < slot:
                time.sleep(slot - now)
            slot += interval
        if cpu_from is None and time.monotonic() >= window[0]:
            cpu_from = time.process_time()
        seq += 1
        target = seq % len(endpoints) if ring is not None else 0
        prefix = trace_prefix(run, index, seq)
        ids = [_trace_id(ring, endpoints[target], prefix, k) for k in range(factory.traces)]
        stamp = time.time_ns()
        for msg, k, start, end in factory.messages:
            msg.trace_id = ids[k]
            msg.start_time_unix_nano = stamp + start
            msg.end_time_unix_nano = stamp + end
        body = factory.request.SerializeToString()
        sent = time.monotonic()
        try:
            calls[target](body, timeout=60)
            ok = True
        except grpc.RpcError as exc:
            ok = False
            errors[exc.code().name] += 1
        done = time.monotonic()
        records.append((sent, done, ok, target))
        if ok:
            for k, tid in enumerate(ids):
                acked[tid.hex()] = spans_of[k]
        elif not interval:
            time.sleep(0.01)
    cpu = time.process_time() - cpu_from if cpu_from is not None else 0.0
    out.put(
        {
            "index": index,
            "records": records,
            "acked": acked,
            "errors": dict(errors),
            "spans": factory.spans,
            "cpu_window_s": cpu,
        }
    )


class Load:
    """``exporters`` exporter processes; ``start()`` returns at once, ``results()`` waits for them."""

    def __init__(
        self,
        endpoints: list[str],
        *,
        exporters: int,
        seconds: float,
        warmup: float,
        ring_routed: bool,
        rate: float = 0.0,
        spans_per_request: int = 512,
        lead: float = 3.0,
    ) -> None:
        self.ctx = mp.get_context("spawn")
        self.run = next(_runs)
        self.start_at = time.monotonic() + lead  # the exporters build their requests first
        self.window = (self.start_at + warmup, self.start_at + warmup + seconds)
        self.out = self.ctx.Queue()
        self.halt = self.ctx.Event()  # set: the exporters stop before the window's end
        self.procs = [
            self.ctx.Process(
                target=exporter_main,
                args=(
                    i + 1,
                    endpoints,
                    ring_routed,
                    spans_per_request,
                    self.run,
                    self.start_at,
                    self.window,
                    rate / exporters,
                    self.out,
                    self.halt,
                ),
            )
            for i in range(exporters)
        ]

    def start(self) -> Load:
        for p in self.procs:
            p.start()
        return self

    def results(self) -> list[dict[str, Any]]:
        got = [self.out.get(timeout=self.window[1] - time.monotonic() + 180) for _ in self.procs]
        for p in self.procs:
            p.join()
        return got

    def stop(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.kill()


def acked_in(results: list[dict[str, Any]], lo: float, hi: float) -> Counter[int]:
    """Spans acknowledged with their answer in [lo, hi], by endpoint index."""
    by: Counter[int] = Counter()
    for r in results:
        for _, done, ok, target in r["records"]:
            if ok and lo <= done <= hi:
                by[target] += r["spans"]
    return by


def all_acked(results: list[dict[str, Any]]) -> dict[str, int]:
    acked: dict[str, int] = {}
    for r in results:
        acked.update(r["acked"])
    return acked


class CpuWindow:
    """The CPU of the nodes, the lake's servers, other processes and the machine between
    ``begin`` and ``end``."""

    def __init__(
        self, servers: Servers | None, nodes: list[Any], others: dict[str, int] | None = None
    ) -> None:
        self.servers, self.nodes, self.others = servers, nodes, others or {}

    def _sample(self) -> dict[str, float]:
        values = {n.name: session_cpu(n.proc.pid) for n in self.nodes if n.proc is not None}
        values |= {name: tree_cpu(pid) for name, pid in self.others.items()}
        if self.servers is not None:
            values |= {f"lake {k}": v for k, v in self.servers.cpu().items()}
        busy, total = machine_busy()
        values["_busy"], values["_total"] = busy, total
        return values

    def begin(self) -> None:
        self.start = self._sample()

    def end(self) -> dict[str, float]:
        last = self._sample()
        out = {k: last[k] - self.start.get(k, 0.0) for k in last if not k.startswith("_")}
        out["machine_busy_share"] = (last["_busy"] - self.start["_busy"]) / max(
            last["_total"] - self.start["_total"], 1
        )
        return out


def sleep_until(t: float) -> None:
    time.sleep(max(0.0, t - time.monotonic()))


# ------------------------------------------------------------------------------------------------------------
# part 1: throughput


def router_main(endpoints: list[str], failover: bool, conn: Any) -> None:
    from tests.support.lake_ring import TraceRouter

    router = TraceRouter(endpoints, failover=failover).start()
    conn.send((router.endpoint, os.getpid()))
    conn.recv()
    conn.send({"failovers": router.failovers})
    router.stop()


def router_ceiling(args: argparse.Namespace) -> dict[str, Any]:
    """``TraceRouter`` (a process of its own) in front of ``bench_ingest``'s bare receiver (decode only)."""
    from bench_ingest import bare_main

    ctx = mp.get_context("spawn")
    bare_parent, bare_child = ctx.Pipe()
    bare = ctx.Process(target=bare_main, args=("grpc", bare_child))
    bare.start()
    address = bare_parent.recv()
    router_parent, router_child = ctx.Pipe()
    router = ctx.Process(target=router_main, args=([address], False, router_child))
    router.start()
    endpoint, router_pid = router_parent.recv()
    load = Load(
        [endpoint], exporters=args.exporters, seconds=args.seconds, warmup=args.warmup, ring_routed=False
    )
    load.start()
    window = CpuWindow(None, [], {"router": router_pid, "bare": bare.pid})
    sleep_until(load.window[0])
    bare_parent.send("start")
    bare_parent.recv()
    window.begin()
    sleep_until(load.window[1])
    cpu = window.end()
    bare_parent.send("end")
    bare_parent.recv()
    results = load.results()
    router_parent.send("stop")
    router_parent.recv()
    router.join()
    bare_parent.send("stop")
    bare_parent.recv()
    bare.join()
    spans = sum(acked_in(results, *load.window).values())
    seconds = load.window[1] - load.window[0]
    out = {
        "rate": spans / seconds,
        "router_cpu_us": 1e6 * cpu["router"] / max(spans, 1),
        "bare_cpu_us": 1e6 * cpu["bare"] / max(spans, 1),
        "machine_busy": cpu["machine_busy_share"],
        "errors": sum(sum(r["errors"].values()) for r in results),
    }
    print(
        f"[router ceiling] TraceRouter -> bare receiver (decode only): {out['rate']:,.0f} spans/s "
        f"acknowledged; router {out['router_cpu_us']:.1f} µs CPU/span, bare {out['bare_cpu_us']:.1f}; "
        f"machine {out['machine_busy']:.0%} busy ({os.cpu_count()} cores); {out['errors']} errors",
        flush=True,
    )
    return out


#: a lake node's own figures, read from its /metrics at the end of a throughput window
LAKE_METRICS = (
    "lake_flushes_total",
    "lake_flush_seconds",
    "lake_reconcile_looks_total",
    "lake_peer_reads_total",
    "lake_peer_spans_total",
)


#: the reconciler's search before the index of trace parts (as it was until then): the trace id and node of
#: every span copied in the window, run at every look for 15 minutes after a membership change
SPANS_SCAN_SEARCH = """
WITH recent AS (
    SELECT trace_id, min(start_time) AS lo, max(start_time) AS hi FROM lake.spans
    WHERE flushed_at > ? GROUP BY trace_id
), bounds AS (SELECT min(lo) - ?::INTERVAL AS lo, max(hi) + ?::INTERVAL AS hi FROM recent),
split AS (
    SELECT s.trace_id, max(s.flushed_at) AS last_copied
    FROM lake.spans s, bounds WHERE s.start_time BETWEEN bounds.lo AND bounds.hi
    AND s.trace_id IN (SELECT trace_id FROM recent)
    GROUP BY s.trace_id HAVING count(DISTINCT s.node) > 1
), newest AS (
    SELECT r.trace_id, arg_max(r.node, r.updated_at) AS builder,
           arg_max(r.flushed_at, r.updated_at) AS build_copied
    FROM lake.agent_runs r WHERE r.trace_id IN (SELECT trace_id FROM split) GROUP BY r.trace_id
)
SELECT split.trace_id, split.last_copied FROM split LEFT JOIN newest USING (trace_id)
"""


def synthetic_flushes(
    con: Any, flushes: int, spans_per_flush: int, spans_per_trace: int, start: int, at: Any
) -> int:
    """Append ``flushes`` flushes to the lake, each as a node writes one: ``spans_per_flush`` spans of whole
    traces of ``spans_per_trace`` (one root each) and their index rows in one transaction, by nodes node-a..c
    in turn, one flush a second from ``at``; every 1000th trace also gets a part on the next node (split).
    Returns the next trace number."""
    from datetime import timedelta

    from agentotel_eval.store import lake

    traces = spans_per_flush // spans_per_trace
    for f in range(flushes):
        node = f"node-{'abc'[f % 3]}"
        flushed = at + timedelta(seconds=f)
        first = start + f * traces
        con.execute("BEGIN")
        con.execute(
            "INSERT INTO lake.spans (trace_id, span_id, parent_span_id, start_time, ingested_at, node, "
            "flushed_at) SELECT md5(t::VARCHAR), md5(t::VARCHAR || '-' || k::VARCHAR)[:16], CASE WHEN k = 0 "
            "THEN NULL ELSE md5(t::VARCHAR || '-0')[:16] END, ?::TIMESTAMPTZ, ?::TIMESTAMPTZ, ?, "
            "?::TIMESTAMPTZ FROM range(?, ?) r(t), range(?) s(k)",
            [flushed, flushed, node, flushed, first, first + traces, spans_per_trace],
        )
        con.execute(
            f"INSERT INTO lake.{lake.PARTS} SELECT md5(t::VARCHAR), ?, ?::TIMESTAMPTZ, ?, true FROM range(?, "
            f"?) r(t)",
            [node, flushed, spans_per_trace, first, first + traces],
        )
        # a part of every 1000th trace of the previous flush, resent to this node (a failover): split
        con.execute(
            f"INSERT INTO lake.{lake.PARTS} SELECT md5(t::VARCHAR), ?, ?::TIMESTAMPTZ, 1, false FROM "
            f"range(?, ?) r(t) WHERE t % 1000 = 0",
            [node, flushed, first - traces, first],
        )
        con.execute("COMMIT")
    return start + flushes * traces


def part_reconciler(servers: Servers, args: argparse.Namespace) -> dict[str, Any]:
    """The reconciler's search, before (a scan of the window's spans at each look after a change) and after
    (the index rows committed since the last look; and once, when a node becomes the searcher, the window's
    index rows): CPU seconds of this process (DuckDB's threads included) per span. A lake of ``--look-spans``
    spans in flushes of ``--look-flush`` spans (traces of 8 spans), then one more flush interval's worth."""
    from datetime import UTC, datetime, timedelta

    import duckdb

    from agentotel_eval.collector.config import default_config
    from agentotel_eval.collector.lake.reconciler import TRACE_WINDOW, Reconciler
    from agentotel_eval.store import lake
    from agentotel_eval.store.schema import migrate

    table = servers.new_lake()
    settings = table.settings()
    local = duckdb.connect()
    migrate(local)
    writer = lake.open_writer(settings, lake.node_schema(local))
    per_trace = 8
    flushes = max(1, args.look_spans // args.look_flush)
    now = datetime.now(UTC)
    began = now - timedelta(seconds=flushes + 30)
    built = time.monotonic()
    nxt = synthetic_flushes(writer, flushes, args.look_flush, per_trace, 1, began)
    print(
        f"  a lake of {flushes * args.look_flush:,} spans in {flushes} flushes built in "
        f"{time.monotonic() - built:.0f} s",
        flush=True,
    )
    out: dict[str, Any] = {
        "spans": flushes * args.look_flush,
        "flushes": flushes,
        "spans_per_trace": per_trace,
    }
    reader = lake.open_reader(settings)
    try:
        cur = reader.cursor()
        since = began - timedelta(seconds=1)
        cur.execute(
            SPANS_SCAN_SEARCH, [since, TRACE_WINDOW, TRACE_WINDOW]
        ).fetchall()  # warm: metadata read once
        cpu, wall = time.process_time(), time.monotonic()
        found = cur.execute(SPANS_SCAN_SEARCH, [since, TRACE_WINDOW, TRACE_WINDOW]).fetchall()
        out["before"] = {
            "cpu_s": time.process_time() - cpu,
            "wall_s": time.monotonic() - wall,
            "spans": flushes * args.look_flush,
            "split": len(found),
        }
        cur.close()
    finally:
        reader.close()
    reconciler = Reconciler(
        settings, default_config(), "node-a", interval=10.0, quiet=13.0, live_for=3600.0, clock=lambda: now
    )
    reconciler.open()
    try:
        cpu, wall = time.process_time(), time.monotonic()
        reconciler.follow(now)  # a new searcher: the window's index rows, once
        out["takeover"] = {
            "cpu_s": time.process_time() - cpu,
            "wall_s": time.monotonic() - wall,
            "spans": flushes * args.look_flush,
            "index_rows": reconciler.parts_read,
            "split": len(reconciler.splits),
        }
        # one look's worth of new flushes (an interval of 10 s at 3 x 7,700 spans/s), then the look
        new_spans = args.look_new
        synthetic_flushes(
            writer,
            max(1, new_spans // args.look_flush),
            args.look_flush,
            per_trace,
            nxt,
            now - timedelta(seconds=5),
        )
        read_before = reconciler.parts_read
        cpu, wall = time.process_time(), time.monotonic()
        reconciler.follow(now)
        out["look"] = {
            "cpu_s": time.process_time() - cpu,
            "wall_s": time.monotonic() - wall,
            "spans": max(1, new_spans // args.look_flush) * args.look_flush,
            "index_rows": reconciler.parts_read - read_before,
            "split": len(reconciler.splits),
        }
        (held,) = reconciler._parts.execute("SELECT count(*) FROM parts").fetchone()  # type: ignore[union-attr]
        out["memory_rows"] = int(held)
    finally:
        reconciler.close()
        writer.close()
    b, t, look = out["before"], out["takeover"], out["look"]
    for name, v in (
        ("before: spans scanned at each look", b),
        ("after: a new searcher reads the window's index once", t),
        ("after: a look reads what was copied since", look),
    ):
        print(
            f"  {name}: {v['spans']:,} spans, {v['cpu_s']:.3f} s CPU, {v['wall_s']:.3f} s wall = "
            f"{1e6 * v['cpu_s'] / v['spans']:.3f} µs CPU a span; {v['split']} split traces",
            flush=True,
        )
    # Before, every look for 15 minutes after a change scanned the spans copied since 15 minutes before it:
    # the window grows from 15 to 30 minutes, 22.5 on average, so at a 10 s interval each copied span was
    # scanned by about 135 looks. After, each is read once, by the look after its flush.
    scans = (TRACE_WINDOW.total_seconds() * 1.5) / args.look_interval
    before_us = 1e6 * b["cpu_s"] / b["spans"]
    after_us = 1e6 * look["cpu_s"] / look["spans"]
    out["per_copied_span_us"] = {"before": before_us * scans, "after": after_us, "scans_before": scans}
    out["ratio"] = before_us * scans / max(after_us, 1e-12)
    print(
        f"  CPU per span copied in the 15 minutes after a change ({args.look_interval:g} s looks): before "
        f"{before_us * scans:.1f} µs (each span scanned by ~{scans:.0f} looks at {before_us:.3f} µs), after "
        f"{after_us:.3f} µs (its index row read once, with the look's fixed cost): {out['ratio']:.0f}x less; "
        f"a new searcher reads the window once at {1e6 * t['cpu_s'] / t['spans']:.3f} µs a span; it holds "
        f"{out['memory_rows']:,} index rows in memory",
        flush=True,
    )
    return out


def part_flush(servers: Servers, args: argparse.Namespace) -> dict[str, Any]:
    """What the index of trace parts adds to a flush: the same batch of ``--flush-spans`` spans (traces of 8,
    one root each, every column filled as the fixtures fill them) appended to the lake in one transaction with
    its flush mark, with and without the index rows, alternating ``--flush-rounds`` times: CPU of this process
    (DuckDB's threads included) and wall time a span."""
    from datetime import UTC, datetime

    import duckdb

    from agentotel_eval.store import lake
    from agentotel_eval.store.schema import migrate

    local = duckdb.connect()
    migrate(local)
    n = args.flush_spans
    local.execute(
        "INSERT INTO spans SELECT md5((i // 8)::VARCHAR), md5(i::VARCHAR)[:16], CASE WHEN i % 8 = 0 THEN "
        "NULL ELSE md5((i - i % 8)::VARCHAR)[:16] END, 'execute_tool search', 'INTERNAL', now(), "
        "now(), 'OK', NULL, 'svc', "
        '\'scope\', \'{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}\', '
        "'{\"service.name\": \"svc\"}', '[]', '1.0', '[]', NULL, 0, 0, 0, now() FROM range(?) r(i)",
        [n],
    )
    rows = local.execute("SELECT * FROM spans").to_arrow_table()
    con = lake.open_writer(servers.new_lake().settings(), lake.node_schema(local))
    results: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
    try:
        for _ in range(args.flush_rounds):
            for name in ("without", "with"):
                now = datetime.now(UTC)
                cpu, wall = time.process_time(), time.monotonic()
                con.execute("BEGIN")
                lake.append(con, "spans", rows, {"node": "bench", "flushed_at": now})
                if name == "with":
                    lake.append_parts(con, rows, "bench", now)
                con.execute(f"INSERT INTO lake.{lake.MARKS} VALUES ('bench', 'spans', ?, ?)", [now, now])
                con.execute("COMMIT")
                results[name].append((time.process_time() - cpu, time.monotonic() - wall))
    finally:
        con.close()
    out: dict[str, Any] = {"spans": n, "rounds": args.flush_rounds}
    for name, got in results.items():
        out[name] = {
            "cpu_us": 1e6 * statistics.median(c for c, _ in got) / n,
            "wall_us": 1e6 * statistics.median(w for _, w in got) / n,
        }
    added = out["with"]["cpu_us"] - out["without"]["cpu_us"]
    out["added_cpu_us"] = added
    print(
        f"  a flush of {n:,} spans (median of {args.flush_rounds}): {out['without']['cpu_us']:.2f} µs CPU a "
        f"span without the index of trace parts, {out['with']['cpu_us']:.2f} with it (+{added:.2f} µs; wall "
        f"{out['without']['wall_us']:.2f} / {out['with']['wall_us']:.2f} µs)",
        flush=True,
    )
    return out


def part_versus(servers: Servers, args: argparse.Namespace) -> dict[str, Any]:
    """One lake node's stored spans/s, this checkout against ``--baseline`` (another checkout, e.g. a git
    worktree of the previous commit), alternating, ``--rounds`` times each, under the
    same closed-loop load."""
    if not args.baseline:
        raise SystemExit("--part versus needs --baseline DIR (a checkout of the code to compare with)")
    baseline = Path(args.baseline).resolve()
    phases: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
    for _ in range(args.rounds):
        for name, root in (("baseline", baseline), ("this", ROOT)):
            phase = throughput_phase(servers, args, 1, True, root=root)
            phases[name].append(phase)
    rate = {k: statistics.median(p["rate"] for p in v) for k, v in phases.items()}
    cpu = {k: statistics.median(p["nodes_cpu_us"] for p in v) for k, v in phases.items()}
    print(
        f"\n1 lake node, {args.rounds} rounds alternating (median): baseline {rate['baseline']:,.0f} spans/s "
        f"({cpu['baseline']:.0f} µs CPU a span), this {rate['this']:,.0f} spans/s ({cpu['this']:.0f} µs): "
        f"{rate['this'] / rate['baseline']:.2f}x",
        flush=True,
    )
    return {"phases": phases, "rate": rate, "cpu_us": cpu, "ratio": rate["this"] / rate["baseline"]}


def throughput_phase(
    servers: Servers,
    args: argparse.Namespace,
    n_nodes: int,
    with_lake: bool,
    via_router: bool = False,
    root: Path | None = None,
) -> dict[str, Any]:
    label = (
        f"{n_nodes} node{'s' if n_nodes > 1 else ''}, {'lake' if with_lake else 'no lake'}"
        + (", via TraceRouter" if via_router else "")
        + (f", from {root}" if root and root != ROOT else "")
    )
    folder = Path(tempfile.mkdtemp(prefix="bench-lake-"))
    table = servers.new_lake("5s")
    nodes = [
        make_node(folder, f"node-{chr(97 + i)}", table, with_lake=with_lake, root=root)
        for i in range(n_nodes)
    ]
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    router = ctx.Process(target=router_main, args=([n.endpoint for n in nodes], False, child))
    others = {}
    try:
        started_in = start_all(nodes)
        if via_router:
            router.start()
            endpoint, others["router"] = parent.recv()
            load = Load(
                [endpoint],
                exporters=args.exporters,
                seconds=args.seconds,
                warmup=args.warmup,
                ring_routed=False,
            ).start()
        else:
            load = Load(
                [n.endpoint for n in nodes],
                exporters=args.exporters,
                seconds=args.seconds,
                warmup=args.warmup,
                ring_routed=True,
            ).start()
        window = CpuWindow(servers, nodes, others)
        sleep_until(load.window[0])
        window.begin()
        sleep_until(load.window[1])
        cpu = window.end()
        # the node's own lake figures (its /metrics; 0 where a version has none of them)
        lake_metrics = {n.name: {m: n.metric(m) for m in LAKE_METRICS} for n in nodes} if with_lake else {}
        results = load.results()
        if via_router:
            parent.send("stop")
            parent.recv()
            router.join()
        stopped_in = stop_all(nodes)
        acked = all_acked(results)
        if with_lake:
            con = raw_lake(table.settings())
            try:
                check = check_stored(con, "lake.spans", acked)
            finally:
                con.close()
        else:
            import duckdb

            con = duckdb.connect()
            try:
                for i, node in enumerate(nodes):
                    con.execute(f"ATTACH '{node.db}' AS n{i} (READ_ONLY)")
                union = " UNION ALL ".join(
                    f"SELECT trace_id, span_id FROM n{i}.spans" for i in range(len(nodes))
                )
                con.execute(f"CREATE TEMPORARY VIEW all_spans AS {union}")
                check = check_stored(con, "all_spans", acked)
            finally:
                con.close()
    finally:
        tear_down(nodes, router, folder)
    seconds = load.window[1] - load.window[0]
    per_node = acked_in(results, *load.window)
    total = sum(per_node.values())
    if via_router:  # the generator sees the router only: a node's share is the ring's, about 1/N
        per_node = Counter({i: total / n_nodes for i in range(n_nodes)})
    node_cpu = {n.name: cpu.get(n.name, 0.0) for n in nodes}
    phase = {
        "label": label,
        "nodes": n_nodes,
        "lake": with_lake,
        "rate": total / seconds,
        "per_node_rate": [per_node[i] / seconds for i in range(n_nodes)],
        "node_cpu_us": [1e6 * node_cpu[n.name] / max(per_node[i], 1) for i, n in enumerate(nodes)],
        "nodes_cpu_us": 1e6 * sum(node_cpu.values()) / max(total, 1),
        "nodes_cores": sum(node_cpu.values()) / seconds,
        "pg_cpu_us": 1e6 * cpu.get("lake postgres", 0.0) / max(total, 1) if with_lake else 0.0,
        "s3_cpu_us": 1e6 * cpu.get("lake s3", 0.0) / max(total, 1) if with_lake else 0.0,
        "exporters_cpu_us": 1e6 * sum(r["cpu_window_s"] for r in results) / max(total, 1),
        "via_router": via_router,
        "router_cpu_us": 1e6 * cpu.get("router", 0.0) / max(total, 1),
        "machine_busy": cpu["machine_busy_share"],
        "errors": sum(sum(r["errors"].values()) for r in results),
        # the cores busy with anything else on the machine (other work, this script): a phase that had fewer
        # cores for its nodes than the others is to be read with that
        "other_cores": cpu["machine_busy_share"] * (os.cpu_count() or 1)
        - (
            sum(node_cpu.values())
            + cpu.get("lake postgres", 0.0)
            + cpu.get("lake s3", 0.0)
            + cpu.get("router", 0.0)
            + sum(r["cpu_window_s"] for r in results)
        )
        / seconds,
        "started_s": started_in,
        "stopped_s": stopped_in,
        "check": check,
        "load_avg": os.getloadavg()[0],
        "lake_metrics": lake_metrics,
    }
    where = "lake (distinct spans)" if with_lake else "the nodes' files"
    ok = check["stored"] == check["expected"] and check["short_traces"] == 0
    if not ok:
        LOST.append(f"throughput {label}")
    print(
        f"[throughput {label}] {phase['rate']:,.0f} spans/s stored over {seconds:.0f} s "
        f"(per node {', '.join(f'{r:,.0f}' for r in phase['per_node_rate'])}); node CPU "
        f"{', '.join(f'{c:.0f}' for c in phase['node_cpu_us'])} µs/span "
        f"({phase['nodes_cores']:.2f} cores in all)"
        + (
            f", lake servers: PostgreSQL {phase['pg_cpu_us']:.1f} + S3 (moto) "
            f"{phase['s3_cpu_us']:.1f} µs/span"
            if with_lake
            else ""
        )
        + (f", router {phase['router_cpu_us']:.1f} µs/span" if via_router else "")
        + f", exporters {phase['exporters_cpu_us']:.1f} µs/span; machine {phase['machine_busy']:.0%} busy "
        f"({os.cpu_count()} cores; {phase['other_cores']:.2f} busy with other processes), load avg "
        f"{phase['load_avg']:.1f}\n"
        f"    {check['expected']:,} spans acknowledged, {check['stored']:,} in {where}"
        f" ({check['rows'] - check['stored']:,} stored twice, {check['short_traces']} traces short): "
        f"{'nothing lost' if ok else 'LOST SPANS'}; {phase['errors']} export errors; started in "
        f"{started_in:.1f} s, stopped (last flush) in {stopped_in:.1f} s",
        flush=True,
    )
    if lake_metrics:
        summed = {m: sum(v[m] for v in lake_metrics.values()) for m in LAKE_METRICS}
        last = ", ".join(f"{v['lake_flush_seconds']:.2f}" for v in lake_metrics.values())
        print(
            f"    the nodes' /metrics at the window's end: {summed['lake_flushes_total']:.0f} flushes (the "
            f"last took {last} s), "
            f"{summed['lake_reconcile_looks_total']:.0f} reconciler looks, "
            f"{summed['lake_peer_reads_total']:.0f} peer reads ({summed['lake_peer_spans_total']:.0f} spans)",
            flush=True,
        )
    return phase


#: (nodes, with a lake, through TraceRouter) of each throughput phase
SETUPS = ((1, False, False), (1, True, False), (2, True, False), (3, True, False), (3, True, True))


def part_throughput(servers: Servers, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"router": router_ceiling(args), "phases": []}
    for _ in range(args.rounds):
        for n, with_lake, via_router in SETUPS:
            out["phases"].append(throughput_phase(servers, args, n, with_lake, via_router))
    phases = out["phases"]

    def median(setup: tuple[int, bool, bool], key: str) -> float:
        return statistics.median(p[key] for p in phases if (p["nodes"], p["lake"], p["via_router"]) == setup)

    base = median(SETUPS[0], "rate")
    print(
        f"\nthroughput ({os.cpu_count()} cores shared by every node, the lake's servers and the exporters; "
        f"{args.exporters} exporters closed loop, 512 spans/request, {args.seconds:g} s windows, median of "
        f"{args.rounds})"
    )
    print(
        f"{'setup':<30} {'stored spans/s':>15} {'per node':>10} {'vs 1 node no lake':>18} "
        f"{'node µs CPU/span':>17} {'lake servers µs/span':>21}"
    )
    for setup in SETUPS:
        n, with_lake, via_router = setup
        rate = median(setup, "rate")
        name = f"{n} node{'s' if n > 1 else ''}, {'lake' if with_lake else 'no lake'}" + (
            ", via router" if via_router else ""
        )
        print(
            f"{name:<30} {rate:>15,.0f} {rate / n:>10,.0f} {rate / base:>17.2f}x "
            f"{median(setup, 'nodes_cpu_us'):>17.0f} "
            f"{median(setup, 'pg_cpu_us') + median(setup, 's3_cpu_us'):>21.1f}"
        )
    out["flusher_cost"] = 1 - median(SETUPS[1], "rate") / base
    print(
        f"the flusher's cost on one node: {out['flusher_cost']:.1%} of its stored spans/s "
        f"(1 node with a lake / without = {median(SETUPS[1], 'rate') / base:.2f}); node CPU a stored span "
        f"{median(SETUPS[1], 'nodes_cpu_us'):.0f} µs with the lake, {median(SETUPS[0], 'nodes_cpu_us'):.0f} "
        "without",
        flush=True,
    )
    one = [p for p in phases if (p["nodes"], p["lake"], p["via_router"]) == SETUPS[1]]
    cores = statistics.median(p["nodes_cores"] for p in one)
    per_span = median(SETUPS[1], "nodes_cpu_us")
    lake_per_span = median(SETUPS[3], "pg_cpu_us") + median(SETUPS[3], "s3_cpu_us")
    print(
        f"the bound: a lake node spends {per_span:.0f} µs of CPU a stored span (here it had {cores:.2f} of "
        f"the {os.cpu_count()} cores: {1e6 * cores / per_span:,.0f} spans/s); N nodes on N such machines "
        f"store about N times that, while the lake's servers spend {lake_per_span:.1f} µs a span (PostgreSQL "
        f"+ moto's S3, 3 nodes) and the gateway routes them",
        flush=True,
    )
    return out


# ------------------------------------------------------------------------------------------------------------
# part 2: lag from ack to visible in the lake


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else math.nan


def lag_phase(servers: Servers, args: argparse.Namespace, flush: str) -> dict[str, Any]:
    import grpc
    from bench_ingest import TRACE_PATH, RequestFactory, trace_prefix

    folder = Path(tempfile.mkdtemp(prefix="bench-lake-"))
    table = servers.new_lake(flush)
    node = make_node(folder, "node-a", table)
    seen_spans: dict[str, float] = {}
    seen_runs: dict[str, float] = {}
    seen_wall: dict[str, float] = {}
    sent: dict[str, tuple[float, float]] = {}  # trace id -> (monotonic, wall) at its acknowledgement
    polls: list[float] = []
    stop = threading.Event()
    try:
        start_all([node])
        load = Load(
            [node.endpoint],
            exporters=2,
            seconds=args.lag_seconds,
            warmup=1.0,
            ring_routed=False,
            rate=args.lag_rate,
        ).start()
        run = next(_runs)
        markers = RequestFactory(MARKER_EXPORTER, 1, run)  # one recorded trace a request
        call = grpc.insecure_channel(node.endpoint).unary_unary(TRACE_PATH)
        con = raw_lake(table.settings())

        def poll() -> None:
            while not stop.is_set():
                pending = [t for t in sent if t not in seen_spans or t not in seen_runs]
                if pending:
                    started = time.monotonic()
                    spans = con.execute(
                        "SELECT DISTINCT trace_id FROM lake.spans WHERE trace_id IN (SELECT unnest(?))",
                        [pending],
                    ).fetchall()
                    runs = con.execute(
                        "SELECT DISTINCT trace_id FROM lake.agent_runs WHERE trace_id IN (SELECT unnest(?))",
                        [pending],
                    ).fetchall()
                    now = time.monotonic()
                    polls.append(now - started)
                    for (t,) in spans:
                        seen_spans.setdefault(t, now)
                        seen_wall.setdefault(t, time.time())
                    for (t,) in runs:
                        seen_runs.setdefault(t, now)
                stop.wait(0.05)

        poller = threading.Thread(target=poll, daemon=True)
        sleep_until(load.window[0])
        poller.start()
        seq = 0
        while time.monotonic() < load.window[1]:
            seq += 1
            tid = struct.pack(">QQ", trace_prefix(run, MARKER_EXPORTER, seq), 1)
            stamp = time.time_ns()
            for msg, _, start, end in markers.messages:
                msg.trace_id = tid
                msg.start_time_unix_nano = stamp + start
                msg.end_time_unix_nano = stamp + end
            call(markers.request.SerializeToString(), timeout=30)
            sent[tid.hex()] = (time.monotonic(), time.time())
            time.sleep(0.37)
        results = load.results()
        deadline = time.monotonic() + 3 * float(flush.rstrip("s")) + 20
        while time.monotonic() < deadline and (len(seen_spans) < len(sent) or len(seen_runs) < len(sent)):
            time.sleep(0.1)
        stop.set()
        poller.join(30)
        flushed = dict(
            con.execute(
                "SELECT trace_id, epoch(min(flushed_at)) FROM lake.spans WHERE trace_id IN "
                "(SELECT unnest(?)) GROUP BY trace_id",
                [list(sent)],
            ).fetchall()
        )
        con.close()
        stop_all([node])
    finally:
        stop.set()
        node.kill()
        shutil.rmtree(folder, ignore_errors=True)
    span_lag = [seen_spans[t] - sent[t][0] for t in sent if t in seen_spans]
    run_lag = [seen_runs[t] - sent[t][0] for t in sent if t in seen_runs]
    flushed_lag = [flushed[t] - sent[t][1] for t in sent if t in flushed]
    flush_took = [seen_wall[t] - flushed[t] for t in sent if t in flushed and t in seen_wall]
    seconds = load.window[1] - load.window[0]
    load_rate = sum(acked_in(results, *load.window).values()) / seconds
    phase = {
        "flush_interval": flush,
        "markers": len(sent),
        "spans_seen": len(span_lag),
        "runs_seen": len(run_lag),
        "spans_p50": _pct(span_lag, 0.5),
        "spans_p95": _pct(span_lag, 0.95),
        "spans_max": max(span_lag),
        "runs_p50": _pct(run_lag, 0.5),
        "runs_p95": _pct(run_lag, 0.95),
        "runs_max": max(run_lag, default=0),
        "flush_start_p50": _pct(flushed_lag, 0.5),
        "flush_start_p95": _pct(flushed_lag, 0.95),
        "flush_to_seen_p50": _pct(flush_took, 0.5),
        "flush_to_seen_max": max(flush_took, default=math.nan),
        "poll_p50_ms": 1000 * _pct(polls, 0.5),
        "poll_p95_ms": 1000 * _pct(polls, 0.95),
        "load_rate": load_rate,
    }
    print(
        f"[lag flush_interval {flush}] {len(sent)} markers under {load_rate:,.0f} spans/s on 1 node "
        f"({os.cpu_count()} cores): spans visible in lake.spans p50 {phase['spans_p50']:.2f} s, p95 "
        f"{phase['spans_p95']:.2f} s, max {phase['spans_max']:.2f} s after the ack ({len(span_lag)} seen); "
        f"the run in lake.agent_runs p50 {phase['runs_p50']:.2f} s, p95 {phase['runs_p95']:.2f} s "
        f"({len(run_lag)} seen; 2 s grace first); the flush that took the spans began p50 "
        f"{phase['flush_start_p50']:.2f} s (p95 {phase['flush_start_p95']:.2f} s) after the ack and was seen "
        f"p50 {phase['flush_to_seen_p50']:.2f} s (max {phase['flush_to_seen_max']:.2f} s) after it began; a "
        f"poll took p50 {phase['poll_p50_ms']:.0f} ms, p95 {phase['poll_p95_ms']:.0f} ms",
        flush=True,
    )
    return phase


def part_lag(servers: Servers, args: argparse.Namespace) -> list[dict[str, Any]]:
    return [lag_phase(servers, args, flush) for flush in ("5s", "1s")]


# ------------------------------------------------------------------------------------------------------------
# part 3: pages over the lake against a file


def _wait_http(host: str, port: int, proc: subprocess.Popen, what: str, timeout: float = 120.0) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode})")
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn = http.client.HTTPConnection(host, port, timeout=5)
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            response.read()
            conn.close()
            if response.status == 200:
                return time.monotonic() - started
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer /healthz within {timeout:g} s")


def _timed(command: list[str], repeat: int) -> tuple[float, str]:
    """The median wall time of running ``command`` and its last output."""
    times, output = [], ""
    for _ in range(repeat):
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
        times.append(time.monotonic() - started)
        if done.returncode:
            raise RuntimeError(f"{' '.join(command)}: {done.returncode} {done.stderr[-500:]}")
        output = done.stdout.strip()
    return statistics.median(times), output


def fragmented_copy(db: Path, settings: Any, flushes: int, node: str) -> float:
    """Copy the file's rows to a lake as ``flushes`` flushes would have (the commits' time range cut in equal
    slices, each slice's rows of every table and the marks in one lake transaction, as ``LakeFlusher`` does):
    a lake no maintenance has merged yet. Returns the seconds it took."""
    from datetime import UTC, datetime

    import duckdb

    from agentotel_eval.collector.lake.flusher import _MARK_COLUMNS
    from agentotel_eval.store import lake

    started = time.monotonic()
    src = duckdb.connect(str(db), read_only=True)
    try:
        schema = lake.node_schema(src)
        stamps = [
            src.execute(f"SELECT min({c}), max({c}) FROM {t}").fetchone() for t, c in _MARK_COLUMNS.items()
        ]
        lo = min(s[0] for s in stamps if s[0] is not None)
        hi = max(s[1] for s in stamps if s[1] is not None)
        con = lake.open_writer(settings, schema)
        try:
            edges = [lo - (hi - lo) / flushes] + [lo + (hi - lo) * (i + 1) / flushes for i in range(flushes)]
            for since, upper in itertools.pairwise(edges):
                batches = [
                    (
                        t,
                        src.execute(
                            f"SELECT * FROM {t} WHERE {c} > ? AND {c} <= ?", [since, upper]
                        ).to_arrow_table(),
                    )
                    for t, c in _MARK_COLUMNS.items()
                ]
                batches = [(t, rows) for t, rows in batches if rows.num_rows]
                if not batches:
                    continue
                now = datetime.now(UTC)
                con.execute("BEGIN")
                for t, rows in batches:
                    lake.append(con, t, rows, {"node": node, "flushed_at": now})
                    con.execute(
                        f"INSERT INTO {lake.LAKE}.{lake.MARKS} VALUES (?, ?, ?, ?)", [node, t, upper, now]
                    )
                con.execute("COMMIT")
        finally:
            con.close()
    finally:
        src.close()
    return time.monotonic() - started


def part_pages(servers: Servers, args: argparse.Namespace) -> dict[str, Any]:
    import bench_ui
    import duckdb

    from agentotel_eval.store import lake
    from tests.support.lake_servers import free_port

    sidecar = Path(args.pages_db + ".build.json")
    fresh = (
        os.path.exists(args.pages_db)
        and sidecar.exists()
        and time.time() - os.path.getmtime(args.pages_db) < 12 * 3600
        and not args.rebuild
    )
    if fresh:
        con = duckdb.connect(args.pages_db, read_only=True)
        fresh = con.execute("SELECT count(*) FROM agent_runs").fetchone()[0] >= args.runs
        con.close()
    if not fresh:
        print(
            f"[pages] building {args.runs:,} runs into {args.pages_db} (bench_ui.py --build-only)", flush=True
        )
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "bench_ui.py"),
                "--db",
                args.pages_db,
                "--rebuild",
                "--build-only",
                "--runs",
                str(args.runs),
            ],
            check=True,
            cwd=ROOT,
            timeout=1800,
        )
    summary = bench_ui.db_summary(args.pages_db)
    counts = summary["counts"]
    folder = Path(tempfile.mkdtemp(prefix="bench-lake-"))
    db = folder / "pages.duckdb"
    shutil.copy(args.pages_db, db)
    merged = servers.new_lake("5s")
    out: dict[str, Any] = {"counts": counts, "db_mb": summary["db_mb"]}
    file_server = None
    uis: dict[str, tuple[subprocess.Popen, int]] = {}
    try:
        # a node started on the file copies every row to the fresh lake (one flush); stopping
        # it flushes the rest
        node = make_node(folder, "node-a", merged, db=str(db))
        started = time.monotonic()
        start_all([node])
        stop_all([node])
        out["copy_s"] = time.monotonic() - started
        con = raw_lake(merged.settings())
        in_lake = {t: con.execute(f"SELECT count(*) FROM lake.{t}").fetchone()[0] for t in lake.TABLES}
        con.close()
        print(
            f"[pages] {counts['agent_runs']:,} runs, {counts['spans']:,} spans, {counts['tool_calls']:,} "
            f"calls, {counts['evaluations']:,} evaluations ({summary['db_mb']:.0f} MB file); a node started "
            f"on the file copied them to a fresh lake and stopped in {out['copy_s']:.1f} s; "
            f"lake rows: {in_lake}",
            flush=True,
        )
        out["lake_rows"] = in_lake
        sides = {"lake": (merged, node.config)}
        if args.fragments:
            fragmented = servers.new_lake("5s")
            config = folder / "fragmented.toml"
            config.write_text(lake_toml(fragmented, "node-a"))
            out["fragmented_copy_s"] = fragmented_copy(db, fragmented.settings(), args.fragments, "node-a")
            print(
                f"[pages] the same rows copied to another lake as {args.fragments} flushes (unmerged small "
                f"files) in {out['fragmented_copy_s']:.1f} s",
                flush=True,
            )
            sides[f"lake {args.fragments} flushes"] = (fragmented, config)

        file_server = bench_ui.Server(str(db))
        file_server.wait_healthy()
        for side, (_, config) in sides.items():
            port = free_port()
            log_file = (folder / f"ui-{port}.log").open("w")
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agentotel_eval.cli",
                    "lake",
                    "ui",
                    "--config",
                    str(config),
                    "--http",
                    f"127.0.0.1:{port}",
                ],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            uis[side] = (proc, port)
            _wait_http("127.0.0.1", port, proc, f"agentotel-eval lake ui ({side})")
        print(
            f"[pages] serve on the file (DuckDB {duckdb.__version__}) and agentotel-eval lake ui over "
            f"{', '.join(sides)}; up to {args.page_requests} requests per route and side after "
            f"{bench_ui.WARMUP} warm-ups ({os.cpu_count()} cores); ms to the whole answer",
            flush=True,
        )
        wanted = (
            "healthz",
            "overview",
            "overview since=all",
            "runs",
            "runs result=fail",
            "run page",
            "api runs latest",
        )
        routes = [
            r
            for r in bench_ui.routes(file_server.host, file_server.port, args.page_requests, "Atlantis", 7)
            if r.name in wanted
        ]
        targets = {"file": (file_server.host, file_server.port)} | {
            side: ("127.0.0.1", port) for side, (_, port) in uis.items()
        }
        budget = args.page_budget / len(routes) / len(targets)
        rows = []
        for route in routes:
            row: dict[str, Any] = {"route": route.name, "path": route.paths[0]}
            text = []
            for side, (host, port) in targets.items():
                r = bench_ui.measure(host, port, route, args.page_requests, budget_s=budget, min_requests=5)
                if r.status != "ok":
                    row[side] = {"status": r.status, "detail": r.detail}
                    text.append(f"{side} {r.status.upper()} {r.detail[:100]}")
                else:
                    row[side] = {"n": len(r.ms), "p50": r.pct(0.5), "p95": r.pct(0.95), "bytes": r.bytes}
                    text.append(f"{side} p50 {r.pct(0.5):7.1f} p95 {r.pct(0.95):7.1f} (n {len(r.ms):2})")
            rows.append(row)
            print(f"  {route.name:<20} " + " | ".join(text), flush=True)
        out["routes"] = rows
        for proc, _ in uis.values():
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        uis.clear()

        # count(*) over spans: the CLI each way (a process: the node's /v1/query, or the lake attached), and
        # in process after the attach (the spans view, newest row per span, and the raw table)
        count = "SELECT count(*) FROM spans"
        cli = [sys.executable, "-m", "agentotel_eval.cli", "query", "--format", "csv"]
        file_cli, file_answer = _timed([*cli, "--db", str(db), count], 3)
        over_http = bench_ui.measure(
            file_server.host,
            file_server.port,
            bench_ui.Route("count spans", ["/v1/query"], "POST", json.dumps({"sql": count}).encode(), "json"),
            10,
        )
        out["count"] = {
            "file_cli_s": file_cli,
            "file_http_ms": over_http.pct(0.5),
            "file_answer": file_answer.splitlines()[-1],
        }
        print(
            f"[pages] count(*) over spans: agentotel-eval query --db (to the node's /v1/query) "
            f"{file_cli:.2f} s; POST /v1/query to the node p50 {over_http.pct(0.5):.1f} ms; answer "
            f"{file_answer.splitlines()[-1]}",
            flush=True,
        )
        for side, (table, config) in sides.items():
            lake_cli, lake_answer = _timed([*cli, "--lake", str(config), count], 3)
            opened = time.monotonic()
            reader = lake.open_reader(table.settings())
            attach_s = time.monotonic() - opened
            view, raw = [], []
            for _ in range(5):
                t0 = time.monotonic()
                reader.execute(count).fetchone()
                t1 = time.monotonic()
                reader.execute("SELECT count(*) FROM lake.spans").fetchone()
                raw.append(time.monotonic() - t1)
                view.append(t1 - t0)
            reader.close()
            out["count"][side] = {
                "cli_s": lake_cli,
                "attach_s": attach_s,
                "view_ms": 1000 * statistics.median(view),
                "raw_ms": 1000 * statistics.median(raw),
                "answer": lake_answer.splitlines()[-1],
            }
            print(
                f"    {side}: agentotel-eval query --lake {lake_cli:.2f} s (answer "
                f"{lake_answer.splitlines()[-1]}); in process the reader attached in {attach_s:.2f} s, then "
                f"the spans view (newest row per span) {1000 * statistics.median(view):.0f} ms, raw "
                f"lake.spans {1000 * statistics.median(raw):.0f} ms",
                flush=True,
            )
    finally:
        for proc, _ in uis.values():
            proc.kill()
            proc.wait()
        if file_server is not None:
            file_server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------------------------------------
# part 4: a node killed under load and restarted


def _node_file(db: Path) -> tuple[int, Any]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        n, newest = con.execute("SELECT count(*), max(ingested_at) FROM spans").fetchone()
    finally:
        con.close()
    return int(n), newest


def part_recovery(servers: Servers, args: argparse.Namespace) -> dict[str, Any]:
    pre, down, post = 10.0, 8.0, 10.0  # load before the kill, down, and after the restarted node listens
    folder = Path(tempfile.mkdtemp(prefix="bench-lake-"))
    table = servers.new_lake("5s")
    nodes = [make_node(folder, f"node-{c}", table) for c in "abc"]
    victim = nodes[1]
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    router = ctx.Process(target=router_main, args=([n.endpoint for n in nodes], True, child))
    out: dict[str, Any] = {"rate": args.recovery_rate}
    try:
        start_all(nodes)
        router.start()
        endpoint, _ = parent.recv()
        load = Load(
            [endpoint],
            exporters=args.exporters,
            seconds=pre + down + 180,
            warmup=0.0,
            ring_routed=False,
            rate=args.recovery_rate,
            spans_per_request=args.recovery_request,
            lead=4.0,
        ).start()
        con = raw_lake(table.settings())
        sleep_until(load.window[0] + pre)
        killed_at = time.monotonic()
        victim.kill()
        killed_in = time.monotonic() - killed_at
        file_spans, newest = _node_file(victim.db)
        lake_spans = con.execute("SELECT count(*) FROM lake.spans WHERE node = ?", [victim.name]).fetchone()[
            0
        ]
        unflushed = file_spans - lake_spans
        sleep_until(killed_at + down)
        restarted_at = time.monotonic()
        victim.start()
        victim.wait_ready()
        ready_s = time.monotonic() - restarted_at
        caught_s = back_s = math.nan  # its flush mark past the kill; its first span stored after the restart
        while time.monotonic() - restarted_at < ready_s + 60 and (math.isnan(caught_s) or math.isnan(back_s)):
            if math.isnan(caught_s):
                (mark,) = con.execute(
                    "SELECT max(watermark) FROM lake.flush_marks WHERE node = ? AND table_name = 'spans'",
                    [victim.name],
                ).fetchone()
                if mark is not None and newest is not None and mark >= newest:
                    caught_s = time.monotonic() - restarted_at
            if math.isnan(back_s) and victim.metric("spans_stored_total") > 0:
                back_s = time.monotonic() - restarted_at
            time.sleep(0.1)
        recovered = victim.metric("traces_recovered_total")
        sleep_until(restarted_at + ready_s + post)
        load.halt.set()
        ended_at = time.monotonic()
        in_lake_after = con.execute(
            "SELECT count(DISTINCT span_id || trace_id) FROM lake.spans WHERE node = ? AND ingested_at <= ?",
            [victim.name, newest],
        ).fetchone()[0]
        con.close()
        results = load.results()
        parent.send("stop")
        out["failovers"] = parent.recv()["failovers"]
        router.join()
        stop_all(nodes)
        con = raw_lake(table.settings())
        try:
            check = check_stored(con, "lake.spans", all_acked(results))
        finally:
            con.close()
    finally:
        tear_down(nodes, router, folder)
    records = sorted((rec, r["spans"]) for r in results for rec in r["records"])
    errors_after = [done - killed_at for (sent, done, ok, _), _ in records if not ok and done >= killed_at]
    acks = sorted(done for (sent, done, ok, _), _ in records if ok)
    gaps_before = [b - a for a, b in itertools.pairwise(acks) if killed_at - pre + 2 <= a < killed_at]
    gaps_after = [b - a for a, b in itertools.pairwise(acks) if killed_at - 0.5 <= b <= killed_at + 5]
    in_flight = [done - sent for (sent, done, ok, _), _ in records if sent <= killed_at <= done]
    latency = {
        name: [1000 * (done - sent) for (sent, done, ok, _), _ in records if lo <= sent < hi]
        for name, lo, hi in (("before", killed_at - 5, killed_at), ("after", killed_at, killed_at + 3))
    }
    rate_around = {}
    for name, lo, hi in (
        ("before", killed_at - 5, killed_at),
        ("down", killed_at + 1, restarted_at),
        ("after", restarted_at + ready_s + 2, ended_at),
    ):
        rate_around[name] = sum(n for (sent, done, ok, _), n in records if ok and lo <= done <= hi) / max(
            hi - lo, 1e-9
        )
    out.update(
        {
            "killed_in_s": killed_in,
            "export_errors_after_kill": len(errors_after),
            "last_error_after_kill_s": max(errors_after, default=0.0),
            "errors": Counter(code for r in results for code in r["errors"]),
            "max_ack_gap_before_s": max(gaps_before, default=math.nan),
            "max_ack_gap_at_kill_s": max(gaps_after, default=math.nan),
            "in_flight_at_kill_s": in_flight,
            "victim_spans_in_file": file_spans,
            "victim_spans_in_lake_at_kill": lake_spans,
            "unflushed": unflushed,
            "restart_ready_s": ready_s,
            "caught_up_s": caught_s,
            "victim_spans_in_lake_after": in_lake_after,
            "check": check,
            "rates": rate_around,
            "traffic_back_s": back_s,
            "traces_recovered": recovered,
            "latency_ms": {
                k: {"p50": _pct(v, 0.5), "p99": _pct(v, 0.99), "max": max(v, default=math.nan)}
                for k, v in latency.items()
            },
        }
    )
    ok = check["stored"] == check["expected"] and check["short_traces"] == 0
    if not ok:
        LOST.append("recovery")
    latency = "; ".join(
        f"{k} " + "/".join(f"{v:.0f}" for v in d.values()) for k, d in out["latency_ms"].items()
    )
    print(
        f"[recovery] 3 nodes behind TraceRouter(failover) at {args.recovery_rate:,.0f} spans/s offered "
        f"({os.cpu_count()} cores); {victim.name} SIGKILLed {pre:g} s in:\n"
        f"    (a) {len(errors_after)} export errors after the kill (last "
        f"{out['last_error_after_kill_s']:.2f} s after); longest gap between acks around the kill "
        f"{out['max_ack_gap_at_kill_s']:.2f} s (before it: {out['max_ack_gap_before_s']:.2f} s); "
        f"{len(in_flight)} requests in flight at the kill, answered after "
        f"{', '.join(f'{t:.2f}' for t in in_flight) or '-'} s; export latency p50/p99/max {latency} ms "
        f"(before: the 5 s before the kill, after: the 3 s after); {out['failovers']} trace parts failed "
        f"over; acked spans/s "
        f"before {rate_around['before']:,.0f}, while down {rate_around['down']:,.0f}, after "
        f"{rate_around['after']:,.0f}\n    (b) at the kill its file held {file_spans:,} spans, the lake "
        f"{lake_spans:,} of them: {unflushed:,} acknowledged but not yet copied; restarted {down:g} s later "
        f"on the same file: listening after {ready_s:.1f} s, its spans mark past its last span before the "
        f"kill after {caught_s:.1f} s (lake then held {in_lake_after:,} of its {file_spans:,}; "
        f"{recovered:.0f} unassembled traces re-opened at its start); the router sent it traces again "
        + (
            f"{back_s:.1f} s after its restart\n"
            if not math.isnan(back_s)
            else "not within 60 s after it listened\n"
        )
        + f"    every node stopped: {check['expected']:,} spans acknowledged, {check['stored']:,} in the "
        f"lake ({check['rows'] - check['stored']:,} stored twice, {check['short_traces']} traces "
        f"short): {'nothing lost' if ok else 'LOST SPANS'}",
        flush=True,
    )
    return out


# ------------------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--part",
        default="throughput,lag,pages,recovery",
        help="which parts, comma separated (default all: throughput,lag,pages,recovery)",
    )
    parser.add_argument(
        "--seconds", type=float, default=15.0, help="measured seconds per throughput phase (15)"
    )
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of load before each window (3)")
    parser.add_argument("--exporters", type=int, default=8, help="exporter processes, closed loop (8)")
    parser.add_argument(
        "--look-spans",
        type=int,
        default=2_000_000,
        help="the reconciler part's lake: spans in its window (2000000)",
    )
    parser.add_argument(
        "--look-flush", type=int, default=20_000, help="the reconciler part: spans a flush (20000)"
    )
    parser.add_argument(
        "--look-new",
        type=int,
        default=231_000,
        help="the reconciler part: spans copied between two looks (231000: 10 s at 3 x 7,700/s)",
    )
    parser.add_argument(
        "--look-interval",
        type=float,
        default=10.0,
        help="the reconciler part: seconds between looks ([lake] reconcile_interval, 10)",
    )
    parser.add_argument(
        "--baseline", metavar="DIR", help="the versus part: a checkout to compare this one with"
    )
    parser.add_argument(
        "--flush-spans", type=int, default=40_000, help="the flush part: spans a flush (40000)"
    )
    parser.add_argument("--flush-rounds", type=int, default=7, help="the flush part: flushes each way (7)")
    parser.add_argument("--rounds", type=int, default=1, help="throughput phases per setup (median reported)")
    parser.add_argument("--lag-rate", type=float, default=3000.0, help="spans/s offered during the lag part")
    parser.add_argument(
        "--lag-seconds", type=float, default=20.0, help="seconds of markers per flush interval"
    )
    parser.add_argument(
        "--recovery-rate",
        type=float,
        default=2000.0,
        help="spans/s offered through the router during the recovery part",
    )
    parser.add_argument(
        "--recovery-request",
        type=int,
        default=128,
        help="spans per request during the recovery part (128: many small exports in flight)",
    )
    parser.add_argument("--runs", type=int, default=20_000, help="agent runs in the pages part's database")
    parser.add_argument(
        "--pages-db", default=PAGES_DB, help=f"the pages part's database (built once, {PAGES_DB})"
    )
    parser.add_argument("--rebuild", action="store_true", help="build the pages part's database again")
    parser.add_argument("--page-requests", type=int, default=20, help="timed requests per page and side (20)")
    parser.add_argument(
        "--page-budget", type=float, default=90.0, help="seconds for the page requests in all"
    )
    parser.add_argument(
        "--fragments",
        type=int,
        default=240,
        help="also serve the pages over a lake holding the same rows as this many flushes left "
        "them, unmerged (0: not)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    parts = [p.strip() for p in args.part.split(",") if p.strip()]
    unknown = set(parts) - {"throughput", "lag", "pages", "recovery", "reconciler", "versus", "flush"}
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")

    import duckdb

    from agentotel_eval.store import lake
    from tests.support.lake_servers import running_postgres, running_s3

    try:
        lake.extension_files()
    except lake.LakeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"bench_lake: parts {', '.join(parts)}; DuckDB {duckdb.__version__}; {os.cpu_count()} cores; load "
        f"avg {os.getloadavg()[0]:.2f}; {time.strftime('%Y-%m-%d %H:%M:%S %z')}",
        flush=True,
    )
    began = time.monotonic()
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "cpus": os.cpu_count(),
        "duckdb": duckdb.__version__,
        "args": vars(args),
    }
    with running_postgres() as pg, running_s3() as s3:
        servers = Servers(pg, s3)
        for part in parts:
            started = time.monotonic()
            out[part] = {
                "throughput": part_throughput,
                "lag": part_lag,
                "pages": part_pages,
                "recovery": part_recovery,
                "reconciler": part_reconciler,
                "versus": part_versus,
                "flush": part_flush,
            }[part](servers, args)
            print(f"[{part}] done in {time.monotonic() - started:.0f} s\n", flush=True)
    print(f"bench_lake: {time.monotonic() - began:.0f} s in all", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")
    if LOST:
        print(f"acknowledged spans missing after: {', '.join(LOST)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
