"""Opening the database file: ``open_store`` is the one place that opens it for writing, ``open_read_only``
the one place that opens it for reading without a collector.

Both open only a file that is ours (``identity``): one that is not DuckDB, is damaged, or is another program's
DuckDB database is refused before anything is written to it or beside it. Both return a sealed instance
(``sealed``) whose only database is the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentotel_eval.store.identity import attach_read_only, check_ours, check_store, one_line
from agentotel_eval.store.schema import SchemaError, create_views, migrate
from agentotel_eval.store.sealed import DuckDBSetting, attach, instance_for, seal, sealed_config
from agentotel_eval.store.writer_lock import writer_holds, writer_lock_path

if TYPE_CHECKING:  # imported where a database is opened: the decode and assembler processes never load it
    import duckdb

#: DuckDB's row group size for the collector's database (``ATTACH ... (ROW_GROUP_SIZE
#: n)``); see ``open_store``
DEFAULT_ROW_GROUP_SIZE = 122_880


def open_store(
    path: str | Path,
    *,
    settings: Mapping[str, DuckDBSetting] | None = None,
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    check: bool = True,
) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the collector's database for writing: migrate, create
    views, seal the instance.

    An existing file is first looked at read-only (``check_store``, skipped with ``check=False`` by a caller
    that just did): one that is no database of ours, or of a newer schema, is refused without a
    byte of it changed.

    The file is attached with ``ROW_GROUP_SIZE row_group_size`` (0: DuckDB's default, 122,880 rows; the
    writer's setting says why it is the default). The size is not stored in the file: read-only opens and
    older collectors read it as any database.

    After this returns the configuration is locked: queries sharing the instance cannot re-enable file access.
    Arrow appends through ``register()`` keep working with external access disabled.
    """
    import duckdb

    path = Path(path)
    if str(path) == ":memory:":
        con = duckdb.connect(":memory:", config=sealed_config(settings))
    else:
        if check:
            check_store(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        con = _attach_for_writing(path, settings, row_group_size)
    try:
        migrate(con)
        create_views(con)
        seal(con)
    except BaseException:
        con.close()
        raise
    return con


def _attach_for_writing(
    path: Path, settings: Mapping[str, DuckDBSetting] | None, row_group_size: int
) -> duckdb.DuckDBPyConnection:
    import duckdb

    con = instance_for(path, settings)
    try:
        attach(con, path, row_group_size)
    except duckdb.Error as exc:  # held by another process or by this one, or a directory it may not write in
        con.close()
        raise SchemaError(f"cannot open {path} for writing: {one_line(exc)}") from None
    except BaseException:
        con.close()
        raise
    return con


def open_read_only(path: str | Path) -> duckdb.DuckDBPyConnection:
    """Open an existing database read-only and sealed (no file, network or extension access). Raises
    ``duckdb.IOException`` when another process holds it, ``duckdb.ResourceInUseException`` when this one
    does, ``DatabaseRefused`` for a file that is no database of ours, ``SchemaError`` for one of a newer
    schema or without our tables yet.

    A database of an older schema is read as it is (``current_version`` says which): a read-only open cannot
    migrate it, and every column it has is there; the columns added since are missing until a
    collector opens it.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"no database at {path}: point at a collector's with --db PATH, --url URL or "
            f"$AGENTOTEL_DB, or start one with: agentotel-eval serve --db {path}"
        )
    if writer_holds(path):  # even in the moment of a reopen, when DuckDB's own lock is not held
        import duckdb

        raise duckdb.IOException(
            f'Could not set lock on file "{path}": a collector holds it for writing '
            f"({writer_lock_path(path)} is locked)"
        )
    con = attach_read_only(path)
    try:
        if not check_ours(con, path):
            raise SchemaError(
                f"{path} has no agentotel-eval tables yet (it is an empty DuckDB database): start a "
                f"collector on it once (agentotel-eval serve --db {path})"
            )
        seal(con)
    except BaseException:
        con.close()
        raise
    return con
