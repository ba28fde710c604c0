"""Nodes that share a DuckLake: real collectors copying what they commit to a real PostgreSQL catalog and
Parquet files on a real S3-compatible server (moto), and readers that attach the lake
read-only and stay sealed.

Marked ``lake``: they need the ``[lake]`` extra (DuckDB 1.5.5 and its extensions), which ``.ci/run`` installs
in an environment of its own and runs these in."""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentotel_eval.store import lake
from tests.support.collector_harness import fast_config, post_otlp, wait_until
from tests.support.fixture_traces import fixtures
from tests.support.lake_nodes import split_request
from tests.support.lake_servers import Postgres, S3Server, lake_marks, running_postgres, running_s3

ROOT = Path(__file__).resolve().parents[3]

pytestmark = lake_marks()
_names = itertools.count()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Postgres, S3Server]]:
    with running_postgres() as pg, running_s3() as s3:
        yield pg, s3


@pytest.fixture
def lake_config(servers, tmp_path):
    """A fresh lake: its own catalog database and bucket."""
    from agentotel_eval.collector.config import LakeConfig, LakeS3Config

    pg, s3 = servers
    name = f"lake{next(_names)}"
    catalog = pg.create_database(name)
    s3.create_bucket(name)
    config = LakeConfig(
        catalog=catalog,
        data=f"s3://{name}/data/",
        flush_interval=0.5,
        s3=LakeS3Config(endpoint=s3.endpoint, key_id="test", secret="test", url_style="path", use_ssl=False),
    )
    path = tmp_path / "lake.toml"
    path.write_text(
        f'[lake]\ncatalog = "{catalog}"\ndata = "{config.data}"\n[lake.s3]\nendpoint = '
        f'"{s3.endpoint}"\nkey_id = "test"\nsecret = "test"\nurl_style = "path"\nuse_ssl = false\n'
    )
    return config, path


def two_nodes_store(tmp_path: Path, config, traces) -> None:
    """Nodes a and b store ``traces``, whole, alternately (as the load-balancing exporter sends them), and
    stop: everything they wrote is in the lake."""
    nodes = [node(tmp_path, config, "a"), node(tmp_path, config, "b")]
    try:
        for i, fx in enumerate(traces):
            assert post_otlp(nodes[i % 2].http_endpoint, "traces", fx.body("protobuf")).status == 200
    finally:
        for n in nodes:
            n.shutdown()


def node(tmp_path: Path, config, name: str):
    from agentotel_eval.collector.service import Collector

    cfg = dataclasses.replace(
        fast_config(tmp_path / f"{name}.duckdb"), lake=dataclasses.replace(config, node=name)
    )
    return Collector(cfg, summary_interval=3600).start()


def local_counts(collector) -> dict[str, int]:
    return {table: collector.query(f"SELECT count(*) FROM {table}")["rows"][0][0] for table in lake.TABLES}


def final_counts(db: Path) -> dict[str, int]:
    """A stopped node's rows, from its file: what the lake must hold of it."""
    from agentotel_eval.store.opening import open_read_only

    con = open_read_only(db)
    try:
        return {table: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in lake.TABLES}
    finally:
        con.close()


