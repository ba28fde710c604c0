"""Writes other than span/log ingest, applied by the writer thread in their own transactions.

``ReplaceRuns`` writes the agent runs and tool calls reconstructed from completed traces; for traces that may
already have rows (a late span re-opened them) it first deletes those rows, so a run is replaced, never
duplicated. The delete is bounded by the traces' time window: every row of a trace (a run's start, a call's start)
lies inside the span times of that trace, so DuckDB can skip all other row groups by their statistics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import duckdb
import pyarrow as pa

from agentotel_eval.store import schema

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ns_to_datetime(ns: int, *, ceil: bool = False) -> datetime:
    """A UTC datetime at microsecond precision (DuckDB's TIMESTAMPTZ), rounded down, or up with ``ceil``."""
    micros = -((-ns) // 1000) if ceil else ns // 1000
    return _EPOCH + timedelta(microseconds=micros)


@dataclass(frozen=True, slots=True)
class TraceWindow:
    """A trace whose earlier rows must go, and the time range all of its rows lie in."""

    trace_id: str
    lo_ns: int
    hi_ns: int


def _insert(con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], data: pa.Table) -> None:
    if data is None or not data.num_rows:
        return
    view = f"_op_{table}"
    con.register(view, data)
    try:
        cols = ", ".join(columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {view}")
    finally:
        with contextlib.suppress(duckdb.Error):  # inside a failed transaction only the first error matters
            con.unregister(view)


class ReplaceRuns:
    """Insert agent_runs / tool_calls (and evaluations) rows, replacing earlier rows of the given traces."""

    name = "replace_runs"

    def __init__(
        self,
        runs: pa.Table,
        calls: pa.Table,
        replace: Sequence[TraceWindow] = (),
        evaluations: pa.Table | None = None,
        on_applied: Callable[[ReplaceRuns], None] | None = None,
    ) -> None:
        self.runs = runs
        self.calls = calls
        self.replace = tuple(replace)
        self.evaluations = evaluations
        self.on_applied = on_applied

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        if self.replace:
            lo = ns_to_datetime(min(w.lo_ns for w in self.replace))
            hi = ns_to_datetime(max(w.hi_ns for w in self.replace), ceil=True)
            ids = pa.table({"trace_id": pa.array(sorted({w.trace_id for w in self.replace}), pa.string())})
            con.register("_replace_ids", ids)
            try:
                for table in (schema.AGENT_RUNS, schema.TOOL_CALLS):
                    con.execute(
                        f"DELETE FROM {table} WHERE start_time BETWEEN $lo AND $hi "
                        "AND trace_id IN (SELECT trace_id FROM _replace_ids)",
                        {"lo": lo, "hi": hi},
                    )
            finally:
                with contextlib.suppress(duckdb.Error):
                    con.unregister("_replace_ids")
        _insert(con, schema.AGENT_RUNS, schema.AGENT_RUN_COLUMNS, self.runs)
        _insert(con, schema.TOOL_CALLS, schema.TOOL_CALL_COLUMNS, self.calls)
        if self.evaluations is not None:
            _insert(con, schema.EVALUATIONS, schema.EVALUATION_COLUMNS, self.evaluations)

    def committed(self) -> None:
        if self.on_applied is not None:
            self.on_applied(self)


#: (table, time column) pairs retention prunes; each row goes by its own time.
RETENTION_COLUMNS: tuple[tuple[str, str], ...] = (
    (schema.SPANS, "start_time"),
    (schema.LOGS, "time"),
    (schema.AGENT_RUNS, "start_time"),
    (schema.TOOL_CALLS, "start_time"),
    (schema.EVALUATIONS, "created_at"),
)


class DeleteOlderThan:
    """Retention: delete every row older than ``cutoff``; ``deleted`` holds the counts per table afterwards."""

    name = "retention"

    def __init__(self, cutoff: datetime, on_applied: Callable[[dict[str, int]], None] | None = None) -> None:
        self.cutoff = cutoff
        self.deleted: dict[str, int] = {}
        self.on_applied = on_applied

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        for table, column in RETENTION_COLUMNS:
            rows = con.execute(f"DELETE FROM {table} WHERE {column} < ?", [self.cutoff]).fetchall()
            self.deleted[table] = int(rows[0][0]) if rows else 0

    def committed(self) -> None:
        if self.on_applied is not None:
            self.on_applied(self.deleted)
