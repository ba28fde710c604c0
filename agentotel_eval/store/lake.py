"""The shared lake: DuckLake tables many collector nodes append to, and every reader attaches read-only.

A node keeps its own DuckDB file (ack after commit, assemble, score) and copies what it committed to the lake:
spans, logs, agent runs, tool calls and evaluations, each row stamped with the node that wrote it and when. The
lake's tables are append-only, so writers never conflict on deletes; a run rebuilt or re-scored later is a newer
row, and the ``latest_*`` views keep the newest per key (the readers' ``agent_runs``, ``evaluations``, ...).

The catalog is a PostgreSQL database (``postgres://user:password@host:port/dbname``) or, for one machine and for
tests, a DuckDB catalog file; the data is Parquet under an S3-compatible URL (``s3://bucket/prefix/``) or a
directory. DuckLake, PostgreSQL and S3 support are DuckDB extensions; they are loaded from their Python packages
(``duckdb-extension-ducklake``, ``-postgres-scanner``, ``-httpfs``), never downloaded.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from agentotel_eval.store.schema import OWN_SOURCE

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

#: the catalog name the lake is attached under
LAKE = "lake"
#: the tables copied to the lake, in the order a flush writes them
TABLES = ("spans", "logs", "agent_runs", "tool_calls", "evaluations")
#: what each table's rows are keyed by, and the column that orders a key's versions (newest wins)
KEYS: Mapping[str, tuple[tuple[str, ...], str]] = {
    "spans": (("trace_id", "span_id"), "ingested_at"),
    "logs": (("log_id",), "ingested_at"),
    "agent_runs": (("trace_id", "span_id"), "updated_at"),
    "tool_calls": (("trace_id", "run_span_id"), "updated_at"),  # a run's calls: the rows of its newest build
    "evaluations": (("trace_id", "run_span_id", "metric"), "updated_at"),
}
#: columns every lake table adds to the node's own
NODE_COLUMNS = (("node", "VARCHAR"), ("flushed_at", "TIMESTAMPTZ"))
#: a node's flush position per table, written in the same transaction as the rows it covers
MARKS = "flush_marks"
_EXTENSIONS = ("ducklake", "postgres_scanner", "httpfs")


class LakeError(Exception):
    """The lake cannot be used: a missing extension package, a bad URL, an unreachable catalog (the message says
    which)."""


@dataclass(frozen=True, slots=True)
class S3Settings:
    endpoint: str = ""  # host:port of an S3-compatible server; empty: AWS
    key_id: str = ""
    secret: str = ""
    region: str = "us-east-1"
    url_style: str = "vhost"  # "path" for MinIO, moto and most S3-compatible servers
    use_ssl: bool = True


@dataclass(frozen=True, slots=True)
class LakeSettings:
    catalog: str  # postgres://user:password@host:port/dbname, or a DuckDB catalog file
    data: str  # s3://bucket/prefix/ or a directory
    s3: S3Settings = S3Settings()

    @property
    def on_s3(self) -> bool:
        return self.data.startswith("s3://")

    @property
    def data_path(self) -> str:
        """The data location as DuckLake takes it: a directory ends in a slash."""
        return self.data if self.data.endswith("/") else self.data + "/"


def settings_from_file(path: str | Path) -> LakeSettings:
    """The ``[lake]`` table of a config file (the nodes' own, or one with only that table)."""
    import tomllib

    try:
        table = tomllib.loads(Path(path).read_text()).get("lake")
    except (OSError, ValueError) as exc:
        raise LakeError(f"cannot read the lake settings in {path}: {exc}") from None
    if not isinstance(table, dict) or not table.get("catalog") or not table.get("data"):
        raise LakeError(f"{path} has no [lake] table with catalog and data")
    s3 = table.get("s3") or {}
    known = set(S3Settings.__dataclass_fields__)
    if not isinstance(s3, dict) or set(s3) - known:
        raise LakeError(f"{path}: [lake.s3] takes {', '.join(sorted(known))}")
    return LakeSettings(str(table["catalog"]), str(table["data"]), S3Settings(**s3))


def catalog_target(catalog: str) -> str:
    """The ``ATTACH`` string of a catalog URL: ``ducklake:postgres:<libpq conninfo>`` or ``ducklake:<file>``."""
    if catalog.startswith(("postgres://", "postgresql://")):
        parts = urlsplit(catalog)
        if not parts.path.strip("/"):
            raise LakeError(f"lake catalog {_shown(catalog)}: name the database (postgres://user@host:port/dbname)")
        fields = {"dbname": unquote(parts.path.strip("/")), "host": parts.hostname or "",
                  "port": str(parts.port or ""), "user": unquote(parts.username or ""),
                  "password": unquote(parts.password or "")}
        conninfo = " ".join(f"{k}={_quoted(v)}" for k, v in fields.items() if v)
        return f"ducklake:postgres:{conninfo}"
    if "://" in catalog:
        raise LakeError(f"lake catalog {_shown(catalog)}: a postgres:// URL or a file path")
    return f"ducklake:{catalog}"


def extension_files() -> list[Path]:
    """The extension files of the installed packages, built for this DuckDB; ``LakeError`` when one is missing."""
    import duckdb

    version = duckdb.__version__
    found: list[Path] = []
    for name in _EXTENSIONS:
        package = "duckdb_extension_" + name
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise LakeError(f"the lake needs DuckDB 1.5.5 and its extension packages ({package.replace('_', '-')} "
                            f"is missing; DuckDB {version} is installed): pip install 'agentotel-eval[lake]'")
        base = Path(next(iter(spec.submodule_search_locations)))
        path = base / "extensions" / f"v{version}" / f"{name}.duckdb_extension"
        if not path.is_file():
            built = sorted(p.parent.name for p in base.glob("extensions/*/*.duckdb_extension"))
            raise LakeError(f"{package.replace('_', '-')} is built for DuckDB {', '.join(built) or '?'}, not "
                            f"v{version}: pip install 'agentotel-eval[lake]' (it pins both)")
        found.append(path)
    return found


def instance() -> duckdb.DuckDBPyConnection:
    """An in-memory instance to attach the lake to: extensions are loaded from their packages by ``attach``,
    never installed or loaded by DuckDB on its own."""
    import duckdb

    return duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                              "autoload_known_extensions": False})


