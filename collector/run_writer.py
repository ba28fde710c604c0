"""The last stage: completed traces -> agent_runs / tool_calls (/ evaluations) rows, queued to the writer."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from agentotel_eval.store.operations import ReplaceRuns, TraceWindow
from agentotel_eval.store.rows import evaluations_to_arrow, runs_to_arrow
from agentotel_eval.store.writer import StoreWriter
from collector.pipeline import CompletedTrace

log = logging.getLogger(__name__)


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
        try:
            op = self._operation(traces)
        except Exception:  # one odd trace must not cost the others their rows: convert them one by one
            ops = []
            for trace in traces:
                try:
                    ops.append(self._operation([trace]))
                except Exception:
                    self.conversion_errors += 1
                    log.exception("could not convert the runs of trace %s to rows; skipped", trace.trace_id)
            for one in ops:
                if one is not None:
                    self._writer.submit_operation(one)
            return
        if op is not None:
            self._writer.submit_operation(op)

    def _operation(self, traces: Sequence[CompletedTrace]) -> ReplaceRuns | None:
        runs = [run for trace in traces for run in trace.runs]
        replace = [TraceWindow(t.trace_id, t.lo_ns, t.hi_ns) for t in traces if t.replace]
        evaluations = [row for trace in traces for row in trace.evaluations]
        span_updates = [update for trace in traces for update in trace.span_updates]
        if not runs and not replace and not evaluations and not span_updates:
            return None
        run_rows, call_rows = runs_to_arrow(runs, self._now())
        return ReplaceRuns(
            run_rows,
            call_rows,
            replace,
            evaluations_to_arrow(evaluations) if evaluations else None,
            on_applied=self._applied,
            span_updates=span_updates,
        )

    def _applied(self, op: ReplaceRuns) -> None:
        self.runs_written += op.runs.num_rows
        self.traces_written += len({*op.runs.column("trace_id").to_pylist()})
        if self._on_committed is not None:
            self._on_committed(op)
