"""Whether a file is a DuckDB database, and one of ours: what is checked before a collector writes to a file.

A file that is not DuckDB, is damaged, or is another program's DuckDB database is refused
(``DatabaseRefused``, with a one-line reason) before anything is written to it or beside it: it is only ever
attached read-only here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentotel_eval.store.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    SCHEMA_VERSION_TABLE,
    DatabaseRefused,
    SchemaError,
    current_version,
    database_objects,
    describe_foreign,
    migrate,
)
from agentotel_eval.store.sealed import attach, in_use_here, instance_for, sealed_config
from agentotel_eval.store.writer_lock import writer_holds, writer_lock_path

if TYPE_CHECKING:  # imported where a database is opened: the decode and assembler processes never load it
    import duckdb


def attach_read_only(path: Path) -> duckdb.DuckDBPyConnection:
    """An instance whose only database is the file, attached read-only (not sealed yet). Raises
    ``duckdb.IOException`` when another process holds the file, ``duckdb.ResourceInUseException`` when this
    one does, ``DatabaseRefused`` when DuckDB cannot read it.

    Read-only opens attach too: DuckDB refuses to attach a file this process already holds before it touches
    the file, where a second ``duckdb.connect`` of it would open and close a handle of its own, and closing
    that handle drops the process's lock on the file, which another process could then open for writing."""
    import duckdb

    con = instance_for(path, None)
    try:
        attach(con, path, 0, read_only=True)
    except duckdb.Error as exc:
        con.close()
        if _held_elsewhere(exc):
            raise
        raise DatabaseRefused(_unreadable(path, exc)) from None
    except BaseException:
        con.close()
        raise
    return con


def check_store(path: str | Path) -> None:
    """Refuse a file at ``path`` that ``open_store`` must not open for writing: ``DatabaseRefused`` when it is
    not a DuckDB database, cannot be read, or is another program's; ``SchemaError`` when its schema is newer
    than the code or another process holds it. A missing file, an empty DuckDB database and one of ours (of
    this version or an older one, which the open migrates) pass.

    The file is only attached read-only, so a refused one is left byte for byte as it was, with nothing
    written beside it (the caller takes the writer's lock file after this)."""
    import duckdb

    path = Path(path)
    if str(path) == ":memory:" or not path.exists():
        return
    if writer_holds(path):
        raise SchemaError(
            f"cannot open {path} for writing: another collector has it open "
            f"(it holds {writer_lock_path(path)})"
        )
    try:
        con = attach_read_only(path)
    except duckdb.Error as exc:  # held by another process, or by this one; or written by a newer DuckDB
        raise SchemaError(f"cannot open {path} for writing: {why_unopenable(exc)}") from None
    try:
        check_ours(con, path)
    finally:
        con.close()


