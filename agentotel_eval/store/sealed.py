"""Sealed DuckDB instances: SQL run on them cannot reach files, the network or extensions, nor change that.

A database file is attached to an in-memory instance as its only database (``attach``), and ``seal`` locks the
configuration once the instance is ready. ``store.opening`` and ``store.identity`` open files this way only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a database is opened: the decode and assembler processes never load it
    import duckdb

#: a DuckDB setting's value, as ``duckdb.connect(config=...)`` takes it
DuckDBSetting = str | bool | int | float | list[str]

#: the catalog name the writer attaches the database file under (queries never name it)
CATALOG = "agentotel"


def sealed_config(extra: Mapping[str, DuckDBSetting] | None = None) -> dict[str, DuckDBSetting]:
    # Times come back in UTC whatever the host's zone; SQL cannot reach files, the network or extensions.
    config: dict[str, DuckDBSetting] = {
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    }
    config.update(extra or {})
    return config


def instance_for(path: Path, settings: Mapping[str, DuckDBSetting] | None) -> duckdb.DuckDBPyConnection:
    """An in-memory instance to ``attach`` ``path`` to, with the sealed settings but external access still on
    (ATTACH itself needs it)."""
    import duckdb

    config = sealed_config(settings)
    config.pop("enable_external_access")
    # where a query bigger than the memory limit spills: beside the file, as a direct connect of it would put
    # it (an in-memory instance's default is ".tmp" in whatever directory the process runs in)
    config.setdefault("temp_directory", f"{path}.tmp")
    return duckdb.connect(":memory:", config=config)


def attach(
    con: duckdb.DuckDBPyConnection, path: Path, row_group_size: int, *, read_only: bool = False
) -> None:
    """Make the file ``con``'s only database, attached with its options, and switch external access off.
    Raises DuckDB's error when the file cannot be attached; the caller closes ``con`` then."""
    options = [f"ROW_GROUP_SIZE {int(row_group_size)}"] if row_group_size else []
    if read_only:
        options.append("READ_ONLY")
    clause = f" ({', '.join(options)})" if options else ""
    quoted = str(path).replace("'", "''")
    con.execute(f"ATTACH '{quoted}' AS {CATALOG}{clause}")
    # Every cursor of this connection starts in the file's catalog once the in-memory one is gone.
    con.execute(f"USE {CATALOG}")
    con.execute("DETACH memory")
    con.execute("SET enable_external_access = false")


def cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A cursor of ``con`` whose current database is the file's. DuckDB 1.x starts a cursor in the instance's
    default database, which ``attach`` detached (every query then fails: 'Catalog "" does not exist'); DuckDB
    2.x starts it in its connection's, so there the USE changes nothing."""
    import duckdb

    cur = con.cursor()
    with contextlib.suppress(duckdb.CatalogException):  # an in-memory store: its own database is the default
        cur.execute(f"USE {CATALOG}")
    return cur


def in_use_here(exc: BaseException) -> bool:
    """Whether DuckDB refused to attach a file because this process holds it already: ResourceInUseException
    in DuckDB 2.x, a BinderException saying 'Unique file handle conflict' in 1.x (which has no such class)."""
    import duckdb

    in_use = getattr(duckdb, "ResourceInUseException", None)
    return (in_use is not None and isinstance(exc, in_use)) or "unique file handle conflict" in str(
        exc
    ).lower()


def seal(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("SET TimeZone = 'UTC'")  # an ICU setting: not accepted in connect(config=...)
    con.execute("SET lock_configuration = true")
