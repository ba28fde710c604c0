"""Files a user may point ``--db`` at that are not ours at all.

``REFUSED`` builds each kind of file a collector must refuse and leave as it was, with words its refusal must say;
``snapshot`` is what "left as it was" compares.
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

from agentotel_eval.store.schema import (
    SCHEMA_VERSION,
    DatabaseRefused,
    SchemaError,
    migrate,
    open_store,
)


def snapshot(directory: Path) -> dict[str, str]:
    """Every entry under ``directory`` with a hash of its bytes ("dir" for a directory)."""
    return {
        str(entry.relative_to(directory)): "dir" if entry.is_dir() else hashlib.sha256(entry.read_bytes()).hexdigest()
        for entry in sorted(directory.rglob("*"))
    }


def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(64 * 1024))


def _a_real_database(path: Path) -> bytes:
    """The bytes of one of our databases with rows, built beside ``path`` and removed."""
    source = path.with_name("source.duckdb")
    con = open_store(source)
    con.execute("INSERT INTO spans (trace_id, span_id, name) SELECT printf('%032x', i), printf('%016x', i), "
                "'span ' || i FROM range(20000) t(i)")
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
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, description VARCHAR, "
                "applied_at TIMESTAMPTZ DEFAULT current_timestamp)")
    con.execute("INSERT INTO schema_version (version, description) VALUES (1, 'create users'), (2, 'add email')")
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
    con.execute("INSERT INTO schema_version (version, description) VALUES (?, 'from a later agentotel-eval')",
                [SCHEMA_VERSION + 1])
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
    Refused("truncated", _truncated, ("is a truncated DuckDB file", "blocks in use take")),
    Refused("truncated-header", _truncated_header, ("DuckDB file that DuckDB", "cannot read", "truncated")),
    Refused("zero-length", lambda path: path.write_bytes(b""),
            ("is not an agentotel-eval database", "empty (0 bytes)", "delete it")),
    Refused("sqlite", _sqlite, ("is not an agentotel-eval database", "SQLite database")),
    Refused("toml-config", _toml, ("is not an agentotel-eval database", "text file", 'db = "traces.duckdb"')),
    Refused("another-programs-duckdb", _foreign,
            ("another program's DuckDB database", "orders (table)", "big_orders (view)", "no agentotel-eval")),
    Refused("another-programs-duckdb-with-wal", _foreign_with_wal,
            ("another program's DuckDB database", "orders (table)")),
    Refused("our-table-names-other-columns", _foreign_same_names,
            ("another program's DuckDB database", "spans (table)", "no agentotel-eval schema_version")),
    Refused("another-programs-schema-version", _foreign_version_table,
            ("another program's DuckDB database", "schema_version table was not written by agentotel-eval")),
    Refused("our-schema-version-other-columns", _ours_altered,
            ("tables differ from those of agentotel-eval's schema version", "spans.name is missing",
             "agent_runs.input is INTEGER, not VARCHAR")),
    Refused("newer-schema", _newer,
            (f"has schema version {SCHEMA_VERSION + 1}, newer than this agentotel-eval supports ({SCHEMA_VERSION})",
             "upgrade agentotel-eval"), SchemaError),
)


def build(case: Refused, directory: Path) -> Path:
    """The case's file, alone in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ("config.toml" if case.name == "toml-config" else f"{case.name}.duckdb")
    case.build(path)
    return path

