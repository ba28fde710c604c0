"""Scale-out end to end: real ``agentotel-eval serve`` processes behind a router that sends each trace where
the OpenTelemetry Collector's load-balancing exporter would (``tests/support/lake_ring.py``), sharing one
DuckLake (catalog in a real PostgreSQL, Parquet on moto's S3 server), fed by agents traced with the
real OpenTelemetry SDK.

What a reader of the lake must see whatever happened to the nodes: every acknowledged span exactly once, each
trace stored and scored by the one node the ring chose (or, while that node was down, the one the ring chose
without it), one run per agent run and its deterministic scores, when nodes join, stop or are killed.

Marked ``lake``: they need the ``[lake]`` extra (DuckDB 1.5.5 and its extensions), which ``.ci/run`` installs
in an environment of its own and runs these in."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import grpc
import pytest

from agentotel_eval.store import lake
from tests.support.collector_harness import wait_until
from tests.support.lake_nodes import AgentRun, AgentTracer, LakeTable, ServeNode, start_nodes, stop_nodes
from tests.support.lake_ring import HashRing, TraceRouter
from tests.support.lake_servers import Postgres, S3Server, lake_marks, running_postgres, running_s3

pytestmark = lake_marks()
_names = itertools.count()
#: the deterministic score every run gets from its expected tools (agentotel.eval.expected_tools)
SCORE = "tool_correctness"


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Postgres, S3Server]]:
    with running_postgres() as pg, running_s3() as s3:
        yield pg, s3


@pytest.fixture
def lake_table(servers) -> LakeTable:
    """A fresh lake: its own catalog database and bucket."""
    pg, s3 = servers
    name = f"nodes{next(_names)}"
    catalog = pg.create_database(name)
    s3.create_bucket(name)
    return LakeTable(catalog=catalog, data=f"s3://{name}/data/", s3_endpoint=s3.endpoint)


class Cluster:
    """The nodes, router and tracer of one test; whatever is still running at the end is stopped (a node that
    is still up after a failure is killed: its output is then in its log beside its file)."""

    def __init__(self, folder: Path, table: LakeTable) -> None:
        self.folder = folder
        self.table = table
        self.nodes: dict[str, ServeNode] = {}
        self.routers: list[TraceRouter] = []
        self.tracers: list[AgentTracer] = []

    def node(self, name: str, **settings: str) -> ServeNode:
        self.nodes[name] = ServeNode(self.folder, name, self.table, **settings)
        return self.nodes[name]

    def router(self, nodes: Iterable[ServeNode], *, failover: bool = False) -> TraceRouter:
        router = TraceRouter([n.endpoint for n in nodes], failover=failover).start()
        self.routers.append(router)
        return router

    def tracer(self, router: TraceRouter, seed: int) -> AgentTracer:
        tracer = AgentTracer(router.endpoint, seed)
        self.tracers.append(tracer)
        return tracer

    def name_of(self, endpoint: str) -> str:
        (name,) = [n.name for n in self.nodes.values() if n.endpoint == endpoint]
        return name

    def close(self) -> None:
        for tracer in self.tracers:
            tracer.shutdown()
        for router in self.routers:
            router.stop()
        for node in self.nodes.values():
            node.kill()


@pytest.fixture
def cluster(tmp_path, lake_table) -> Iterator[Cluster]:
    made = Cluster(tmp_path, lake_table)
    try:
        yield made
    finally:
        made.close()


def stop_all(cluster: Cluster) -> None:
    codes = stop_nodes(list(cluster.nodes.values()))
    for name, code in codes.items():
        assert code == 0, f"node {name} exited {code}:\n{cluster.nodes[name].output()}"


def wait_routable(router: TraceRouter, endpoint: str, timeout: float = 30.0) -> None:
    """Until the router's own channel to ``endpoint`` is connected again. After failing to reach a node, a
    gRPC channel waits out a reconnect backoff, and an export meanwhile fails at once (and fails over): the
    exporter's sub-exporter does the same after a backend comes back."""
    channel = router._backends[
        endpoint
    ].channel  # the router's channel, not a new one: that is the one to wait for
    grpc.channel_ready_future(channel).result(timeout=timeout)


