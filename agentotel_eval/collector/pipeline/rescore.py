"""Re-score stored runs with the current expectations and code, so a new rule or a fix applies to history.

Each selected trace is read back from ``spans`` and ``logs``, rebuilt with the current reconstruction and
scored by the same ``ScoringStage`` as a trace that arrives, then written as a re-built trace is: its runs,
calls and own evaluations are replaced in one transaction and its run spans' score attributes rewritten.
Scores no longer given (a run that lost its expectation) go, from the table and from the span. The judge's
verdicts stay unless it is asked again (``judge``): then each run is queued as ``pending`` and the
judge worker answers it.

``Rescorer`` is the same in both places it runs: inside the collector that holds the database (``POST
/v1/rescore``) and on the file when no collector does (``agentotel-eval rescore``). What it reads and writes
through is given to it.
"""

from __future__ import annotations

import functools
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentotel_eval.collector.assemble.assembler import LOG_ORDER, SPAN_ORDER
from agentotel_eval.collector.assemble.later_results import LaterResults, merge
from agentotel_eval.collector.config_scoring import ScoringConfig
from agentotel_eval.collector.process.completed import CompletedTrace
from agentotel_eval.collector.score.stage import DETERMINISTIC_METRICS, ScoringStage
from agentotel_eval.collector.store.operations import ReplaceRuns, ns_to_datetime
from agentotel_eval.collector.store.reader import StoredTraceReader, TraceReader
from agentotel_eval.collector.store.runs import build_run_rows
from agentotel_eval.metrics.registry import TOOL_ERRORS
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.declared import BUILTIN, Convention
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.store.schema import OWN_SOURCE

if TYPE_CHECKING:
    from agentotel_eval.collector.config import CollectorConfig

#: ``CompletedTrace.reason`` of a re-scored trace
REASON_RESCORE = "rescore"
#: traces read, rebuilt and written together (one transaction each)
BATCH_TRACES = 200

#: (sql, params) -> rows as dicts, through the sealed read-only query layer
Read = Callable[[str, Sequence[Any]], list[dict[str, Any]]]
#: applies one operation and returns once it is committed
Write = Callable[[ReplaceRuns], None]


class RescoreError(ValueError):
    """A re-score that cannot start (a bad condition, a judge asked for with none
    configured); for the user."""

    http_status = 400  # how ``POST /v1/rescore`` answers it


@dataclass(frozen=True, slots=True)
class RescoreRequest:
    since_ns: int | None = None  # runs started at or after this time; None: all
    where: str | None = None  # a condition on agent_runs' columns (alias r)
    judge: bool = False  # queue every re-scored run for the judge again
    dry_run: bool = False  # compute and report, write nothing
    shard: tuple[int, int] | None = None  # (k, n): only the k-th of n shares of the traces (``in_shard``)
    trace_ids: tuple[str, ...] | None = None  # only these traces (the lake's reconciler)


@dataclass(slots=True)
class MetricChange:
    """One metric's scores over the selected runs, before and after."""

    metric: str
    before_runs: int = 0
    before_passed: int = 0
    after_runs: int = 0
    after_passed: int = 0
    changed: int = 0  # runs scored both times, with another score or verdict
    now_failing: int = 0  # passed before, fail now
    now_passing: int = 0  # failed before, pass now
    added: int = 0  # scored now, not before
    removed: int = 0  # scored before, not now


@dataclass(slots=True)
class RescoreSummary:
    traces: int = 0
    runs_before: int = 0
    runs_after: int = 0
    #: runs (by span) whose called tools differ under the current reconstruction, or that appeared or went
    runs_rebuilt_differently: int = 0
    judge_queued: int = 0
    judge_kept: bool = True
    #: traces that could not be rebuilt (their stored rows are left as they were)
    errors: int = 0
    dry_run: bool = False
    seconds: float = 0.0
    config: str = ""
    metrics: dict[str, MetricChange] = field(default_factory=dict)

    def metric(self, name: str) -> MetricChange:
        change = self.metrics.get(name)
        if change is None:
            change = self.metrics[name] = MetricChange(name)
        return change

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["metrics"] = [asdict(m) for _, m in sorted(self.metrics.items())]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RescoreSummary:
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "metrics"}
        summary = cls(**fields)
        for m in data.get("metrics") or []:
            summary.metrics[m["metric"]] = MetricChange(**m)
        return summary


