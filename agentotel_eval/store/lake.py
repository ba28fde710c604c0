"""The shared lake: DuckLake tables many collector nodes append to, and every reader attaches read-only.

A node keeps its own DuckDB file (ack after commit, assemble, score) and copies what it committed to the lake:
spans, logs, agent runs, tool calls and evaluations, each row stamped with the node that wrote it and when.
The lake's tables are append-only, so writers never conflict on deletes; a run rebuilt or re-scored later is a
newer row, and the ``latest_*`` views keep the newest per key (the readers' ``agent_runs``,
``evaluations``, ...).

The catalog is a PostgreSQL database (``postgres://user:password@host:port/dbname``) or, for one machine, a
SQLite file (``sqlite:/path/catalog.sqlite``: several processes of one machine can use it at once, which a
DuckDB catalog file cannot); the data is Parquet under an S3-compatible URL (``s3://bucket/prefix/``) or a
directory. DuckLake, PostgreSQL, SQLite and S3 support are DuckDB extensions; they are loaded from their
Python packages (``duckdb-extension-ducklake``, ``-postgres-scanner``, ``-sqlite-scanner``,
``-httpfs``), never downloaded.

The catalog's URL holds its password: every message that can carry it (DuckDB's errors name the connection
string) goes through ``LakeSettings.scrub``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from agentotel_eval.metrics.registry import TOOL_ERRORS
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
#: the narrow index of trace parts: one row per trace and flush (trace id, node, flush time, spans, whether
#: the part held a root span), written with the spans; the reconciler finds split traces in it
PARTS = "trace_parts"
#: a ``node`` that wrote a build from every node's spans in the lake (the reconciler, ``rescore --lake``)
#: holds this; a node's own name never does (``check_node_name``)
LAKE_BUILDER = "@"
#: the extensions every lake needs; a SQLite catalog also needs ``sqlite_scanner``
_EXTENSIONS = ("ducklake", "postgres_scanner", "httpfs")
_SQLITE = "sqlite:"


class LakeError(Exception):
    """The lake cannot be used: a missing extension package, a bad URL, an unreachable catalog (the message
    says which)."""


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
    catalog: str  # postgres://user:password@host:port/dbname, or sqlite:/path/catalog.sqlite
    data: str  # s3://bucket/prefix/ or a directory
    s3: S3Settings = S3Settings()
    #: seconds an operation on the catalog's server or S3 may wait for an answer before it fails
    timeout: float = 30.0

    @property
    def on_s3(self) -> bool:
        return self.data.startswith("s3://")

    @property
    def sqlite_file(self) -> str | None:
        """The catalog's SQLite file, for a one-machine lake; None for PostgreSQL."""
        return self.catalog[len(_SQLITE) :] if self.catalog.startswith(_SQLITE) else None

    def scrub(self, text: str) -> str:
        """``text`` (an error, a log line) with this lake's secrets hidden: the catalog's password, its
        connection string, the S3 secret."""
        secrets = [self.s3.secret]
        if self.catalog.startswith(("postgres://", "postgresql://")):
            parts = urlsplit(self.catalog)
            if parts.password:
                secrets += [parts.password, unquote(parts.password)]
        return scrub(text, secrets)

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
    from agentotel_eval.durations import DurationError, parse_duration

    try:
        timeout = parse_duration(table.get("timeout", 30.0))
    except DurationError as exc:
        raise LakeError(f"{path}: [lake] timeout: {exc}") from None
    settings = LakeSettings(str(table["catalog"]), str(table["data"]), S3Settings(**s3), timeout)
    catalog_target(settings.catalog, settings.timeout)  # refused here, with the reason, rather than at attach
    return settings


