"""Run one sealed read-only query on the collector's database, from outside the collector.

When a collector holds the database, the query goes to its ``POST /v1/query`` (DuckDB lets one process open a
file for writing and no other process open it at the same time); otherwise the file is opened read-only.
Either way only a single SELECT / WITH / DESCRIBE / SHOW / SUMMARIZE / EXPLAIN statement runs, with no
file or network access.
"""

from __future__ import annotations

import json
import os
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
    """A query that could not run (its message is for the user), with the exit code a
    command should return."""

    def __init__(self, message: str, code: int = EXIT_QUERY_ERROR) -> None:
        super().__init__(message)
        self.code = code


class CollectorRefused(Exception):
    """The collector answered a request with an error status; the message is its reason
    (for 401, what to do)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def post_json(collector: CollectorInfo, path: str, payload: dict[str, Any], timeout: float) -> Any:
    """POST ``payload`` to the collector and return its JSON answer; ``CollectorRefused`` for an error status,
    ``OSError`` (``urllib.error.URLError`` among them) when it cannot be reached."""
    from agentotel_eval.access.discovery import open_collector, unauthorized_message

    try:
        with open_collector(
            collector,
            path,
            data=json.dumps(payload).encode(),
            timeout=timeout,
            headers={"Content-Type": "application/json"},
        ) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            raise CollectorRefused(401, unauthorized_message(collector.base_url)) from None
        try:
            detail = json.loads(exc.read()).get("error") or exc.reason
        except (ValueError, AttributeError):
            detail = exc.reason
        raise CollectorRefused(exc.code, str(detail)) from None


def _via_collector(
    collector: CollectorInfo, sql: str, limit: int | None, timeout: float | None, params: Sequence[Any] = ()
) -> QueryResult:
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


def _local(
    db: Path, sql: str, limit: int | None, timeout: float | None, params: Sequence[Any] = ()
) -> QueryResult:
    import duckdb

    from agentotel_eval.store.opening import open_read_only
    from agentotel_eval.store.query import DEFAULT_ROW_LIMIT, DEFAULT_TIMEOUT, run_query
    from agentotel_eval.store.schema import SCHEMA_VERSION, SchemaError, current_version
    from agentotel_eval.store.sealed import cursor as sealed_cursor
    from agentotel_eval.store.sealed import in_use_here

    try:
        con = open_read_only(db)
    except FileNotFoundError as exc:
        raise QueryFailure(str(exc), EXIT_NO_DATABASE) from None
    except SchemaError as exc:  # not a database of ours, or newer than this code: the message says which
        raise QueryFailure(str(exc), EXIT_NO_DATABASE) from None
    except duckdb.Error as exc:
        if not (isinstance(exc, duckdb.IOException) or in_use_here(exc)):
            raise
        if "lock" in str(exc).lower() or in_use_here(exc):
            raise QueryFailure(
                f"{db} is held by another process and no collector answers for it "
                f"(is a collector starting, or running without its HTTP port?): {exc}",
                EXIT_NO_DATABASE,
            ) from None
        raise QueryFailure(f"cannot open {db}: {exc}", EXIT_NO_DATABASE) from None
    try:
        version = current_version(con)
        if version < SCHEMA_VERSION:  # read as it is: a query naming a newer column fails, and this says why
            print(
                f"note: {db} has schema version {version}, older than this agentotel-eval's "
                f"({SCHEMA_VERSION}): columns added since are missing until a collector opens it once "
                f"(agentotel-eval serve --db {db})",
                file=sys.stderr,
            )
        cursor = sealed_cursor(con)
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


def locate(db: str | Path | None, url: str | None = None) -> tuple[Path, CollectorInfo | None]:
    """The database a reading command uses and the live collector that holds it (None: read the file).

    ``url`` (or ``$AGENTOTEL_URL``) names a collector; else ``db`` (or ``$AGENTOTEL_DB``, else
    ``./agentotel.duckdb``) and the collector its discovery file names. With neither given and no database
    here, the one collector running on this machine is used (and said so); when several run, the command is
    told to choose."""
    from agentotel_eval.access.discovery import (
        DB_ENV,
        URL_ENV,
        collector_at,
        find_collector,
        running_collectors,
    )
    from agentotel_eval.store import DEFAULT_DB_PATH

    url = url or os.environ.get(URL_ENV, "").strip() or None
    if url:
        found = collector_at(url)
        if found is None:
            raise QueryFailure(f"no agentotel-eval collector answers at {url}", EXIT_NO_DATABASE)
        return Path(found.db or DEFAULT_DB_PATH), found
    named = str(db) if db is not None else os.environ.get(DB_ENV, "").strip() or None
    path = Path(named or DEFAULT_DB_PATH)
    collector = find_collector(path)
    if collector is not None or named is not None or path.exists():
        return path, collector
    running = running_collectors()
    if len(running) == 1:
        (only,) = running
        print(
            f"note: no {path} here: reading the collector at {only.base_url} (database {only.db})",
            file=sys.stderr,
        )
        return Path(only.db), only
    if running:
        choices = "; ".join(f"--db {c.db} (--url {c.base_url})" for c in running)
        raise QueryFailure(
            f"no database at {path}, and {len(running)} collectors run on this machine: choose one "
            f"with {choices}",
            EXIT_NO_DATABASE,
        )
    return path, None


def _over_lake(
    lake: str, sql: str, limit: int | None, timeout: float | None, params: Sequence[Any]
) -> QueryResult:
    """The query over every node's rows in the lake that ``lake`` (a config file with ``[lake]``) names; one
    sealed reader per file for the process (attaching the catalog is the slow part)."""
    from agentotel_eval.store import lake as lakes
    from agentotel_eval.store.query import DEFAULT_ROW_LIMIT, DEFAULT_TIMEOUT, QueryError, run_query

    try:
        lakes.check_reader_sql(sql)
    except lakes.LakeError as exc:
        raise QueryFailure(str(exc)) from None
    try:
        settings = lakes.settings_from_file(lake)
    except lakes.LakeError as exc:
        raise QueryFailure(str(exc), EXIT_NO_DATABASE) from None
    con = _LAKE_READERS.get(lake)
    if con is None:
        try:
            con = _LAKE_READERS[lake] = lakes.open_reader(settings)
        except lakes.LakeError as exc:
            raise QueryFailure(str(exc), EXIT_NO_DATABASE) from None
    cursor = con.cursor()
    try:
        return run_query(
            cursor,
            sql,
            row_limit=limit if limit is not None else DEFAULT_ROW_LIMIT,
            timeout=timeout if timeout is not None else DEFAULT_TIMEOUT,
            params=params,
        )
    except QueryError as exc:  # DuckDB's words can name the catalog's connection string
        raise QueryFailure(settings.scrub(str(exc))) from None
    finally:
        cursor.close()


_LAKE_READERS: dict[str, Any] = {}


def execute(
    db: str | Path | None,
    sql: str,
    *,
    limit: int | None = None,
    timeout: float | None = None,
    params: Sequence[Any] = (),
    url: str | None = None,
    lake: str | None = None,
) -> QueryResult:
    """Run the query through the live collector on the database (``locate``) if there is one, else on the file
    read-only; with ``lake`` (a config file with ``[lake]``) over every node's rows in the shared lake.
    ``params`` fill the statement's ``?`` placeholders."""
    from agentotel_eval.access.discovery import find_collector
    from agentotel_eval.store.query import QueryError

    if lake:
        try:
            return _over_lake(lake, sql, limit, timeout, params)
        except QueryError as exc:
            raise QueryFailure(str(exc)) from None
    path, collector = locate(db, url)
    try:
        if collector is not None:
            try:
                return _via_collector(collector, sql, limit, timeout, params)
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                # The collector went away between discovery and the query: the file is free
                # (or will say why not).
                if url or find_collector(path) is not None:
                    raise QueryFailure(
                        f"the collector at {collector.base_url} did not answer: {exc}"
                    ) from None
        return _local(path, sql, limit, timeout, params)
    except QueryError as exc:
        raise QueryFailure(str(exc)) from None


def reader(
    db: str | Path | None, *, limit: int | None = None, url: str | None = None, lake: str | None = None
) -> Callable[[str, Sequence[Any]], QueryResult]:
    """``read(sql, params)`` over the database ``locate`` finds (once, at the first read), for the domain
    queries (``agentotel_eval.access.queries``); it raises ``QueryFailure``."""
    found: list[Path] = []

    def read(sql: str, params: Sequence[Any]) -> QueryResult:
        if lake:
            return execute(None, sql, params=params, limit=limit, lake=lake)
        if not found:  # (a note that the machine's collector is used is printed once)
            found.append(locate(db, url)[0])
        return execute(found[0], sql, params=params, limit=limit, url=url)

    return read