class RescoreBusy(RuntimeError):
    """Another re-score is running on this database."""

    http_status = 409


#: the body of ``POST /v1/rescore``: the request's fields and the config file to score with
#: (None: the collector's)
PAYLOAD_KEYS = ("since_ns", "where", "judge", "dry_run", "config", "shard")


def request_from_payload(payload: Any) -> tuple[RescoreRequest, str | None]:
    """A ``POST /v1/rescore`` body as a request and the config path it names;
    ``RescoreError`` when malformed."""
    if not isinstance(payload, dict):
        raise RescoreError("expected a JSON object")
    unknown = sorted(set(payload) - set(PAYLOAD_KEYS))
    if unknown:
        raise RescoreError(f"unknown key(s) {unknown}; allowed: {list(PAYLOAD_KEYS)}")
    since, where, config = payload.get("since_ns"), payload.get("where"), payload.get("config")
    if since is not None and (isinstance(since, bool) or not isinstance(since, int)):
        raise RescoreError("'since_ns' must be an integer (nanoseconds since the epoch)")
    if where is not None and not isinstance(where, str):
        raise RescoreError("'where' must be a string")
    if config is not None and not isinstance(config, str):
        raise RescoreError("'config' must be the path of a config file")
    flags = {k: payload.get(k, False) for k in ("judge", "dry_run")}
    if not all(isinstance(v, bool) for v in flags.values()):
        raise RescoreError("'judge' and 'dry_run' must be booleans")
    shard = payload.get("shard")
    if shard is not None:
        shard = parse_shard(shard)
    return RescoreRequest(since, where, flags["judge"], flags["dry_run"], shard), config


def parse_shard(value: Any) -> tuple[int, int]:
    """``"k/n"`` or ``[k, n]`` with 1 <= k <= n: the k-th of n shares; ``RescoreError`` otherwise."""
    parts = value.split("/") if isinstance(value, str) else value
    try:
        k, n = (int(p) for p in parts)
    except (TypeError, ValueError):
        raise RescoreError(f"a shard is k/n, e.g. 1/4 (got {value!r})") from None
    if not 1 <= k <= n:
        raise RescoreError(f"shard {k}/{n}: k must be between 1 and n")
    return k, n


def in_shard(trace_id: str, shard: tuple[int, int]) -> bool:
    """Whether a trace is in the k-th of n shares: by CRC32 of its id, the same on every worker and version,
    so n workers given 1/n .. n/n re-score every trace exactly once between them."""
    k, n = shard
    return zlib.crc32(trace_id.encode()) % n == k - 1


