"""What an operator of nodes on a shared lake must be able to trust, on a real PostgreSQL catalog and moto's
S3 server: a trace split with no change of the ring is rebuilt whole once and never replaced by a part built
without its root; a re-score's build survives the reconciler; no password reaches a log line, /healthz,
/metrics or a reader; /healthz and /readyz say "degraded" while the catalog is down and "ok" after; idle nodes
heartbeat and keep their lag at 0; a hung S3 is logged and timed out; a read-only role gets an error naming
the privilege; and one machine runs a lake on a SQLite catalog file, node and readers at once.

Marked ``lake``: they need the ``[lake]`` extra (DuckDB 1.5.5 and its extensions), which ``.ci/run`` installs
in an environment of its own and runs these in."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentotel_eval.store import lake
from tests.support.collector_harness import fast_config, http_request, post_otlp, wait_until
from tests.support.fixture_traces import fixtures
from tests.support.lake_nodes import split_request
from tests.support.lake_servers import Postgres, S3Server, lake_marks, psql, running_postgres, running_s3

ROOT = Path(__file__).resolve().parents[3]
PASSWORD = "Pw-0f-the-Catalog"  # in every catalog URL here: it must be said nowhere

pytestmark = lake_marks()
_names = itertools.count()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Postgres, S3Server]]:
    with running_postgres() as pg, running_s3() as s3:
        psql(pg, f"CREATE ROLE agentotel LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
        yield pg, s3


def new_lake(servers, tmp_path: Path, **fields):
    """A fresh lake (its own catalog database and bucket) as a ``LakeConfig`` whose catalog URL holds the
    password, and the path of a config file with only its ``[lake]`` table."""
    from agentotel_eval.collector.config import LakeConfig, LakeS3Config

    pg, s3 = servers
    name = f"trust{next(_names)}"
    pg.create_database(name)
    s3.create_bucket(name)
    catalog = f"postgres://agentotel:{PASSWORD}@127.0.0.1:{pg.port}/{name}"
    config = LakeConfig(
        catalog=catalog,
        data=f"s3://{name}/data/",
        flush_interval=0.5,
        reconcile_interval=0.5,
        read_peer_spans=False,
        s3=LakeS3Config(endpoint=s3.endpoint, key_id="test", secret="test", url_style="path", use_ssl=False),
    )
    config = dataclasses.replace(config, **fields)
    path = tmp_path / f"{name}.toml"
    path.write_text(lake_toml(config))
    return config, path


def lake_toml(config) -> str:
    return (
        f'[lake]\ncatalog = "{config.catalog}"\ndata = "{config.data}"\n[lake.s3]\nendpoint = '
        f'"{config.s3.endpoint}"\nkey_id = "test"\nsecret = "test"\nurl_style = "path"\nuse_ssl = false\n'
    )


def node(tmp_path: Path, config, name: str, **assembler: float):
    from agentotel_eval.collector.service import Collector

    cfg = fast_config(tmp_path / f"{name}.duckdb", **({"assembler": assembler} if assembler else {}))
    return Collector(
        dataclasses.replace(cfg, lake=dataclasses.replace(config, node=name)), summary_interval=3600
    ).start()


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )


def root_apart(fx) -> tuple[bytes, bytes]:
    """A fixture's trace split as a failover resend splits it: the root span and every other span in one
    request, the rest (no root) in the other."""
    return split_request(fx, lambda span, dealt: 0 if not span.parent_span_id else dealt % 2)


SPLIT = (
    "openai-agents__otel-genai__sequence",
    "langchain__openinference__delegate",
    "strands__default__sequence",
)


def shown(reader, sql: str = "SELECT trace_id, span_id, tools_called FROM agent_runs") -> dict:
    return {(t, s): list(tools or []) for t, s, tools in reader.execute(sql).fetchall()}


def test_a_split_with_no_membership_change_is_rebuilt_once_and_never_replaced_by_its_rootless_part(
    tmp_path, servers
):
    """Two nodes flushing steadily (no node joins, leaves or returns); each of three traces is split as a
    failover resend splits it: the root and some spans on a, the rest on b. The reconciler finds them in the
    index of parts, rebuilds each whole once; b builds its rootless part later (after max_wait), and that
    build, newer, does not replace the whole one in the views."""
    from agentotel_eval.reconstruct import reconstruct

    config, _ = new_lake(servers, tmp_path)
    chosen = [fx for fx in fixtures() if fx.name in SPLIT]
    want = {
        (fx.spans()[0].trace_id, r.span_id): list(r.tools_called)
        for fx in chosen
        for r in reconstruct(fx.spans(), [])
    }
    nodes = [node(tmp_path, config, "a"), node(tmp_path, config, "b")]
    reader = lake.open_reader(config.settings())
    try:
        # the ring is steady: both nodes have flushed (heartbeats) for a while before the traces come
        wait_until(
            lambda: all(n.lake.stats.heartbeats >= 3 for n in nodes), timeout=30, what="both nodes live"
        )
        for fx in chosen:
            rooted, rootless = root_apart(fx)
            assert post_otlp(nodes[0].http_endpoint, "traces", rooted).status == 200
            assert post_otlp(nodes[1].http_endpoint, "traces", rootless).status == 200
        trace_ids = sorted({t for t, _ in want})

        def rootless_built() -> bool:  # b's builds of its parts (after max_wait) reached the lake
            return reader.execute(
                "SELECT count(DISTINCT trace_id) FROM lake.agent_runs WHERE node = 'b' AND trace_root = false"
            ).fetchone()[0] == len(trace_ids)

        wait_until(
            lambda: rootless_built() and shown(reader) == want,
            timeout=60,
            interval=0.2,
            what="b's rootless builds in the lake, and the whole traces shown",
        )
        # b's rootless build is the newest of a trace (built after max_wait, after the reconciler's), and the
        # views show the reconciler's whole build all the same
        newest = reader.execute(
            "SELECT DISTINCT trace_id, node FROM lake.agent_runs QUALIFY updated_at = "
            "max(updated_at) OVER (PARTITION BY trace_id) ORDER BY 1"
        ).fetchall()
        assert ("b" in {n for _, n in newest}) and {n for _, n in newest} <= {"b", "reconciler@a"}, newest
        looks = nodes[0].reconciler.looks
        wait_until(lambda: nodes[0].reconciler.looks >= looks + 4, timeout=30, what="more looks")
        assert shown(reader) == want
        # found with no membership change, each rebuilt once, by the first live node by name only
        assert nodes[0].reconciler.splits_found == len(trace_ids)
        assert nodes[0].reconciler.traces_rebuilt == len(trace_ids)
        assert nodes[1].reconciler.looks == 0 and nodes[1].reconciler.traces_rebuilt == 0
        scores = reader.execute(
            "SELECT count(*), count(DISTINCT (trace_id, run_span_id, metric)) FROM evaluations"
        ).fetchone()
        assert scores[0] == scores[1] > 0
    finally:
        reader.close()
        for n in nodes:
            n.shutdown()


def test_a_rescore_over_the_lake_survives_the_reconciler(tmp_path, servers):
    """A split trace rebuilt by the reconciler, then re-scored over the lake with a rule the nodes lack; the
    rootless part's late build makes the reconciler look at the trace again: it keeps the re-score's build and
    its scores (a re-score's rules are the latest a run was scored with)."""
    config, path = new_lake(servers, tmp_path)
    chosen = [fx for fx in fixtures() if fx.name in SPLIT[:1]]
    (trace_id,) = {fx.spans()[0].trace_id for fx in chosen}
    nodes = [node(tmp_path, config, "a"), node(tmp_path, config, "b", max_wait=12.0)]
    reader = lake.open_reader(config.settings())
    try:
        for fx in chosen:
            rooted, rootless = root_apart(fx)
            assert post_otlp(nodes[0].http_endpoint, "traces", rooted).status == 200
            assert post_otlp(nodes[1].http_endpoint, "traces", rootless).status == 200
        wait_until(
            lambda: nodes[0].reconciler.traces_rebuilt == 1, timeout=30, what="the reconciler's rebuild"
        )
        rules = tmp_path / "rules.toml"  # every run is expected to call a tool none calls
        rules.write_text(
            path.read_text() + '\n[[expectations]]\nname = "all"\nexpected_tools = ["no_such_tool"]\n'
        )
        done = cli("rescore", "--lake", str(path), "--config", str(rules), "--format", "json")
        assert done.returncode == 0, done.stderr
        # the rule's score, which the nodes' rules do not give: tool_correctness 0 (the tool is never called)
        expected = (
            "SELECT trace_id, list(DISTINCT score) FROM evaluations WHERE metric = 'tool_correctness' "
            "GROUP BY 1"
        )
        assert reader.execute(expected).fetchall() == [(trace_id, [0.0])]
        wait_until(
            lambda: reader.execute("SELECT count(*) FROM lake.agent_runs WHERE node = 'b'").fetchone()[0],
            timeout=30,
            what="b's rootless build after the re-score",
        )
        looks = nodes[0].reconciler.looks
        wait_until(lambda: nodes[0].reconciler.looks >= looks + 4, timeout=30, what="more looks")
        assert nodes[0].reconciler.traces_rebuilt == 1
        assert reader.execute(expected).fetchall() == [(trace_id, [0.0])]
        builder = reader.execute(
            "SELECT DISTINCT r.node FROM lake.agent_runs r JOIN agent_runs USING (trace_id, "
            "span_id, updated_at)"
        ).fetchall()
        assert builder == [("rescore@lake",)]
    finally:
        reader.close()
        for n in nodes:
            n.shutdown()


def test_no_password_anywhere_and_health_degraded_while_the_catalog_is_down(tmp_path, servers, caplog):
    """The catalog's database refuses connections for a while (its connections cut, new ones refused): flushes
    fail, /healthz says "degraded" with the reason and /readyz answers 503, nothing said anywhere holds the
    password; the catalog back, the rows go and both say "ok" again. Readers cannot list the databases' paths
    or read the catalog server's own tables."""
    pg, _ = servers
    config, path = new_lake(servers, tmp_path, max_lag=3.0)
    database = config.catalog.rsplit("/", 1)[1]
    one = node(tmp_path, config, "a")
    caplog.set_level(logging.DEBUG)
    try:
        endpoint = one.http_endpoint

        def health() -> dict:
            answer = http_request(endpoint, "GET", "/healthz")
            assert PASSWORD not in answer.body.decode()
            return json.loads(answer.body)

        wait_until(lambda: health()["status"] == "ok" and one.lake.stats.flushes > 0, timeout=30, what="ok")
        assert http_request(endpoint, "GET", "/readyz").status == 200
        psql(pg, f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
        psql(pg, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'")
        for fx in fixtures()[:3]:
            assert (
                post_otlp(endpoint, "traces", fx.body("protobuf")).status == 200
            )  # acknowledged all the same
        wait_until(lambda: health()["status"] == "degraded", timeout=60, what="degraded")
        said = health()["lake"]
        assert said["failing"] > 0 and said["last_error"] and "postgres" in said["last_error"].lower(), said
        refused = http_request(endpoint, "GET", "/readyz")
        assert refused.status == 503 and json.loads(refused.body) == {"status": "degraded"}
        wait_until(lambda: health()["lake"]["lag_seconds"] > 3.0, timeout=30, what="the lag past max_lag")
        assert any("past max_lag" in reason or "max_lag" in reason for reason in health()["lake"]["reasons"])
        metrics = http_request(endpoint, "GET", "/metrics").body.decode()
        assert PASSWORD not in metrics and "agentotel_lake_flushes_failing" in metrics
        psql(pg, f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
        wait_until(lambda: health()["status"] == "ok", timeout=90, what="ok again")
        assert health()["lake"]["lag_seconds"] == 0 or health()["lake"]["lag_seconds"] < 3.0
        assert http_request(endpoint, "GET", "/readyz").status == 200
    finally:
        one.shutdown()
        psql(pg, f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "lake flush failed" in logged  # the outage was said, and without the password
    assert PASSWORD not in logged
    # readers: the paths of the databases and the catalog server's tables are refused, the
    # lake's rows are read
    for sql in (
        "SELECT path FROM duckdb_databases()",
        "SELECT * FROM __ducklake_metadata_lake.pg_catalog.pg_user",
        "SELECT * FROM pg_stat_activity",
        "SELECT * FROM __ducklake_metadata_lake.pg_catalog.pg_settings",
        "SELECT * FROM duckdb_secrets()",
        "SHOW DATABASES",
    ):
        out = cli("query", sql, "--lake", str(path), "--format", "json")
        assert out.returncode != 0 and "not available over the lake" in out.stderr, (sql, out.stderr)
        assert PASSWORD not in out.stdout + out.stderr
    read = cli("query", "SELECT count(*) AS n FROM spans", "--lake", str(path), "--format", "json")
    assert read.returncode == 0 and json.loads(read.stdout)[0]["n"] > 0, read.stderr
    unreachable = (
        tmp_path / "down.toml"
    )  # a catalog that cannot be reached: the error says so, not the password
    unreachable.write_text(path.read_text().replace(f"/{database}", "/no_such_database"))
    out = cli("query", "SELECT 1", "--lake", str(unreachable))
    assert out.returncode != 0 and "no_such_database" in out.stderr and PASSWORD not in out.stderr, out.stderr


def test_idle_nodes_heartbeat_keep_their_lag_at_zero_and_one_searches(tmp_path, servers):
    config, _ = new_lake(servers, tmp_path)
    nodes = [node(tmp_path, config, "a"), node(tmp_path, config, "b")]
    try:
        assert post_otlp(nodes[1].http_endpoint, "traces", fixtures()[5].body("protobuf")).status == 200
        wait_until(
            lambda: nodes[1].lake.stats.rows.get("agent_runs", 0) > 0, timeout=30, what="b's runs copied"
        )
        heartbeats = [n.lake.stats.heartbeats for n in nodes]
        wait_until(
            lambda: all(n.lake.stats.heartbeats >= h + 4 for n, h in zip(nodes, heartbeats, strict=True)),
            timeout=30,
            what="heartbeats while idle",
        )
        for n in nodes:
            said = n.health()
            assert said["status"] == "ok" and said["lake"]["lag_seconds"] == 0, said
            assert n.reconciler.live_nodes(n.reconciler._now()) == [
                "a",
                "b",
            ]  # neither takes the other as gone
        assert nodes[0].reconciler.looks > 0 and nodes[1].reconciler.looks == 0  # one searcher
        metrics = nodes[0].metrics_text()
        assert "agentotel_lake_lag_seconds 0.0" in metrics and "agentotel_lake_heartbeats_total" in metrics
    finally:
        for n in nodes:
            n.shutdown()


def test_a_hung_s3_is_logged_and_timed_out_and_the_rows_go_after(tmp_path, servers, caplog):
    """S3 accepts connections and never answers (its server stopped): the flush is logged as past the timeout,
    fails, and the node stays up; S3 back, the rows go."""
    pg, _ = servers
    with running_s3() as s3:
        s3.create_bucket("hung")
        name = f"hung{next(_names)}"
        pg.create_database(name)
        from agentotel_eval.collector.config import LakeConfig, LakeS3Config

        config = LakeConfig(
            catalog=f"postgres://agentotel:{PASSWORD}@127.0.0.1:{pg.port}/{name}",
            data="s3://hung/data/",
            flush_interval=0.5,
            reconcile_interval=0,
            timeout=2.0,
            s3=LakeS3Config(
                endpoint=s3.endpoint, key_id="test", secret="test", url_style="path", use_ssl=False
            ),
        )
        caplog.set_level(logging.WARNING)
        one = node(tmp_path, config, "a")
        try:
            os.kill(s3.pid, signal.SIGSTOP)
            try:
                assert post_otlp(one.http_endpoint, "traces", fixtures()[7].body("protobuf")).status == 200
                wait_until(lambda: one.lake.stats.failures > 0, timeout=60, what="the flush to fail")
            finally:
                os.kill(s3.pid, signal.SIGCONT)
            logged = "\n".join(r.getMessage() for r in caplog.records)
            assert "lake flush" in logged and PASSWORD not in logged
            wait_until(
                lambda: one.lake.stats.failing == 0 and one.lake.stats.lag_seconds() == 0,
                timeout=60,
                what="the rows copied once S3 answers",
            )
            assert one.lake.stats.rows.get("spans", 0) == len(fixtures()[7].spans())
        finally:
            one.shutdown()


def test_rescore_with_a_read_only_role_names_the_missing_privilege(tmp_path, servers):
    """A reader's role (SELECT only, with default privileges for tables made later) reads the lake; ``rescore
    --lake`` with it stops with an error naming the privileges it lacks, no traceback."""
    pg, _ = servers
    config, path = new_lake(servers, tmp_path)
    database = config.catalog.rsplit("/", 1)[1]
    first = node(tmp_path, config, "a")
    try:
        assert post_otlp(first.http_endpoint, "traces", fixtures()[9].body("protobuf")).status == 200
    finally:
        first.shutdown()
    psql(
        pg,
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lake_reader') THEN "
        "CREATE ROLE lake_reader LOGIN PASSWORD 'reader-pw'; END IF; END $$",
    )
    for statement in (
        "GRANT USAGE ON SCHEMA public TO lake_reader",
        "GRANT SELECT ON ALL TABLES IN SCHEMA public TO lake_reader",
        "ALTER DEFAULT PRIVILEGES FOR ROLE agentotel IN SCHEMA public GRANT SELECT ON TABLES TO lake_reader",
    ):
        psql(pg, statement, database)
    readonly = tmp_path / "reader.toml"
    readonly.write_text(path.read_text().replace(f"agentotel:{PASSWORD}@", "lake_reader:reader-pw@"))
    read = cli("query", "SELECT count(*) AS n FROM agent_runs", "--lake", str(readonly), "--format", "json")
    assert read.returncode == 0 and json.loads(read.stdout)[0]["n"] > 0, read.stderr
    refused = cli("rescore", "--lake", str(readonly))
    assert refused.returncode == 1, refused.stderr
    assert "Traceback" not in refused.stderr
    assert (
        "role 'lake_reader' lacks DELETE, INSERT, UPDATE on the catalog's tables (ducklake_" in refused.stderr
    ), refused.stderr


def test_one_machine_runs_a_lake_on_a_sqlite_catalog_with_a_node_and_its_readers(tmp_path):
    """The catalog in a SQLite file and the data in a directory: the node flushes while ``query --lake``
    reads, and a re-score over the lake appends its builds, all at once on one machine."""
    from agentotel_eval.collector.config import LakeConfig

    config = LakeConfig(
        catalog=f"sqlite:{tmp_path / 'lake' / 'catalog.sqlite'}",
        data=str(tmp_path / "lake" / "data"),
        flush_interval=0.5,
        reconcile_interval=0.5,
    )
    (tmp_path / "lake").mkdir()
    path = tmp_path / "lake.toml"
    path.write_text(f'[lake]\ncatalog = "{config.catalog}"\ndata = "{config.data}"\n')
    one = node(tmp_path, config, "solo")
    try:
        traces = fixtures()[10:14]
        for fx in traces:
            assert post_otlp(one.http_endpoint, "traces", fx.body("protobuf")).status == 200
        wait_until(
            lambda: one.lake.stats.rows.get("agent_runs", 0) > 0 and one.lake.stats.lag_seconds() == 0,
            timeout=30,
            what="the runs in the lake",
        )
        read = cli("query", "SELECT count(*) AS n FROM spans", "--lake", str(path), "--format", "json")
        assert read.returncode == 0, read.stderr
        assert json.loads(read.stdout) == [{"n": sum(len(fx.spans()) for fx in traces)}]
        rescored = cli("rescore", "--lake", str(path), "--format", "json")  # a writer beside the node's
        assert rescored.returncode == 0 and json.loads(rescored.stdout)["traces"] > 0, rescored.stderr
        assert post_otlp(one.http_endpoint, "traces", fixtures()[14].body("protobuf")).status == 200
        wait_until(
            lambda: one.lake.stats.rows.get("spans", 0) == sum(len(fx.spans()) for fx in fixtures()[10:15]),
            timeout=30,
            what="the node flushing after the re-score",
        )
        assert one.health()["status"] == "ok"
    finally:
        one.shutdown()