def catalog_target(catalog: str, timeout: float = 30.0) -> str:
    """The ``ATTACH`` string of a catalog URL: ``ducklake:postgres:<libpq conninfo>`` (with a connect timeout
    and TCP keepalives, so a catalog server that stopped answering fails an operation instead of hanging it)
    or ``ducklake:sqlite:<file>``. ``LakeError`` for anything else, saying why."""
    if catalog.startswith(("postgres://", "postgresql://")):
        parts = urlsplit(catalog)
        if not parts.path.strip("/"):
            raise LakeError(
                f"lake catalog {_shown(catalog)}: name the database (postgres://user@host:port/dbname)"
            )
        fields = {
            "dbname": unquote(parts.path.strip("/")),
            "host": parts.hostname or "",
            "port": str(parts.port or ""),
            "user": unquote(parts.username or ""),
            "password": unquote(parts.password or ""),
            "connect_timeout": str(max(1, round(timeout))),
            "keepalives": "1",
            "keepalives_idle": "10",
            "keepalives_interval": "5",
            "keepalives_count": "3",
            "tcp_user_timeout": str(round(timeout * 1000)),
        }
        conninfo = " ".join(f"{k}={_quoted(v)}" for k, v in fields.items() if v)
        return f"ducklake:postgres:{conninfo}"
    if catalog.startswith(_SQLITE):
        if not catalog[len(_SQLITE) :].strip():
            raise LakeError("lake catalog sqlite: name the file (sqlite:/path/catalog.sqlite)")
        return f"ducklake:{catalog}"
    if "://" in catalog:
        raise LakeError(f"lake catalog {_shown(catalog)}: a postgres:// URL, or sqlite:/path for one machine")
    raise LakeError(
        f"lake catalog {catalog!r}: a DuckDB catalog file can be open in one process only, and a node's "
        "flusher and reconciler and every reader (query --lake, lake ui) need it at once; for one "
        f'machine use a SQLite catalog (catalog = "sqlite:{catalog}"), for several a postgres:// URL'
    )


def check_node_name(node: str) -> None:
    """A node's name in the lake's rows; ``LakeError`` for one that would read as a whole-lake builder's."""
    if LAKE_BUILDER in node:
        raise LakeError(
            f"lake node name {node!r}: {LAKE_BUILDER!r} is kept for the builders that read every "
            "node's spans (reconciler@<node>, rescore@...)"
        )


def extension_files(settings: LakeSettings | None = None) -> list[Path]:
    """The extension files of the installed packages, built for this DuckDB (with ``settings``: those its lake
    needs); ``LakeError`` when one is missing."""
    import duckdb

    version = duckdb.__version__
    found: list[Path] = []
    needed = _EXTENSIONS + (("sqlite_scanner",) if settings is not None and settings.sqlite_file else ())
    for name in needed:
        package = "duckdb_extension_" + name
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise LakeError(
                f"the lake needs DuckDB 1.5.5 and its extension packages ({package.replace('_', '-')} "
                f"is missing; DuckDB {version} is installed): pip install 'agentotel-eval[lake]'"
            )
        base = Path(next(iter(spec.submodule_search_locations)))
        path = base / "extensions" / f"v{version}" / f"{name}.duckdb_extension"
        if not path.is_file():
            built = sorted(p.parent.name for p in base.glob("extensions/*/*.duckdb_extension"))
            raise LakeError(
                f"{package.replace('_', '-')} is built for DuckDB {', '.join(built) or '?'}, not "
                f"v{version}: pip install 'agentotel-eval[lake]' (it pins both)"
            )
        found.append(path)
    return found


def instance() -> duckdb.DuckDBPyConnection:
    """An in-memory instance to attach the lake to: extensions are loaded from their packages by ``attach``,
    never installed or loaded by DuckDB on its own."""
    import duckdb

    return duckdb.connect(
        ":memory:", config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )


