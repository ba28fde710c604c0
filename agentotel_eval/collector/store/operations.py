"""Writes other than span/log ingest, applied by the writer's operations queue in their own transactions.

Each is an ``Operation`` (the protocol below: what the operations queue needs of it; ``BaseOperation`` has
its defaults).

``ReplaceRuns`` writes the agent runs and tool calls reconstructed from completed traces; for traces that may
already have rows (a late span re-opened them) it first deletes those rows, so a run is replaced, never
duplicated. The delete is bounded by the traces' time window: every row of a trace (a run's start, a call's
start) lies inside the span times of that trace, so DuckDB can skip all other row groups by their statistics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from agentotel_eval.collector.process.completed import SpanUpdate
from agentotel_eval.store import schema
from agentotel_eval.store.rows import json_array, safe_text, to_microseconds
from agentotel_eval.store.schema import OWN_SOURCE

if (
    TYPE_CHECKING
):  # the operations run in the collector's process only; their classes travel from the assembler's
    import duckdb

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


class Operation(Protocol):
    """A write other than ingest (agent runs and scores, retention, judge answers), as the writer's operations
    queue (``collector.store.operation_queue``) applies it: ``apply`` inside a transaction, then
    ``committed()`` once that transaction committed, or ``failed(exc)`` once it was rolled back for good."""

    @property
    def name(self) -> str:
        """What kind of write it is, in the writer's stats."""
        ...

    @property
    def rows(self) -> int:
        """Rows it holds until it is applied: counted against the write queue's bound."""
        ...

    @property
    def parts(self) -> int:
        """How many operations it stands for in the stats (more than one once merged)."""
        ...

    def apply(self, con: duckdb.DuckDBPyConnection) -> None: ...

    def committed(self) -> None: ...

    def failed(self, error: Exception) -> None: ...


class BaseOperation:
    """``Operation``'s defaults: one operation of one row, whose outcome nobody waits for."""

    name: str

    @property
    def rows(self) -> int:
        return 1

    @property
    def parts(self) -> int:
        return 1

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        raise NotImplementedError

    def committed(self) -> None:
        """Its transaction committed."""

    def failed(self, error: Exception) -> None:
        """It was rolled back and will not be tried again."""


def _insert(con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], data: pa.Table) -> None:
    import duckdb

    if data is None or not data.num_rows:
        return
    view = f"_op_{table}"
    con.register(view, to_microseconds(data))
    try:
        cols = ", ".join(columns)
        con.execute(
            f"INSERT INTO {table} ({cols}, committed_at) SELECT {cols}, "
            f"coalesce(getvariable('{schema.COMMIT_STAMP_VARIABLE}'), now()) FROM {view}"
        )
    finally:
        with contextlib.suppress(duckdb.Error):  # inside a failed transaction only the first error matters
            con.unregister(view)


