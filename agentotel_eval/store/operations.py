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
from agentotel_eval.store.schema import OWN_SOURCE

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
        span_updates: Sequence[SpanUpdate] = (),
    ) -> None:
        self.runs = runs
        self.calls = calls
        self.replace = tuple(replace)
        self.evaluations = evaluations
        self.on_applied = on_applied
        self.span_updates = tuple(span_updates)

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
                # A re-built trace is re-scored: its earlier evaluations give way to the new rows — ours, and
                # other tools' scores carried on its spans (re-read with them). Scores that came as log records
                # were stored at ingest and stay.
                con.execute(
                    f"DELETE FROM {schema.EVALUATIONS} WHERE trace_id IN (SELECT trace_id FROM _replace_ids) "
                    f"AND (source = '{OWN_SOURCE}' OR details->>'origin' = 'span_event')"
                )
            finally:
                with contextlib.suppress(duckdb.Error):
                    con.unregister("_replace_ids")
        _insert(con, schema.AGENT_RUNS, schema.AGENT_RUN_COLUMNS, self.runs)
        _insert(con, schema.TOOL_CALLS, schema.TOOL_CALL_COLUMNS, self.calls)
        if self.evaluations is not None:
            _insert(con, schema.EVALUATIONS, schema.EVALUATION_COLUMNS, self.evaluations)
        update_spans(con, self.span_updates)

    def committed(self) -> None:
        if self.on_applied is not None:
            self.on_applied(self)


@dataclass(frozen=True, slots=True)
class SpanUpdate:
    """New ``attributes`` / ``events`` JSON for one stored span (the run span gains its scores)."""

    trace_id: str
    span_id: str
    start_ns: int
    attributes_json: str
    events_json: str


_SPAN_UPDATE_SCHEMA = pa.schema([
    ("trace_id", pa.string()), ("span_id", pa.string()), ("attributes", pa.string()), ("events", pa.string()),
])


def update_spans(con: duckdb.DuckDBPyConnection, updates: Sequence[SpanUpdate]) -> None:
    """Rewrite the attributes and events of stored spans; the start-time bounds let DuckDB skip row groups."""
    if not updates:
        return
    lo = ns_to_datetime(min(u.start_ns for u in updates))
    hi = ns_to_datetime(max(u.start_ns for u in updates), ceil=True)
    table = pa.Table.from_pylist(
        [{"trace_id": u.trace_id, "span_id": u.span_id, "attributes": u.attributes_json, "events": u.events_json}
         for u in updates],
        schema=_SPAN_UPDATE_SCHEMA,
    )
    con.register("_span_updates", table)
    try:
        con.execute(
            f"UPDATE {schema.SPANS} SET attributes = CAST(u.attributes AS JSON), events = CAST(u.events AS JSON) "
            f"FROM _span_updates u WHERE {schema.SPANS}.start_time BETWEEN $lo AND $hi "
            f"AND {schema.SPANS}.trace_id = u.trace_id AND {schema.SPANS}.span_id = u.span_id",
            {"lo": lo, "hi": hi},
        )
    finally:
        with contextlib.suppress(duckdb.Error):
            con.unregister("_span_updates")


class InsertEvaluations:
    """Evaluation rows that need no run (other tools' scores sent as log records); same key, replaced."""

    name = "insert_evaluations"

    def __init__(self, rows: pa.Table) -> None:
        self.rows = rows

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        con.register("_new_evaluations", self.rows)
        try:
            con.execute(
                f"DELETE FROM {schema.EVALUATIONS} e USING _new_evaluations n WHERE e.trace_id = n.trace_id "
                "AND e.run_span_id = n.run_span_id AND e.metric = n.metric "
                "AND coalesce(e.evaluator_version, '') = coalesce(n.evaluator_version, '')"
            )
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("_new_evaluations")
        _insert(con, schema.EVALUATIONS, schema.EVALUATION_COLUMNS, self.rows)


class WriteEvaluation:
    """The LLM judge's answer for a queued run: replaces its ``pending`` row and scores the stored run span.

    ``pending_created_at_ns`` names the queued row this answer belongs to. If that row is gone or was re-queued
    (the trace was re-built meanwhile and will be judged again), the answer is stale and nothing is written;
    ``applied`` says which happened. ``merge_span`` turns the stored run span's (attributes, events) into the new
    ones; it runs inside the transaction, on what is stored at that moment.
    """

    name = "write_evaluation"

    def __init__(
        self,
        row: pa.Table,
        key: tuple[str, str, str, str],
        pending_created_at_ns: int | None,
        merge_span: Callable[[dict, list], tuple[str, str]] | None = None,
        on_applied: Callable[[WriteEvaluation], None] | None = None,
    ) -> None:
        self.row = row
        self.key = key
        self.pending_created_at_ns = pending_created_at_ns
        self.merge_span = merge_span
        self.on_applied = on_applied
        self.applied = False
        #: the stored run span's resource (when it was found), for what is sent downstream about this score
        self.span_resource: dict | None = None

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        import json

        trace_id, run_span_id, metric, version = self.key
        where = ("trace_id = $t AND run_span_id = $s AND metric = $m AND coalesce(evaluator_version, '') = $v")
        params: dict[str, object] = {"t": trace_id, "s": run_span_id, "m": metric, "v": version}
        if self.pending_created_at_ns is not None:
            found = con.execute(
                f"SELECT count(*) FROM {schema.EVALUATIONS} WHERE {where} AND status = 'pending' "
                "AND created_at = $c",
                {**params, "c": ns_to_datetime(self.pending_created_at_ns)},
            ).fetchall()[0][0]
            if not found:
                return  # stale: the run was re-queued or removed since this job was taken
        con.execute(f"DELETE FROM {schema.EVALUATIONS} WHERE {where}", params)
        _insert(con, schema.EVALUATIONS, schema.EVALUATION_COLUMNS, self.row)
        if self.merge_span is not None:
            stored = con.execute(
                f"SELECT attributes, events, start_time_unix_nano, resource_attributes FROM {schema.SPANS} "
                "WHERE trace_id = $t AND span_id = $s LIMIT 1",
                {"t": trace_id, "s": run_span_id},
            ).fetchall()
            if stored:
                attributes, events, start_ns, resource = stored[0]
                self.span_resource = json.loads(resource) if resource else {}
                new_attributes, new_events = self.merge_span(
                    json.loads(attributes) if attributes else {}, json.loads(events) if events else []
                )
                update_spans(con, [SpanUpdate(trace_id, run_span_id, start_ns, new_attributes, new_events)])
        self.applied = True

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