def query_lake(path: Path, sql: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", "query", sql, "--lake", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )


def test_two_nodes_flush_concurrently_and_a_reader_sees_every_node_sealed(tmp_path, lake_config):
    import json

    config, path = lake_config
    traces = fixtures()[:30]
    nodes = [node(tmp_path, config, "a"), node(tmp_path, config, "b")]
    try:
        for i, fx in enumerate(traces):  # whole traces to one node each, as the load-balancing exporter sends
            assert post_otlp(nodes[i % 2].http_endpoint, "traces", fx.body("protobuf")).status == 200
        wait_until(
            lambda: all(n.lake.stats.rows.get("spans", 0) == local_counts(n)["spans"] for n in nodes),
            timeout=30,
            what="both nodes' spans in the lake",
        )
    finally:
        for n in nodes:
            n.shutdown()  # the last flush: runs, calls and scores not yet settled go now
    counts = [final_counts(tmp_path / "a.duckdb"), final_counts(tmp_path / "b.duckdb")]
    reader = lake.open_reader(config.settings())
    for table in lake.TABLES:
        assert reader.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == sum(
            c[table] for c in counts
        ), table
    assert reader.execute("SELECT count(*) FROM spans").fetchone()[0] == sum(len(fx.spans()) for fx in traces)
    # each trace was stored by one node
    assert (
        reader.execute(
            "SELECT count(*) FROM (SELECT trace_id FROM lake.spans GROUP BY 1 "
            "HAVING count(DISTINCT node) > 1)"
        ).fetchone()[0]
        == 0
    )
    # the same SQL as on one node's file, over both, through the command line; still sealed
    runs = query_lake(path, "SELECT count(*) AS n FROM agent_runs")
    assert runs.returncode == 0, runs.stderr
    assert json.loads(runs.stdout) == [{"n": counts[0]["agent_runs"] + counts[1]["agent_runs"]}]
    for sql, says in [
        ("SELECT * FROM read_csv('/etc/passwd')", "read_csv() is not available"),
        ("SELECT * FROM postgres_query('__ducklake_metadata_lake', 'SELECT 1')", "catalog's server"),
        ("INSERT INTO spans (trace_id, span_id) VALUES ('a', 'b')", "INSERT"),
    ]:
        refused = query_lake(path, sql)
        assert refused.returncode == 1 and says in refused.stderr, (sql, refused.stderr)


def test_runs_calls_and_scores_reach_the_lake_at_the_next_flush_after_their_commit(tmp_path, lake_config):
    """Copied by their commit stamp, while the node runs: a row waits for no settle time, and a row written
    long after its run was built (a re-score, a judge's answer) is not skipped."""
    config, _ = lake_config
    traces = fixtures()[50:56]
    one = node(tmp_path, config, "a")
    try:
        for fx in traces:
            assert post_otlp(one.http_endpoint, "traces", fx.body("protobuf")).status == 200

        def copied() -> bool:
            local = local_counts(one)
            return local["agent_runs"] > 0 and all(
                one.lake.stats.rows.get(table, 0) == local[table] for table in lake.TABLES
            )

        wait_until(copied, timeout=30, what="every table's rows in the lake before shutdown")
        # what /metrics and /healthz say of it
        metrics = one.metrics_text()
        spans = local_counts(one)["spans"]
        assert f'agentotel_lake_rows_flushed_total{{table="spans"}} {float(spans)}' in metrics
        assert (
            "agentotel_lake_flush_failures_total 0.0" in metrics and "agentotel_lake_lag_seconds" in metrics
        )
        assert (
            "agentotel_lake_reconcile_looks_total" in metrics and "agentotel_lake_peer_reads_total" in metrics
        )
        health = one.health()["lake"]
        assert health["node"] == "a" and health["flushes"] > 0 and health["last_error"] is None
        assert 0 <= health["lag_seconds"] < 60
        reader = lake.open_reader(config.settings())
        try:
            assert (
                reader.execute("SELECT count(*) FROM agent_runs").fetchone()[0]
                == local_counts(one)["agent_runs"]
            )
            # the lake's rows carry the stamp of the node's write, made after the run was built
            assert (
                reader.execute("SELECT bool_and(committed_at >= updated_at) FROM lake.agent_runs").fetchone()[
                    0
                ]
                is True
            )
        finally:
            reader.close()
    finally:
        one.shutdown()


def test_a_restarted_node_goes_on_from_its_marks_and_copies_nothing_twice(tmp_path, lake_config):
    config, _ = lake_config
    traces = fixtures()[30:40]
    first = node(tmp_path, config, "a")
    try:
        for fx in traces[:5]:
            post_otlp(first.http_endpoint, "traces", fx.body("protobuf"))
        wait_until(
            lambda: first.lake.stats.rows.get("spans", 0) == local_counts(first)["spans"],
            timeout=30,
            what="the spans in the lake",
        )
    finally:
        first.shutdown()
    again = node(tmp_path, config, "a")  # the same file, the same node name: its marks are in the lake
    try:
        for fx in traces[5:]:
            post_otlp(again.http_endpoint, "traces", fx.body("protobuf"))
    finally:
        again.shutdown()
    final = final_counts(tmp_path / "a.duckdb")
    reader = lake.open_reader(config.settings())
    sent = sum(len(fx.spans()) for fx in traces)
    # spans are copied by commit: each exactly once across the restart, none left behind
    assert reader.execute("SELECT count(*) FROM lake.spans").fetchone()[0] == sent == final["spans"]
    # a run rebuilt after the restart is a newer row; the views keep one per run, as the node's file does
    for table in ("agent_runs", "tool_calls", "evaluations"):
        assert reader.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == final[table], table


def test_a_node_whose_lake_cannot_be_reached_does_not_start(tmp_path, servers):
    from agentotel_eval.collector.config import LakeConfig

    pg, _ = servers
    config = LakeConfig(catalog=pg.url("no_such_database"), data=str(tmp_path / "data"))
    with pytest.raises(lake.LakeError, match=r"cannot attach the lake .*no_such_database"):
        node(tmp_path, config, "a")
    assert not (tmp_path / "a.duckdb.collector.json").exists() and not (tmp_path / "a.duckdb").exists()


def test_lake_maintain_applies_the_retention_once_for_every_node_and_merges_files(tmp_path, lake_config):
    config, path = lake_config
    traces = fixtures()[40:46]  # recorded more than an hour ago
    first = node(tmp_path, config, "a")
    try:
        for fx in traces:
            post_otlp(first.http_endpoint, "traces", fx.body("protobuf"))
    finally:
        first.shutdown()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def maintain(retention: str) -> subprocess.CompletedProcess:
        text = path.read_text()
        (tmp_path / "maintain.toml").write_text((f'retention = "{retention}"\n' if retention else "") + text)
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "agentotel_eval.cli",
                "lake",
                "maintain",
                "--config",
                str(tmp_path / "maintain.toml"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=ROOT,
        )

    kept = maintain("")
    assert kept.returncode == 0 and "nothing deleted" in kept.stdout, kept.stderr
    reader = lake.open_reader(config.settings())
    assert reader.execute("SELECT count(*) FROM spans").fetchone()[0] == sum(len(fx.spans()) for fx in traces)
    reader.close()
    cut = maintain("1h")
    assert cut.returncode == 0, cut.stderr
    assert f"spans -{sum(len(fx.spans()) for fx in traces)}" in cut.stdout
    reader = lake.open_reader(config.settings())
    assert reader.execute("SELECT count(*) FROM spans").fetchone()[0] == 0


def test_the_reading_commands_read_every_node_through_the_lake(tmp_path, lake_config):
    """explain, export-cases and report take --lake as query does: the same output over all nodes."""
    import json

    config, path = lake_config
    traces = fixtures()[46:50]
    two_nodes_store(tmp_path, config, traces)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "agentotel_eval.cli", *args, "--lake", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=ROOT,
        )

    runs = sum(final_counts(tmp_path / f"{n}.duckdb")["agent_runs"] for n in ("a", "b"))
    exported = cli("export-cases", "-o", "-")
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == runs
    trace_id = traces[1].spans()[0].trace_id  # stored by node b
    explained = cli("explain", trace_id[:8])
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.startswith(f"trace {trace_id}:")
    report = tmp_path / "report.html"
    written = cli("report", "--out", str(report), "--since", "all")
    assert written.returncode == 0, written.stderr
    assert "the lake of" in report.read_text()
    exported_traces = {json.loads(line)["metadata"]["trace_id"] for line in exported.stdout.splitlines()}
    assert (
        exported_traces <= {fx.spans()[0].trace_id for fx in traces} and len(exported_traces) > 1
    )  # both nodes'