def check_ours(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    """The schema version of the attached database once it is known to be ours (0: a new, empty database).

    Ours: a ``schema_version`` table with our columns whose version 1 row has our first migration's
    description, and our tables with at least the columns (names and types) our migrations give
    them at its version."""
    import duckdb

    try:
        kind = con.execute(
            "SELECT type FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()
        if kind and kind[0][0] != "duckdb":  # another storage extension took the file
            raise DatabaseRefused(
                f"{path} is not an agentotel-eval database: it is a {kind[0][0]} database, not a DuckDB one"
            )
        # DuckDB reads a block only when it is needed: a file cut short can attach, and be written to, as if
        # whole. Each block in use has a place of its own in the file (free ones at its end may be cut off).
        size = path.stat().st_size
        for used, block_size in con.execute(
            "SELECT used_blocks, block_size FROM pragma_database_size() "
            "WHERE database_name = current_database()"
        ).fetchall():
            least = _DUCKDB_HEADERS + int(used) * int(block_size)
            if size < least:
                raise DatabaseRefused(
                    f"{path} is a truncated DuckDB file: it has {size} bytes, fewer than the "
                    f"{least} its {used} blocks in use take; use another --db"
                )
        tables = _table_columns(con)
        marker = tables.get(SCHEMA_VERSION_TABLE)
        if marker is not None and _missing(marker, _reference_columns(0)[SCHEMA_VERSION_TABLE]):
            raise DatabaseRefused(
                f"{path} is not an agentotel-eval database: it is another program's DuckDB "
                f"database (its {SCHEMA_VERSION_TABLE} table is not agentotel-eval's); "
                "use another --db"
            )
        have = current_version(con)
        if not have:  # no migration ever committed: only an empty schema_version table may be there
            others = [name for name in database_objects(con) if name != f"{SCHEMA_VERSION_TABLE} (table)"]
            if others:
                raise DatabaseRefused(f"{path} is not an agentotel-eval database: {describe_foreign(others)}")
            return 0
        first = con.execute(f"SELECT description FROM {SCHEMA_VERSION_TABLE} WHERE version = 1").fetchall()
        if MIGRATIONS[0].description not in {row[0] for row in first}:
            raise DatabaseRefused(
                f"{path} is not an agentotel-eval database: it is another program's DuckDB "
                f"database (its {SCHEMA_VERSION_TABLE} table was not written by agentotel-eval); "
                "use another --db"
            )
        if have > SCHEMA_VERSION:
            raise SchemaError(
                f"{path} has schema version {have}, newer than this agentotel-eval supports "
                f"({SCHEMA_VERSION}); upgrade agentotel-eval or use another --db"
            )
        problems = [
            problem
            for table, columns in _reference_columns(have).items()
            for problem in (
                [f"no {table} table"] if table not in tables else _missing(tables[table], columns, table)
            )
        ]
        if problems:
            shown = "; ".join(problems[:3]) + (f"; {len(problems) - 3} more" if len(problems) > 3 else "")
            raise DatabaseRefused(
                f"{path} is not an agentotel-eval database: its tables differ from those of "
                f"agentotel-eval's schema version {have} ({shown}); use another --db"
            )
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

    con = duckdb.connect(":memory:", config=sealed_config())
    try:
        migrate(con, [step for step in MIGRATIONS if step.version <= version])
        return _table_columns(con)
    finally:
        con.close()


def _missing(
    have: Mapping[str, str], want: Mapping[str, str], table: str = SCHEMA_VERSION_TABLE
) -> list[str]:
    """How the columns ``have`` fall short of ``want`` (more columns are fine: a user may add some)."""
    return [
        f"{table}.{name} is missing"
        if name not in have
        else f"{table}.{name} is {have[name]}, not {data_type}"
        for name, data_type in want.items()
        if have.get(name) != data_type
    ]


#: bytes 8-11 of every DuckDB file, after the header's checksum
_DUCKDB_MAGIC = b"DUCK"
#: a DuckDB file's main header and its two database headers, 4 KiB each, before the first block
_DUCKDB_HEADERS = 3 * 4096


def _unreadable(path: Path, exc: Exception) -> str:
    """Why DuckDB could not read ``path``, for a user. The file's first bytes are read only after DuckDB
    failed: had this process a DuckDB handle on the file, closing one of its own would drop
    that handle's lock."""
    import duckdb

    try:
        with path.open("rb") as file:
            head = file.read(64)
    except OSError as err:
        return f"cannot read {path}: {err.strerror or err}"
    if head[8:12] == _DUCKDB_MAGIC:
        size = path.stat().st_size
        if size >= _DUCKDB_HEADERS and "could not read enough bytes" in str(exc).lower():
            # DuckDB 1.x reads blocks past a cut-off end at ATTACH already; 2.x attaches and
            # check_ours finds it
            return (
                f"{path} is a truncated DuckDB file: it has {size} bytes and DuckDB {duckdb.__version__} "
                f"read past its end ({one_line(exc)}); use another --db"
            )
        if "newer version of DuckDB" in str(exc):
            return f"{path} cannot be opened: {why_unopenable(exc)}"
        return (
            f"{path} is a DuckDB file that DuckDB {duckdb.__version__} cannot read (damaged, truncated, or "
            f"written by another DuckDB version): {one_line(exc)}"
        )
    return f"{path} is not an agentotel-eval database: {_not_duckdb(head)}"


def _not_duckdb(head: bytes) -> str:
    if not head:
        return (
            "the file is empty (0 bytes), not a DuckDB database; delete it and a new "
            "database is created there"
        )
    if head.startswith(b"SQLite format 3\x00"):
        return "it is a SQLite database, not a DuckDB one"
    if all(byte >= 0x20 or byte in b"\t\n\r" for byte in head):  # UTF-8 text has no other control bytes
        first = next((line for line in head.splitlines() if line.strip()), b"").decode("utf-8", "replace")[
            :40
        ]
        return f"it is a text file (it begins {first!r}), not a DuckDB database"
    return "it is not a DuckDB file (it has no DuckDB header)"


def _held_elsewhere(exc: Exception) -> bool:
    """Whether DuckDB refused a file because another process (or this one) holds it, not for what is in it."""
    import duckdb

    return in_use_here(exc) or (
        isinstance(exc, duckdb.IOException) and "could not set lock" in str(exc).lower()
    )


def one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def why_unopenable(exc: Exception) -> str:
    """DuckDB's words on a file it cannot open, with the way out when a newer DuckDB wrote it: the default
    install (DuckDB 2.x) writes files the ``[lake]`` extra's DuckDB 1.5.5 cannot read."""
    import duckdb

    said = one_line(exc)
    if "newer version of DuckDB" not in said:
        return said
    return (
        f"it was written by a newer DuckDB than this one ({duckdb.__version__}; the default install runs "
        f"2.x, the [lake] extra 1.5.5): copy it once with the newer DuckDB into a file written with "
        f"STORAGE_VERSION 'v1.5.0' and point db at that (docs/scale-out.md, Versions), or use a new "
        f"file. DuckDB: {said}"
    )