def sealed_read(cursor: Callable[[], AbstractContextManager[Any]], timeout: float = 600.0) -> Read:
    """Reads through the sealed query layer (a user's condition is part of the SQL), with no row limit."""
    from agentotel_eval.store.query import run_query

    def read(sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        with cursor() as cur:
            return run_query(cur, sql, row_limit=2**62, timeout=timeout, params=params).records()

    return read


def committed_by(submit: Callable[[ReplaceRuns], None], timeout: float = 600.0) -> Write:
    """A ``Write`` that queues each operation with ``submit`` (the collector's writer) and
    waits for its commit."""

    def write(op: ReplaceRuns) -> None:
        done = threading.Event()
        failure: list[Exception] = []

        def failed(exc: Exception) -> None:
            failure.append(exc)
            done.set()

        op.on_applied = lambda _op: done.set()
        op.on_failed = failed
        submit(op)
        if not done.wait(timeout):
            raise TimeoutError(f"a re-score write was not committed within {timeout:.0f}s")
        if failure:
            raise RuntimeError(f"a re-score write failed: {failure[0]}")

    return write


def _ids_clause(column: str, ids: Sequence[str]) -> str:
    return f"{column} IN ({', '.join('?' for _ in ids)})"


class _Collect:
    """The stage after scoring: keeps the scored traces for the caller."""

    def __init__(self) -> None:
        self.traces: list[CompletedTrace] = []

    def consume(self, traces: Sequence[CompletedTrace]) -> None:
        self.traces.extend(traces)

    def start(self) -> None:
        pass

    def shutdown(self) -> None:
        pass


class Rescorer:
    """Re-scores the traces of the runs a request selects, a batch at a time (see the module docstring)."""

    def __init__(
        self,
        config: ScoringConfig,
        read: Read,
        reader: StoredTraceReader,
        write: Write,
        *,
        conventions: Sequence[Convention] = (),
        config_name: str = "",
        text_failures: bool = True,
        wall_clock: Callable[[], int] = time.time_ns,
        batch_traces: int = BATCH_TRACES,
    ) -> None:
        self._config = config
        self._read = read
        self._reader = reader
        self._write = write
        self._conventions = BUILTIN.plus(tuple(conventions))
        self._text_failures = text_failures
        self._config_name = config_name
        self._now = wall_clock
        self._batch = batch_traces

    def run(self, request: RescoreRequest) -> RescoreSummary:
        if request.judge and self._config.judge is None:
            raise RescoreError("--judge needs a [judge] section in the configuration")
        started = time.perf_counter()
        summary = RescoreSummary(
            dry_run=request.dry_run, judge_kept=not request.judge, config=self._config_name
        )
        windows = self.select(request)
        summary.traces = len(windows)
        collect = _Collect()
        stage = ScoringStage(collect, self._config, wall_clock=self._now, queue_judge=request.judge)
        for start in range(0, len(windows), self._batch):
            batch = windows[start : start + self._batch]
            before = self._before([w[0] for w in batch])
            collect.traces.clear()
            stage.consume(self._rebuild(batch, summary))
            _tally(summary, before, collect.traces)
            rows = build_run_rows(collect.traces, self._now())
            if rows is not None and not request.dry_run:
                self._write(rows.operation(keep_metrics=() if request.judge else (TOOL_ERRORS.name,)))
        summary.seconds = round(time.perf_counter() - started, 3)
        return summary

    def select(self, request: RescoreRequest) -> list[tuple[str, int, int]]:
        """The traces that hold a selected run, with the time range of all their spans, oldest first."""
        conditions, params = ["TRUE"], []
        if request.since_ns is not None:
            conditions.append("r.start_time >= CAST(? AS TIMESTAMPTZ)")
            params.append(ns_to_datetime(request.since_ns).isoformat())
        if request.where and request.where.strip():
            conditions.append(f"({request.where})")
        if request.trace_ids is not None:
            conditions.append(_ids_clause("r.trace_id", request.trace_ids) if request.trace_ids else "FALSE")
            params.extend(request.trace_ids)
        rows = self._read(
            "SELECT trace_id, min(start_time_unix_nano) AS lo, "
            "max(greatest(coalesce(end_time_unix_nano, 0), start_time_unix_nano)) AS hi FROM spans "
            f"WHERE trace_id IN (SELECT r.trace_id FROM agent_runs r WHERE {' AND '.join(conditions)}) "
            "GROUP BY trace_id ORDER BY lo, trace_id",
            params,
        )
        return [
            (r["trace_id"], int(r["lo"] or 0), int(r["hi"] or 0))
            for r in rows
            if request.shard is None or in_shard(r["trace_id"], request.shard)
        ]

    def _before(self, trace_ids: Sequence[str]) -> _Before:
        ids = list(trace_ids)
        metrics = list(DETERMINISTIC_METRICS)
        scores = self._read(
            "SELECT trace_id, run_span_id, metric, score, success FROM evaluations "
            f"WHERE {_ids_clause('trace_id', ids)} AND source = ? AND status = 'ok' AND "
            f"{_ids_clause('metric', metrics)}",
            [*ids, OWN_SOURCE, *metrics],
        )
        runs = self._read(
            f"SELECT trace_id, span_id, tools_called FROM agent_runs WHERE {_ids_clause('trace_id', ids)}",
            ids,
        )
        return _Before(
            {(r["trace_id"], r["run_span_id"], r["metric"]): (r["score"], r["success"]) for r in scores},
            {(r["trace_id"], r["span_id"]): list(r["tools_called"] or []) for r in runs},
        )

    def _rebuild(
        self, batch: Sequence[tuple[str, int, int]], summary: RescoreSummary
    ) -> list[CompletedTrace]:
        from agentotel_eval.reconstruct import reconstruct

        stored = self._reader.load([w[0] for w in batch], min(w[1] for w in batch), max(w[2] for w in batch))
        out = []
        for trace_id, lo, hi in batch:
            record = stored.get(trace_id)
            spans: list[SpanRecord] = sorted(record.spans, key=SPAN_ORDER) if record is not None else []
            logs: list[LogRecord] = sorted(record.logs, key=LOG_ORDER) if record is not None else []
            try:
                runs: tuple[AgentRun, ...] = tuple(
                    reconstruct(spans, logs, conventions=self._conventions, text_failures=self._text_failures)
                )
            except Exception:
                summary.errors += 1  # its stored rows stay as they are
                continue
            out.append(
                CompletedTrace(
                    trace_id,
                    tuple(spans),
                    tuple(logs),
                    runs,
                    REASON_RESCORE,
                    complete=True,
                    replace=True,
                    lo_ns=lo,
                    hi_ns=hi,
                )
            )
        # a plain client loop's later traces complete the calls of the earlier ones rebuilt with them
        later = LaterResults(
            functools.partial(reconstruct, conventions=self._conventions, text_failures=self._text_failures),
            self._conventions,
        )
        batch_ids = {t.trace_id for t in out}
        for trace in list(out):
            merge(out, [t for t in later.complete(trace) if t.trace_id in batch_ids])
        return out


@dataclass(frozen=True, slots=True)
class _Before:
    scores: dict[tuple[str, str, str], tuple[float | None, bool | None]]
    tools: dict[tuple[str, str], list[str]]


def _tally(summary: RescoreSummary, before: _Before, traces: Sequence[CompletedTrace]) -> None:
    """Count the batch's runs and scores against what was stored before."""
    after_tools = {run.key: run.tools_called for t in traces for run in t.runs}
    rebuilt = {t.trace_id for t in traces}
    old_tools = {k: v for k, v in before.tools.items() if k[0] in rebuilt}
    summary.runs_before += len(old_tools)
    summary.runs_after += len(after_tools)
    summary.runs_rebuilt_differently += sum(
        1 for key in {*old_tools, *after_tools} if old_tools.get(key) != after_tools.get(key)
    )
    after: dict[tuple[str, str, str], tuple[float | None, bool | None]] = {}
    for t in traces:
        for row in t.evaluations:
            if row.metric == TOOL_ERRORS.name and row.status == "pending":
                summary.judge_queued += 1
            elif row.metric in DETERMINISTIC_METRICS and row.status == "ok":
                after[(row.trace_id, row.run_span_id, row.metric)] = (row.score, row.success)
    old = {k: v for k, v in before.scores.items() if k[0] in rebuilt}
    for key in {*old, *after}:
        change = summary.metric(key[2])
        was, now = old.get(key), after.get(key)
        if was is not None:
            change.before_runs += 1
            change.before_passed += bool(was[1])
        if now is not None:
            change.after_runs += 1
            change.after_passed += bool(now[1])
        if was is None:
            change.added += 1
        elif now is None:
            change.removed += 1
        elif was != now:
            change.changed += 1
            change.now_failing += bool(was[1]) and not now[1]
            change.now_passing += not was[1] and bool(now[1])


def render(summary: RescoreSummary) -> str:
    """The summary as lines for a terminal."""
    verb = "would re-score" if summary.dry_run else "re-scored"
    lines = [
        f"{verb} {summary.runs_after} run(s) in {summary.traces} trace(s) in {summary.seconds:.1f}s"
        + (f" with {summary.config}" if summary.config else "")
    ]
    if summary.metrics:
        header = (
            "metric",
            "before: runs",
            "passed",
            "after: runs",
            "passed",
            "changed",
            "now fail",
            "now pass",
            "added",
            "removed",
        )
        rows = [header] + [
            (
                m.metric,
                str(m.before_runs),
                str(m.before_passed),
                str(m.after_runs),
                str(m.after_passed),
                str(m.changed),
                str(m.now_failing),
                str(m.now_passing),
                str(m.added),
                str(m.removed),
            )
            for _, m in sorted(summary.metrics.items())
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    else:
        lines.append("no deterministic score before or after (no run has an expectation, or scoring is off)")
    if summary.runs_rebuilt_differently:
        lines.append(
            f"{summary.runs_rebuilt_differently} run(s) rebuilt with other tool calls than stored "
            f"(runs: {summary.runs_before} before, {summary.runs_after} after)"
        )
    if summary.errors:
        lines.append(f"{summary.errors} trace(s) could not be rebuilt; their stored rows are unchanged")
    if summary.judge_kept:
        lines.append("judge verdicts kept (--judge queues the runs for the judge again)")
    else:
        lines.append(f"judge: {summary.judge_queued} run(s) {'would be ' if summary.dry_run else ''}queued")
    if summary.dry_run:
        lines.append("dry run: nothing was written")
    return "\n".join(lines)


class HeldRescores:
    """The re-scores of ``POST /v1/rescore`` in the collector that holds the database, one at a time: with its
    configuration, or the one the payload names; written through its writer (``submit``), then handed to
    ``sent`` (the sinks) once committed; ``wake_judge`` when runs were queued for the judge."""

    def __init__(
        self,
        config: CollectorConfig,
        cursor: Callable[[], AbstractContextManager[Any]],
        submit: Callable[[ReplaceRuns], None],
        *,
        sent: Callable[[ReplaceRuns], None] | None = None,
        wake_judge: Callable[[], None] | None = None,
    ) -> None:
        self._config = config
        self._cursor = cursor
        self._commit = committed_by(submit)
        self._sent = sent
        self._wake_judge = wake_judge
        self._lock = threading.Lock()

    def run(self, payload: Any) -> dict[str, Any]:
        """The summary of the re-score a payload asks for; ``RescoreError``,
        ``RescoreBusy`` or ``QueryError``."""
        from agentotel_eval.collector.config import ConfigError, default_config, load_config

        request, config_path = request_from_payload(payload)
        config, name = self._config, "the collector's configuration"
        if config_path is not None:
            try:
                config, name = load_config(config_path, default_config()).validate(), config_path
            except (ConfigError, OSError) as exc:
                raise RescoreError(f"invalid configuration {config_path}: {exc}") from None
        if not self._lock.acquire(blocking=False):
            raise RescoreBusy("another re-score is running on this database; try again when it has finished")
        try:
            summary = Rescorer(
                config.scoring_config(),
                sealed_read(self._cursor),
                TraceReader(self._cursor),
                self._write,
                conventions=config.conventions,
                text_failures=config.reconstruction.text_failures,
                config_name=name,
            ).run(request)
        finally:
            self._lock.release()
        if summary.judge_queued and self._wake_judge is not None:
            self._wake_judge()
        return summary.to_dict()

    def _write(self, op: ReplaceRuns) -> None:
        self._commit(op)
        if self._sent is not None:
            self._sent(op)


def rescore_file(db: Path, payload: Any, config: CollectorConfig) -> RescoreSummary:
    """The re-score of a ``POST /v1/rescore`` body done in this process, on a database file that no collector
    holds (this process is then its only writer), with ``config`` (the one the body names, loaded; else the
    defaults). ``RescoreError`` when the file cannot be opened or the request is refused."""
    from agentotel_eval.collector.store.database import Database
    from agentotel_eval.store.query import QueryError

    if not db.is_file():
        raise RescoreError(f"no database at {db}")
    request, config_path = request_from_payload(payload)
    try:
        database = Database(db, settings=config.writer.duckdb_settings())
    except Exception as exc:  # ours (refused, held) or DuckDB's own (a lock held by another program)
        raise RescoreError(f"cannot open {db}: {exc}") from None

    def write(op: ReplaceRuns) -> None:
        con = database.connection
        con.execute("BEGIN TRANSACTION")
        try:
            op.apply(con)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    try:
        rescorer = Rescorer(
            config.scoring_config(),
            sealed_read(database.cursor),
            TraceReader(database.cursor),
            write,
            conventions=config.conventions,
            text_failures=config.reconstruction.text_failures,
            config_name=config_path or "no config (expected tools from the runs' spans only)",
        )
        return rescorer.run(request)
    except QueryError as exc:
        raise RescoreError(str(exc)) from None
    finally:
        database.close()
