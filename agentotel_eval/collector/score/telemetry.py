"""The LLM judge's metrics: rows pending and in flight, answers by status, its spend."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.score.judge_worker import JudgeWorker
from agentotel_eval.collector.telemetry.families import by_key, counter, gauge


class JudgeTelemetry(Collector):
    def __init__(self, judge: JudgeWorker) -> None:
        self._judge = judge

    def collect(self) -> Iterator[Metric]:
        stats = self._judge.stats
        yield gauge(
            "judge_pending", "Pending judge rows in the database at the last look.", stats.pending_seen
        )
        yield gauge("judge_in_flight", "Judge evaluations being answered now.", stats.in_flight)
        yield counter(
            "judge_results",
            "Judge rows answered, by status (ok, error, skipped).",
            by_key(stats.by_status),
            labels=("status",),
            empty=("ok",),
        )
        yield counter(
            "judge_stale", "Judge answers dropped because the run was re-queued meanwhile.", stats.stale
        )
        yield gauge("judge_cost_usd_today", "LLM judge spend today (UTC), in USD.", stats.cost_usd_today)
        yield counter("judge_cost_usd", "LLM judge spend since start, in USD.", stats.cost_usd_total)