def rescore_lake(path: Path, *extra: str) -> dict:
    import json

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentotel_eval.cli",
            "rescore",
            "--lake",
            str(path),
            "--format",
            "json",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_sharded_rescore_over_the_lake_equals_an_unsharded_one(tmp_path, lake_config):
    """Two nodes' history re-scored with a new rule: once whole, then by two workers on halves. Each worker
    takes a disjoint half; together they rebuild every trace once; the latest views then hold the same runs
    and scores as after the whole re-score, written by the workers."""
    config, path = lake_config
    traces = fixtures()[56:72]
    two_nodes_store(tmp_path, config, traces)
    rules = tmp_path / "rules.toml"  # a rule the nodes did not have: every run is expected to call "search"
    rules.write_text(path.read_text() + '\n[[expectations]]\nname = "all"\nexpected_tools = ["search"]\n')
    reader = lake.open_reader(config.settings())
    runs = reader.execute("SELECT count(*) FROM agent_runs").fetchone()[0]
    reader.close()
    scores_sql = (
        "SELECT trace_id, run_span_id, metric, score, success FROM evaluations WHERE source = "
        "'agentotel-eval' ORDER BY ALL"
    )

    whole = rescore_lake(path, "--config", str(rules))
    assert whole["runs_after"] == runs > 0
    assert whole["metrics"] and whole["metrics"][0]["added"] > 0  # the rule scored runs the nodes had not
    reader = lake.open_reader(config.settings())
    after_whole = reader.execute(scores_sql).fetchall()
    runs_whole = reader.execute(
        "SELECT trace_id, span_id, tools_called FROM agent_runs ORDER BY ALL"
    ).fetchall()
    reader.close()

    halves = [rescore_lake(path, "--config", str(rules), "--shard", f"{k}/2") for k in (1, 2)]
    assert sum(h["traces"] for h in halves) == whole["traces"] and all(h["traces"] for h in halves)
    reader = lake.open_reader(config.settings())
    try:
        assert reader.execute(scores_sql).fetchall() == after_whole
        assert (
            reader.execute("SELECT trace_id, span_id, tools_called FROM agent_runs ORDER BY ALL").fetchall()
            == runs_whole
        )
        # every trace's newest build is one worker's, and no trace was rebuilt by both
        builders = reader.execute(
            "SELECT trace_id, list(DISTINCT node) FROM lake.agent_runs WHERE node LIKE "
            "'rescore@%/%' GROUP BY 1"
        ).fetchall()
        assert len(builders) == whole["traces"] and all(len(nodes) == 1 for _, nodes in builders)
        newest = reader.execute(
            "SELECT DISTINCT node FROM lake.agent_runs QUALIFY updated_at = max(updated_at) OVER (PARTITION "
            "BY trace_id)"
        ).fetchall()
        assert sorted(n for (n,) in newest) == ["rescore@1/2", "rescore@2/2"]
    finally:
        reader.close()