def run_agents(
    tracer: AgentTracer, at_least: int, ring: HashRing, wanted: Mapping[str, int]
) -> list[AgentRun]:
    """At least ``at_least`` agent runs, and more until the ring has given each endpoint of ``wanted`` that
    many of them (the ports, and so the ring, differ from one run of the test to the next;
    the trace ids do not)."""
    runs: list[AgentRun] = []
    while len(runs) < at_least or any(
        sum(ring.endpoint_for(r.trace_id) == e for r in runs) < n for e, n in wanted.items()
    ):
        assert len(runs) < 10 * at_least, f"the ring gave {wanted} too few of {len(runs)} traces"
        runs.append(tracer.run_agent())
    return runs


def rows(reader, sql: str) -> list[tuple]:
    return reader.execute(sql).fetchall()


def local_spans(db: Path) -> int:
    """A stopped node's spans, from its own file."""
    from agentotel_eval.store.opening import open_read_only

    con = open_read_only(db)
    try:
        return int(con.execute("SELECT count(*) FROM spans").fetchone()[0])
    finally:
        con.close()


def check_lake(
    cluster: Cluster, runs: Sequence[AgentRun], acked: set[tuple[str, str]], node_of: Mapping[str, str]
) -> None:
    """What the lake must hold of ``runs`` once every node has stopped: ``node_of`` names the node each trace
    was routed to; ``acked`` is every span an export had acknowledged."""
    sent = {key for run in runs for key in run.spans}
    assert sent == acked, f"{len(sent - acked)} spans sent but not acknowledged, {len(acked - sent)} unknown"
    reader = lake.open_reader(cluster.table.settings())
    try:
        # every acknowledged span, once in the lake's own rows (not only once in the newest-per-key view)
        copies = {
            (t, s): (n, nodes)
            for t, s, n, nodes in rows(
                reader,
                "SELECT trace_id, span_id, count(*), list(DISTINCT node ORDER BY node) FROM "
                "lake.spans GROUP BY ALL",
            )
        }
        missing = sent - copies.keys()
        assert not missing, (
            f"{len(missing)} of {len(sent)} acknowledged spans are not in the lake, of traces "
            f"routed to {sorted(Counter(node_of[t] for t, _ in missing).items())}"
        )
        assert not copies.keys() - sent, f"{len(copies.keys() - sent)} spans in the lake were never sent"
        twice = {key: value for key, value in copies.items() if value[0] != 1}
        assert not twice, (
            f"{len(twice)} spans are in the lake more than once, e.g. {next(iter(twice.items()))}"
        )
        assert rows(reader, "SELECT count(*) FROM spans") == [(len(sent),)]

        # each trace from exactly one node: the one it was routed to
        stored_by = dict(
            rows(reader, "SELECT trace_id, list(DISTINCT node ORDER BY node) FROM lake.spans GROUP BY 1")
        )
        wrong = {t: (nodes, node_of[t]) for t, nodes in stored_by.items() if nodes != [node_of[t]]}
        assert not wrong, (
            f"{len(wrong)} traces stored by another node than the ring's, e.g. {next(iter(wrong.items()))}"
        )
        # and the lake holds all of each node's file, no more
        for node in cluster.nodes.values():
            assert rows(reader, f"SELECT count(*) FROM lake.spans WHERE node = '{node.name}'") == [
                (local_spans(node.db),)
            ], node.name

        # one run per agent run, built and scored by that same node only
        built = {
            (t, s): (tools, expected)
            for t, s, tools, expected in rows(
                reader, "SELECT trace_id, span_id, tools_called, expected_tools FROM agent_runs"
            )
        }
        want = {(r.trace_id, r.span_id): r for r in runs}
        missing_runs = want.keys() - built.keys()
        assert not missing_runs, (
            f"{len(missing_runs)} of {len(want)} agent runs are not in the lake's agent_runs, of traces "
            f"routed to {sorted(Counter(node_of[t] for t, _ in missing_runs).items())}"
        )
        assert not built.keys() - want.keys(), (
            f"runs in the lake that were never sent: {built.keys() - want.keys()}"
        )
        for key, run in want.items():
            assert built[key] == (list(run.called), list(run.expected)), key
        for table in ("agent_runs", "evaluations"):
            by = dict(
                rows(
                    reader, f"SELECT trace_id, list(DISTINCT node ORDER BY node) FROM lake.{table} GROUP BY 1"
                )
            )
            wrong = {t: (nodes, node_of[t]) for t, nodes in by.items() if nodes != [node_of[t]]}
            assert not wrong, (
                f"lake.{table}: {len(wrong)} traces written by another node, e.g. {next(iter(wrong.items()))}"
            )

        # one score per run and metric, the deterministic score among them, with the value
        # its expectation gives
        scores = rows(reader, "SELECT trace_id, run_span_id, metric, score, status FROM evaluations")
        assert len({(t, s, m) for t, s, m, _, _ in scores}) == len(scores)
        metrics: dict[tuple[str, str], set[str]] = {}
        for t, s, metric, score, status in scores:
            metrics.setdefault((t, s), set()).add(metric)
            if metric == SCORE:
                assert (score, status) == (want[(t, s)].tool_correctness, "ok"), (t, s, score, status)
        unscored = [key for key in want if SCORE not in metrics.get(key, set())]
        assert not unscored, (
            f"{len(unscored)} of {len(want)} runs have no {SCORE} score, of traces routed to "
            f"{sorted(Counter(node_of[t] for t, _ in unscored).items())}"
        )
        assert len({frozenset(m) for m in metrics.values()}) == 1, (
            "the runs were scored with different metrics"
        )
        # built and scored once: one row per key in the lake's own rows too, not only in the
        # newest-per-key views
        again = rows(
            reader,
            "SELECT trace_id, run_span_id, metric, count(*) FROM lake.evaluations GROUP BY ALL "
            "HAVING count(*) > 1",
        )
        assert not again, f"{len(again)} scores were written more than once, e.g. {again[0]}"
        again = rows(
            reader, "SELECT trace_id, span_id, count(*) FROM lake.agent_runs GROUP BY ALL HAVING count(*) > 1"
        )
        assert not again, f"{len(again)} runs were written more than once, e.g. {again[0]}"
    finally:
        reader.close()