def attach(con: duckdb.DuckDBPyConnection, settings: LakeSettings, *, read_only: bool = False) -> None:
    """Attach the lake to ``con`` as ``lake`` (creating it when writable and new)."""
    import duckdb

    try:
        for path in extension_files(settings):
            con.execute(f"LOAD '{_sql_text(str(path))}'")
        # an S3 server or a catalog server that stopped answering fails the operation after this long (GLOBAL:
        # the instance is this lake's only). DuckLake's own Parquet writes keep DuckDB's default HTTP limit
        # (30 s): the flusher's watchdog says so when a flush runs past the timeout
        con.execute(f"SET GLOBAL http_timeout = {max(1, round(settings.timeout))}")
        con.execute("SET GLOBAL http_retries = 1")
        con.execute(f"SET GLOBAL pg_statement_timeout_millis = {round(settings.timeout * 1000)}")
        con.execute(f"SET GLOBAL pg_pool_wait_timeout_millis = {round(settings.timeout * 1000)}")
        if settings.on_s3:
            s3 = settings.s3
            options = {
                "TYPE": "s3",
                "KEY_ID": s3.key_id,
                "SECRET": s3.secret,
                "REGION": s3.region,
                "URL_STYLE": s3.url_style,
                "SCOPE": settings.data_path,
            }
            if s3.endpoint:
                options["ENDPOINT"] = s3.endpoint
            listed = ", ".join(f"{k} '{_sql_text(v)}'" for k, v in options.items())
            con.execute(
                f"CREATE OR REPLACE TEMPORARY SECRET agentotel_lake ({listed}, "
                f"USE_SSL {'true' if s3.use_ssl else 'false'})"
            )
        clause = ["READ_ONLY"] if read_only else [f"DATA_PATH '{_sql_text(settings.data_path)}'"]
        target = catalog_target(settings.catalog, settings.timeout)
        con.execute(f"ATTACH '{_sql_text(target)}' AS {LAKE} ({', '.join(clause)})")
    except duckdb.Error as exc:
        raise LakeError(
            settings.scrub(
                f"cannot attach the lake ({_shown(settings.catalog)}, data {settings.data}): {explain(exc)}"
            )
        ) from None


def _write_ahead(path: str) -> None:
    """Put a SQLite catalog in write-ahead-log mode (kept in the file): its readers (``query --lake``, ``lake
    ui``) then never wait for the node's flushes, nor fail on its lock."""
    import sqlite3

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, timeout=30)
    try:
        con.execute("PRAGMA journal_mode=WAL")
    finally:
        con.close()


