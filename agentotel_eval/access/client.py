"""Run one sealed read-only query on the collector's database, from outside the collector.

When a collector holds the database, the query goes to its ``POST /v1/query`` (DuckDB lets one process open a file
for writing and no other process open it at the same time); otherwise the file is opened read-only. Either way only
a single SELECT / WITH / DESCRIBE / SHOW / SUMMARIZE / EXPLAIN statement runs, with no file or network access.
"""

from __future__ import annotations

import json
import sys
import urllib.error
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # duckdb loads only when a query runs on the file
    from agentotel_eval.access.discovery import CollectorInfo
    from agentotel_eval.store.query import QueryResult

EXIT_QUERY_ERROR = 1
EXIT_NO_DATABASE = 2


class QueryFailure(Exception):
    """A query that could not run (its message is for the user), with the exit code a command should return."""

    def __init__(self, message: str, code: int = EXIT_QUERY_ERROR) -> None:
        super().__init__(message)
        self.code = code


class CollectorRefused(Exception):
    """The collector answered a request with an error status; the message is its reason (for 401, what to do)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def post_json(collector: CollectorInfo, path: str, payload: dict[str, Any], timeout: float) -> Any:
    """POST ``payload`` to the collector and return its JSON answer; ``CollectorRefused`` for an error status,
    ``OSError`` (``urllib.error.URLError`` among them) when it cannot be reached."""
    from agentotel_eval.access.discovery import open_collector, unauthorized_message

    try:
        with open_collector(collector, path, data=json.dumps(payload).encode(), timeout=timeout,
                            headers={"Content-Type": "application/json"}) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            raise CollectorRefused(401, unauthorized_message(collector.base_url)) from None
        try:
            detail = json.loads(exc.read()).get("error") or exc.reason
        except (ValueError, AttributeError):
            detail = exc.reason
        raise CollectorRefused(exc.code, str(detail)) from None


def _via_collector(collector: CollectorInfo, sql: str, limit: int | None, timeout: float | None,
                   params: Sequence[Any] = ()) -> QueryResult:
    from agentotel_eval.store.query import QueryResult

    payload: dict[str, object] = {"sql": sql}
    if params:
        payload["params"] = list(params)
    if limit is not None:
        payload["limit"] = limit
    if timeout is not None:
        payload["timeout"] = timeout
    try:
        return QueryResult.from_dict(post_json(collector, "/v1/query", payload, (timeout or 30.0) + 10.0))
    except CollectorRefused as exc:
        raise QueryFailure(str(exc)) from None


def _local(db: Path, sql: str, limit: int | None, timeout: float | None,
           params: Sequence[Any] = ()) -> QueryResult:
    import duckdb

    from agentotel_eval.store.opening import open_read_only
    from agentotel_eval.store.query import DEFAULT_ROW_LIMIT, DEFAULT_TIMEOUT, run_query
    from agentotel_eval.store.schema import SCHEMA_VERSION, SchemaError, current_version

    try:
        con = open_read_only(db)
    except FileNotFoundError as exc:
        raise QueryFailure(str(exc), EXIT_NO_DATABASE) from None
    except SchemaError as exc:  # not a database of ours, or newer than this code: the message says which
        raise QueryFailure(str(exc), EXIT_NO_DATABASE) from None
    except (duckdb.IOException, duckdb.ResourceInUseException) as exc:
        if "lock" in str(exc).lower() or isinstance(exc, duckdb.ResourceInUseException):
            raise QueryFailure(
                f"{db} is held by another process and no collector answers for it "
                f"(is a collector starting, or running without its HTTP port?): {exc}",
                EXIT_NO_DATABASE,
            ) from None
        raise QueryFailure(f"cannot open {db}: {exc}", EXIT_NO_DATABASE) from None
    try:
        version = current_version(con)
        if version < SCHEMA_VERSION:  # read as it is: a query naming a newer column fails, and this says why
            print(f"note: {db} has schema version {version}, older than this agentotel-eval's ({SCHEMA_VERSION}): "
                  f"columns added since are missing until a collector opens it once (agentotel-eval serve --db {db})",
                  file=sys.stderr)
        cursor = con.cursor()
        try:
            return run_query(
                cursor,
                sql,
                row_limit=limit if limit is not None else DEFAULT_ROW_LIMIT,
                timeout=timeout if timeout is not None else DEFAULT_TIMEOUT,
                params=params,
            )
        finally:
            cursor.close()  # before its connection: nothing of DuckDB's is left for the interpreter's exit
    finally:
        con.close()


def execute(db: str | Path, sql: str, *, limit: int | None = None,
            timeout: float | None = None, params: Sequence[Any] = ()) -> QueryResult:
    """Run the query through the live collector on ``db`` if there is one, else on the file read-only.
    ``params`` fill the statement's ``?`` placeholders."""
    from agentotel_eval.access.discovery import find_collector
    from agentotel_eval.store.query import QueryError

    db = Path(db)
    collector = find_collector(db)
    try:
        if collector is not None:
            try:
                return _via_collector(collector, sql, limit, timeout, params)
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                # The collector went away between discovery and the query: the file is free (or will say why not).
                if find_collector(db) is not None:
                    raise QueryFailure(f"the collector at {collector.base_url} did not answer: {exc}") from None
        return _local(db, sql, limit, timeout, params)
    except QueryError as exc:
        raise QueryFailure(str(exc)) from None


def reader(db: str | Path, *, limit: int | None = None) -> Callable[[str, Sequence[Any]], QueryResult]:
    """``read(sql, params)`` over ``db`` (``execute`` with ``limit``), for the domain queries
    (``agentotel_eval.access.queries``); it raises ``QueryFailure``."""

    def read(sql: str, params: Sequence[Any]) -> QueryResult:
        return execute(db, sql, params=params, limit=limit)

    return read
