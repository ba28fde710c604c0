"""The read-only, sealed SQL surface shared by ``POST /v1/query`` and ``agentotel-eval query``.

Three layers, so one slip does not open the database:
1. ``check_sql`` (pure): exactly one statement, of a reading kind (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE,
   EXPLAIN of one of those); everything else is refused with a message that names what was refused.
2. the instance is sealed (``opening.open_store`` / ``open_read_only``): external access off and the
   configuration locked, so no statement can read or write files, attach databases, install or load
   extensions, or SET anything.
3. every query runs inside ``BEGIN TRANSACTION READ ONLY``: a write that slips through (``EXPLAIN ANALYZE
   INSERT``, ``nextval``) fails in DuckDB itself.
A row limit and a time limit (the query is interrupted) bound what one query may cost.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import json
import math
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

DEFAULT_ROW_LIMIT = 10_000
DEFAULT_TIMEOUT = 30.0
ALLOWED_FORMS = "SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE or EXPLAIN"
#: Table functions that change state although they are called from a SELECT.
_FORBIDDEN_FUNCTIONS = frozenset({"checkpoint", "force_checkpoint"})
_MISSING_TABLE = re.compile(r"Table with name (\S+) does not exist")
_FILE_SUFFIX = re.compile(r"\.(csv|tsv|json|jsonl|ndjson|parquet|txt|db|duckdb|gz|zst)$", re.IGNORECASE)
_EXPLAIN_PREFIX = re.compile(r"^\s*explain\s+(?:analyze\s+|analyse\s+)?(?:\([^)]*\)\s*)?", re.IGNORECASE)


class QueryError(Exception):
    """A query that cannot run; ``kind`` is forbidden | invalid | timeout (the HTTP answer is 400 for these)
    or unavailable (503)."""

    kind = "invalid"


class QueryForbidden(QueryError):
    kind = "forbidden"


class QueryTimeout(QueryError):
    kind = "timeout"


class QueryUnavailable(QueryError):
    """The database cannot be read right now (the collector could not open it again):
    retry later (HTTP 503)."""

    kind = "unavailable"


_STATEMENT_NAMES = {
    "INSERT": "INSERT",
    "UPDATE": "UPDATE",
    "DELETE": "DELETE",
    "CREATE": "CREATE",
    "DROP": "DROP",
    "ALTER": "ALTER",
    "COPY": "COPY",
    "ATTACH": "ATTACH",
    "DETACH": "DETACH",
    "LOAD": "INSTALL/LOAD",
    "SET": "SET",
    "VARIABLE_SET": "SET VARIABLE",
    "PRAGMA": "PRAGMA",
    "EXPORT": "EXPORT",
    "CALL": "CALL",
    "TRANSACTION": "transaction control",
    "VACUUM": "VACUUM",
    "PREPARE": "PREPARE",
    "EXECUTE": "EXECUTE",
    "CREATE_FUNC": "CREATE FUNCTION",
    "ANALYZE": "ANALYZE",
    "MULTI": "multiple statements",
    "UPDATE_EXTENSIONS": "UPDATE EXTENSIONS",
    "RELATION": "relation",
    "LOGICAL_PLAN": "logical plan",
    "COPY_DATABASE": "COPY DATABASE",
    "DROP_SECRET": "DROP SECRET",
    "CREATE_SECRET": "CREATE SECRET",
}


def _statement_kind(statement: Any) -> str:
    name = str(statement.type).rsplit(".", 1)[-1]
    return _STATEMENT_NAMES.get(name, name)


_parser_lock = threading.Lock()


def check_sql(sql: str, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """The single reading statement in ``sql``, or ``QueryForbidden`` / ``QueryError`` saying why not.

    Parsing only: nothing runs. ``con`` is the connection whose parser to use (DuckDB's
    default one otherwise).
    """
    if not isinstance(sql, str) or not sql.strip():
        raise QueryError("empty query: give one SELECT statement")
    try:
        if con is not None:
            statements = con.extract_statements(sql)
        else:
            with _parser_lock:
                statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(_first_line(exc)) from None
    if not statements:
        raise QueryError("empty query: give one SELECT statement")
    if len(statements) > 1:
        raise QueryForbidden(
            f"{len(statements)} statements given; the query surface runs exactly one "
            f"{ALLOWED_FORMS} statement"
        )
    statement = statements[0]
    kind = str(statement.type).rsplit(".", 1)[-1]
    if kind == "EXPLAIN":
        inner = _EXPLAIN_PREFIX.sub("", statement.query, count=1)
        if inner.strip():
            check_sql(inner, con)
        return statement.query
    if kind != "SELECT":
        raise QueryForbidden(
            f"{_statement_kind(statement)} statements are not allowed: the query surface is read-only "
            f"and cannot change settings or reach files (allowed: {ALLOWED_FORMS})"
        )
    return statement.query


def check_params(params: Any) -> list[Any]:
    """Placeholder values as a list, or ``QueryError``: only JSON scalars (a string,
    number, boolean or null)."""
    if params is None:
        return []
    if isinstance(params, str | bytes) or not isinstance(params, Sequence):
        raise QueryError("'params' must be a list of values for the query's ? placeholders")
    for value in params:
        if value is not None and not isinstance(value, str | int | float | bool):
            raise QueryError(f"query parameters must be strings, numbers, booleans or null, got {value!r}")
    return list(params)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _called_functions(con: duckdb.DuckDBPyConnection, sql: str) -> set[str]:
    """Names of the functions a SELECT calls, from DuckDB's own parse tree (not a regular expression)."""
    try:
        row = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()[0]
    except duckdb.Error:
        return set()
    tree = json.loads(row[0]) if row and row[0] else {}
    names: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            name = node.get("function_name")
            if isinstance(name, str):
                names.add(name.lower())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return names