def sync_tables(con: duckdb.DuckDBPyConnection, schema: Mapping[str, Sequence[tuple[str, str]]]) -> None:
    """Create the lake's tables and views from a node's table columns (``schema``: table -> (name, type)),
    plus the node columns, and add any column the node's schema has gained since: the lake follows the nodes'
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
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {LAKE}.{MARKS} (node VARCHAR, table_name VARCHAR, "
        "watermark TIMESTAMPTZ, flushed_at TIMESTAMPTZ)"
    )
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {LAKE}.{PARTS} (trace_id VARCHAR, node VARCHAR, flushed_at TIMESTAMPTZ, "
        "spans INTEGER, rooted BOOLEAN)"
    )
    for table in TABLES:
        select = latest_select(table, LAKE)
        if not _view_is(
            con, f"latest_{table}", select
        ):  # every node starts here: change the catalog only once
            con.execute(f"CREATE OR REPLACE VIEW {LAKE}.latest_{table} AS {select}")


def _view_is(con: duckdb.DuckDBPyConnection, name: str, select: str) -> bool:
    """Whether the lake's view ``name`` is ``select`` already, compared as DuckDB writes views back (it
    re-renders their SQL): through a temporary view of the same SELECT."""
    found = con.execute(
        "SELECT sql FROM duckdb_views() WHERE database_name = ? AND schema_name = 'main' AND view_name = ?",
        [LAKE, name],
    ).fetchall()
    if not found:
        return False
    con.execute(f"CREATE OR REPLACE TEMPORARY VIEW _agentotel_probe AS {select}")
    try:
        (want,) = con.execute(
            "SELECT sql FROM duckdb_views() WHERE temporary AND view_name = '_agentotel_probe'"
        ).fetchone() or ("",)
    finally:
        con.execute("DROP VIEW _agentotel_probe")
    return str(found[0][0]).partition(" AS ")[2] == str(want).partition(" AS ")[2]


#: what DuckLake says when another writer changed the catalog first (its commits are optimistic); PostgreSQL's
#: own words when two writers create the catalog's tables at once
_CONFLICTS = ("conflict", "duplicate key", "already exists")


def open_writer(
    settings: LakeSettings,
    schema: Mapping[str, Sequence[tuple[str, str]]] | None = None,
    *,
    attempts: int = 8,
    pause: float = 0.25,
) -> duckdb.DuckDBPyConnection:
    """A writable instance with the lake attached (created when new), and with ``schema`` its tables and views
    synced (``sync``). Several nodes starting at once race to create the catalog: the losers' transactions
    conflict, and are tried again after a random pause that grows with each try. ``LakeError`` when it cannot
    be done."""
    import duckdb

    for attempt in range(1, attempts + 1):
        con = instance()
        try:
            attach(con, settings)
            break
        except (LakeError, duckdb.Error) as exc:
            con.close()
            _again(settings, exc, attempt, attempts, pause)
        except BaseException:
            con.close()
            raise
    if schema is not None:
        try:
            sync(con, settings, schema, attempts=attempts, pause=pause)
        except BaseException:
            con.close()
            raise
    return con


def sync(
    con: duckdb.DuckDBPyConnection,
    settings: LakeSettings,
    schema: Mapping[str, Sequence[tuple[str, str]]],
    *,
    attempts: int = 8,
    pause: float = 0.25,
) -> None:
    """``sync_tables``, tried again when another node changed the catalog first (nodes starting together)."""
    import duckdb

    for attempt in range(1, attempts + 1):
        try:
            sync_tables(con, schema)
            return
        except duckdb.Error as exc:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            _again(settings, exc, attempt, attempts, pause)


def _again(settings: LakeSettings, exc: BaseException, attempt: int, attempts: int, pause: float) -> None:
    """Pause before the next try of a catalog change that conflicted; ``LakeError`` when it was the last try
    or not a conflict."""
    import random
    import time

    if attempt == attempts or not any(word in str(exc).lower() for word in _CONFLICTS):
        raise LakeError(
            str(exc)
            if isinstance(exc, LakeError)
            else settings.scrub(
                f"cannot set up the lake ({_shown(settings.catalog)}, data {settings.data}): {explain(exc)}"
            )
        ) from None
    time.sleep(random.uniform(pause, 2 * pause) * attempt)


def node_schema(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str]]]:
    """A node's tables' columns (table -> (name, type)), as ``sync_tables`` takes them, read from ``con`` (a
    node's database, whose catalog is its current one)."""
    # DESCRIBE: duckdb_columns() would need the catalog's name, which a sealed reader's cursor lacks
    return {
        table: [(str(row[0]), str(row[1])) for row in con.execute(f"DESCRIBE {table}").fetchall()]
        for table in TABLES
    }


def latest_select(table: str, catalog: str) -> str:
    """What each table holds now over all nodes: one row per span and log record; the runs and calls of each
    trace's shown build (a trace rebuilt whole, by a reconciler or a re-score, replaces every run an earlier
    build had, as a rebuild replaces them in a node's file); per run and metric the newest score, while its
    run is in that build (other tools' scores always). A row copied twice counts once.

    A trace's shown build is its newest build made from spans that held the trace's root span, else (no build
    had it: the root lives in a service that does not export here) its newest: a node that built a part of a
    split trace without its root (after ``max_wait``) never replaces a build that had the root. Rows written
    before builds said (``trace_root`` NULL) count as having it."""
    key, order = KEYS[table]
    partition = ", ".join(key)
    if table in ("spans", "logs"):
        return (
            f"SELECT * EXCLUDE (node, flushed_at) FROM {catalog}.{table} QUALIFY row_number() OVER "
            f"(PARTITION BY {partition} ORDER BY {order} DESC NULLS LAST, flushed_at DESC, node) = 1"
        )
    built = f"({shown_builds(catalog)}) b ON t.trace_id = b.trace_id"
    if table == "agent_runs":
        return (
            f"SELECT t.* EXCLUDE (node, flushed_at) FROM {catalog}.agent_runs t JOIN {built} "
            "AND t.updated_at = b.built QUALIFY row_number() OVER (PARTITION BY t.trace_id, t.span_id "
            "ORDER BY t.flushed_at DESC, t.node) = 1"
        )
    if table == "tool_calls":
        return (
            f"SELECT t.* EXCLUDE (node, flushed_at) FROM {catalog}.tool_calls t JOIN {built} "
            "AND t.updated_at = b.built QUALIFY row_number() OVER (PARTITION BY t.trace_id, t.run_span_id, "
            "t.seq ORDER BY t.flushed_at DESC, t.node) = 1"
        )
    # evaluations: ours belong to a run of the shown build and were written with it (in its transaction, so
    # with its commit stamp) or after it; a judge's verdict stays with its run span through rebuilds, as a
    # node keeps it through a re-score
    runs = (
        f"(SELECT r.trace_id, r.span_id, r.committed_at FROM {catalog}.agent_runs r JOIN "
        f"({shown_builds(catalog)}) b ON r.trace_id = b.trace_id AND r.updated_at = b.built) r "
        "ON t.trace_id = r.trace_id AND t.run_span_id = r.span_id"
    )
    return (
        f"SELECT t.* EXCLUDE (node, flushed_at) FROM {catalog}.evaluations t LEFT JOIN {runs} "
        f"WHERE t.source IS DISTINCT FROM '{OWN_SOURCE}' OR (r.span_id IS NOT NULL AND "
        f"(t.committed_at >= r.committed_at OR t.metric = '{TOOL_ERRORS.name}')) QUALIFY row_number() OVER "
        "(PARTITION BY t.trace_id, t.run_span_id, t.metric ORDER BY t.committed_at DESC NULLS LAST, "
        "t.updated_at DESC NULLS LAST, t.flushed_at DESC, t.node) = 1"
    )


def shown_builds(catalog: str) -> str:
    """Each trace's shown build, as (trace_id, built: its ``updated_at``): the newest that had the trace's
    root span, else the newest (``latest_select``)."""
    return (
        f"SELECT trace_id, coalesce(max(updated_at) FILTER (WHERE trace_root IS DISTINCT FROM FALSE), "
        f"max(updated_at)) AS built FROM {catalog}.agent_runs GROUP BY trace_id"
    )


def append(
    con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table, constants: Mapping[str, object]
) -> int:
    """Append ``rows`` (Arrow, a node's columns) to the lake's ``table`` with ``constants`` set on every row
    (the node, the flush time, ...), inside the caller's transaction; returns the rows appended."""
    from agentotel_eval.store.rows import to_microseconds

    if not rows.num_rows:
        return 0
    con.register("_lake_rows", to_microseconds(rows))
    try:
        names = ", ".join(rows.column_names)
        extra = ", ".join(constants)
        con.execute(
            f"INSERT INTO {LAKE}.{table} ({names}, {extra}) SELECT {names}, "
            f"{', '.join('?' for _ in constants)} FROM _lake_rows",
            list(constants.values()),
        )
    finally:
        con.unregister("_lake_rows")
    return rows.num_rows


def _columns(con: duckdb.DuckDBPyConnection, catalog: str, table: str) -> list[tuple[str, str]]:
    rows = con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = ? AND "
        "schema_name = 'main' AND table_name = ? ORDER BY column_index",
        [catalog, table],
    ).fetchall()
    return [(str(name), str(kind)) for name, kind in rows]


