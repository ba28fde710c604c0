"""What the service wires: the configured sinks (queue, client, span forwarder each), the evaluation feed and
the quality counters. Its entry points are the service's after-commit hooks (``received`` for committed spans,
``runs_committed``, ``evaluation_written``, ``rescored``), ``keeping_raw`` around the decoder, ``metrics`` and
the lifecycle.

A sink sends the spans as they were received, not the copies with scores attached that ``[forward]`` gets: the
scores reach the tool as its own evaluation objects. A protobuf request whose spans were all valid, none cut
by ``[limits]``, with no redaction to apply, goes on as its body (no decoding or encoding in this process);
any other goes as its decoded records, encoded once per sink.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client.registry import Collector

from agentotel_eval.collector.config_sinks import SinkConfig
from agentotel_eval.collector.decode.choice import Decoder
from agentotel_eval.collector.forward.forwarder import Forwarder
from agentotel_eval.collector.process.ingest_batch import KEEP_UNLESS_CLEAN, IngestBatch
from agentotel_eval.collector.sink import langfuse, mlflow, phoenix
from agentotel_eval.collector.sink.feed import Committed, EvaluationFeed, Lookup
from agentotel_eval.collector.sink.records import SinkEvaluation
from agentotel_eval.collector.sink.telemetry import SinkTelemetry
from agentotel_eval.collector.sink.worker import SinkClient, SinkWorker
from agentotel_eval.collector.telemetry.quality import QualityCounts, QualityTelemetry
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.redaction import Redactor


def build(config: SinkConfig, redactor: Redactor | None) -> tuple[SinkClient, Forwarder | None]:
    """One sink's client and, when it sends spans, the forwarder to the tool's OTLP endpoint."""
    client: Any
    if config.kind == "phoenix":
        client = phoenix.PhoenixClient(config)
        forward, sender = phoenix.span_export(config)
    elif config.kind == "mlflow":
        client = mlflow.MlflowClient(config)
        forward, sender = mlflow.span_export(config, client)
    else:
        client = langfuse.LangfuseClient(config)
        forward, sender = langfuse.span_export(config)
    forwarder = Forwarder(forward, sender, redactor=redactor) if config.forward_spans else None
    return client, forwarder


def _redacted(redactor: Redactor, evaluation: SinkEvaluation) -> SinkEvaluation:
    return dataclasses.replace(
        evaluation,
        reason=redactor.text(evaluation.reason),
        findings=tuple(redactor.value(dict(f)) for f in evaluation.findings),
    )


class SinkHub:
    def __init__(
        self,
        sinks: Sequence[SinkConfig],
        *,
        max_agents: int,
        lookup: Lookup | None = None,
        redactor: Redactor | None = None,
        redacted_at_store: bool = False,
        clients: Callable[[SinkConfig], tuple[SinkClient, Forwarder | None]] | None = None,
    ) -> None:
        self.quality = QualityCounts(max_agents)
        self.workers: list[SinkWorker] = []
        self.forwarders: list[tuple[str, Forwarder]] = []
        for config in sinks:
            client, forwarder = clients(config) if clients is not None else build(config, redactor)
            self.workers.append(SinkWorker(config, client))
            if forwarder is not None:
                self.forwarders.append((config.name, forwarder))
        self._redactor = redactor
        #: [redaction] rewrote the stored records: a body as received would send what it removed
        self._redacted_at_store = redacted_at_store
        self.feed = EvaluationFeed([self._submitter(w) for w in self.workers], self.quality, lookup=lookup)

    def _submitter(self, worker: SinkWorker) -> Callable[[Sequence[SinkEvaluation]], None]:
        redactor = self._redactor
        if redactor is None:
            return worker.submit
        return lambda evaluations: worker.submit([_redacted(redactor, e) for e in evaluations])

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        for worker in self.workers:
            worker.start()
        for _name, forwarder in self.forwarders:
            forwarder.start()
        self.feed.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """The feed takes what was committed, then each sink and forwarder sends what it
        holds within the time."""
        self.feed.shutdown(timeout_s)
        for worker in self.workers:
            worker.shutdown(timeout_s)
        for _name, forwarder in self.forwarders:
            forwarder.shutdown(timeout_s)

    # -- spans -----------------------------------------------------------------------------------------------
    @property
    def forwards_spans(self) -> bool:
        return bool(self.forwarders)

    @property
    def keep_records(self) -> bool | str:
        """What the decoder must keep of span records for the sinks (``decode.batch.decode_request``'s
        keep_spans): all of them when redaction applies (nothing goes as received), else those of
        requests not sent as is."""
        if self._redactor is not None or self._redacted_at_store:
            return True
        return KEEP_UNLESS_CLEAN

    def keep_raw(self, batch: IngestBatch, signal: str, encoding: str, body: bytes) -> IngestBatch:
        """The decoded request, with its body kept when the sinks may send it on as it is
        (the module docstring)."""
        if (
            not self.forwarders
            or signal != "traces"
            or encoding != "protobuf"
            or batch.rejected
            or batch.limited
            or self._redactor is not None
            or self._redacted_at_store
            or not batch.size
        ):
            return batch
        return dataclasses.replace(batch, raw=body)

    def keeping_raw(self, decoder: Decoder) -> Decoder:
        """``decoder``, its answers keeping the request's body where the sinks may send it on as it is."""

        def decode(signal: str, encoding: str, body: bytes) -> IngestBatch:
            return self.keep_raw(decoder(signal, encoding, body), signal, encoding, body)

        return decode

    def received(self, batch: IngestBatch, records: Sequence[SpanRecord]) -> None:
        """Spans committed from one request: its body when kept (a re-sent span in it is sent again: the tools
        keep one span per id), else ``records`` (the new ones, which the decoder kept for this)."""
        for _name, forwarder in self.forwarders:
            if batch.raw is not None:
                forwarder.submit_encoded("traces", batch.raw, batch.size)
            elif records:
                forwarder.submit_spans(records)

    # -- after-commit hooks (the writer's thread: queue and return) ------------------------------------------
    def runs_committed(self, op: Any) -> None:
        """A ``ReplaceRuns`` of completed traces was committed."""
        if op.evaluations is not None:
            self.feed.put(Committed(op.evaluations, op.runs))

    def evaluation_written(self, op: Any) -> None:
        """The judge's ``WriteEvaluation`` was committed (``applied``: it was not stale)."""
        if op.applied:
            self.feed.put(Committed(op.row))

    def rescored(self, op: Any) -> None:
        """A re-score's ``ReplaceRuns`` was committed: sent on, not counted again."""
        if op.evaluations is not None:
            self.feed.put(Committed(op.evaluations, op.runs, live=False))

    def telemetry(self) -> list[Collector]:
        return [
            QualityTelemetry(self.quality),
            SinkTelemetry(self.workers, lambda: self.forwarders, self.feed),
        ]