def attach(con: duckdb.DuckDBPyConnection, settings: LakeSettings, *, read_only: bool = False) -> None:
    """Attach the lake to ``con`` as ``lake`` (creating it when writable and new)."""
    import duckdb

    try:
        for path in extension_files():
            con.execute(f"LOAD '{_sql_text(str(path))}'")
        if settings.on_s3:
            s3 = settings.s3
            options = {"TYPE": "s3", "KEY_ID": s3.key_id, "SECRET": s3.secret, "REGION": s3.region,
                       "URL_STYLE": s3.url_style, "SCOPE": settings.data_path}
            if s3.endpoint:
                options["ENDPOINT"] = s3.endpoint
            listed = ", ".join(f"{k} '{_sql_text(v)}'" for k, v in options.items())
            con.execute(f"CREATE OR REPLACE TEMPORARY SECRET agentotel_lake ({listed}, "
                        f"USE_SSL {'true' if s3.use_ssl else 'false'})")
        clause = ["READ_ONLY"] if read_only else [f"DATA_PATH '{_sql_text(settings.data_path)}'"]
        con.execute(f"ATTACH '{_sql_text(catalog_target(settings.catalog))}' AS {LAKE} ({', '.join(clause)})")
    except duckdb.Error as exc:
        raise LakeError(f"cannot attach the lake ({_shown(settings.catalog)}, data {settings.data}): {exc}") from None


