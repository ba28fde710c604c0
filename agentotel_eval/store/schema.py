"""The DuckDB schema: tables of the design contract, forward migrations, and the views users query.

Tables change only through ``MIGRATIONS`` (append a step, never edit a released one); views are recreated on every
writable open, so improving a view needs no migration. ``open_store`` is the one place that opens a database for
writing, ``open_read_only`` the one place that opens it for reading without a collector. Both open only a file
that is ours (``check_store``): one that is not DuckDB, is damaged, or is another program's DuckDB database is
refused before anything is written to it or beside it.

Uniqueness of spans on ``(trace_id, span_id)`` is enforced by the writer (an anti-join inside the batch's start-time
window), not by a declared PRIMARY KEY: DuckDB maintains a primary key as an ART index, which on random hex ids
makes appends several times slower, slower still as the table grows (docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

try:
    import fcntl  # the writer's lock file (``hold_writer_lock``); not on every system
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:  # imported where a database is opened: the decode and assembler processes never load it
    import duckdb

SPANS = "spans"
LOGS = "logs"
AGENT_RUNS = "agent_runs"
TOOL_CALLS = "tool_calls"
EVALUATIONS = "evaluations"
SCHEMA_VERSION_TABLE = "schema_version"
#: ``evaluations.source`` of the scores this collector computes; other tools' scores say ``external:<scope>/<service>``
OWN_SOURCE = "agentotel-eval"

#: Column order of the append paths (``store.rows`` builds Arrow batches in exactly this order).
SPAN_COLUMNS: tuple[str, ...] = (
    "trace_id", "span_id", "parent_span_id", "name", "kind", "start_time", "end_time", "status_code",
    "status_message", "service_name", "scope_name", "attributes", "resource_attributes", "events",
    "scope_version", "links", "trace_state", "flags", "start_time_unix_nano", "end_time_unix_nano",
)
LOG_COLUMNS: tuple[str, ...] = (
    "trace_id", "span_id", "time", "event_name", "severity", "body", "attributes", "resource_attributes",
    "service_name", "severity_number", "observed_time", "scope_name", "scope_version", "flags", "time_unix_nano",
    "observed_time_unix_nano", "log_id",
)
AGENT_RUN_COLUMNS: tuple[str, ...] = (
    "trace_id", "span_id", "agent_name", "service_name", "input", "output", "start_time", "end_time", "status",
    "tools_called", "expected_tools", "parent_run_span_id", "span_name", "convention", "error", "handoffs",
    "tool_call_count", "updated_at", "diagnostics",
)
TOOL_CALL_COLUMNS: tuple[str, ...] = (
    "trace_id", "run_span_id", "seq", "span_id", "call_id", "tool_name", "arguments", "result", "status", "source",
    "start_time", "error", "llm_turn", "agent_name", "sources", "updated_at",
)
EVALUATION_COLUMNS: tuple[str, ...] = (
    "trace_id", "run_span_id", "metric", "score", "threshold", "success", "reason", "details", "status", "model",
    "cost_usd", "created_at", "evaluator", "evaluator_version", "latency_s", "source", "updated_at",
)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    statements: Sequence[str]


_V1 = Migration(
    1,
    "initial tables: spans, logs, agent_runs, tool_calls, evaluations",
    (
        """
        CREATE TABLE spans (
            trace_id VARCHAR NOT NULL,          -- 32 lowercase hex chars
            span_id VARCHAR NOT NULL,           -- 16 lowercase hex chars
            parent_span_id VARCHAR,             -- NULL for a root span
            name VARCHAR,
            kind VARCHAR,                       -- INTERNAL | SERVER | CLIENT | PRODUCER | CONSUMER | UNSPECIFIED
            start_time TIMESTAMPTZ,
            end_time TIMESTAMPTZ,
            status_code VARCHAR,                -- UNSET | OK | ERROR
            status_message VARCHAR,
            service_name VARCHAR,
            scope_name VARCHAR,
            attributes JSON,
            resource_attributes JSON,
            events JSON,                        -- [{"name", "time_unix_nano", "attributes"}]
            scope_version VARCHAR,
            links JSON,                         -- [{"trace_id", "span_id", "attributes"}]
            trace_state VARCHAR,
            flags UINTEGER,
            start_time_unix_nano BIGINT,        -- exact times (TIMESTAMPTZ keeps microseconds)
            end_time_unix_nano BIGINT
        )
        """,
        """
        CREATE TABLE logs (
            trace_id VARCHAR,
            span_id VARCHAR,
            time TIMESTAMPTZ,                   -- the event time, else the observed time
            event_name VARCHAR,
            severity VARCHAR,                   -- severity text, else the name of the severity number
            body JSON,
            attributes JSON,
            resource_attributes JSON,
            service_name VARCHAR,
            severity_number INTEGER,
            observed_time TIMESTAMPTZ,
            scope_name VARCHAR,
            scope_version VARCHAR,
            flags UINTEGER,
            time_unix_nano BIGINT,             -- the record's own time as sent (0 when unset)
            observed_time_unix_nano BIGINT,
            log_id VARCHAR NOT NULL             -- content hash: a re-sent record is stored once
        )
        """,
        """
        CREATE TABLE agent_runs (
            trace_id VARCHAR NOT NULL,
            span_id VARCHAR NOT NULL,           -- the span that delimits the run
            agent_name VARCHAR,
            service_name VARCHAR,
            input VARCHAR,
            output VARCHAR,
            start_time TIMESTAMPTZ,
            end_time TIMESTAMPTZ,
            status VARCHAR,                     -- ok | error
            tools_called VARCHAR[],
            expected_tools VARCHAR[],           -- NULL when the run has no expectation
            parent_run_span_id VARCHAR,         -- set for a nested agent (agent as a tool, handoff target)
            span_name VARCHAR,
            convention VARCHAR,                 -- what delimited the run: gen_ai | openinference | traceloop | ...
            error VARCHAR,
            handoffs JSON,
            tool_call_count INTEGER,
            updated_at TIMESTAMPTZ              -- when this row was (re)built from the trace
        )
        """,
        """
        CREATE TABLE tool_calls (
            trace_id VARCHAR NOT NULL,
            run_span_id VARCHAR NOT NULL,
            seq INTEGER NOT NULL,               -- 0-based execution order within the run
            span_id VARCHAR,                    -- the execution span, when there is one
            call_id VARCHAR,
            tool_name VARCHAR,
            arguments JSON,
            result VARCHAR,
            status VARCHAR,                     -- ok | error
            source VARCHAR,
            start_time TIMESTAMPTZ,
            error VARCHAR,
            llm_turn VARCHAR,                   -- span id of the LLM span that requested the call
            agent_name VARCHAR,
            sources JSON,                       -- field -> convention that supplied it
            updated_at TIMESTAMPTZ
        )
        """,
        """
        CREATE TABLE evaluations (
            trace_id VARCHAR NOT NULL,
            run_span_id VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            score DOUBLE,
            threshold DOUBLE,
            success BOOLEAN,
            reason VARCHAR,
            details JSON,
            status VARCHAR,                     -- ok | pending | error
            model VARCHAR,
            cost_usd DOUBLE,
            created_at TIMESTAMPTZ
        )
        """,
    ),
)

_V2 = Migration(
    2,
    "evaluations: evaluator name and version, latency, source, updated_at (online scoring)",
    (
        # One row per (trace_id, run_span_id, metric, evaluator_version): re-scoring replaces it.
        # status: ok | pending (queued for the LLM judge) | error | skipped (e.g. over the judge budget).
        "ALTER TABLE evaluations ADD COLUMN evaluator VARCHAR",  # e.g. ToolCorrectnessMetric
        "ALTER TABLE evaluations ADD COLUMN evaluator_version VARCHAR",
        "ALTER TABLE evaluations ADD COLUMN latency_s DOUBLE",  # time the metric took (the judge: its LLM calls)
        "ALTER TABLE evaluations ADD COLUMN source VARCHAR",  # agentotel-eval | external:<scope>/<service>
        "ALTER TABLE evaluations ADD COLUMN updated_at TIMESTAMPTZ",
        "UPDATE evaluations SET source = 'agentotel-eval', updated_at = created_at",
    ),
)

_V3 = Migration(
    3,
    "spans, logs: ingested_at, the commit that stored each row",
    (
        # One value per commit, rising. Rows are appended in commit order, so the column's min/max statistics are
        # tight and the assembler reads a completed trace back by the commits its records came in, skipping the
        # rest. By start time it could not: a trace's window holds every span that started while it ran, and the
        # row groups' start times are as wide as the longest trace committed in them. NULL for rows stored before.
        "ALTER TABLE spans ADD COLUMN ingested_at TIMESTAMPTZ",
        "ALTER TABLE logs ADD COLUMN ingested_at TIMESTAMPTZ",
    ),
)

_V4 = Migration(
    4,
    "agent_runs: diagnostics, how each run was rebuilt from its spans",
    (
        # JSON: spans read (span id -> role:convention), spans ignored and why, each call's evidence and the
        # values discarded, requests without an execution (docs/collector.md). NULL for runs stored before.
        "ALTER TABLE agent_runs ADD COLUMN diagnostics JSON",
    ),
)

#: Forward migrations, in order. Append new steps; a released step never changes.
MIGRATIONS: tuple[Migration, ...] = (_V1, _V2, _V3, _V4)
SCHEMA_VERSION = MIGRATIONS[-1].version

#: Views: (name, SELECT). Recreated on every writable open.
VIEWS: tuple[tuple[str, str], ...] = (
    (
        "latest_evaluations",
        """
        SELECT * EXCLUDE (rn) FROM (
            SELECT *, row_number() OVER (
                PARTITION BY trace_id, run_span_id, metric ORDER BY created_at DESC NULLS LAST
            ) AS rn
            FROM evaluations
        ) WHERE rn = 1
        """,
    ),
    (
        "run_evaluations",
        """
        SELECT r.agent_name, r.service_name, r.start_time, r.tools_called, r.expected_tools, e.*
        FROM latest_evaluations e
        JOIN agent_runs r ON r.trace_id = e.trace_id AND r.span_id = e.run_span_id
        """,
    ),
    (
        "agent_pass_rate_daily",
        """
        SELECT coalesce(agent_name, '(unnamed)') AS agent_name,
               CAST(date_trunc('day', start_time) AS DATE) AS day,
               metric,
               count(*) AS runs,
               count(*) FILTER (WHERE success) AS passed,
               round(count(*) FILTER (WHERE success) / count(*), 4) AS pass_rate,
               round(avg(score), 4) AS avg_score
        FROM run_evaluations
        WHERE status = 'ok'
        GROUP BY ALL
        """,
    ),
    (
        "tool_error_rates",
        """
        SELECT tool_name,
               count(*) AS calls,
               count(*) FILTER (WHERE status = 'error') AS errors,
               round(count(*) FILTER (WHERE status = 'error') / count(*), 4) AS error_rate,
               count(DISTINCT agent_name) AS agents,
               min(start_time) AS first_call,
               max(start_time) AS last_call
        FROM tool_calls
        GROUP BY tool_name
        """,
    ),
    (
        "agent_runs_daily",
        """
        SELECT coalesce(agent_name, '(unnamed)') AS agent_name,
               CAST(date_trunc('day', start_time) AS DATE) AS day,
               count(*) AS runs,
               count(*) FILTER (WHERE status = 'error') AS failed_runs,
               round(avg(tool_call_count), 2) AS avg_tool_calls,
               round(avg(epoch_ms(end_time) - epoch_ms(start_time)), 1) AS avg_duration_ms
        FROM agent_runs
        GROUP BY ALL
        """,
    ),
    (
        "traces",
        """
        SELECT trace_id,
               arg_min(name, start_time_unix_nano) FILTER (WHERE parent_span_id IS NULL) AS root_name,
               any_value(service_name) AS service_name,
               min(start_time) AS start_time,
               max(end_time) AS end_time,
               round((max(end_time_unix_nano) - min(start_time_unix_nano)) / 1e6, 3) AS duration_ms,
               count(*) AS span_count,
               count(*) FILTER (WHERE status_code = 'ERROR') AS error_spans
        FROM spans
        GROUP BY trace_id
        """,
    ),
    (
        "llm_usage_daily",
        """
        SELECT CAST(date_trunc('day', start_time) AS DATE) AS day,
               service_name,
               coalesce(attributes->>'gen_ai.request.model', attributes->>'llm.model_name') AS model,
               count(*) AS llm_calls,
               sum(TRY_CAST(coalesce(attributes->>'gen_ai.usage.input_tokens',
                                     attributes->>'llm.token_count.prompt') AS BIGINT)) AS input_tokens,
               sum(TRY_CAST(coalesce(attributes->>'gen_ai.usage.output_tokens',
                                     attributes->>'llm.token_count.completion') AS BIGINT)) AS output_tokens
        FROM spans
        WHERE coalesce(attributes->>'gen_ai.request.model', attributes->>'llm.model_name') IS NOT NULL
        GROUP BY ALL
        """,
    ),
)


class SchemaError(RuntimeError):
    """The database cannot be used by this version (e.g. its schema is newer than the code)."""


class DatabaseRefused(SchemaError):
    """The file is no database of ours: not DuckDB, unreadable, or another program's. It was left as it was."""


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version recorded in the database; 0 for a database without our tables."""
    if not _has_version_table(con):
        return 0
    row = con.execute(f"SELECT max(version) FROM {SCHEMA_VERSION_TABLE}").fetchall()[0]
    return int(row[0]) if row and row[0] is not None else 0


def _has_version_table(con: duckdb.DuckDBPyConnection) -> bool:
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?", [SCHEMA_VERSION_TABLE]
    ).fetchall()[0]
    return bool(exists[0])


def _objects(con: duckdb.DuckDBPyConnection) -> list[str]:
    """What the connection's database holds, e.g. ``"orders (table)"``: nothing for a new, empty one."""
    rows = con.execute(
        """
        SELECT 'table', schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()
        UNION ALL SELECT 'view', schema_name, view_name FROM duckdb_views()
            WHERE database_name = current_database() AND NOT internal
        UNION ALL SELECT 'sequence', schema_name, sequence_name FROM duckdb_sequences()
            WHERE database_name = current_database()
        UNION ALL SELECT 'macro', schema_name, function_name FROM duckdb_functions()
            WHERE database_name = current_database() AND NOT internal AND function_type IN ('macro', 'table_macro')
        UNION ALL SELECT 'type', schema_name, type_name FROM duckdb_types()
            WHERE database_name = current_database() AND NOT internal
        UNION ALL SELECT 'schema', schema_name, schema_name FROM duckdb_schemas()
            WHERE database_name = current_database() AND NOT internal AND schema_name <> 'main'
        ORDER BY 1, 2, 3
        """
    ).fetchall()
    return [f"{name if schema == 'main' or kind == 'schema' else f'{schema}.{name}'} ({kind})"
            for kind, schema, name in rows]


