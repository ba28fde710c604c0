"""The evaluation feed's hand-over queue: the writer's thread never waits; past the bound the oldest committed
batch is dropped, counted for /metrics and logged once per interval, and what was kept is
still counted and sent."""

from __future__ import annotations

import logging

import pyarrow as pa

from agentotel_eval.collector.sink.feed import Committed, EvaluationFeed
from agentotel_eval.collector.telemetry.quality import QualityCounts


def _batch(run: str) -> Committed:
    return Committed(
        pa.table(
            {
                "trace_id": ["t" * 32],
                "run_span_id": [run],
                "metric": ["tool_correctness"],
                "score": [1.0],
                "threshold": [0.5],
                "success": [True],
                "reason": [""],
                "details": [None],
                "status": ["ok"],
                "source": ["agentotel-eval"],
                "evaluator": ["ToolCorrectnessMetric"],
                "evaluator_version": ["1"],
            },
            schema=pa.schema(
                [
                    ("trace_id", pa.string()),
                    ("run_span_id", pa.string()),
                    ("metric", pa.string()),
                    ("score", pa.float64()),
                    ("threshold", pa.float64()),
                    ("success", pa.bool_()),
                    ("reason", pa.string()),
                    ("details", pa.string()),
                    ("status", pa.string()),
                    ("source", pa.string()),
                    ("evaluator", pa.string()),
                    ("evaluator_version", pa.string()),
                ]
            ),
        )
    )


def test_a_feed_that_falls_behind_drops_the_oldest_counts_and_warns_once(caplog) -> None:
    sent: list[str] = []
    quality = QualityCounts()
    feed = EvaluationFeed(
        [lambda evaluations: sent.extend(e.span_id for e in evaluations)], quality, max_batches=2
    )  # not started: every put waits in the queue
    with caplog.at_level(logging.WARNING, logger="agentotel_eval.collector.sink.feed"):
        for run in ("r1", "r2", "r3", "r4", "r5"):
            feed.put(_batch(run))
    assert feed.stats.dropped_batches == 3
    warnings = [r for r in caplog.records if "evaluation feed" in r.getMessage()]
    assert len(warnings) == 1 and "drops the oldest" in warnings[0].getMessage()
    feed.start()
    feed.shutdown(5)
    assert sent == ["r4", "r5"]
    assert sum(quality.snapshot()[0].values()) == 2