def sync_tables(con: duckdb.DuckDBPyConnection, schema: Mapping[str, Sequence[tuple[str, str]]]) -> None:
    """Create the lake's tables and views from a node's table columns (``schema``: table -> (name, type)), plus
    the node columns, and add any column the node's schema has gained since: the lake follows the nodes'
    schema (a column a newer node added is NULL in older rows)."""
    for table in TABLES:
        local = schema[table]
        have = _columns(con, LAKE, table)
        if not have:
            columns = ", ".join(f"{name} {kind}" for name, kind in (*local, *NODE_COLUMNS))
            con.execute(f"CREATE TABLE IF NOT EXISTS {LAKE}.{table} ({columns})")
            continue
        known = {name for name, _ in have}
        for name, kind in local:
            if name not in known:
                con.execute(f"ALTER TABLE {LAKE}.{table} ADD COLUMN {name} {kind}")
    con.execute(f"CREATE TABLE IF NOT EXISTS {LAKE}.{MARKS} (node VARCHAR, table_name VARCHAR, "
                "watermark TIMESTAMPTZ, flushed_at TIMESTAMPTZ)")
    for table in TABLES:
        select = latest_select(table, LAKE)
        if not _view_is(con, f"latest_{table}", select):  # every node starts here: change the catalog only once
            con.execute(f"CREATE OR REPLACE VIEW {LAKE}.latest_{table} AS {select}")


def _view_is(con: duckdb.DuckDBPyConnection, name: str, select: str) -> bool:
    """Whether the lake's view ``name`` is ``select`` already, compared as DuckDB writes views back (it re-renders
    their SQL): through a temporary view of the same SELECT."""
    found = con.execute("SELECT sql FROM duckdb_views() WHERE database_name = ? AND schema_name = 'main' AND "
                        "view_name = ?", [LAKE, name]).fetchall()
    if not found:
        return False
    con.execute(f"CREATE OR REPLACE TEMPORARY VIEW _agentotel_probe AS {select}")
    try:
        (want,) = con.execute("SELECT sql FROM duckdb_views() WHERE temporary AND view_name = '_agentotel_probe'"
                              ).fetchone() or ("",)
    finally:
        con.execute("DROP VIEW _agentotel_probe")
    return str(found[0][0]).partition(" AS ")[2] == str(want).partition(" AS ")[2]


#: what DuckLake says when another writer changed the catalog first (its commits are optimistic); PostgreSQL's
#: own words when two writers create the catalog's tables at once
_CONFLICTS = ("conflict", "duplicate key", "already exists")


def open_writer(settings: LakeSettings, schema: Mapping[str, Sequence[tuple[str, str]]] | None = None, *,
                attempts: int = 8, pause: float = 0.25) -> duckdb.DuckDBPyConnection:
    """A writable instance with the lake attached (created when new), and with ``schema`` its tables and views
    synced (``sync_tables``). Several nodes starting at once race to create the catalog, its tables and views:
    the losers' transactions conflict, and are tried again after a random pause that grows with each try.
    ``LakeError`` when it cannot be done."""
    import random
    import time

    import duckdb

    for attempt in range(1, attempts + 1):
        con = instance()
        try:
            attach(con, settings)
            if schema is not None:
                sync_tables(con, schema)
            return con
        except (LakeError, duckdb.Error) as exc:
            con.close()
            if attempt == attempts or not any(word in str(exc).lower() for word in _CONFLICTS):
                raise LakeError(str(exc) if isinstance(exc, LakeError) else
                                f"cannot set up the lake ({_shown(settings.catalog)}, data {settings.data}): {exc}"
                                ) from None
            time.sleep(random.uniform(pause, 2 * pause) * attempt)
        except BaseException:
            con.close()
            raise
    raise AssertionError("unreachable")