def _foreign(objects: Sequence[str]) -> str:
    shown = ", ".join(objects[:5]) + (f" and {len(objects) - 5} more" if len(objects) > 5 else "")
    return (f"it is another program's DuckDB database (it holds {shown} and no agentotel-eval {SCHEMA_VERSION_TABLE} "
            "table); use another --db")


def migrate(con: duckdb.DuckDBPyConnection, migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
    """Apply every migration newer than the database, each in its own transaction; returns the versions applied.
    Refuses (``DatabaseRefused``) a database that holds other objects and no ``schema_version`` table: creating
    our tables in it would change another program's database."""
    if not _has_version_table(con) and (others := _objects(con)):
        raise DatabaseRefused(f"the database is not an agentotel-eval database: {_foreign(others)}")
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {SCHEMA_VERSION_TABLE} "
        "(version INTEGER NOT NULL, description VARCHAR, applied_at TIMESTAMPTZ DEFAULT current_timestamp)"
    )
    have = current_version(con)
    latest = migrations[-1].version if migrations else 0
    if have > latest:
        raise SchemaError(
            f"the database has schema version {have}, newer than this agentotel-eval supports ({latest}); "
            "upgrade agentotel-eval or use another --db"
        )
    applied = []
    for step in migrations:
        if step.version <= have:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            for statement in step.statements:
                con.execute(statement)
            con.execute(
                f"INSERT INTO {SCHEMA_VERSION_TABLE} (version, description) VALUES (?, ?)",
                [step.version, step.description],
            )
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(step.version)
    return applied


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    for name, select in VIEWS:
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {select}")