def test_whole_traces_land_on_one_node_and_are_scored_once(cluster):
    nodes = [cluster.node(f"node-{c}") for c in "abc"]
    start_nodes(nodes)
    router = cluster.router(nodes)
    tracer = cluster.tracer(router, seed=1)
    ring = HashRing(n.endpoint for n in nodes)
    run_agents(tracer, 60, ring, {n.endpoint: 5 for n in nodes})
    tracer.flush()
    stop_all(cluster)  # each node completes its traces and copies the rest to the lake as it stops

    node_of = {run.trace_id: cluster.name_of(ring.endpoint_for(run.trace_id)) for run in tracer.runs}
    assert len(node_of) == len(tracer.runs)  # a trace id per run
    assert set(node_of.values()) == {n.name for n in nodes}, Counter(node_of.values())
    check_lake(cluster, tracer.runs, tracer.acks.spans, node_of)


def test_node_added_mid_stream_loses_nothing(cluster):
    first = [cluster.node("node-a"), cluster.node("node-b")]
    start_nodes(first)
    router = cluster.router(first)
    tracer = cluster.tracer(router, seed=2)
    before = [tracer.run_agent() for _ in range(30)]
    tracer.flush()  # every trace so far whole on the two nodes

    added = cluster.node("node-c")
    start_nodes([added])
    router.set_endpoints([n.endpoint for n in (*first, added)])
    two, three = HashRing(n.endpoint for n in first), HashRing(n.endpoint for n in (*first, added))
    after = run_agents(tracer, 30, three, {added.endpoint: 5})
    tracer.flush()
    stop_all(cluster)

    node_of = {r.trace_id: cluster.name_of(two.endpoint_for(r.trace_id)) for r in before}
    node_of |= {r.trace_id: cluster.name_of(three.endpoint_for(r.trace_id)) for r in after}
    assert "node-c" in {node_of[r.trace_id] for r in after}, "the added node got none of the later traces"
    check_lake(cluster, tracer.runs, tracer.acks.spans, node_of)