def node_schema(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """A node's tables' columns (table -> (name, type)), as ``sync_tables`` takes them, read from ``con`` (a node's
    database, whose catalog is its current one)."""
    # DESCRIBE: duckdb_columns() would need the catalog's name, which a sealed reader's cursor lacks
    return {table: [(str(row[0]), str(row[1])) for row in con.execute(f"DESCRIBE {table}").fetchall()]
            for table in TABLES}


def latest_select(table: str, catalog: str) -> str:
    """What each table holds now over all nodes: one row per span and log record; the runs and calls of each
    trace's newest build (a trace rebuilt whole, by a reconciler or a re-score, replaces every run an earlier
    build had, as a rebuild replaces them in a node's file); per run and metric the newest score, while its run
    is in that build (other tools' scores always). A row copied twice counts once."""
    key, order = KEYS[table]
    partition = ", ".join(key)
    if table in ("spans", "logs"):
        return (f"SELECT * EXCLUDE (node, flushed_at) FROM {catalog}.{table} QUALIFY row_number() OVER "
                f"(PARTITION BY {partition} ORDER BY {order} DESC NULLS LAST, flushed_at DESC, node) = 1")
    built = (f"(SELECT trace_id, max(updated_at) AS built FROM {catalog}.agent_runs GROUP BY trace_id) b "
             f"ON t.trace_id = b.trace_id")
    if table == "agent_runs":
        return (f"SELECT t.* EXCLUDE (node, flushed_at) FROM {catalog}.agent_runs t JOIN {built} "
                "AND t.updated_at = b.built QUALIFY row_number() OVER (PARTITION BY t.trace_id, t.span_id "
                "ORDER BY t.flushed_at DESC, t.node) = 1")
    if table == "tool_calls":
        return (f"SELECT t.* EXCLUDE (node, flushed_at) FROM {catalog}.tool_calls t JOIN {built} "
                "AND t.updated_at = b.built QUALIFY row_number() OVER (PARTITION BY t.trace_id, t.run_span_id, "
                "t.seq ORDER BY t.flushed_at DESC, t.node) = 1")
    from agentotel_eval.metrics.tool_errors import METRIC_JUDGE

    # evaluations: ours belong to a run of the newest build and were written with it (in its transaction, so
    # with its commit stamp) or after it; a judge's verdict stays with its run span through rebuilds, as a node
    # keeps it through a re-score
    runs = (f"(SELECT trace_id, span_id, committed_at FROM {catalog}.agent_runs QUALIFY updated_at = "
            "max(updated_at) OVER (PARTITION BY trace_id)) r ON t.trace_id = r.trace_id AND t.run_span_id = r.span_id")
    return (f"SELECT t.* EXCLUDE (node, flushed_at) FROM {catalog}.evaluations t LEFT JOIN {runs} "
            f"WHERE t.source IS DISTINCT FROM '{OWN_SOURCE}' OR (r.span_id IS NOT NULL AND "
            f"(t.committed_at >= r.committed_at OR t.metric = '{METRIC_JUDGE}')) QUALIFY row_number() OVER "
            "(PARTITION BY t.trace_id, t.run_span_id, t.metric ORDER BY t.committed_at DESC NULLS LAST, "
            "t.updated_at DESC NULLS LAST, t.flushed_at DESC, t.node) = 1")


def append(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table, constants: Mapping[str, object]) -> int:
    """Append ``rows`` (Arrow, a node's columns) to the lake's ``table`` with ``constants`` set on every row (the
    node, the flush time, ...), inside the caller's transaction; returns the rows appended."""
    from agentotel_eval.store.rows import to_microseconds

    if not rows.num_rows:
        return 0
    con.register("_lake_rows", to_microseconds(rows))
    try:
        names = ", ".join(rows.column_names)
        extra = ", ".join(constants)
        con.execute(f"INSERT INTO {LAKE}.{table} ({names}, {extra}) SELECT {names}, "
                    f"{', '.join('?' for _ in constants)} FROM _lake_rows", list(constants.values()))
    finally:
        con.unregister("_lake_rows")
    return rows.num_rows


def _columns(con: duckdb.DuckDBPyConnection, catalog: str, table: str) -> list[tuple[str, str]]:
    rows = con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = ? AND "
                       "schema_name = 'main' AND table_name = ? ORDER BY column_index", [catalog, table]).fetchall()
    return [(str(name), str(kind)) for name, kind in rows]