def append_parts(con: duckdb.DuckDBPyConnection, spans: pa.Table, node: str, flushed_at: object) -> int:
    """The narrow index rows of a flush's ``spans``: one per trace (its spans in the flush, and whether one of
    them is a root span), in the caller's transaction; returns the rows appended."""
    if not spans.num_rows:
        return 0
    con.register("_lake_parts", spans.select(["trace_id", "parent_span_id"]))
    try:
        (n,) = con.execute(
            f"INSERT INTO {LAKE}.{PARTS} SELECT trace_id, ?, ?, count(*), bool_or(coalesce(parent_span_id, "
            f"'') = '') FROM _lake_parts GROUP BY trace_id",
            [node, flushed_at],
        ).fetchone() or (0,)
    finally:
        con.unregister("_lake_parts")
    return int(n)


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


#: a password in a libpq connection string (``password=x`` or ``password='x y'``) and in a URL's user part
_CONNINFO_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]*):[^\s@/]*@", re.IGNORECASE)


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with passwords hidden: those of connection strings and URLs in it, and each of ``secrets``."""
    text = _CONNINFO_PASSWORD.sub(r"\1***", text)
    text = _URL_PASSWORD.sub(r"\1:***@", text)
    for secret in sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


#: what PostgreSQL says when the catalog's role lacks a privilege on one of its tables
_DENIED = re.compile(
    r"permission denied for (?:table|relation|schema|sequence|database) \"?([\w.]+)", re.IGNORECASE
)


def explain(exc: BaseException) -> str:
    """DuckDB's error, with the missing privilege named when the catalog's server refused one: the message
    names the table, PostgreSQL does not name the privilege."""
    text = str(exc)
    denied = _DENIED.search(text)
    if denied is None:
        return text
    return (
        f"the catalog's role lacks a privilege on {denied.group(1)} (PostgreSQL: {denied.group(0)}): a lake "
        f"reader needs SELECT on the catalog's tables, a node and rescore --lake also INSERT, UPDATE and "
        f"DELETE (docs/scale-out.md, the roles). {text}"
    )


def missing_privileges(con: duckdb.DuckDBPyConnection, settings: LakeSettings, *, write: bool) -> list[str]:
    """The privileges the catalog's PostgreSQL role lacks on the catalog's tables, as ``PRIVILEGE on table``
    (empty for a SQLite catalog): SELECT for reading, and INSERT, UPDATE and DELETE to write (a node, the
    reconciler, ``rescore --lake``)."""
    if settings.sqlite_file is not None:
        return []
    privileges = ("SELECT", "INSERT", "UPDATE", "DELETE") if write else ("SELECT",)
    listed = ", ".join(f"''{p}''" for p in privileges)
    rows = con.execute(
        f"SELECT * FROM postgres_query('__ducklake_metadata_{LAKE}', 'SELECT c.relname::text, "
        f"p.privilege::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace CROSS JOIN "
        f"unnest(ARRAY[{listed}]) AS p(privilege) WHERE c.relkind = ''r'' AND c.relname LIKE ''ducklake%'' "
        f"AND n.nspname = current_schema() AND NOT has_table_privilege(c.oid, p.privilege) ORDER BY 2, 1')"
    ).fetchall()
    return [f"{privilege} on {table}" for table, privilege in rows]


def check_privileges(
    con: duckdb.DuckDBPyConnection, settings: LakeSettings, *, write: bool, who: str
) -> None:
    """``LakeError`` naming every privilege the catalog's role lacks for ``who`` (what needs them)."""
    missing = missing_privileges(con, settings, write=write)
    if missing:
        user = urlsplit(settings.catalog).username or "?"
        privileges = sorted({m.split(" on ", 1)[0] for m in missing})
        tables = sorted({m.split(" on ", 1)[1] for m in missing})
        shown = ", ".join(tables[:4]) + (f" and {len(tables) - 4} more" if len(tables) > 4 else "")
        raise LakeError(
            f"the catalog's PostgreSQL role {user!r} lacks {', '.join(privileges)} on the catalog's "
            f"tables ({shown}): {who} writes to the lake; grant SELECT, INSERT, UPDATE, DELETE on them, "
            "or run it with the nodes' role (docs/scale-out.md, the roles)"
        )


