"""The after-commit path of evaluations: the writer's callbacks hand over Arrow tables and return at once; a
thread of the feed turns them into ``SinkEvaluation`` records, counts them for ``/metrics`` and
gives them to each sink.

A run's service and agent come with its rows when the run is written; the judge's answer, written later, finds
them in a bounded memory of recent runs, else in ``agent_runs`` (``lookup``). The hand-over queue is bounded
too: if the feed falls that far behind, the oldest batch is dropped and counted, and ingest
never waits for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from agentotel_eval.collector.sink.records import (
    SENT_STATUSES,
    WITH_FINDINGS,
    RunIdentity,
    SinkEvaluation,
    run_identities,
    sink_evaluations,
    sure_error_types,
)
from agentotel_eval.collector.sink.worker import WARN_EVERY_S
from agentotel_eval.collector.telemetry.quality import QualityCounts
from agentotel_eval.store.rows import OWN_SOURCE

log = logging.getLogger(__name__)

_EVALUATION_COLUMNS = (
    "trace_id",
    "run_span_id",
    "metric",
    "score",
    "threshold",
    "success",
    "reason",
    "details",
    "status",
    "model",
    "created_at",
    "evaluator",
    "evaluator_version",
    "source",
)
_RUN_COLUMNS = ("trace_id", "span_id", "service_name", "agent_name", "start_time")

Lookup = Callable[[Sequence[tuple[str, str]]], Mapping[tuple[str, str], RunIdentity]]


@dataclass(frozen=True, slots=True)
class Committed:
    """Rows one write committed: evaluations, and the runs written with them (None for the judge's answer)."""

    evaluations: pa.Table
    runs: pa.Table | None = None
    #: counted in ``/metrics``; a re-score of stored runs is sent to the sinks but not counted again
    live: bool = True


@dataclass
class FeedStats:
    batches: int = 0
    evaluations: int = 0
    dropped_batches: int = 0
    errors: int = 0


def _rows(table: pa.Table, columns: Sequence[str]) -> list[dict[str, Any]]:
    """The columns' values as dicts, times as nanoseconds since the epoch (Python's datetime
    has no nanoseconds)."""
    table = table.select([c for c in columns if c in table.column_names])
    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.timestamp("ns")).cast(pa.int64()))
    return table.to_pylist()


def sendable_rows(table: pa.Table) -> list[dict[str, Any]]:
    """This collector's ok / error rows of an ``evaluations`` table, as dicts with the details parsed."""
    keep = pc.and_(
        pc.is_in(table.column("status"), pa.array(sorted(SENT_STATUSES))),
        pc.equal(table.column("source"), OWN_SOURCE),
    )
    rows = _rows(table.filter(pc.fill_null(keep, False)), _EVALUATION_COLUMNS)
    for row in rows:
        details = row.get("details")
        if row.get("metric") not in WITH_FINDINGS:  # nothing of theirs is sent: not parsed (they can be long)
            row["details"] = None
        elif isinstance(details, str | bytes) and details:
            try:
                row["details"] = orjson.loads(details)
            except orjson.JSONDecodeError:
                row["details"] = None
    return rows


class EvaluationFeed:
    def __init__(
        self,
        sinks: Sequence[Callable[[Sequence[SinkEvaluation]], None]],
        quality: QualityCounts,
        *,
        lookup: Lookup | None = None,
        max_batches: int = 10_000,
        remembered_runs: int = 100_000,
    ) -> None:
        self._sinks = tuple(sinks)
        self._quality = quality
        self._lookup = lookup
        self._max_batches = max_batches
        self._remembered = remembered_runs
        self._runs: OrderedDict[tuple[str, str], RunIdentity] = OrderedDict()
        self._queue: deque[Committed] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._last_warning = -WARN_EVERY_S
        self.stats = FeedStats()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="agentotel-evaluation-feed", daemon=True)
            self._thread.start()

    def put(self, committed: Committed) -> None:
        """Called on the writer's thread after a commit: queue and return."""
        if not committed.evaluations.num_rows:
            return
        with self._cond:
            self._queue.append(committed)
            if len(self._queue) > self._max_batches:
                self._queue.popleft()
                self.stats.dropped_batches += 1
                now = time.monotonic()
                if now - self._last_warning >= WARN_EVERY_S:  # one line per interval, not one per batch
                    self._last_warning = now
                    log.warning(
                        "the evaluation feed fell %d batches behind and drops the oldest (%d dropped so "
                        "far): the sinks and /metrics miss them",
                        self._max_batches,
                        self.stats.dropped_batches,
                    )
            self._cond.notify()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Take what was handed over, then stop (the sinks' own shutdown sends it)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return
                item = self._queue.popleft()
            try:
                self.process(item)
            except Exception:
                self.stats.errors += 1
                log.exception("the evaluation feed could not process a batch; it is skipped")

    def process(self, item: Committed) -> list[SinkEvaluation]:
        """Count one committed batch and hand it to the sinks (on the feed's thread;
        tests call it directly)."""
        if item.runs is not None and item.runs.num_rows:
            self._remember(run_identities(_rows(item.runs, _RUN_COLUMNS)))
        rows = sendable_rows(item.evaluations)
        evaluations = sink_evaluations(
            rows, self._identities({(r["trace_id"], r["run_span_id"]) for r in rows})
        )
        self.stats.batches += 1
        self.stats.evaluations += len(evaluations)
        if item.live:
            for e in evaluations:
                self._quality.count(e.run.service, e.run.agent, e.metric, e.label, sure_error_types(e))
        for submit in self._sinks:
            submit(evaluations)
        return evaluations

    def _remember(self, runs: Mapping[tuple[str, str], RunIdentity]) -> None:
        for key, identity in runs.items():
            self._runs[key] = identity
            self._runs.move_to_end(key)
        while len(self._runs) > self._remembered:
            self._runs.popitem(last=False)

    def _identities(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], RunIdentity]:
        found = {k: self._runs[k] for k in keys if k in self._runs}
        missing = [k for k in keys if k not in found]
        if missing and self._lookup is not None:
            try:
                looked_up = dict(self._lookup(missing))
            except Exception:
                log.warning(
                    "could not read the runs of %d evaluations; they are sent without agent and service",
                    len(missing),
                    exc_info=True,
                )
                looked_up = {}
            self._remember(looked_up)
            found.update(looked_up)
        return found


def stored_runs(cursor: Callable[[], Any]) -> Lookup:
    """A ``Lookup`` reading ``agent_runs`` through ``cursor`` (the service's cursor factory,
    a context manager)."""

    def lookup(keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], RunIdentity]:
        traces = sorted({trace for trace, _span in keys})
        wanted = set(keys)
        with cursor() as cur:
            rows = cur.execute(
                f"SELECT {', '.join(_RUN_COLUMNS)} FROM agent_runs WHERE trace_id IN "
                f"({', '.join('?' for _ in traces)})",
                traces,
            ).fetchall()
        found = run_identities(
            [dict(zip(_RUN_COLUMNS, (*row[:-1], _epoch_ns(row[-1])), strict=True)) for row in rows]
        )
        return {key: identity for key, identity in found.items() if key in wanted}

    return lookup


def _epoch_ns(value: Any) -> int:
    """A TIMESTAMPTZ as DuckDB hands it to Python (a datetime, microseconds) in nanoseconds; 0 for NULL."""
    return int(value.timestamp() * 1_000_000) * 1000 if value is not None else 0