def halves(fx) -> tuple[bytes, bytes]:
    """A fixture's spans dealt out alternately into two requests: the trace split between two nodes, as when
    the ring changes mid-trace."""
    return split_request(fx, lambda _span, dealt: dealt % 2)


def test_a_trace_split_between_two_nodes_is_rebuilt_whole_and_scored_once(tmp_path, lake_config):
    """Each node builds and scores its half; the reconciler finds the trace under two nodes once it is quiet,
    rebuilds it from both halves in the lake and appends that build: the latest views hold the runs and calls
    a whole trace gives, each run scored once, and the halves' partial runs are gone."""
    from agentotel_eval.reconstruct import reconstruct

    config, _ = lake_config
    config = dataclasses.replace(
        config, reconcile_interval=0.5, read_peer_spans=False
    )  # the reconciler alone
    chosen = [
        fx
        for fx in fixtures()
        if fx.name
        in (
            "openai-agents__otel-genai__sequence",
            "langchain__openinference__delegate",
            "strands__default__sequence",
        )
    ]
    assert len(chosen) == 3
    whole = {fx.spans()[0].trace_id: reconstruct(fx.spans(), []) for fx in chosen}
    nodes = [node(tmp_path, config, "a"), node(tmp_path, config, "b")]
    reader = lake.open_reader(config.settings())
    try:
        for fx in chosen:
            first, second = halves(fx)
            assert post_otlp(nodes[0].http_endpoint, "traces", first).status == 200
            assert post_otlp(nodes[1].http_endpoint, "traces", second).status == 200

        def runs() -> dict[str, list[tuple[str, list[str]]]]:
            got: dict[str, list[tuple[str, list[str]]]] = {}
            for trace_id, span_id, tools in reader.execute(
                "SELECT trace_id, span_id, tools_called FROM agent_runs ORDER BY ALL"
            ).fetchall():
                got.setdefault(trace_id, []).append((span_id, list(tools or [])))
            return got

        want = {tid: sorted((r.span_id, list(r.tools_called)) for r in built) for tid, built in whole.items()}

        def builders() -> list[tuple[str]]:
            return reader.execute(
                "SELECT DISTINCT node FROM lake.agent_runs QUALIFY updated_at = max(updated_at) "
                "OVER (PARTITION BY trace_id)"
            ).fetchall()

        # A node may build its part after a rebuild (the part without the root waits longest): the reconciler
        # rebuilds that trace again. Converged: every trace's build shown is the reconciler's (node a's: the
        # first live node by name), and it is the whole trace.
        wait_until(
            lambda: runs() == want and builders() == [("reconciler@a",)],
            timeout=60,
            what="the split traces rebuilt whole by the reconciler in the latest views",
        )
        # the halves were built and scored by their nodes too: without the reconciler they would show
        assert (
            reader.execute(
                "SELECT count(DISTINCT node) FROM lake.agent_runs WHERE node IN ('a', 'b')"
            ).fetchone()[0]
            == 2
        )
        calls = reader.execute(
            "SELECT trace_id, run_span_id, list(tool_name ORDER BY seq) FROM tool_calls GROUP BY ALL"
        ).fetchall()
        assert {(t, s): list(c) for t, s, c in calls} == {
            (tid, r.span_id): list(r.tools_called)
            for tid, built in whole.items()
            for r in built
            if r.tools_called
        }
        per_run = reader.execute(
            "SELECT count(*), count(DISTINCT (trace_id, run_span_id, metric)) FROM evaluations"
        ).fetchone()
        assert per_run[0] == per_run[1] > 0  # one score per run and metric
        assert (
            reader.execute(
                "SELECT count(*) FROM evaluations e ANTI JOIN agent_runs r ON "
                "e.trace_id = r.trace_id AND e.run_span_id = r.span_id"
            ).fetchone()[0]
            == 0
        )
    finally:
        reader.close()
        for n in nodes:
            n.shutdown()