def test_node_killed_and_restarted_loses_nothing(cluster):
    # a 2 s grace period: the traces acknowledged just before the kill are certainly stored
    # but not yet assembled
    nodes = [cluster.node(f"node-{c}", grace_period="2s") for c in "abc"]
    start_nodes(nodes)
    victim = cluster.nodes["node-b"]
    router = cluster.router(nodes, failover=True)
    ring = HashRing(n.endpoint for n in nodes)
    without = ring.without(victim.endpoint)
    tracer = cluster.tracer(router, seed=3)

    # every trace has ended before the flush that sends its last spans: no trace is split by the kill
    acked_before = run_agents(tracer, 30, ring, {victim.endpoint: 5})
    tracer.flush()
    victim.kill()  # right after its acks: its traces committed, none assembled or copied to the lake yet
    stored_unassembled = sum(ring.endpoint_for(r.trace_id) == victim.endpoint for r in acked_before)

    while_down = run_agents(tracer, 20, ring, {victim.endpoint: 5})
    tracer.flush()  # the router fails the victim's traces over to the ring without it
    assert router.failovers > 0

    victim.start()  # the same file, node name and ports
    victim.wait_ready()
    # it finds every trace it had stored without assembling them
    wait_until(
        lambda: victim.metric("traces_recovered_total") == stored_unassembled,
        timeout=10,
        what=f"{victim.name} to re-open its {stored_unassembled} unassembled traces",
    )
    wait_routable(router, victim.endpoint)
    after = run_agents(tracer, 20, ring, {victim.endpoint: 5})
    tracer.flush()
    stop_all(cluster)

    node_of = {r.trace_id: cluster.name_of(ring.endpoint_for(r.trace_id)) for r in (*acked_before, *after)}
    node_of |= {r.trace_id: cluster.name_of(without.endpoint_for(r.trace_id)) for r in while_down}
    check_lake(cluster, tracer.runs, tracer.acks.spans, node_of)


def test_nodes_started_together_on_one_lake_all_start(cluster):
    """As deploy/kubernetes/nodes.yaml starts them (a StatefulSet, ``podManagementPolicy: Parallel``): three
    nodes at once on a new lake, and again once it exists."""
    nodes = [cluster.node(f"node-{c}") for c in "abc"]
    start_nodes(nodes, together=True)  # the lake's catalog and tables are created by whichever comes first
    stop_all(cluster)
    start_nodes(nodes, together=True)  # each node brings the lake's tables and views up to its schema
    stop_all(cluster)