#: functions that reach the catalog's PostgreSQL server itself (its files, as a superuser), or
#: run SQL given as text
_SERVER_FUNCTIONS = re.compile(
    r"\b(postgres_(query|execute|scan|scan_pushdown|attach)|query|query_table)\s*\(", re.IGNORECASE
)
#: the table functions reader SQL may call: none of them lists the instance's databases, settings or secrets
_READER_TABLE_FUNCTIONS = frozenset({"unnest", "range", "generate_series", "json_each", "json_tree"})
#: scalar functions reader SQL may not call: they read the instance's settings and secrets
_READER_DENIED_FUNCTIONS = frozenset({"current_setting", "getenv", "which_secret", "getvariable"})
_EXPLAIN = re.compile(r"^\s*explain\s+(?:analy[sz]e\s+)?(?:\([^)]*\)\s*)?", re.IGNORECASE)
_parser: duckdb.DuckDBPyConnection | None = None
_parser_lock = threading.Lock()


def reader_relations() -> frozenset[str]:
    """What reader SQL may name: the tables and views a node's file has, and the lake's own tables and views
    (``lake.spans``, ``lake.latest_spans``, ``lake.flush_marks``, ``lake.trace_parts``)."""
    from agentotel_eval.store.schema import VIEWS

    lake_names = {*TABLES, *(f"latest_{t}" for t in TABLES), MARKS, PARTS}
    own = {*TABLES, *(name for name, _ in VIEWS)}
    return frozenset(
        {
            *own,
            *(f"main.{n}" for n in own),
            *(f"memory.main.{n}" for n in own),
            *(f"{LAKE}.{n}" for n in lake_names),
            *(f"{LAKE}.main.{n}" for n in lake_names),
        }
    )


