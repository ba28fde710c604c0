"""The last stage: completed traces -> agent_runs / tool_calls (/ evaluations) rows, queued to the writer.

Building the rows (``build_run_rows``) is pure and may happen in the assembler process; only
``RunWriter.submit`` touches the writer, in the collector's process.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from agentotel_eval.collector.process import wire
from agentotel_eval.collector.process.completed import CompletedTrace, SpanUpdate
from agentotel_eval.collector.process.messages import Rows
from agentotel_eval.collector.store.operations import (
    ReplaceRuns,
    TraceWindow,
    span_values_table,
    split_span_updates,
)
from agentotel_eval.store.rows import evaluations_to_arrow, runs_to_arrow

if TYPE_CHECKING:
    from agentotel_eval.collector.store.writer import StoreWriter

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunRows:
    """The rows of one batch of completed traces, written in one transaction: Arrow tables (and the rare span
    updates applied as a delta in SQL), which cross from the assembler process as frames (``wire``)."""

    runs: pa.Table
    calls: pa.Table
    replace: tuple[TraceWindow, ...]
    evaluations: pa.Table | None
    span_updates: tuple[SpanUpdate, ...]  # applied as a merge patch (a re-built trace)
    span_values: pa.Table | None = None  # whole new values (``operations.span_values_table``)

    def operation(
        self, on_applied: Callable[[ReplaceRuns], None] | None = None, keep_metrics: Sequence[str] = ()
    ) -> ReplaceRuns:
        """The writer's operation that applies these rows in one transaction
        (``ReplaceRuns.keep_metrics``)."""
        return ReplaceRuns(
            self.runs,
            self.calls,
            self.replace,
            self.evaluations,
            on_applied=on_applied,
            span_updates=self.span_updates,
            span_values=self.span_values,
            keep_metrics=keep_metrics,
        )


def build_run_rows(traces: Sequence[CompletedTrace], now_ns: int) -> RunRows | None:
    """The batch's rows, or None when it has nothing to write."""
    runs = [run for trace in traces for run in trace.runs]
    replace = tuple(TraceWindow(t.trace_id, t.lo_ns, t.hi_ns) for t in traces if t.replace)
    evaluations = [row for trace in traces for row in trace.evaluations]
    updates = [update for trace in traces for update in trace.span_updates]
    if not runs and not replace and not evaluations and not updates:
        return None
    whole, patches = split_span_updates(updates)
    rooted = [any(not span.parent_span_id for span in trace.spans) for trace in traces]
    run_rows, call_rows = runs_to_arrow(
        runs,
        now_ns,
        [r for trace, root in zip(traces, rooted, strict=True) for r in [root] * len(trace.runs)],
    )
    return RunRows(
        run_rows,
        call_rows,
        replace,
        evaluations_to_arrow(evaluations) if evaluations else None,
        tuple(patches),
        span_values_table(whole) if whole else None,
    )


def build_batches(traces: Sequence[CompletedTrace], now_ns: int) -> tuple[list[RunRows], int]:
    """Rows for the whole batch; if one odd trace breaks the conversion, the others still get theirs (built
    one by one). Returns the row batches and how many traces could not be converted."""
    try:
        rows = build_run_rows(traces, now_ns)
    except Exception:
        out: list[RunRows] = []
        errors = 0
        for trace in traces:
            try:
                one = build_run_rows([trace], now_ns)
            except Exception:
                errors += 1
                log.exception("could not convert the runs of trace %s to rows; skipped", trace.trace_id)
                continue
            if one is not None:
                out.append(one)
        return out, errors
    return ([rows] if rows is not None else []), 0


class RunWriter:
    """Turns each batch into one ``ReplaceRuns`` operation (one transaction for the whole batch)."""

    def __init__(
        self,
        writer: StoreWriter,
        *,
        wall_clock: Callable[[], int] = time.time_ns,
        on_committed: Callable[[ReplaceRuns], None] | None = None,
    ) -> None:
        self._writer = writer
        self._now = wall_clock
        self._on_committed = on_committed
        self.traces_written = 0
        self.runs_written = 0
        self.conversion_errors = 0

    def start(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def consume(self, traces: Sequence[CompletedTrace]) -> None:
        batches, errors = build_batches(traces, self._now())
        self.conversion_errors += errors
        for rows in batches:
            self.submit(rows)

    def submit(self, rows: RunRows) -> None:
        """Queue one batch's rows to the writer (rows built here or in the assembler process)."""
        self._writer.submit_operation(rows.operation(self._applied))

    def _applied(self, op: ReplaceRuns) -> None:
        self.runs_written += op.runs.num_rows
        self.traces_written += len({*op.runs.column("trace_id").to_pylist()})
        if self._on_committed is not None:
            self._on_committed(op)


def rows_message(rows: RunRows) -> tuple[Rows, list[Any]]:
    """A batch of run rows as a ``Rows`` message and its tables as ``ipc_frames``."""
    tables = [rows.runs, rows.calls]
    if rows.evaluations is not None:
        tables.append(rows.evaluations)
    if rows.span_values is not None:
        tables.append(rows.span_values)
    message = Rows(
        [wire.fields_of(w) for w in rows.replace],
        [wire.fields_of(u) for u in rows.span_updates],
        rows.evaluations is not None,
        rows.span_values is not None,
    )
    return message, wire.ipc_frames(*tables)


def rows_from(message: Rows, frames: Sequence[bytes]) -> RunRows:
    """The inverse of ``rows_message``."""
    tables = iter(wire.tables_from_frames(frames))
    runs, calls = next(tables), next(tables)
    evaluations = next(tables) if message.has_evaluations else None
    values = next(tables) if message.has_span_values else None
    return RunRows(
        runs,
        calls,
        tuple(TraceWindow(*w) for w in message.replace),
        evaluations,
        tuple(SpanUpdate(*u) for u in message.span_updates),
        values,
    )
