"""The lake's settings and SQL, as data: no extension, server or DuckDB 1.5.5 needed."""

from __future__ import annotations

import pytest

from agentotel_eval.collector.config import ConfigError, load_config
from agentotel_eval.store import lake


def test_a_postgres_catalog_url_becomes_ducklakes_attach_string_with_timeouts():
    assert lake.catalog_target("postgres://agent:p%40ss w@db.internal:5433/lake", timeout=12) == (
        "ducklake:postgres:dbname=lake host=db.internal port=5433 user=agent password='p@ss w' "
        "connect_timeout=12 keepalives=1 keepalives_idle=10 keepalives_interval=5 keepalives_count=3 "
        "tcp_user_timeout=12000"
    )
    assert lake.catalog_target("sqlite:/srv/lake/meta.sqlite") == "ducklake:sqlite:/srv/lake/meta.sqlite"
    with pytest.raises(lake.LakeError, match="name the database"):
        lake.catalog_target("postgres://agent@db:5432/")
    with pytest.raises(lake.LakeError, match="a postgres:// URL, or sqlite:/path"):
        lake.catalog_target("mysql://db/lake")


def test_a_duckdb_catalog_file_is_refused_at_config_load_with_the_reason(tmp_path):
    path = tmp_path / "node.toml"
    path.write_text('[lake]\ncatalog = "/srv/lake/meta.ducklake"\ndata = "/srv/lake/data"\n')
    with pytest.raises(
        ConfigError, match=r"lake\.catalog: .*open in one process only.*sqlite:/srv/lake/meta"
    ):
        load_config(path).validate()
    with pytest.raises(lake.LakeError, match="open in one process only"):
        lake.settings_from_file(path)
    path.write_text(
        '[lake]\ncatalog = "sqlite:/srv/lake/meta.sqlite"\ndata = "/srv/lake/data"\nnode = "a@b"\n'
    )
    with pytest.raises(ConfigError, match=r"lake\.node: .*'@' is kept"):
        load_config(path).validate()


def test_secrets_are_scrubbed_from_any_text_the_lake_says():
    settings = lake.LakeSettings(
        "postgres://agent:Sup3r%2Fsecret@db:5432/lake", "s3://b/p", lake.S3Settings(secret="s3-secret-key")
    )
    said = (
        "cannot attach the lake: IO Error: Unable to connect to Postgres at dbname=lake host=db "
        "password='Sup3r/secret' user=agent: connection refused; "
        "postgres://agent:Sup3r%2Fsecret@db:5432/lake; password=Sup3r/secret; s3 said s3-secret-key"
    )
    scrubbed = settings.scrub(said)
    assert "Sup3r" not in scrubbed and "s3-secret-key" not in scrubbed, scrubbed
    assert (
        "dbname=lake host=db password=*** user=agent" in scrubbed
        and "postgres://agent:***@db:5432" in scrubbed
    )
    # a text that carries no secret is left as it was
    assert settings.scrub("flush failed: timeout") == "flush failed: timeout"


def test_a_refused_privilege_is_named_in_the_error():
    said = lake.explain(
        RuntimeError("Failed to commit: ERROR:  permission denied for table ducklake_snapshot")
    )
    assert said.startswith("the catalog's role lacks a privilege on ducklake_snapshot")
    assert "INSERT, UPDATE and DELETE" in said


