"""The sinks' metrics: per sink, evaluations queued, sent, replaced in the queue and dropped, failed attempts;
the feed's dropped batches. The forwarders that carry each sink's spans report as the
forwarder does, per sink."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.forward.forwarder import Forwarder
from agentotel_eval.collector.sink.feed import EvaluationFeed
from agentotel_eval.collector.sink.worker import SinkWorker
from agentotel_eval.collector.telemetry.families import counter, gauge


class SinkTelemetry(Collector):
    def __init__(
        self,
        workers: Sequence[SinkWorker],
        forwarders: Callable[[], Sequence[tuple[str, Forwarder]]],
        feed: EvaluationFeed,
    ) -> None:
        self._workers = tuple(workers)
        self._forwarders = forwarders
        self._feed = feed

    def collect(self) -> Iterator[Metric]:
        stats = [(w.name, w.stats) for w in self._workers]
        yield gauge(
            "sink_queue_evaluations",
            "Evaluations waiting to be sent to a sink.",
            [((n,), s.queued) for n, s in stats],
            labels=("sink",),
        )
        yield counter(
            "sink_sent",
            "Evaluations a sink's tool took.",
            [((n,), s.sent) for n, s in stats],
            labels=("sink",),
        )
        yield counter(
            "sink_replaced",
            "Queued evaluations replaced by a newer one of the same run and metric.",
            [((n,), s.replaced) for n, s in stats],
            labels=("sink",),
        )
        yield counter(
            "sink_dropped",
            "Evaluations a sink could not deliver and dropped (queue full, refused, retries exhausted).",
            [((n,), s.dropped) for n, s in stats],
            labels=("sink",),
        )
        yield counter(
            "sink_failed_attempts",
            "Requests to a sink's tool that failed (retried or not).",
            [((n,), s.failed_attempts) for n, s in stats],
            labels=("sink",),
        )
        spans = [(name, f.stats) for name, f in self._forwarders()]
        yield counter(
            "sink_spans_sent",
            "Spans sent to a sink's OTLP endpoint.",
            [((n,), s.sent_spans) for n, s in spans],
            labels=("sink",),
        )
        yield counter(
            "sink_spans_dropped",
            "Spans a sink's OTLP export dropped.",
            [((n,), s.dropped_spans) for n, s in spans],
            labels=("sink",),
        )
        yield counter(
            "evaluation_feed_dropped",
            "Committed evaluation batches the feed dropped (it fell behind).",
            self._feed.stats.dropped_batches,
        )
