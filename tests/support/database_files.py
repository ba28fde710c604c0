"""Files a user may point ``--db`` at: databases of an older schema of ours, and files that
are not ours at all.

``OLD_ROWS`` fills every table of an older schema; ``REFUSED`` builds each kind of file a collector must
refuse and leave as it was, with words its refusal must say; ``snapshot`` is what "left as it was" compares.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from agentotel_eval.store.opening import open_store
from agentotel_eval.store.schema import MIGRATIONS, SCHEMA_VERSION, DatabaseRefused, SchemaError, migrate

TRACE = "0af7651916cd43dd8448eb211c80319c"
RUN_SPAN = "b7ad6b7169203331"
TOOL_SPAN = "00f067aa0ba902b7"

#: rows in the columns every version has (migration 1), per table
OLD_ROWS: dict[str, list[str]] = {
    "spans": [
        f"""('{TRACE}', '{RUN_SPAN}', NULL, 'invoke_agent planner', 'INTERNAL', '2026-01-05 10:00:00+00',
             '2026-01-05 10:00:02+00', 'OK', NULL, 'travel', 'pydantic-ai',
             '{{"gen_ai.agent.name": "planner"}}', '{{"service.name": "travel"}}', '[]', '1.0', '[]', '', 1,
             1767607200000000123, 1767607202000000456)""",
        f"""('{TRACE}', '{TOOL_SPAN}', '{RUN_SPAN}', 'execute_tool search', 'INTERNAL',
             '2026-01-05 10:00:01+00',
             '2026-01-05 10:00:01.5+00', 'ERROR', 'timeout', 'travel', 'pydantic-ai',
             '{{"gen_ai.tool.name": "search"}}', '{{"service.name": "travel"}}',
             '[{{"name": "exception", "time_unix_nano": 1767607201400000000, "attributes": {{}}}}]', '1.0',
             '[]', '',
             1, 1767607201000000000, 1767607201500000000)""",
    ],
    "logs": [
        f"""('{TRACE}', '{RUN_SPAN}', '2026-01-05 10:00:01.7+00', 'gen_ai.evaluation.result', 'INFO',
             '{{"text": "looked fine"}}', '{{"gen_ai.evaluation.name": "relevance"}}',
             '{{"service.name": "travel"}}', 'travel', 9, '2026-01-05 10:00:01.8+00', 'judge', '0.3', 1,
             1767607201700000000, 1767607201800000000,
             'c0ffee')""",
    ],
    "agent_runs": [
        f"""('{TRACE}', '{RUN_SPAN}', 'planner', 'travel', 'book Paris', 'booked', '2026-01-05 10:00:00+00',
             '2026-01-05 10:00:02+00', 'error', ['search', 'book'], ['search'], NULL, 'invoke_agent planner',
             'gen_ai', 'timeout', '[]', 2, '2026-01-05 10:00:03+00')""",
    ],
    "tool_calls": [
        f"""('{TRACE}', '{RUN_SPAN}', 0, '{TOOL_SPAN}', 'call_1', 'search', '{{"city": "Paris"}}', NULL,
             'error',
             'gen_ai', '2026-01-05 10:00:01+00', 'timeout', NULL, 'planner', '{{"tool_name": "gen_ai"}}',
             '2026-01-05 10:00:03+00')""",
    ],
    "evaluations": [
        f"""('{TRACE}', '{RUN_SPAN}', 'tool_correctness', 0.5, 0.5, true, 'one of two tools expected',
             '{{"missing": []}}', 'ok', NULL, 0.0, '2026-01-05 10:00:04+00')""",
    ],
}


def old_database(path: Path, version: int) -> None:
    """A database our migrations up to ``version`` made, written as that version's collector left it: closed,
    without the views (they are recreated on every open), with ``OLD_ROWS`` in it."""
    con = duckdb.connect(str(path))
    try:
        migrate(con, [step for step in MIGRATIONS if step.version <= version])
        for table, rows in OLD_ROWS.items():
            columns = [row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()][: _v1_width(table)]
            con.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join(rows)}")
        if version >= 2:  # what a collector of that version wrote in the columns it had
            con.execute(
                "UPDATE evaluations SET evaluator = 'ToolCorrectnessMetric', evaluator_version = '1', "
                "latency_s = 0.002, source = 'external:judge/travel', updated_at = '2026-01-05 10:00:06+00'"
            )
        if version >= 3:
            for table in ("spans", "logs"):
                con.execute(f"UPDATE {table} SET ingested_at = '2026-01-05 10:00:05+00'")
    finally:
        con.close()


def _v1_width(table: str) -> int:
    con = duckdb.connect(":memory:")
    try:
        migrate(con, MIGRATIONS[:1])
        return len(con.execute(f"DESCRIBE {table}").fetchall())
    finally:
        con.close()


def snapshot(directory: Path) -> dict[str, str]:
    """Every entry under ``directory`` with a hash of its bytes ("dir" for a directory)."""
    return {
        str(entry.relative_to(directory)): "dir"
        if entry.is_dir()
        else hashlib.sha256(entry.read_bytes()).hexdigest()
        for entry in sorted(directory.rglob("*"))
    }


def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(64 * 1024))


def _a_real_database(path: Path) -> bytes:
    """The bytes of one of our databases with rows, built beside ``path`` and removed."""
    source = path.with_name("source.duckdb")
    con = open_store(source)
    con.execute(
        "INSERT INTO spans (trace_id, span_id, name) SELECT printf('%032x', i), printf('%016x', i), "
        "'span ' || i FROM range(20000) t(i)"
    )
    con.close()
    data = source.read_bytes()
    for leftover in (source, source.with_name(source.name + ".wal")):
        leftover.unlink(missing_ok=True)
    return data


def _truncated(path: Path) -> None:
    data = _a_real_database(path)
    path.write_bytes(data[: len(data) // 2])


def _truncated_header(path: Path) -> None:
    path.write_bytes(_a_real_database(path)[:100])


def _sqlite(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE spans (trace_id TEXT, span_id TEXT)")
    con.execute("INSERT INTO spans VALUES ('a', 'b')")
    con.commit()
    con.close()


def _toml(path: Path) -> None:
    path.write_text('db = "traces.duckdb"\ngrpc = "127.0.0.1:4317"\n\n[assembler]\ngrace_period = 2\n')


def _foreign(path: Path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE orders (id INTEGER, total DECIMAL(10, 2))")
    con.execute("INSERT INTO orders VALUES (1, 9.99), (2, 20.00)")
    con.execute("CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 10")
    con.close()


def _foreign_with_wal(path: Path) -> None:
    """Another program's database whose last writes are in its WAL alone: it stopped without a checkpoint."""
    script = (
        "import duckdb, os, sys\n"
        "con = duckdb.connect(sys.argv[1])\n"
        "con.execute(\"SET checkpoint_threshold = '1GB'\")\n"
        "con.execute('CREATE TABLE orders (id INTEGER)')\n"
        "con.execute('INSERT INTO orders VALUES (1), (2)')\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60)
    assert path.with_name(path.name + ".wal").exists()


def _foreign_same_names(path: Path) -> None:
    """Our table names with other columns, and no schema_version table."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE spans (id INTEGER, name VARCHAR, started TIMESTAMP)")
    con.execute("CREATE TABLE evaluations (id INTEGER, verdict VARCHAR)")
    con.execute("INSERT INTO spans VALUES (1, 'a', '2026-01-01')")
    con.close()


def _foreign_version_table(path: Path) -> None:
    """Another program's migrations table, under our table's name and with our columns."""
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_version (version INTEGER NOT NULL, description VARCHAR, "
        "applied_at TIMESTAMPTZ DEFAULT current_timestamp)"
    )
    con.execute(
        "INSERT INTO schema_version (version, description) VALUES (1, 'create users'), (2, 'add email')"
    )
    con.execute("CREATE TABLE users (id INTEGER, email VARCHAR)")
    con.close()


def _ours_altered(path: Path) -> None:
    """Our schema_version table, but our tables with other columns than that version has."""
    con = duckdb.connect(str(path))
    migrate(con)
    con.execute("ALTER TABLE spans DROP COLUMN name")
    con.execute("ALTER TABLE agent_runs ALTER COLUMN input TYPE INTEGER")
    con.close()


def _newer(path: Path) -> None:
    con = duckdb.connect(str(path))
    migrate(con)
    con.execute(
        "INSERT INTO schema_version (version, description) VALUES (?, 'from a later agentotel-eval')",
        [SCHEMA_VERSION + 1],
    )
    con.close()


@dataclass(frozen=True)
class Refused:
    name: str
    build: Callable[[Path], None]
    #: words the one-line refusal must hold, besides the file's path
    says: tuple[str, ...]
    error: type[SchemaError] = DatabaseRefused


REFUSED: tuple[Refused, ...] = (
    Refused("random-bytes", _random_bytes, ("is not an agentotel-eval database", "not a DuckDB file")),
    Refused("truncated", _truncated, ("is a truncated DuckDB file", "use another --db")),
    Refused("truncated-header", _truncated_header, ("DuckDB file that DuckDB", "cannot read", "truncated")),
    Refused(
        "zero-length",
        lambda path: path.write_bytes(b""),
        ("is not an agentotel-eval database", "empty (0 bytes)", "delete it"),
    ),
    Refused("sqlite", _sqlite, ("is not an agentotel-eval database", "SQLite database")),
    Refused("toml-config", _toml, ("is not an agentotel-eval database", "text file", 'db = "traces.duckdb"')),
    Refused(
        "another-programs-duckdb",
        _foreign,
        ("another program's DuckDB database", "orders (table)", "big_orders (view)", "no agentotel-eval"),
    ),
    Refused(
        "another-programs-duckdb-with-wal",
        _foreign_with_wal,
        ("another program's DuckDB database", "orders (table)"),
    ),
    Refused(
        "our-table-names-other-columns",
        _foreign_same_names,
        ("another program's DuckDB database", "spans (table)", "no agentotel-eval schema_version"),
    ),
    Refused(
        "another-programs-schema-version",
        _foreign_version_table,
        ("another program's DuckDB database", "schema_version table was not written by agentotel-eval"),
    ),
    Refused(
        "our-schema-version-other-columns",
        _ours_altered,
        (
            "tables differ from those of agentotel-eval's schema version",
            "spans.name is missing",
            "agent_runs.input is INTEGER, not VARCHAR",
        ),
    ),
    Refused(
        "newer-schema",
        _newer,
        (
            f"has schema version {SCHEMA_VERSION + 1}, newer than this agentotel-eval "
            f"supports ({SCHEMA_VERSION})",
            "upgrade agentotel-eval",
        ),
        SchemaError,
    ),
)


def build(case: Refused, directory: Path) -> Path:
    """The case's file, alone in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ("config.toml" if case.name == "toml-config" else f"{case.name}.duckdb")
    case.build(path)
    return path