def test_the_lake_table_of_a_config_file(tmp_path):
    path = tmp_path / "node.toml"
    path.write_text(
        '[lake]\ncatalog = "postgres://a@h:5432/l"\ndata = "s3://b/p"\nflush_interval = "2s"\n'
        '[lake.s3]\nendpoint = "minio:9000"\nkey_id = "k"\nsecret = "s"\nurl_style = "path"\n'
    )
    settings = lake.settings_from_file(path)
    assert (settings.catalog, settings.data_path, settings.on_s3) == (
        "postgres://a@h:5432/l",
        "s3://b/p/",
        True,
    )
    assert (settings.s3.endpoint, settings.s3.url_style, settings.s3.use_ssl) == ("minio:9000", "path", True)
    config = load_config(path).validate()  # the node reads the same table, validated
    assert (
        config.lake is not None and config.lake.flush_interval == 2.0 and config.lake.settings() == settings
    )
    path.write_text('[lake]\ncatalog = "postgres://a@h:5432/l"\ndata = "ftp://x"\n')
    with pytest.raises(ConfigError, match=r"lake\.data: an s3:// URL or a directory"):
        load_config(path).validate()
    path.write_text('[lake]\ncatalog = "postgres://a@h:5432/l"\ndata = "/d"\n[lake.s3]\nkey = "k"\n')
    with pytest.raises(ConfigError, match=r"lake\.s3\.key"):
        load_config(path)
    (tmp_path / "none.toml").write_text("retention = '30d'\n")
    with pytest.raises(lake.LakeError, match="has no \\[lake\\] table"):
        lake.settings_from_file(tmp_path / "none.toml")


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        (
            "SELECT * FROM postgres_query('__ducklake_metadata_lake', 'SELECT "
            "pg_read_file(''/etc/passwd'')')",
            True,
        ),
        ("CALL postgres_execute('x', 'DROP TABLE t')", True),
        ("SELECT * FROM query('SELECT 1')", True),
        ("SELECT * FROM Query_Table ('spans')", True),
        # the instance's databases (their paths: the catalog's connection string), settings and secrets
        ("SELECT path FROM duckdb_databases()", True),
        ("SELECT * FROM (SELECT * FROM duckdb_secrets()) s", True),
        ("EXPLAIN SELECT * FROM duckdb_settings()", True),
        ("SHOW DATABASES", True),
        ("SELECT current_setting('s3_secret_access_key')", True),
        # the catalog's own database and its server's tables
        ("SELECT * FROM __ducklake_metadata_lake.pg_catalog.pg_user", True),
        ('SELECT * FROM "__DUCKLAKE_METADATA_LAKE".public.ducklake_snapshot', True),
        ("SELECT query FROM pg_stat_activity", True),
        ("SELECT * FROM pg_settings", True),
        ("SELECT * FROM information_schema.tables", True),
        ("SELECT count(*) FROM spans WHERE name = 'query'", False),
        ("SELECT agent_name, count(*) AS query_count FROM agent_runs GROUP BY 1", False),
        (
            "WITH s AS (SELECT * FROM lake.spans) SELECT node, count(*) FROM s JOIN lake.trace_parts USING "
            "(trace_id) GROUP BY 1",
            False,
        ),
        ("SELECT * FROM latest_evaluations, unnest([1, 2]) u", False),
        ("DESCRIBE agent_runs", False),
    ],
)
def test_a_reader_refuses_the_functions_that_reach_the_catalogs_server(sql, refused):
    if refused:
        with pytest.raises(lake.LakeError, match="is not available over the lake"):
            lake.check_reader_sql(sql)
    else:
        lake.check_reader_sql(sql)