class ReplaceRuns(BaseOperation):
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
        span_values: pa.Table | None = None,
        keep_metrics: Sequence[str] = (),
        on_failed: Callable[[Exception], None] | None = None,
    ) -> None:
        self.runs = runs
        self.calls = calls
        self.replace = tuple(replace)
        self.evaluations = evaluations
        self.on_applied = on_applied
        self.span_updates = tuple(span_updates)
        #: whole new attributes and events of stored spans (``span_values_table``), set as they are
        self.span_values = span_values
        #: metrics whose rows of the replaced traces stay (a re-score that does not ask the judge again)
        self.keep_metrics = tuple(keep_metrics)
        self.on_failed = on_failed

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        import duckdb

        if self.replace:
            lo = ns_to_datetime(min(w.lo_ns for w in self.replace))
            hi = ns_to_datetime(max(w.hi_ns for w in self.replace), ceil=True)
            ids = pa.table({"trace_id": pa.array(sorted({w.trace_id for w in self.replace}), pa.string())})
            con.register("_replace_ids", ids)
            try:
                for table in (schema.AGENT_RUNS, schema.TOOL_CALLS):
                    con.execute(
                        # a run or call whose span had no start time is stored without one
                        f"DELETE FROM {table} WHERE (start_time BETWEEN $lo AND $hi OR start_time IS NULL) "
                        "AND trace_id IN (SELECT trace_id FROM _replace_ids)",
                        {"lo": lo, "hi": hi},
                    )
                # A re-built trace is re-scored: its earlier evaluations give way to the new rows — ours, and
                # other tools' scores carried on its spans (re-read with them). Scores that came as log
                # records were stored at ingest and stay.
                kept = (
                    f"AND metric NOT IN ({', '.join('?' for _ in self.keep_metrics)}) "
                    if self.keep_metrics
                    else ""
                )
                con.execute(
                    f"DELETE FROM {schema.EVALUATIONS} WHERE trace_id IN (SELECT trace_id FROM _replace_ids) "
                    f"AND (source = '{OWN_SOURCE}' OR (details->>'origin') = 'span_event') {kept}",
                    list(self.keep_metrics),
                )
            finally:
                with contextlib.suppress(duckdb.Error):
                    con.unregister("_replace_ids")
        _insert(con, schema.AGENT_RUNS, schema.AGENT_RUN_COLUMNS, self.runs)
        _insert(con, schema.TOOL_CALLS, schema.TOOL_CALL_COLUMNS, self.calls)
        if self.evaluations is not None:
            _insert(con, schema.EVALUATIONS, schema.EVALUATION_COLUMNS, self.evaluations)
        if self.span_values is not None and self.span_values.num_rows:
            set_span_values(con, self.span_values)
        update_spans(con, self.span_updates)

    def committed(self) -> None:
        if self.on_applied is not None:
            self.on_applied(self)

    def failed(self, error: Exception) -> None:
        """The writer gave up on this operation: nothing of it was written."""
        if self.on_failed is not None:
            self.on_failed(error)

    @property
    def rows(self) -> int:
        """Rows this operation writes (what it holds in memory until then, roughly)."""
        evaluations = self.evaluations.num_rows if self.evaluations is not None else 0
        values = self.span_values.num_rows if self.span_values is not None else 0
        return self.runs.num_rows + self.calls.num_rows + evaluations + values + len(self.span_updates)


class MergedReplaceRuns(ReplaceRuns):
    """Several ``ReplaceRuns`` that replace nothing, as one: one statement per table instead of one per
    operation (each statement costs DuckDB a few milliseconds whatever its size, and the writer applies a
    batch of runs every few tens of milliseconds). Each part still hears ``committed()``."""

    def __init__(self, parts: Sequence[ReplaceRuns]) -> None:
        if any(p.replace for p in parts):
            raise ValueError("operations that replace rows keep their own statements (their order matters)")
        evaluations = [p.evaluations for p in parts if p.evaluations is not None and p.evaluations.num_rows]
        values = [p.span_values for p in parts if p.span_values is not None and p.span_values.num_rows]
        super().__init__(
            pa.concat_tables([p.runs for p in parts]),
            pa.concat_tables([p.calls for p in parts]),
            evaluations=pa.concat_tables(evaluations) if evaluations else None,
            span_updates=[u for p in parts for u in p.span_updates],
            span_values=pa.concat_tables(values) if values else None,
        )
        self._parts = tuple(parts)

    def committed(self) -> None:
        for part in self._parts:
            part.committed()

    @property
    def parts(self) -> int:
        return len(self._parts)


def merge_operations(ops: Sequence[Operation]) -> list[Operation]:
    """Consecutive ``ReplaceRuns`` that replace nothing become one ``MergedReplaceRuns``; order is kept, and
    any other operation (or one that replaces a trace's earlier rows) stands alone between them."""
    out: list[Operation] = []
    chain: list[ReplaceRuns] = []

    def close() -> None:
        if len(chain) > 1:
            out.append(MergedReplaceRuns(chain))
        else:
            out.extend(chain)
        chain.clear()

    for op in ops:
        if type(op) is ReplaceRuns and not op.replace:
            chain.append(op)
        else:
            close()
            out.append(op)
    close()
    return out


_SPAN_UPDATE_SCHEMA = pa.schema(
    [
        ("trace_id", pa.string()),
        ("span_id", pa.string()),
        ("patch", pa.string()),
        ("events", pa.string()),
        ("metrics", pa.list_(pa.string())),
    ]
)
_OURS = (
    "json_extract_string(x, '$.name') = 'gen_ai.evaluation.result' "
    "AND json_extract_string(x, '$.attributes.\"agentotel.eval.evaluator\"') IS NOT NULL "
    "AND list_contains(u.metrics, json_extract_string(x, '$.attributes.\"gen_ai.evaluation.name\"'))"
)