#: a DuckDB setting's value, as ``duckdb.connect(config=...)`` takes it
DuckDBSetting = str | bool | int | float | list[str]


def _sealed_config(extra: Mapping[str, DuckDBSetting] | None = None) -> dict[str, DuckDBSetting]:
    # Times come back in UTC whatever the host's zone; SQL cannot reach files, the network or extensions.
    config: dict[str, DuckDBSetting] = {
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    }
    config.update(extra or {})
    return config


#: DuckDB's row group size for the collector's database (``ATTACH ... (ROW_GROUP_SIZE n)``); see ``open_store``
DEFAULT_ROW_GROUP_SIZE = 122_880
#: the catalog name the writer attaches the database file under (queries never name it)
CATALOG = "agentotel"


def open_store(
    path: str | Path, *, settings: Mapping[str, DuckDBSetting] | None = None,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE, check: bool = True,
) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the collector's database for writing: migrate, create views, seal the instance.

    An existing file is first looked at read-only (``check_store``, skipped with ``check=False`` by a caller that
    just did): one that is no database of ours, or of a newer schema, is refused without a byte of it changed.

    The file is attached with ``ROW_GROUP_SIZE row_group_size`` (0: DuckDB's default, 122,880 rows; the writer's
    setting says why it is the default). The size is not stored in the file: read-only opens and older collectors
    read it as any database.

    After this returns the configuration is locked: queries sharing the instance cannot re-enable file access.
    Arrow appends through ``register()`` keep working with external access disabled.
    """
    import duckdb

    path = Path(path)
    if str(path) == ":memory:":
        con = duckdb.connect(":memory:", config=_sealed_config(settings))
    else:
        if check:
            check_store(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        con = _attach(path, settings, row_group_size)
    try:
        migrate(con)
        create_views(con)
        _seal(con)
    except BaseException:
        con.close()
        raise
    return con


def _attach(path: Path, settings: Mapping[str, DuckDBSetting] | None, row_group_size: int, *,
            read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """An instance whose only database is the file, attached with its options (external access is switched off
    right after: ATTACH itself needs it).

    Read-only opens attach too: DuckDB refuses to attach a file this process already holds before it touches the
    file, where a second ``duckdb.connect`` of it would open and close a handle of its own, and closing that
    handle drops the process's lock on the file, which another process could then open for writing."""
    import duckdb

    config = _sealed_config(settings)
    config.pop("enable_external_access")
    # where a query bigger than the memory limit spills: beside the file, as a direct connect of it would put it
    # (an in-memory instance's default is ".tmp" in whatever directory the process runs in)
    config.setdefault("temp_directory", f"{path}.tmp")
    con = duckdb.connect(":memory:", config=config)
    options = [f"ROW_GROUP_SIZE {int(row_group_size)}"] if row_group_size else []
    if read_only:
        options.append("READ_ONLY")
    clause = f" ({', '.join(options)})" if options else ""
    quoted = str(path).replace("'", "''")
    try:
        con.execute(f"ATTACH '{quoted}' AS {CATALOG}{clause}")
        # Every cursor of this connection starts in the file's catalog once the in-memory one is gone.
        con.execute(f"USE {CATALOG}")
        con.execute("DETACH memory")
        con.execute("SET enable_external_access = false")
    except duckdb.Error as exc:
        con.close()
        if not read_only:  # held by another process or by this one, or a directory it may not write in
            raise SchemaError(f"cannot open {path} for writing: {_one_line(exc)}") from None
        if _held_elsewhere(exc):
            raise
        raise DatabaseRefused(_unreadable(path, exc)) from None
    except BaseException:
        con.close()
        raise
    return con