def test_the_latest_views_keep_each_traces_newest_build_and_its_scores():
    import duckdb

    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS lake")
    con.execute(
        "CREATE TABLE lake.agent_runs (trace_id VARCHAR, span_id VARCHAR, agent_name VARCHAR, "
        "updated_at TIMESTAMPTZ, committed_at TIMESTAMPTZ, trace_root BOOLEAN, node VARCHAR, "
        "flushed_at TIMESTAMPTZ)"
    )
    # trace t: built by node a (runs s and a phantom r), rebuilt whole later (s only), copied twice, then a
    # part of it without the root built by node c (a nameless run): the whole build stays; u: one build; v: no
    # build ever had the root (its root lives elsewhere): the newest; w: written before builds said (NULL)
    con.execute(
        "INSERT INTO lake.agent_runs VALUES "
        "('t', 's', 'old', '2026-01-01', '2026-01-01', true, 'a', '2026-01-01'), "
        "('t', 'r', 'phantom', '2026-01-01', '2026-01-01', true, 'a', '2026-01-01'), "
        "('t', 's', 'new', '2026-01-02', '2026-01-02', true, 'b', '2026-01-02'), "
        "('t', 's', 'new', '2026-01-02', '2026-01-02', true, 'b', '2026-01-03'), "
        "('t', 'q', 'rootless', '2026-01-04', '2026-01-04', false, 'c', '2026-01-04'), "
        "('u', 'x', 'only', '2026-01-01', '2026-01-01', true, 'a', '2026-01-01'), "
        "('v', 'y', 'part', '2026-01-01', '2026-01-01', false, 'a', '2026-01-01'), "
        "('v', 'y', 'whole', '2026-01-02', '2026-01-02', false, 'reconciler@a', '2026-01-02'), "
        "('w', 'z', 'old', '2026-01-01', '2026-01-01', NULL, 'a', '2026-01-01'), "
        "('w', 'z', 'rootless', '2026-01-02', '2026-01-02', false, 'b', '2026-01-02')"
    )
    rows = con.execute(
        f"SELECT trace_id, span_id, agent_name FROM ({lake.latest_select('agent_runs', 'lake')}) ORDER BY ALL"
    ).fetchall()
    assert rows == [("t", "s", "new"), ("u", "x", "only"), ("v", "y", "whole"), ("w", "z", "old")]
    con.execute(
        "CREATE TABLE lake.tool_calls (trace_id VARCHAR, run_span_id VARCHAR, seq INTEGER, tool_name "
        "VARCHAR, updated_at TIMESTAMPTZ, node VARCHAR, flushed_at TIMESTAMPTZ)"
    )
    con.execute(
        "INSERT INTO lake.tool_calls VALUES ('t', 's', 0, 'a', '2026-01-01', 'n', '2026-01-01'), "
        "('t', 's', 1, 'b', '2026-01-01', 'n', '2026-01-01'), ('t', 'r', 0, 'p', '2026-01-01', 'n', "
        "'2026-01-01'), ('t', 's', 0, 'c', '2026-01-02', 'n', '2026-01-02'), ('t', 's', 0, 'c', "
        "'2026-01-02', 'm', '2026-01-03')"
    )
    calls = con.execute(
        f"SELECT run_span_id, seq, tool_name FROM ({lake.latest_select('tool_calls', 'lake')}) ORDER BY ALL"
    ).fetchall()
    assert calls == [("s", 0, "c")]  # the newest build's calls only, each once
    con.execute(
        "CREATE TABLE lake.evaluations (trace_id VARCHAR, run_span_id VARCHAR, metric VARCHAR, score DOUBLE, "
        "source VARCHAR, updated_at TIMESTAMPTZ, committed_at TIMESTAMPTZ, node VARCHAR, "
        "flushed_at TIMESTAMPTZ)"
    )
    own = "agentotel-eval"
    con.execute(
        "INSERT INTO lake.evaluations VALUES "
        f"('t', 's', 'tool_correctness', 0.5, '{own}', '2026-01-01', '2026-01-01', 'a', '2026-01-01'), "
        f"('t', 's', 'tool_errors', 1.0, '{own}', '2026-01-01 01:00', '2026-01-01 01:00', 'a', "
        f"'2026-01-01'), ('t', 's', 'argument_f1', 0.2, '{own}', '2026-01-01', '2026-01-01', 'a', "
        f"'2026-01-01'), ('t', 'r', 'tool_correctness', 0.0, '{own}', '2026-01-01', '2026-01-01', 'a', "
        f"'2026-01-01'), ('t', 'r', 'external', 0.7, 'external:x/y', '2026-01-01', '2026-01-01', "
        f"'a', '2026-01-01'), "
        # the rebuild's score, stamped with its build's commit (its updated_at, when it was scored, earlier)
        f"('t', 's', 'tool_correctness', 1.0, '{own}', '2026-01-01 23:59', '2026-01-02', 'b', '2026-01-02')"
    )
    scores = con.execute(
        f"SELECT run_span_id, metric, score FROM ({lake.latest_select('evaluations', 'lake')}) ORDER BY ALL"
    ).fetchall()
    # the rebuild's score; the judge's verdict kept; a metric the rebuild no longer gives and the phantom
    # run's scores gone; another tool's score kept
    assert scores == [("r", "external", 0.7), ("s", "tool_correctness", 1.0), ("s", "tool_errors", 1.0)]


def test_a_node_starting_on_a_lake_of_its_own_schema_changes_nothing_in_the_catalog(tmp_path):
    """Every node syncs the lake's tables and views at its start: when they are already as its schema has
    them, it writes no catalog change (nodes starting together would otherwise conflict on every view)."""
    import duckdb

    from agentotel_eval.store.schema import migrate

    try:
        lake.extension_files()
    except lake.LakeError as exc:
        pytest.skip(f"needs the [lake] extra: {exc}")
    local = duckdb.connect()
    migrate(local)
    schema = lake.node_schema(local)
    settings = lake.LakeSettings(f"sqlite:{tmp_path / 'catalog.sqlite'}", str(tmp_path / "data"))
    con = lake.open_writer(settings, schema)
    snapshots = con.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()[0]
    con.close()
    again = lake.open_writer(settings, schema)
    assert again.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()[0] == snapshots
    schema["spans"] = [*schema["spans"], ("added_later", "VARCHAR")]  # a newer node's column is added
    lake.sync_tables(again, schema)
    assert again.execute("SELECT count(*) FROM ducklake_snapshots('lake')").fetchone()[0] == snapshots + 1
    again.close()