def test_a_trace_in_flight_when_a_node_joins_is_rebuilt_whole_and_scored_once(cluster):
    """Agent runs whose tool spans were exported before a third node joined and whose run spans after: the
    ring moves about a third of them, and those are split, tools on one node, run span on the new one. The
    part assembled last reads the other from the lake, and the reconciler rebuilds what is still split: the
    latest views end with one run per agent run, its tools and one score per metric, and
    nothing of the parts."""
    from opentelemetry import trace

    from agentotel_eval import semconv as sc

    first = [cluster.node("node-a"), cluster.node("node-b")]
    start_nodes(first, together=True)
    router = cluster.router(first)
    agents = cluster.tracer(router, seed=4)
    added = cluster.node("node-c")
    two, three = HashRing(n.endpoint for n in first), HashRing(n.endpoint for n in (*first, added))

    roots, want = [], {}
    for n in range(40):
        tools = ("search", "book") if n % 2 else ("search", "read", "pay")
        root = agents.tracer.start_span(
            f"invoke_agent planner-{n}",
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                sc.GEN_AI_AGENT_NAME: "planner",
                sc.AGENTOTEL_EXPECTED_TOOLS: ["search", "book"],
            },
        )
        inside = trace.set_span_in_context(root)
        for i, tool in enumerate(tools):
            agents.tracer.start_span(
                f"execute_tool {tool}",
                context=inside,
                attributes={
                    sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                    sc.GEN_AI_TOOL_NAME: tool,
                    sc.GEN_AI_TOOL_CALL_ID: f"call-{n}-{i}",
                    sc.GEN_AI_TOOL_CALL_ARGUMENTS: f'{{"step": {i}}}',
                },
            ).end()
        roots.append(root)
        context = root.get_span_context()
        want[(f"{context.trace_id:032x}", f"{context.span_id:016x}")] = list(tools)
    assert agents.provider.force_flush(60_000)  # the tools' spans, on the two nodes' ring
    start_nodes([added])
    router.set_endpoints([n.endpoint for n in (*first, added)])
    wait_routable(router, added.endpoint)
    for root in roots:
        root.end()
    assert agents.provider.force_flush(60_000)  # the run spans, on the three nodes' ring
    assert not agents.acks.failed
    moved = {t for t, _ in want if two.endpoint_for(t) != three.endpoint_for(t)}
    assert len(moved) >= 3, "the ring moved too few of the traces to split any"

    reader = lake.open_reader(cluster.table.settings())
    try:

        def runs() -> dict[tuple[str, str], list[str]]:
            return {
                (t, s): list(tools or [])
                for t, s, tools in rows(reader, "SELECT trace_id, span_id, tools_called FROM agent_runs")
            }

        wait_until(
            lambda: runs() == want,
            timeout=90,
            interval=0.5,
            what="every agent run whole in the lake's latest views",
        )
        # the split ones were stored by two nodes, and built whole by the node that read the other part from
        # the lake or by a reconciler; the others only by the node the ring gave them
        stored_by = dict(rows(reader, "SELECT trace_id, count(DISTINCT node) FROM lake.spans GROUP BY 1"))
        assert {t for t, n in stored_by.items() if n > 1} == moved
        builders = dict(rows(reader, "SELECT trace_id, list(DISTINCT node) FROM lake.agent_runs GROUP BY 1"))
        for trace_id, _ in want:
            if trace_id not in moved:
                assert builders[trace_id] == [cluster.name_of(three.endpoint_for(trace_id))], trace_id
        scores = rows(reader, "SELECT trace_id, run_span_id, metric, score FROM evaluations")
        assert len(scores) == len({(t, s, m) for t, s, m, _ in scores})  # one per run and metric
        correctness = {(t, s): score for t, s, m, score in scores if m == SCORE}
        assert correctness == {key: (1.0 if "book" in tools else 0.5) for key, tools in want.items()}

        # each split trace rebuilt once: a part built later without its root does not make it due again
        def rebuilt() -> float:
            return sum(node.metric("lake_traces_reconciled_total") for node in cluster.nodes.values())

        wait_until(
            lambda: rebuilt() >= len(moved), timeout=60, interval=0.5, what="every split trace rebuilt"
        )
        time.sleep(5)  # the rootless parts' max_wait (5 s) more, and looks: a second rebuild would show here
        assert rebuilt() == len(moved), (rebuilt(), len(moved))
    finally:
        reader.close()
    stop_all(cluster)