def check_reader_sql(sql: str) -> None:
    """Refuse SQL a lake reader must not run (``LakeError`` names what): the PostgreSQL extension's functions
    (they send their own SQL to the catalog's server) and ``query()`` (SQL held in a string); then, on the
    parsed statement, any table but the lake's tables and views (the catalog's own database and its server's
    tables, ``pg_catalog``, ``information_schema``), any table function that lists the instance
    (``duckdb_databases()`` shows the catalog's connection string) and the functions that read
    settings or secrets."""
    import json

    found = _SERVER_FUNCTIONS.search(sql)
    if found is not None:
        raise LakeError(
            f"{found.group(1)}() is not available over the lake: it would reach the catalog's server"
        )
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = instance()
        cur = _parser.cursor()
    try:
        (tree,) = cur.execute(
            "SELECT json_serialize_sql(?)", [_EXPLAIN.sub("", sql, count=1)]
        ).fetchone() or ("",)
    finally:
        cur.close()
    parsed = json.loads(tree)
    if parsed.get("error"):  # not a SELECT: the query layer refuses (or reports) it with its own words
        return
    ctes: set[str] = set()
    _walk(
        parsed,
        lambda node: ctes.update(
            str(e.get("key", "")).lower()
            for e in (node.get("cte_map") or {}).get("map", [])
            if isinstance(e, dict)
        ),
    )
    allowed = reader_relations()

    def check(node: dict[str, Any]) -> None:
        kind = node.get("type")
        if kind == "BASE_TABLE" or (kind == "SHOW_REF" and node.get("query") is None):
            name = ".".join(
                str(node.get(k) or "").strip('"').lower()
                for k in ("catalog_name", "schema_name", "table_name")
                if node.get(k)
            )
            if name not in allowed and not (name in ctes and "." not in name):
                raise LakeError(
                    f"{name or 'that'} is not available over the lake: only the lake's tables and views "
                    f"({', '.join(TABLES)}, their views, lake.*) can be read"
                )
        elif kind == "TABLE_FUNCTION":
            name = str((node.get("function") or {}).get("function_name", "")).lower()
            if name not in _READER_TABLE_FUNCTIONS:
                raise LakeError(
                    f"{name}() is not available over the lake: only the lake's tables and views can be read"
                )
        elif node.get("class") == "FUNCTION":
            name = str(node.get("function_name", "")).lower()
            if name in _READER_DENIED_FUNCTIONS or name.startswith(("duckdb_", "pg_", "postgres_")):
                raise LakeError(f"{name}() is not available over the lake")

    _walk(parsed, check)


