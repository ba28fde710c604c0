"""The LLM judge queue: ``pending`` evaluation rows in DuckDB, answered in the background.

The scoring stage writes a ``pending`` ``tool_errors`` row (with the run's test case in ``details``) in the
same transaction as the run. This worker takes pending rows from the database itself — the table is the queue
— so nothing is lost when the collector stops or crashes: pending rows are simply taken again at the next
start. It runs ``ToolsErrorMetric`` with bounded concurrency on its own event loop, honours the daily budget
(rows over it become ``skipped`` with the reason), writes provider failures as ``error`` rows with the
message, and replaces each pending row with the answer in one transaction that also scores the stored run
span. With forwarding on, each answer goes downstream as a ``gen_ai.evaluation <metric>`` child span of the
run span and a ``gen_ai.evaluation.result`` log record.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agentotel_eval.collector.config_scoring import JudgeSettings
from agentotel_eval.collector.score.judge_policy import over_budget
from agentotel_eval.collector.score.stage import result_row
from agentotel_eval.collector.store.operations import SpanUpdate, WriteEvaluation
from agentotel_eval.collector.store.writer import StoreWriter
from agentotel_eval.metrics.base import MetricResult
from agentotel_eval.metrics.registry import TOOL_ERRORS
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.redaction import Redactor
from agentotel_eval.retry import RetryPolicy
from agentotel_eval.scores import evaluation_events, evaluation_log, evaluation_span, score_patch
from agentotel_eval.store import schema
from agentotel_eval.store.rows import OWN_SOURCE, EvaluationRow, evaluations_to_arrow, events_json, to_json
from agentotel_eval.test_case import EvalTestCase

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Job:
    """One pending row."""

    trace_id: str
    run_span_id: str
    metric: str
    evaluator_version: str
    details: Any
    created_at_ns: int

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.trace_id, self.run_span_id, self.metric, self.evaluator_version)


@dataclass
class JudgeQueueStats:
    judged: int = 0
    errors: int = 0
    skipped_budget: int = 0
    stale: int = 0
    in_flight: int = 0
    pending_seen: int = 0
    cost_usd_today: float = 0.0
    cost_usd_total: float = 0.0
    by_status: dict[str, int] = field(default_factory=dict)


def build_metric(settings: JudgeSettings) -> Any:
    """The judge metric the settings describe (litellm is imported on its first call, not here)."""
    kwargs = dict(settings.llm_kwargs)
    kwargs.setdefault("timeout", settings.timeout_s)
    return TOOL_ERRORS.build(
        settings.threshold,
        model=settings.model,
        error_types=list(settings.error_types) if settings.error_types else None,
        max_concurrency=settings.max_concurrency,
        retry=RetryPolicy(max_attempts=settings.max_retries + 1),
        cache=settings.cache_dir or None,
        **kwargs,
    )


def _forget(
    in_flight: dict[tuple[str, str, str, str], asyncio.Task[None]],
    key: tuple[str, str, str, str],
    wake: asyncio.Event | None,
    _task: asyncio.Task[None],
) -> None:
    """A judge task's done callback: it is no longer in flight, and its slot can take the next row now."""
    in_flight.pop(key, None)
    if wake is not None:
        wake.set()