def _quoted(value: str) -> str:
    """A libpq conninfo value: quoted when it holds spaces, quotes or backslashes."""
    if value and not any(c in value for c in " '\\"):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _sql_text(value: str) -> str:
    return value.replace("'", "''")


def _shown(url: str) -> str:
    """A URL with its password hidden, for messages."""
    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@", 1)
    return url


#: functions that reach the catalog's PostgreSQL server itself (its files, as a superuser), or run SQL given as text
_SERVER_FUNCTIONS = re.compile(r"\b(postgres_(query|execute|scan|scan_pushdown|attach)|query|query_table)\s*\(",
                               re.IGNORECASE)


def check_reader_sql(sql: str) -> None:
    """Refuse SQL a lake reader must not run: the PostgreSQL extension's functions would send their own SQL to
    the catalog's server (where a superuser reads files), and ``query()`` runs SQL held in a string. ``LakeError``
    names the function."""
    found = _SERVER_FUNCTIONS.search(sql)
    if found is not None:
        raise LakeError(f"{found.group(1)}() is not available over the lake: it would reach the catalog's server")


def open_reader(settings: LakeSettings) -> duckdb.DuckDBPyConnection:
    """A sealed read-only instance over every node's rows: each table's newest rows under the table's own name
    (``spans``, ``agent_runs``, ...) and the views a node's file has (``latest_evaluations``, ...) over them, so
    SQL written for one node's file runs unchanged over all nodes. Its SQL reaches no file or network beyond
    the lake's own data."""
    import duckdb

    from agentotel_eval.store.schema import create_views
    from agentotel_eval.store.sealed import seal

    con = instance()
    try:
        attach(con, settings, read_only=True)
        for table in TABLES:
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM {LAKE}.latest_{table}")
        create_views(con)
        allowed = [settings.data_path]
        if "://" not in settings.catalog:  # a catalog file, and DuckLake's files beside it
            allowed.append(str(Path(settings.catalog).resolve().parent) + "/")
        listed = ", ".join(f"'{_sql_text(path)}'" for path in allowed)
        con.execute(f"SET allowed_directories = [{listed}]")
        con.execute("SET enable_external_access = false")
        seal(con)
    except duckdb.Error as exc:
        con.close()
        raise LakeError(f"cannot read the lake ({_shown(settings.catalog)}, data {settings.data}): {exc}") from None
    except BaseException:
        con.close()
        raise
    return con


#: the time column retention reads in each table
_TIME_COLUMNS = {"spans": "start_time", "logs": "time", "agent_runs": "start_time", "tool_calls": "start_time",
                 "evaluations": "created_at"}


def maintain(con: duckdb.DuckDBPyConnection, retention_seconds: float | None,
             keep_snapshots_seconds: float = 86_400.0) -> dict[str, int]:
    """The lake's one maintenance job (run by one scheduler, not by every node): delete rows older than the
    retention, merge the small files many flushes leave, expire old snapshots and delete the files no snapshot
    needs. Returns the rows deleted per table."""
    deleted: dict[str, int] = {}
    if retention_seconds:
        for table, column in _TIME_COLUMNS.items():
            (n,) = con.execute(f"DELETE FROM {LAKE}.{table} WHERE {column} < now() - to_seconds(?)",
                               [retention_seconds]).fetchone() or (0,)  # DELETE answers its count
            deleted[table] = int(n)
        con.execute(f"DELETE FROM {LAKE}.{MARKS} WHERE flushed_at < now() - to_seconds(?) AND (node, table_name, "
                    f"flushed_at) NOT IN (SELECT node, table_name, max(flushed_at) FROM {LAKE}.{MARKS} GROUP BY ALL)",
                    [retention_seconds])
    con.execute(f"CALL ducklake_merge_adjacent_files('{LAKE}')")
    con.execute(f"CALL ducklake_expire_snapshots('{LAKE}', older_than => now() - to_seconds(?))",
                [keep_snapshots_seconds])
    con.execute(f"CALL ducklake_cleanup_old_files('{LAKE}', cleanup_all => true)")
    return deleted