def split_span_updates(updates: Sequence[SpanUpdate]) -> tuple[list[SpanUpdate], list[SpanUpdate]]:
    """The score updates that carry whole new values (set as they are), and those applied as deltas."""
    whole: list[SpanUpdate] = []
    patches: list[SpanUpdate] = []
    for u in updates:
        (whole if u.attributes is not None and u.all_events is not None else patches).append(u)
    return whole, patches


def update_spans(con: duckdb.DuckDBPyConnection, updates: Sequence[SpanUpdate]) -> None:
    """Apply score updates to stored spans: whole values where known, deltas otherwise."""
    whole, patches = split_span_updates(updates)
    if whole:
        _set_spans(con, whole)
    _patch_spans(con, patches)


def _window(starts: Sequence[int | None]) -> tuple[str, dict[str, object]]:
    """The updated spans' start times bound the scan, so DuckDB skips the row groups outside them (no bound
    when one is unknown)."""
    known = [s for s in starts if s]
    if not starts or len(known) < len(starts):
        return "", {}
    return (
        f"{schema.SPANS}.start_time BETWEEN $lo AND $hi AND ",
        {"lo": ns_to_datetime(min(known)), "hi": ns_to_datetime(max(known), ceil=True)},
    )


SPAN_VALUES_SCHEMA = pa.schema(
    [
        ("trace_id", pa.string()),
        ("span_id", pa.string()),
        ("start_ns", pa.int64()),
        ("attributes", pa.json_()),
        ("events", pa.json_()),
    ]
)


def span_values_table(updates: Sequence[SpanUpdate]) -> pa.Table:
    """The whole-value updates (``attributes`` and ``all_events`` set) as a table for ``set_span_values``:
    built where the updates are made (the assembler process), so what crosses to the writer is
    Arrow, not objects."""
    # Strings that cannot be UTF-8 (lone surrogates) are replaced as the append path replaced them in the
    # stored span, so the whole value stays what the stored one would have become.
    return pa.table(
        {
            "trace_id": pa.array([u.trace_id for u in updates], pa.string()),
            "span_id": pa.array([u.span_id for u in updates], pa.string()),
            "start_ns": pa.array([u.start_ns for u in updates], pa.int64()),
            "attributes": json_array([u.attributes for u in updates]),
            "events": json_array([u.all_events for u in updates]),
        },
        schema=SPAN_VALUES_SCHEMA,
    )


def set_span_values(con: duckdb.DuckDBPyConnection, table: pa.Table) -> None:
    """Set stored spans' attributes and events to the values of a ``span_values_table``."""
    import duckdb

    window, params = _window(table.column("start_ns").to_pylist())
    con.register("_span_values", table)
    try:
        con.execute(
            f"UPDATE {schema.SPANS} SET attributes = u.attributes, events = u.events FROM _span_values u "
            f"WHERE {window}{schema.SPANS}.trace_id = u.trace_id AND {schema.SPANS}.span_id = u.span_id",
            params,
        )
    finally:
        with contextlib.suppress(duckdb.Error):
            con.unregister("_span_values")


def _set_spans(con: duckdb.DuckDBPyConnection, updates: Sequence[SpanUpdate]) -> None:
    set_span_values(con, span_values_table(updates))


def _patch_spans(con: duckdb.DuckDBPyConnection, updates: Sequence[SpanUpdate]) -> None:
    import duckdb

    if not updates:
        return
    window, params = _window([u.start_ns for u in updates])
    table = pa.Table.from_pylist(
        [
            {
                "trace_id": u.trace_id,
                "span_id": u.span_id,
                "patch": safe_text(u.attributes_patch),
                "events": safe_text(u.events),
                "metrics": list(u.metrics),
            }
            for u in updates
        ],
        schema=_SPAN_UPDATE_SCHEMA,
    )
    con.register("_span_updates", table)
    try:
        con.execute(
            f"UPDATE {schema.SPANS} SET "
            f"attributes = json_merge_patch(coalesce({schema.SPANS}.attributes, '{{}}'), CAST(u.patch AS "
            f"JSON)), events = to_json(list_concat("
            f"list_filter(coalesce(from_json({schema.SPANS}.events, '[\"JSON\"]'), []), lambda x: NOT "
            f"({_OURS})), from_json(u.events, '[\"JSON\"]'))) "
            f"FROM _span_updates u WHERE {window}"
            f"{schema.SPANS}.trace_id = u.trace_id AND {schema.SPANS}.span_id = u.span_id",
            params,
        )
    finally:
        with contextlib.suppress(duckdb.Error):
            con.unregister("_span_updates")