def _utc_day(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%Y-%m-%d")


class JudgeWorker:
    """Takes pending judge rows from the database and answers them (see the module docstring)."""

    def __init__(
        self,
        settings: JudgeSettings,
        writer: StoreWriter,
        cursor: Callable[[], AbstractContextManager[Any]],
        *,
        metric: Any = None,
        forward_spans: Callable[[Sequence[SpanRecord]], None] | None = None,
        forward_logs: Callable[[Sequence[LogRecord]], None] | None = None,
        wall_clock: Callable[[], int] = time.time_ns,
        poll_interval: float = 2.0,
        redactor: Redactor | None = None,
        on_written: Callable[[WriteEvaluation], None] | None = None,
    ) -> None:
        self.settings = settings
        self._writer = writer
        self._cursor = cursor
        self._metric = metric
        self._forward_spans = forward_spans
        self._forward_logs = forward_logs
        self._now = wall_clock
        self._poll = poll_interval
        #: applied to each queued test case before the judge's prompt is built from it
        self._redactor = redactor
        #: hears each answer the writer applied (the score sinks send it on)
        self._on_written = on_written
        self.stats = JudgeQueueStats()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._started = threading.Event()
        self._day = ""
        self._lock = threading.Lock()
        #: answered rows whose answer the writer has not applied yet: still ``pending`` in the table, and not
        #: to be taken (and paid for) again meanwhile; (key, the pending row's created_at)
        self._unwritten: set[tuple[tuple[str, str, str, str], int]] = set()
        #: rows whose answer was applied lately (a read that began before that commit still finds them
        #: pending), with when, kept for a minute
        self._applied_lately: dict[tuple[tuple[str, str, str, str], int], float] = {}

    # ---- lifecycle ----------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        if self._metric is None:
            self._metric = build_metric(self.settings)
        self._thread = threading.Thread(target=self._run, name="agentotel-judge", daemon=True)
        self._thread.start()
        self._started.wait(10)

    def wake(self, *_: Any) -> None:
        """New pending rows were committed: look now instead of at the next poll."""
        loop, event = self._loop, self._wake
        if loop is not None and event is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed between the check and the call
                loop.call_soon_threadsafe(event.set)

    def shutdown(self, grace: float = 5.0) -> None:
        """Stop taking rows; answers in flight get ``grace`` seconds, the rest stay pending
        for the next start."""
        if self._thread is None or self._stopping:
            return
        self._stopping = True
        self._grace = grace
        self.wake()
        self._thread.join(grace + 5.0)

    # ---- the loop -----------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(
                self._main()
            )  # also cancels what litellm left running on the loop (its logging worker)
        except Exception:
            log.exception("the judge worker stopped on an error")
        finally:
            self._loop = None
            self._started.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._load_spent_today()
        self._started.set()
        in_flight: dict[tuple[str, str, str, str], asyncio.Task[None]] = {}
        limit = asyncio.Semaphore(self.settings.max_concurrency)
        room = self.settings.max_concurrency * 2  # a few taken ahead, so the LLM is never idle between rows
        while not self._stopping:
            self._wake.clear()  # before reading: a row or slot freed while it reads wakes the next round
            free = room - len(in_flight)
            if free > 0:
                try:
                    jobs = await asyncio.to_thread(self._fetch, free + len(in_flight) + len(self._unwritten))
                except Exception:
                    log.exception("reading pending judge rows failed; retrying")
                    jobs = []
                for job in jobs:
                    if job.key in in_flight or self._answered(job) or len(in_flight) >= room:
                        continue
                    task = asyncio.create_task(self._answer(job, limit))
                    in_flight[job.key] = task
                    task.add_done_callback(functools.partial(_forget, in_flight, job.key, self._wake))
            self.stats.in_flight = len(in_flight)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll)
        if in_flight:
            _done, rest = await asyncio.wait(list(in_flight.values()), timeout=self._grace)
            for task in rest:
                task.cancel()
            if rest:
                await asyncio.gather(*rest, return_exceptions=True)
                log.info("judge: %d answers in flight were left pending for the next start", len(rest))

    def _fetch(self, n: int) -> list[Job]:
        with self._cursor() as cursor:
            rows = cursor.execute(
                f"SELECT trace_id, run_span_id, metric, coalesce(evaluator_version, ''), details, "
                f"epoch_ns(created_at) FROM {schema.EVALUATIONS} WHERE status = 'pending' AND metric = ? AND "
                f"source = ? ORDER BY created_at LIMIT ?",
                [TOOL_ERRORS.name, OWN_SOURCE, n],
            ).fetchall()
            pending = cursor.execute(
                f"SELECT count(*) FROM {schema.EVALUATIONS} WHERE status = 'pending' AND "
                f"metric = ? AND source = ?",
                [TOOL_ERRORS.name, OWN_SOURCE],
            ).fetchall()[0][0]
        self.stats.pending_seen = int(pending)
        return [Job(r[0], r[1], r[2], r[3], json.loads(r[4]) if r[4] else None, int(r[5])) for r in rows]

    # ---- budget -------------------------------------------------------------------------------------------

    def _load_spent_today(self) -> None:
        now = self._now()
        self._day = _utc_day(now)
        with self._cursor() as cursor:
            spent = cursor.execute(
                f"SELECT coalesce(sum(cost_usd), 0) FROM {schema.EVALUATIONS} WHERE metric = ? AND source = "
                f"? AND created_at >= CAST(date_trunc('day', CAST(? AS TIMESTAMPTZ)) AS TIMESTAMPTZ)",
                [TOOL_ERRORS.name, OWN_SOURCE, datetime.fromtimestamp(now / 1e9, UTC)],
            ).fetchall()[0][0]
        self.stats.cost_usd_today = float(spent or 0.0)

    def _spent_today(self) -> float:
        with self._lock:
            day = _utc_day(self._now())
            if day != self._day:
                self._day, self.stats.cost_usd_today = day, 0.0
            return self.stats.cost_usd_today

    def _add_cost(self, cost: float | None) -> None:
        if not cost:
            return
        with self._lock:
            self.stats.cost_usd_today += cost
            self.stats.cost_usd_total += cost

    # ---- one row ------------------------------------------------------------------------------------------

    async def _answer(self, job: Job, limit: asyncio.Semaphore) -> None:
        async with limit:
            if self._stopping:
                return
            now = self._now()
            reason = over_budget(self._spent_today(), self.settings)
            result: MetricResult | None = None
            if reason is not None:
                row = self._row(job, now, status="skipped", reason=reason)
                self.stats.skipped_budget += 1
            else:
                try:
                    case_data = job.details["test_case"]
                    if self._redactor is not None:
                        case_data = self._redactor.value(case_data)
                    case = EvalTestCase.from_dict(case_data)
                except (KeyError, TypeError, ValueError) as exc:
                    row = self._row(
                        job, now, status="error", reason=f"the queued test case is unreadable: {exc}"
                    )
                else:
                    started = time.perf_counter()
                    try:
                        result = await self._metric.a_measure(case)
                    except Exception as exc:  # the metric reports provider failures itself; this is a bug
                        result = MetricResult(
                            TOOL_ERRORS.name,
                            None,
                            None,
                            f"{type(exc).__name__}: {exc}",
                            self.settings.threshold,
                            status="error",
                            error=f"{type(exc).__name__}: {exc}",
                            model=self.settings.model,
                            evaluator=ToolsErrorMetric.__name__,
                        )
                    result = result.with_latency(time.perf_counter() - started)
                    self._add_cost(result.cost_usd)
                    now = self._now()
                    # the row keeps the queued row's key (its evaluator version), whatever this process runs
                    row = dataclasses.replace(
                        result_row(job.trace_id, job.run_span_id, result, now),
                        model=result.model or self.settings.model,
                        evaluator_version=job.evaluator_version or None,
                    )
            self.stats.by_status[row.status] = self.stats.by_status.get(row.status, 0) + 1
            if row.status == "error":
                self.stats.errors += 1
            elif row.status == "ok":
                self.stats.judged += 1
            update = None
            if result is not None and result.status in ("ok", "error"):
                start = job.details.get("run_start_ns") if isinstance(job.details, dict) else None
                update = SpanUpdate(
                    job.trace_id,
                    job.run_span_id,
                    start or None,
                    to_json(score_patch([result])),
                    events_json(evaluation_events([result], now)),
                    (result.metric,),
                )
            with self._lock:
                self._unwritten.add((job.key, job.created_at_ns))
            self._writer.submit_operation(
                WriteEvaluation(
                    evaluations_to_arrow([row]),
                    job.key,
                    job.created_at_ns,
                    span_update=update,
                    on_applied=functools.partial(self._written, result=result, now=now),
                    on_failed=self._not_written,
                )
            )

    def _row(self, job: Job, now: int, *, status: str, reason: str) -> EvaluationRow:
        return EvaluationRow(
            trace_id=job.trace_id,
            run_span_id=job.run_span_id,
            metric=job.metric,
            threshold=self.settings.threshold,
            reason=reason,
            status=status,
            model=self.settings.model,
            created_at_ns=now,
            evaluator=ToolsErrorMetric.__name__,
            evaluator_version=job.evaluator_version or None,
            updated_at_ns=now,
        )

    def _answered(self, job: Job) -> bool:
        """Whether this pending row was answered already (its answer on its way to the
        table, or just written)."""
        row = (job.key, job.created_at_ns)
        with self._lock:
            return row in self._unwritten or row in self._applied_lately

    def _not_written(self, op: WriteEvaluation) -> None:
        """The writer gave up on an answer: its row is pending, to be answered again."""
        with self._lock:
            self._unwritten.discard((op.key, op.pending_created_at_ns or 0))
        self.wake()

    def _written(self, op: WriteEvaluation, result: MetricResult | None, now: int) -> None:
        row = (op.key, op.pending_created_at_ns or 0)
        with self._lock:  # applied or stale, the row no longer waits for this answer
            self._unwritten.discard(row)
            now_s = time.monotonic()
            self._applied_lately[row] = now_s
            while self._applied_lately:  # kept in the order written: the oldest first
                oldest = next(iter(self._applied_lately))
                if self._applied_lately[oldest] >= now_s - 60.0:
                    break
                del self._applied_lately[oldest]
        self.wake()
        if not op.applied:
            self.stats.stale += 1  # the run was re-queued meanwhile: its new row will be answered instead
            return
        if self._on_written is not None:
            self._on_written(op)
        if result is None or result.status not in ("ok", "error"):
            return
        trace_id, run_span_id = op.key[0], op.key[1]
        resource = op.span_resource or {}
        if self._forward_spans is not None:
            run_span = SpanRecord(trace_id, run_span_id, None, "", resource=resource)
            start = now - int((result.latency_s or 0) * 1e9)
            self._forward_spans([evaluation_span(run_span, result, start, now)])
        if self._forward_logs is not None:
            self._forward_logs([evaluation_log(trace_id, run_span_id, result, now, resource)])