def _walk(node: Any, visit: Callable[[dict[str, Any]], None]) -> None:
    if isinstance(node, dict):
        visit(node)
        for value in node.values():
            _walk(value, visit)
    elif isinstance(node, list):
        for value in node:
            _walk(value, visit)


def open_reader(settings: LakeSettings) -> duckdb.DuckDBPyConnection:
    """A sealed read-only instance over every node's rows: each table's newest rows under the table's own name
    (``spans``, ``agent_runs``, ...) and the views a node's file has (``latest_evaluations``, ...) over them,
    so SQL written for one node's file runs unchanged over all nodes. Its SQL reaches no file or network
    beyond the lake's own data."""
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
        if settings.sqlite_file is not None:  # the catalog's file, and SQLite's files beside it
            allowed.append(str(Path(settings.sqlite_file).resolve().parent) + "/")
        listed = ", ".join(f"'{_sql_text(path)}'" for path in allowed)
        con.execute(f"SET allowed_directories = [{listed}]")
        con.execute("SET enable_external_access = false")
        seal(con)
    except duckdb.Error as exc:
        con.close()
        raise LakeError(
            settings.scrub(
                f"cannot read the lake ({_shown(settings.catalog)}, data {settings.data}): {explain(exc)}"
            )
        ) from None
    except BaseException:
        con.close()
        raise
    return con


#: the time column retention reads in each table
_TIME_COLUMNS = {
    "spans": "start_time",
    "logs": "time",
    "agent_runs": "start_time",
    "tool_calls": "start_time",
    "evaluations": "created_at",
}


def maintain(
    con: duckdb.DuckDBPyConnection, retention_seconds: float | None, keep_snapshots_seconds: float = 86_400.0
) -> dict[str, int]:
    """The lake's one maintenance job (run by one scheduler, not by every node): delete rows older than the
    retention, merge the small files many flushes leave, expire old snapshots and delete the files no snapshot
    needs. Returns the rows deleted per table."""
    deleted: dict[str, int] = {}
    if retention_seconds:
        for table, column in _TIME_COLUMNS.items():
            (n,) = con.execute(
                f"DELETE FROM {LAKE}.{table} WHERE {column} < now() - to_seconds(?)", [retention_seconds]
            ).fetchone() or (0,)  # DELETE answers its count
            deleted[table] = int(n)
        con.execute(
            f"DELETE FROM {LAKE}.{MARKS} WHERE flushed_at < now() - to_seconds(?) AND (node, table_name, "
            f"flushed_at) NOT IN (SELECT node, table_name, max(flushed_at) FROM {LAKE}.{MARKS} GROUP BY ALL)",
            [retention_seconds],
        )
    con.execute(f"CALL ducklake_merge_adjacent_files('{LAKE}')")
    con.execute(
        f"CALL ducklake_expire_snapshots('{LAKE}', older_than => now() - to_seconds(?))",
        [keep_snapshots_seconds],
    )
    con.execute(f"CALL ducklake_cleanup_old_files('{LAKE}', cleanup_all => true)")
    return deleted