def writer_lock_path(path: str | Path) -> Path:
    """The file a collector holds locked (``flock``) for as long as it has ``path`` open for writing."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


def hold_writer_lock(path: str | Path) -> int | None:
    """Take the writer's lock of ``path`` (an open descriptor, or None where there is no ``flock`` or no file):
    DuckDB's own lock on the file is dropped for the moment of each reopen (``store.database``), this one is not.
    Raises ``SchemaError`` when another process holds it."""
    if fcntl is None or str(path) == ":memory:":  # not a POSIX system: DuckDB's lock alone
        return None
    lock = writer_lock_path(path)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a directory it may not create files in: DuckDB's lock alone (and its own error, if any)
        return None
    taken = _try_flock(fd, exclusive=True)
    if taken:
        return fd
    os.close(fd)
    if taken is False:
        raise SchemaError(f"cannot open {path} for writing: another collector has it open (it holds {lock})")
    return None


def release_writer_lock(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the descriptor drops its flock


def _try_flock(fd: int, *, exclusive: bool) -> bool | None:
    """Lock ``fd`` without waiting: True when taken, False when another process holds it, None where ``flock``
    does not work (some network mounts: DuckDB's lock decides alone)."""
    assert fcntl is not None
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def _writer_holds(path: Path) -> bool:
    """Whether a collector holds ``path`` for writing (its lock file is locked), without waiting."""
    if fcntl is None:
        return False
    try:
        fd = os.open(writer_lock_path(path), os.O_RDONLY)
    except OSError:  # no lock file: no collector ever wrote it, or one from before the lock file
        return False
    try:
        return _try_flock(fd, exclusive=False) is False
    finally:
        os.close(fd)


def open_read_only(path: str | Path) -> duckdb.DuckDBPyConnection:
    """Open an existing database read-only and sealed (no file, network or extension access). Raises
    ``duckdb.IOException`` when another process holds it, ``duckdb.ResourceInUseException`` when this one does,
    ``DatabaseRefused`` for a file that is no database of ours, ``SchemaError`` for one of a newer schema or
    without our tables yet.

    A database of an older schema is read as it is (``current_version`` says which): a read-only open cannot
    migrate it, and every column it has is there; the columns added since are missing until a collector opens it.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no database at {path} (start a collector with: agentotel-eval serve --db {path})")
    if _writer_holds(path):  # even in the moment of a reopen, when DuckDB's own lock is not held
        import duckdb

        raise duckdb.IOException(f'Could not set lock on file "{path}": a collector holds it for writing '
                                 f"({writer_lock_path(path)} is locked)")
    con = _attach(path, None, 0, read_only=True)
    try:
        if not _check_ours(con, path):
            raise SchemaError(f"{path} has no agentotel-eval tables yet (it is an empty DuckDB database): start a "
                              f"collector on it once (agentotel-eval serve --db {path})")
        _seal(con)
    except BaseException:
        con.close()
        raise
    return con


def check_store(path: str | Path) -> None:
    """Refuse a file at ``path`` that ``open_store`` must not open for writing: ``DatabaseRefused`` when it is
    not a DuckDB database, cannot be read, or is another program's; ``SchemaError`` when its schema is newer than
    the code or another process holds it. A missing file, an empty DuckDB database and one of ours (of this
    version or an older one, which the open migrates) pass.

    The file is only attached read-only, so a refused one is left byte for byte as it was, with nothing written
    beside it (the caller takes the writer's lock file after this)."""
    import duckdb

    path = Path(path)
    if str(path) == ":memory:" or not path.exists():
        return
    if _writer_holds(path):
        raise SchemaError(f"cannot open {path} for writing: another collector has it open "
                          f"(it holds {writer_lock_path(path)})")
    try:
        con = _attach(path, None, 0, read_only=True)
    except duckdb.Error as exc:  # held by another process, or by this one
        raise SchemaError(f"cannot open {path} for writing: {_one_line(exc)}") from None
    try:
        _check_ours(con, path)
    finally:
        con.close()


def _check_ours(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """The schema version of the attached database once it is known to be ours (0: a new, empty database).

    Ours: a ``schema_version`` table with our columns whose version 1 row has our first migration's description,
    and our tables with at least the columns (names and types) our migrations give them at its version."""
    import duckdb

    try:
        kind = con.execute("SELECT type FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
        if kind and kind[0][0] != "duckdb":  # another storage extension took the file
            raise DatabaseRefused(f"{path} is not an agentotel-eval database: it is a {kind[0][0]} database, "
                                  "not a DuckDB one")
        # DuckDB reads a block only when it is needed: a file cut short can attach, and be written to, as if
        # whole. Each block in use has a place of its own in the file (free ones at its end may be cut off).
        size = path.stat().st_size
        for used, block_size in con.execute("SELECT used_blocks, block_size FROM pragma_database_size() "
                                            "WHERE database_name = current_database()").fetchall():
            least = _DUCKDB_HEADERS + int(used) * int(block_size)
            if size < least:
                raise DatabaseRefused(f"{path} is a truncated DuckDB file: it has {size} bytes, fewer than the "
                                      f"{least} its {used} blocks in use take; use another --db")
        tables = _table_columns(con)
        marker = tables.get(SCHEMA_VERSION_TABLE)
        if marker is not None and _missing(marker, _reference_columns(0)[SCHEMA_VERSION_TABLE]):
            raise DatabaseRefused(f"{path} is not an agentotel-eval database: it is another program's DuckDB "
                                  f"database (its {SCHEMA_VERSION_TABLE} table is not agentotel-eval's); "
                                  "use another --db")
        have = current_version(con)
        if not have:  # no migration ever committed: only an empty schema_version table may be there
            others = [name for name in _objects(con) if name != f"{SCHEMA_VERSION_TABLE} (table)"]
            if others:
                raise DatabaseRefused(f"{path} is not an agentotel-eval database: {_foreign(others)}")
            return 0
        first = con.execute(f"SELECT description FROM {SCHEMA_VERSION_TABLE} WHERE version = 1").fetchall()
        if MIGRATIONS[0].description not in {row[0] for row in first}:
            raise DatabaseRefused(f"{path} is not an agentotel-eval database: it is another program's DuckDB "
                                  f"database (its {SCHEMA_VERSION_TABLE} table was not written by agentotel-eval); "
                                  "use another --db")
        if have > SCHEMA_VERSION:
            raise SchemaError(f"{path} has schema version {have}, newer than this agentotel-eval supports "
                              f"({SCHEMA_VERSION}); upgrade agentotel-eval or use another --db")
        problems = [
            problem
            for table, columns in _reference_columns(have).items()
            for problem in (
                [f"no {table} table"] if table not in tables else _missing(tables[table], columns, table)
            )
        ]
        if problems:
            shown = "; ".join(problems[:3]) + (f"; {len(problems) - 3} more" if len(problems) > 3 else "")
            raise DatabaseRefused(f"{path} is not an agentotel-eval database: its tables differ from those of "
                                  f"agentotel-eval's schema version {have} ({shown}); use another --db")
        return have
    except duckdb.Error as exc:  # the catalog read, but not the rows
        raise DatabaseRefused(_unreadable(path, exc)) from None


def _table_columns(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, str]]:
    """Table -> column -> type, of the tables in the main schema of the connection's database."""
    rows = con.execute(
        """
        SELECT c.table_name, c.column_name, c.data_type
        FROM duckdb_columns() c JOIN duckdb_tables() t ON c.table_oid = t.table_oid
        WHERE t.database_name = current_database() AND t.schema_name = 'main'
        ORDER BY c.table_name, c.column_index
        """
    ).fetchall()
    tables: dict[str, dict[str, str]] = {}
    for table, column, data_type in rows:
        tables.setdefault(table, {})[column] = data_type
    return tables


@functools.cache
def _reference_columns(version: int) -> dict[str, dict[str, str]]:
    """Our tables as the migrations up to ``version`` make them (0: the ``schema_version`` table alone), read
    from a database built for the purpose: the types are named as this DuckDB names them."""
    import duckdb

    con = duckdb.connect(":memory:", config=_sealed_config())
    try:
        migrate(con, [step for step in MIGRATIONS if step.version <= version])
        return _table_columns(con)
    finally:
        con.close()


def _missing(have: Mapping[str, str], want: Mapping[str, str], table: str = SCHEMA_VERSION_TABLE) -> list[str]:
    """How the columns ``have`` fall short of ``want`` (more columns are fine: a user may add some)."""
    return [
        f"{table}.{name} is missing" if name not in have else f"{table}.{name} is {have[name]}, not {data_type}"
        for name, data_type in want.items()
        if have.get(name) != data_type
    ]


#: bytes 8-11 of every DuckDB file, after the header's checksum
_DUCKDB_MAGIC = b"DUCK"
#: a DuckDB file's main header and its two database headers, 4 KiB each, before the first block
_DUCKDB_HEADERS = 3 * 4096


def _unreadable(path: Path, exc: Exception) -> str:
    """Why DuckDB could not read ``path``, for a user. The file's first bytes are read only after DuckDB failed:
    had this process a DuckDB handle on the file, closing one of its own would drop that handle's lock."""
    import duckdb

    try:
        with path.open("rb") as file:
            head = file.read(64)
    except OSError as err:
        return f"cannot read {path}: {err.strerror or err}"
    if head[8:12] == _DUCKDB_MAGIC:
        return (f"{path} is a DuckDB file that DuckDB {duckdb.__version__} cannot read (damaged, truncated, or "
                f"written by another DuckDB version): {_one_line(exc)}")
    return f"{path} is not an agentotel-eval database: {_not_duckdb(head)}"


def _not_duckdb(head: bytes) -> str:
    if not head:
        return "the file is empty (0 bytes), not a DuckDB database; delete it and a new database is created there"
    if head.startswith(b"SQLite format 3\x00"):
        return "it is a SQLite database, not a DuckDB one"
    if all(byte >= 0x20 or byte in b"\t\n\r" for byte in head):  # UTF-8 text has no other control bytes
        first = next((line for line in head.splitlines() if line.strip()), b"").decode("utf-8", "replace")[:40]
        return f"it is a text file (it begins {first!r}), not a DuckDB database"
    return "it is not a DuckDB file (it has no DuckDB header)"


def _held_elsewhere(exc: Exception) -> bool:
    """Whether DuckDB refused a file because another process (or this one) holds it, not for what is in it."""
    import duckdb

    return isinstance(exc, duckdb.ResourceInUseException) or (
        isinstance(exc, duckdb.IOException) and "could not set lock" in str(exc).lower()
    )


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _seal(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("SET TimeZone = 'UTC'")  # an ICU setting: not accepted in connect(config=...)
    con.execute("SET lock_configuration = true")