class InsertEvaluations(BaseOperation):
    """Evaluation rows that need no run (other tools' scores sent as log records); same key, replaced."""

    name = "insert_evaluations"

    def __init__(self, rows: pa.Table) -> None:
        self.table = rows

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:
        import duckdb

        con.register("_new_evaluations", to_microseconds(self.table))
        try:
            con.execute(
                f"DELETE FROM {schema.EVALUATIONS} e USING _new_evaluations n WHERE e.trace_id = n.trace_id "
                "AND e.run_span_id = n.run_span_id AND e.metric = n.metric "
                "AND coalesce(e.evaluator_version, '') = coalesce(n.evaluator_version, '')"
            )
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("_new_evaluations")
        _insert(con, schema.EVALUATIONS, schema.EVALUATION_COLUMNS, self.table)


class WriteEvaluation(BaseOperation):
    """The LLM judge's answer for a queued run: replaces its ``pending`` row and scores the stored run span.

    ``pending_created_at_ns`` names the queued row this answer belongs to. If that row is gone or was
    re-queued (the trace was re-built meanwhile and will be judged again), the answer is stale and nothing is
    written; ``applied`` says which happened.
    """

    name = "write_evaluation"

    def __init__(
        self,
        row: pa.Table,
        key: tuple[str, str, str, str],
        pending_created_at_ns: int | None,
        span_update: SpanUpdate | None = None,
        on_applied: Callable[[WriteEvaluation], None] | None = None,
        on_failed: Callable[[WriteEvaluation], None] | None = None,
    ) -> None:
        self.row = row
        self.key = key
        self.pending_created_at_ns = pending_created_at_ns
        self.span_update = span_update
        self.on_applied = on_applied
        self.on_failed = on_failed
        self.applied = False
        #: the stored run span's resource (when it was found), for what is sent downstream about this score
        self.span_resource: dict | None = None

    def apply(self, con: duckdb.DuckDBPyConnection) -> None:

        import json

        trace_id, run_span_id, metric, version = self.key
        where = "trace_id = $t AND run_span_id = $s AND metric = $m AND coalesce(evaluator_version, '') = $v"
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
        if self.span_update is not None:
            update_spans(con, [self.span_update])
            window = ""
            params = {"t": trace_id, "s": run_span_id}
            if self.span_update.start_ns:  # DuckDB keeps microseconds, rounded: the span's lies between these
                window = "start_time BETWEEN $lo AND $hi AND "
                params["lo"] = ns_to_datetime(self.span_update.start_ns)
                params["hi"] = ns_to_datetime(self.span_update.start_ns, ceil=True)
            stored = con.execute(
                f"SELECT resource_attributes FROM {schema.SPANS} WHERE {window}trace_id = $t AND span_id = "
                f"$s LIMIT 1",
                params,
            ).fetchall()
            if stored:
                self.span_resource = json.loads(stored[0][0]) if stored[0][0] else {}
        self.applied = True

    def committed(self) -> None:
        if self.on_applied is not None:
            self.on_applied(self)

    def failed(self, _error: Exception) -> None:
        """The writer gave up on it: the pending row stays, to be answered again."""
        if self.on_failed is not None:
            self.on_failed(self)


#: (table, time column) pairs retention prunes; each row goes by its own time.
RETENTION_COLUMNS: tuple[tuple[str, str], ...] = (
    (schema.SPANS, "start_time"),
    (schema.LOGS, "time"),
    (schema.AGENT_RUNS, "start_time"),
    (schema.TOOL_CALLS, "start_time"),
    (schema.EVALUATIONS, "created_at"),
)


class DeleteOlderThan(BaseOperation):
    """Retention: delete every row older than ``cutoff``; ``deleted`` holds the counts
    per table afterwards."""

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
