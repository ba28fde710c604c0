"""What happens to the records of each ingest commit, and to each commit of runs, once they are durable.

``AfterCommit`` is the writer's ``on_commit``: the new records' marks go to the assembler; spans and logs go
downstream (run and root spans wait for their scores); evaluation results other tools sent as log records are
stored as evaluations. ``RunsCommitted`` is the run writer's ``on_committed``: pending judge rows can be
taken, and the sinks get the new evaluations.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from agentotel_eval.collector.forward.forwarder import Forwarder
from agentotel_eval.collector.process.ingest_batch import IngestBatch
from agentotel_eval.collector.score.judge_worker import JudgeWorker
from agentotel_eval.collector.score.stage import external_rows, is_held_span
from agentotel_eval.collector.sink.hub import SinkHub
from agentotel_eval.collector.store.operations import InsertEvaluations
from agentotel_eval.collector.store.writer import Committed
from agentotel_eval.store.rows import evaluations_to_arrow

#: the assembler's ``consume``: span marks, log marks, the commit's ingested_at (ns)
Consume = Callable[[list[Any], list[Any], int | None], None]


class AfterCommit:
    def __init__(
        self,
        *,
        consume: Consume,
        submit_operation: Callable[[Any], None],
        forwarder: Forwarder | None,
        sinks: SinkHub | None,
    ) -> None:
        self._consume = consume
        self._submit_operation = submit_operation
        self._forwarder = forwarder
        self._sinks = sinks
        #: ``gen_ai.evaluation.result`` log records from other tools stored at ingest
        self.external_log_evaluations = 0

    def __call__(self, commits: Sequence[Committed]) -> None:
        span_marks: list[Any] = []
        log_marks: list[Any] = []
        spans: list[Any] = []
        logs: list[Any] = []
        for commit in commits:
            batch: IngestBatch = commit.payload
            if batch.signal == "traces":
                span_marks.extend(Committed.pick(batch.marks, commit.new_spans))
                if batch.records is not None:
                    spans.extend(Committed.pick(batch.records, commit.new_spans))
            else:
                log_marks.extend(Committed.pick(batch.marks, commit.new_logs))
                if batch.records is not None:
                    logs.extend(Committed.pick(batch.records, commit.new_logs))
        forwarder = self._forwarder
        if forwarder is not None:
            if spans:
                forwarder.submit_spans([s for s in spans if not is_held_span(s)])
            if logs:
                forwarder.submit_logs(logs)
        if self._sinks is not None and self._sinks.forwards_spans:
            for commit in commits:
                if commit.payload.signal == "traces" and commit.new_spans != []:
                    self._sinks.received(
                        commit.payload, Committed.pick(commit.payload.records or [], commit.new_spans)
                    )
        if logs:
            rows = external_rows(logs, time.time_ns())
            if rows:
                self.external_log_evaluations += len(rows)
                self._submit_operation(InsertEvaluations(evaluations_to_arrow(rows)))
        # one commit: its records all carry its ingested_at, by which the assembler reads them back
        self._consume(span_marks, log_marks, commits[0].ingested_ns if commits else None)


class RunsCommitted:
    def __init__(self, *, judge: JudgeWorker | None, sinks: SinkHub | None) -> None:
        self._judge = judge
        self._sinks = sinks

    def __call__(self, op: Any) -> None:
        judge = self._judge
        if judge is not None and op.evaluations is not None and op.evaluations.num_rows:
            judge.wake()
        if self._sinks is not None:
            self._sinks.runs_committed(op)