def test_the_web_ui_over_the_lake_shows_every_nodes_runs(tmp_path, lake_config):
    """``lake ui`` serves the pages a node serves, over both nodes' rows, read-only; with a
    token it asks for it."""
    import re
    import signal
    import urllib.error
    import urllib.request

    config, path = lake_config
    traces = fixtures()[72:80]
    two_nodes_store(tmp_path, config, traces)
    counts = [final_counts(tmp_path / "a.duckdb"), final_counts(tmp_path / "b.duckdb")]
    assert all(c["agent_runs"] for c in counts)
    reader = lake.open_reader(config.settings())
    runs = {(t, s) for t, s in reader.execute("SELECT trace_id, span_id FROM agent_runs").fetchall()}
    reader.close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("AGENTOTEL_AUTH_TOKEN", None)
    for token in (None, "s3cret"):
        command = [
            sys.executable,
            "-m",
            "agentotel_eval.cli",
            "lake",
            "ui",
            "--config",
            str(path),
            "--http",
            "127.0.0.1:0",
            *(["--auth-token", token] if token else []),
        ]
        ui = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )
        try:
            line = ui.stdout.readline()
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            assert found, (line, ui.stderr.read() if ui.poll() is not None else "")
            base = f"http://127.0.0.1:{found.group(1)}"
            if token:
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(base + "/runs", timeout=30)
                assert refused.value.code == 401 and "token" in refused.value.read().decode().lower()
                request = urllib.request.Request(base + "/runs", headers={"Authorization": f"Bearer {token}"})
                assert urllib.request.urlopen(request, timeout=30).status == 200
                continue
            page = urllib.request.urlopen(base + "/runs?since=all", timeout=60).read().decode()
            shown = set(re.findall(r"/runs/([0-9a-f]{32})/([0-9a-f]{16})", page))
            assert shown == runs  # every node's runs, each once
            trace_id, span_id = sorted(runs)[0]
            run_page = urllib.request.urlopen(f"{base}/runs/{trace_id}/{span_id}", timeout=60).read().decode()
            assert trace_id in run_page
            assert urllib.request.urlopen(base + "/?since=all", timeout=60).status == 200
        finally:
            ui.send_signal(signal.SIGTERM)
            assert ui.wait(30) == 0


