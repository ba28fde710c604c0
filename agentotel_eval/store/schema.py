"""The DuckDB schema: tables of the design contract, forward migrations, and the views users query.

Tables change only through ``MIGRATIONS`` (append a step, never edit a released one); views are recreated on
every writable open, so improving a view needs no migration. Opening a file is ``store.opening``'s; whether a
file is a database of ours, ``store.identity``'s.

Uniqueness of spans on ``(trace_id, span_id)`` is enforced by the writer (an anti-join inside the batch's
start-time window), not by a declared PRIMARY KEY: DuckDB maintains a primary key as an ART index, which on
random hex ids makes appends several times slower, slower still as the table grows (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a database is opened: the decode and assembler processes never load it
    import duckdb

SPANS = "spans"
LOGS = "logs"
AGENT_RUNS = "agent_runs"
TOOL_CALLS = "tool_calls"
EVALUATIONS = "evaluations"
#: the variable a write transaction sets to its ``committed_at`` stamp (unset: the transaction's start time)
COMMIT_STAMP_VARIABLE = "agentotel_commit"
SCHEMA_VERSION_TABLE = "schema_version"
#: ``evaluations.source`` of the scores this collector computes; other tools' scores say
#: ``external:<scope>/<service>``
OWN_SOURCE = "agentotel-eval"

#: Column order of the append paths (``store.rows`` builds Arrow batches in exactly this order).
SPAN_COLUMNS: tuple[str, ...] = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start_time",
    "end_time",
    "status_code",
    "status_message",
    "service_name",
    "scope_name",
    "attributes",
    "resource_attributes",
    "events",
    "scope_version",
    "links",
    "trace_state",
    "flags",
    "start_time_unix_nano",
    "end_time_unix_nano",
)
LOG_COLUMNS: tuple[str, ...] = (
    "trace_id",
    "span_id",
    "time",
    "event_name",
    "severity",
    "body",
    "attributes",
    "resource_attributes",
    "service_name",
    "severity_number",
    "observed_time",
    "scope_name",
    "scope_version",
    "flags",
    "time_unix_nano",
    "observed_time_unix_nano",
    "log_id",
)
AGENT_RUN_COLUMNS: tuple[str, ...] = (
    "trace_id",
    "span_id",
    "agent_name",
    "service_name",
    "input",
    "output",
    "start_time",
    "end_time",
    "status",
    "tools_called",
    "expected_tools",
    "parent_run_span_id",
    "span_name",
    "convention",
    "error",
    "handoffs",
    "tool_call_count",
    "updated_at",
    "diagnostics",
    "trace_root",
)
TOOL_CALL_COLUMNS: tuple[str, ...] = (
    "trace_id",
    "run_span_id",
    "seq",
    "span_id",
    "call_id",
    "tool_name",
    "arguments",
    "result",
    "status",
    "source",
    "start_time",
    "error",
    "llm_turn",
    "agent_name",
    "sources",
    "updated_at",
)
EVALUATION_COLUMNS: tuple[str, ...] = (
    "trace_id",
    "run_span_id",
    "metric",
    "score",
    "threshold",
    "success",
    "reason",
    "details",
    "status",
    "model",
    "cost_usd",
    "created_at",
    "evaluator",
    "evaluator_version",
    "latency_s",
    "source",
    "updated_at",
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
            -- INTERNAL | SERVER | CLIENT | PRODUCER | CONSUMER | UNSPECIFIED
            kind VARCHAR,
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
            -- what delimited the run: gen_ai | openinference | traceloop | ...
            convention VARCHAR,
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
        # time the metric took (the judge: its LLM calls)
        "ALTER TABLE evaluations ADD COLUMN latency_s DOUBLE",
        "ALTER TABLE evaluations ADD COLUMN source VARCHAR",  # agentotel-eval | external:<scope>/<service>
        "ALTER TABLE evaluations ADD COLUMN updated_at TIMESTAMPTZ",
        "UPDATE evaluations SET source = 'agentotel-eval', updated_at = created_at",
    ),
)

_V3 = Migration(
    3,
    "spans, logs: ingested_at, the commit that stored each row",
    (
        # One value per commit, rising. Rows are appended in commit order, so the column's min/max statistics
        # are tight and the assembler reads a completed trace back by the commits its records came in,
        # skipping the rest. By start time it could not: a trace's window holds every span that started while
        # it ran, and the row groups' start times are as wide as the longest trace committed in them. NULL for
        # rows stored before.
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

_V5 = Migration(
    5,
    "agent_runs, tool_calls, evaluations: committed_at, the write that stored each row",
    (
        # One rising value per write transaction (the writer applies them one at a time), so "every row
        # committed after X" is exact: what a node copies to a shared lake past its mark. updated_at is when a
        # run was built, before its commit, and cannot say that. Rows stored before take their updated_at.
        "ALTER TABLE agent_runs ADD COLUMN committed_at TIMESTAMPTZ",
        "ALTER TABLE tool_calls ADD COLUMN committed_at TIMESTAMPTZ",
        "ALTER TABLE evaluations ADD COLUMN committed_at TIMESTAMPTZ",
        "UPDATE agent_runs SET committed_at = updated_at",
        "UPDATE tool_calls SET committed_at = updated_at",
        "UPDATE evaluations SET committed_at = coalesce(updated_at, created_at)",
    ),
)

_V6 = Migration(
    6,
    "agent_runs: trace_root, whether the run's build held its trace's root span",
    (
        # false: the run was built from a part of its trace without the root span (a trace split between nodes
        # of a shared lake, or whose root lives in a service that does not export here); the lake shows a
        # build that had the root before a newer one that did not. NULL for runs stored before.
        "ALTER TABLE agent_runs ADD COLUMN trace_root BOOLEAN",
    ),
)

#: Forward migrations, in order. Append new steps; a released step never changes.
MIGRATIONS: tuple[Migration, ...] = (_V1, _V2, _V3, _V4, _V5, _V6)
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
    """The file is no database of ours: not DuckDB, unreadable, or another program's. It
    was left as it was."""


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version recorded in the database; 0 for a database without our tables."""
    if not _has_version_table(con):
        return 0
    row = con.execute(f"SELECT max(version) FROM {SCHEMA_VERSION_TABLE}").fetchall()[0]
    return int(row[0]) if row and row[0] is not None else 0


