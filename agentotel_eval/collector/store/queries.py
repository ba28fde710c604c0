"""The collector's read side: one sealed read-only query at a time per caller, within the ``[query]`` limits,
for ``POST /v1/query`` and the web UI; each counted by outcome for ``/metrics``
(``agentotel_queries_total``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from agentotel_eval.collector.config import QueryConfig
from agentotel_eval.collector.store.database import DatabaseClosed
from agentotel_eval.store.query import QueryError, QueryResult, QueryUnavailable, run_query


class Queries:
    """``cursor`` gives a cursor for one use (``Database.cursor``); ``counts`` are the outcomes so far ("ok"
    or a ``QueryError`` kind)."""

    def __init__(self, cursor: Callable[[], AbstractContextManager[Any]], limits: QueryConfig) -> None:
        self._cursor = cursor
        self._limits = limits
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}

    def query(
        self, sql: str, *, limit: int | None = None, timeout: float | None = None, params: Sequence[Any] = ()
    ) -> dict[str, Any]:
        """Run one sealed read-only query (the ``POST /v1/query`` answer as a dict)."""
        return self.read(sql, params, limit=limit, timeout=timeout).to_dict()

    def read(
        self, sql: str, params: Sequence[Any] = (), *, limit: int | None = None, timeout: float | None = None
    ) -> QueryResult:
        """Run one sealed read-only query; ``limit`` and ``timeout`` only lower the configured ones."""
        row_limit = min(limit, self._limits.row_limit) if limit else self._limits.row_limit
        time_limit = min(timeout, self._limits.timeout) if timeout else self._limits.timeout
        try:
            try:
                with self._cursor() as cursor:
                    result = run_query(cursor, sql, row_limit=row_limit, timeout=time_limit, params=params)
            except DatabaseClosed as exc:
                raise QueryUnavailable(f"the database cannot be read right now: {exc}") from None
        except QueryError as exc:
            self._count(exc.kind)
            raise
        self._count("ok")
        return result

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.counts[outcome] = self.counts.get(outcome, 0) + 1