def test_a_node_assembling_its_part_of_a_split_trace_reads_the_other_part_from_the_lake(
    tmp_path, lake_config
):
    """With no reconciler at all. The ring changed mid-trace: the trace's first half went to node a, which
    built its part and copied it to the lake; the rest goes to node b, which reads a's part from the lake with
    its own: its build is the whole trace, the newest, which the latest views show."""
    from agentotel_eval.reconstruct import reconstruct

    config, _ = lake_config
    config = dataclasses.replace(config, reconcile_interval=0)
    chosen = [
        fx
        for fx in fixtures()
        if fx.name in ("openai-agents__otel-genai__sequence", "strands__default__sequence")
    ]
    whole = {fx.spans()[0].trace_id: reconstruct(fx.spans(), []) for fx in chosen}
    nodes = [node(tmp_path, config, "a"), node(tmp_path, config, "b")]
    reader = lake.open_reader(config.settings())
    try:
        assert all(n.reconciler is None and n.peers is not None for n in nodes)
        parts = [halves(fx) for fx in chosen]
        for first, _ in parts:
            assert post_otlp(nodes[0].http_endpoint, "traces", first).status == 200
        wait_until(
            lambda: (
                reader.execute("SELECT count(*) FROM lake.agent_runs").fetchone()[0] > 0
                and nodes[0].lake.stats.rows.get("spans", 0) == local_counts(nodes[0])["spans"]
                and nodes[0].lake.stats.rows.get("agent_runs", 0) == local_counts(nodes[0])["agent_runs"]
            ),
            timeout=30,
            what="node a's parts built and in the lake",
        )
        for _, second in parts:
            assert post_otlp(nodes[1].http_endpoint, "traces", second).status == 200
        want = {(tid, r.span_id): list(r.tools_called) for tid, built in whole.items() for r in built}

        def runs() -> dict[tuple[str, str], list[str]]:
            return {
                (t, s): list(tools or [])
                for t, s, tools in reader.execute(
                    "SELECT trace_id, span_id, tools_called FROM agent_runs"
                ).fetchall()
            }

        wait_until(lambda: runs() == want, timeout=60, what="the split traces whole in the latest views")
        assert nodes[1].peers.spans_added > 0
        newest = reader.execute(
            "SELECT DISTINCT node FROM lake.agent_runs QUALIFY updated_at = max(updated_at) "
            "OVER (PARTITION BY trace_id)"
        ).fetchall()
        assert newest == [("b",)]
    finally:
        reader.close()
        for n in nodes:
            n.shutdown()
