"""Read traces back from the database: for re-reconstruction after a late span, and for recovery at startup.

Every read is bounded by a time window so DuckDB skips row groups by their min/max statistics instead of
scanning the whole table (there is deliberately no index on ``trace_id``; see ``schema``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from agentotel_eval.collector.store.operations import ns_to_datetime
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.store.rows import (
    LOG_SELECT,
    SPAN_SELECT,
    SPAN_SELECT_ASSEMBLY,
    logs_from_arrow,
    spans_from_arrow,
)

if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True, slots=True)
class StoredTrace:
    spans: list[SpanRecord]
    logs: list[LogRecord]


class StoredTraceReader(Protocol):
    """What the assembler reads stored traces back through: a ``TraceReader`` in the collector's process, or
    ``agentotel_eval.collector.pipeline.worker.RemoteReader`` in the assembler's (which asks the
    collector's reader)."""

    def close(self) -> None: ...

    def load(
        self,
        trace_ids: Iterable[str],
        lo_ns: int,
        hi_ns: int,
        *,
        whole: bool = True,
        commits: Sequence[int] | None = None,
    ) -> dict[str, StoredTrace]: ...

    def latest_span_time(self) -> int | None: ...

    def recent_traces(self, since_ns: int) -> tuple[list[tuple[str, int, int]], set[str]]: ...


class TraceReader:
    """Reads with a cursor of its own for each read (DuckDB connections are per thread), from ``cursor``: a
    context manager (``Database.cursor``, which a reopen of the database waits for; a DuckDB connection's
    ``cursor`` works too, closed after the read)."""

    def __init__(self, cursor: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]]) -> None:
        self._cursor = cursor

    def close(self) -> None:
        """Nothing is held between reads."""

    def load(
        self,
        trace_ids: Iterable[str],
        lo_ns: int,
        hi_ns: int,
        *,
        whole: bool = True,
        commits: Sequence[int] | None = None,
    ) -> dict[str, StoredTrace]:
        """The given traces' records: those in the ``commits`` named (``ingested_at`` values, ns) when given,
        else spans starting (and log records timed) within [lo_ns, hi_ns]; ``whole=False`` leaves out the span
        fields only a forwarded copy needs (``SPAN_SELECT_ASSEMBLY``)."""
        ids = sorted(set(trace_ids))
        spans, logs = self.load_tables(ids, lo_ns, hi_ns, whole=whole, commits=commits)
        return group_by_trace(ids, spans_from_arrow(spans), logs_from_arrow(logs))

    def load_tables(
        self,
        trace_ids: Iterable[str],
        lo_ns: int,
        hi_ns: int,
        *,
        whole: bool = True,
        commits: Sequence[int] | None = None,
    ) -> tuple[pa.Table, pa.Table]:
        """``load``'s rows as Arrow tables (``SPAN_SELECT`` / ``LOG_SELECT`` columns, logs in time order):
        what the assembler process is sent, to convert on its side of the pipe."""
        ids = sorted(set(trace_ids))
        params: dict[str, object]
        if commits:
            # Rows are appended in commit order: DuckDB skips the others by their ingested_at statistics. (A
            # time window holds every span that started while these traces ran, of every trace then.)
            params = {f"c{i}": ns_to_datetime(c) for i, c in enumerate(commits)}
            listed = ", ".join(f"${name}" for name in params)
            span_where = log_where = f"ingested_at IN ({listed})"
        else:
            # Records sent with no time are stored at the epoch and looked up there apart: a window stretched
            # back to 1970 for them would scan every row group, where this probe skips all but the oldest by
            # their statistics.
            params = {
                "lo": ns_to_datetime(lo_ns),
                "hi": ns_to_datetime(hi_ns, ceil=True),
                "epoch": ns_to_datetime(0),
            }
            span_where = "(start_time BETWEEN $lo AND $hi OR start_time = $epoch)"
            log_where = "(time BETWEEN $lo AND $hi OR time = $epoch)"
        with self._cursor() as cur:
            cur.register("_load_ids", pa.table({"trace_id": pa.array(ids, pa.string())}))
            spans = cur.sql(
                f"SELECT {SPAN_SELECT if whole else SPAN_SELECT_ASSEMBLY} FROM spans "
                f"WHERE {span_where} AND trace_id IN (SELECT trace_id FROM _load_ids)",
                params=params,
            ).to_arrow_table()
            logs = cur.sql(
                f"SELECT {LOG_SELECT} FROM logs WHERE {log_where} "
                "AND trace_id IN (SELECT trace_id FROM _load_ids) ORDER BY time",
                params=params,
            ).to_arrow_table()
        return spans, logs

    def latest_span_time(self) -> int | None:
        """Start time (ns) of the most recently started stored span, or None for an empty database."""
        with self._cursor() as cur:
            row = cur.execute("SELECT max(start_time_unix_nano) FROM spans").fetchall()[0]
        return int(row[0]) if row and row[0] is not None else None

    def recent_traces(self, since_ns: int) -> tuple[list[tuple[str, int, int]], set[str]]:
        """Traces with spans started since ``since_ns``: (trace_id, lo_ns, hi_ns) each,
        and which have runs."""
        since = ns_to_datetime(since_ns)
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT trace_id, min(start_time_unix_nano), max(greatest(end_time_unix_nano, "
                "start_time_unix_nano)) FROM spans WHERE start_time >= $since GROUP BY trace_id",
                {"since": since},
            ).fetchall()
            with_runs = {
                r[0]
                for r in cur.execute(
                    "SELECT DISTINCT trace_id FROM agent_runs WHERE start_time >= $since", {"since": since}
                ).fetchall()
            }
        return [(r[0], int(r[1]), int(r[2])) for r in rows], with_runs


def group_by_trace(
    trace_ids: Iterable[str], spans: Iterable[SpanRecord], logs: Iterable[LogRecord]
) -> dict[str, StoredTrace]:
    """Records sorted into their traces (every id asked for is a key, with empty lists when
    nothing was stored)."""
    out: dict[str, StoredTrace] = {tid: StoredTrace([], []) for tid in trace_ids}
    for span in spans:
        trace = out.get(span.trace_id)
        if trace is not None:
            trace.spans.append(span)
    for record in logs:
        trace = out.get(record.trace_id) if record.trace_id is not None else None
        if trace is not None:
            trace.logs.append(record)
    return out