def _has_version_table(con: duckdb.DuckDBPyConnection) -> bool:
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?",
        [SCHEMA_VERSION_TABLE],
    ).fetchall()[0]
    return bool(exists[0])


def database_objects(con: duckdb.DuckDBPyConnection) -> list[str]:
    """What the connection's database holds, e.g. ``"orders (table)"``: nothing for a new, empty one."""
    rows = con.execute(
        """
        SELECT 'table', schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()
        UNION ALL SELECT 'view', schema_name, view_name FROM duckdb_views()
            WHERE database_name = current_database() AND NOT internal
        UNION ALL SELECT 'sequence', schema_name, sequence_name FROM duckdb_sequences()
            WHERE database_name = current_database()
        UNION ALL SELECT 'macro', schema_name, function_name FROM duckdb_functions()
            WHERE database_name = current_database() AND NOT internal
                AND function_type IN ('macro', 'table_macro')
        UNION ALL SELECT 'type', schema_name, type_name FROM duckdb_types()
            WHERE database_name = current_database() AND NOT internal
        UNION ALL SELECT 'schema', schema_name, schema_name FROM duckdb_schemas()
            WHERE database_name = current_database() AND NOT internal AND schema_name <> 'main'
        ORDER BY 1, 2, 3
        """
    ).fetchall()
    return [
        f"{name if schema == 'main' or kind == 'schema' else f'{schema}.{name}'} ({kind})"
        for kind, schema, name in rows
    ]


def describe_foreign(objects: Sequence[str]) -> str:
    shown = ", ".join(objects[:5]) + (f" and {len(objects) - 5} more" if len(objects) > 5 else "")
    return (
        f"it is another program's DuckDB database (it holds {shown} and no agentotel-eval "
        f"{SCHEMA_VERSION_TABLE} table); use another --db"
    )


def migrate(con: duckdb.DuckDBPyConnection, migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
    """Apply every migration newer than the database, each in its own transaction; returns the versions
    applied. Refuses (``DatabaseRefused``) a database that holds other objects and no ``schema_version``
    table: creating our tables in it would change another program's database."""
    if not _has_version_table(con) and (others := database_objects(con)):
        raise DatabaseRefused(f"the database is not an agentotel-eval database: {describe_foreign(others)}")
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