# ------------------------------------------------------------------------------------------------------------
# values -> JSON


def _type_converter(t: Any) -> Callable[[Any], Any] | None:
    """A converter to JSON-ready values for a DuckDB column type; None when values are already JSON-ready."""
    name = str(t)
    type_id = getattr(t, "id", "")
    if name == "JSON":
        return lambda v: None if v is None else json.loads(v)
    if type_id == "list" or type_id == "array":
        child = _type_converter(t.children[0][1])
        return (
            (lambda v: v if v is None else [child(x) for x in v])
            if child
            else (lambda v: v if v is None else list(v))
        )
    if type_id == "struct":
        subs = {key: _type_converter(sub) for key, sub in t.children}
        return lambda v: (
            None
            if v is None
            else {k: (conv(x) if (conv := subs.get(k)) else jsonable(x)) for k, x in v.items()}
        )
    if type_id == "map":
        value_conv = _type_converter(t.children[1][1])
        return lambda v: (
            None
            if v is None
            else {str(k): (value_conv(x) if value_conv else jsonable(x)) for k, x in v.items()}
        )
    if type_id in ("varchar", "bigint", "integer", "smallint", "tinyint", "boolean"):
        return None
    return jsonable


def jsonable(value: Any) -> Any:
    """A Python value from DuckDB as JSON: times ISO 8601, decimals as numbers, blobs base64, NaN as null."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return str(value)


# ------------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class QueryResult:
    columns: list[str]
    types: list[str]
    rows: list[list[Any]]  # JSON-ready values
    truncated: bool = False
    elapsed_ms: float = 0.0
    row_limit: int = DEFAULT_ROW_LIMIT
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "types": self.types,
            "rows": self.rows,
            "truncated": self.truncated,
            "row_limit": self.row_limit,
            "elapsed_ms": round(self.elapsed_ms, 3),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QueryResult:
        return cls(
            columns=list(data["columns"]),
            types=list(data.get("types") or []),
            rows=[list(r) for r in data["rows"]],
            truncated=bool(data.get("truncated")),
            elapsed_ms=float(data.get("elapsed_ms") or 0.0),
            row_limit=int(data.get("row_limit") or DEFAULT_ROW_LIMIT),
        )

    def records(self) -> list[dict[str, Any]]:
        """Rows as objects (column name -> value), the shape of ``--format json``."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def run_query(
    cursor: duckdb.DuckDBPyConnection,
    sql: str,
    *,
    row_limit: int = DEFAULT_ROW_LIMIT,
    timeout: float = DEFAULT_TIMEOUT,
    params: Sequence[Any] = (),
) -> QueryResult:
    """Run one sealed, read-only query on ``cursor`` (a connection of its own; it is left usable). ``params``
    are the values of the statement's ``?`` placeholders (JSON scalars), so callers never
    quote values into SQL."""
    statement = check_sql(sql, cursor)
    params = check_params(params)
    if row_limit < 1:
        raise QueryError("the row limit must be at least 1")
    forbidden = _called_functions(cursor, statement) & _FORBIDDEN_FUNCTIONS
    if forbidden:
        raise QueryForbidden(
            f"{', '.join(sorted(forbidden))}() changes the database; the query surface is read-only"
        )
    started = time.perf_counter()
    timed_out = threading.Event()

    def interrupt() -> None:
        timed_out.set()
        cursor.interrupt()

    timer = threading.Timer(timeout, interrupt)
    timer.daemon = True
    cursor.execute("BEGIN TRANSACTION READ ONLY")
    timer.start()
    try:
        cursor.execute(statement, params or None)
        description = cursor.description or []
        fetched = cursor.fetchmany(row_limit + 1)
    except duckdb.Error as exc:
        raise _translate(exc, timed_out.is_set(), timeout) from None
    finally:
        timer.cancel()
        timer.join()  # its thread is gone when the query returns, not left to the interpreter's exit
        with contextlib.suppress(duckdb.Error):
            cursor.execute("ROLLBACK")
    truncated = len(fetched) > row_limit
    if truncated:
        fetched = fetched[:row_limit]
    converters = [_type_converter(d[1]) for d in description]
    rows = [[conv(v) if conv else v for conv, v in zip(converters, row, strict=True)] for row in fetched]
    return QueryResult(
        columns=[d[0] for d in description],
        types=[str(d[1]) for d in description],
        rows=rows,
        truncated=truncated,
        elapsed_ms=(time.perf_counter() - started) * 1000,
        row_limit=row_limit,
    )


def _translate(exc: duckdb.Error, timed_out: bool, timeout: float) -> QueryError:
    message = _first_line(exc)
    if timed_out or isinstance(exc, duckdb.InterruptException):
        return QueryTimeout(f"the query ran longer than the {timeout:g}s limit and was stopped")
    if isinstance(exc, duckdb.PermissionException) or "disabled by configuration" in message:
        return QueryForbidden(
            f"the query surface cannot read or write files or reach the network ({message})"
        )
    missing = _MISSING_TABLE.search(message)
    if missing and ("/" in missing.group(1) or _FILE_SUFFIX.search(missing.group(1))):
        # DuckDB would read a quoted file name as a table; with external access off it
        # reports a missing table.
        return QueryForbidden(
            f"the query surface cannot read or write files ({missing.group(1)} is not a table)"
        )
    if isinstance(exc, duckdb.TransactionException) and "read-only" in message:
        return QueryForbidden(f"the query surface is read-only ({message})")
    if "configuration has been locked" in message:
        return QueryForbidden(f"settings cannot be changed from the query surface ({message})")
    return QueryError(message)
