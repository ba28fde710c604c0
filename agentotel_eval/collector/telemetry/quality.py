"""Agent quality on ``/metrics``: ``agentotel_evaluations_total{service, agent, metric, result}`` and
``agentotel_tool_errors_total{service, agent, type}``, counted as evaluations are committed.

Label values are bounded: the first ``max_agents`` (service, agent) pairs keep their names, later agents are
counted as ``agent="other"`` (and their service as ``other`` once as many services are known), so a fleet of
generated agent names cannot grow the series without end. Metric names and error types come from this code.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.telemetry.families import counter

OTHER = "other"


class QualityCounts:
    def __init__(self, max_agents: int = 50) -> None:
        self.max_agents = max_agents
        self._lock = threading.Lock()
        self._agents: set[tuple[str, str]] = set()
        self._services: set[str] = set()
        self.evaluations: Counter[tuple[str, str, str, str]] = Counter()
        self.tool_errors: Counter[tuple[str, str, str]] = Counter()
        #: evaluations counted under ``other`` for want of room
        self.folded = 0

    def labels(self, service: str, agent: str) -> tuple[str, str]:
        """The (service, agent) label values of a run: its own, or ``other`` past the bound (the caller holds
        the lock)."""
        pair = (service, agent)
        if pair in self._agents:
            return pair
        if len(self._agents) < self.max_agents:
            self._agents.add(pair)
            self._services.add(service)
            return pair
        self.folded += 1
        if service not in self._services and len(self._services) >= self.max_agents:
            service = OTHER
        return service, OTHER

    def count(
        self, service: str, agent: str, metric: str, result: str, error_types: Iterable[str] = ()
    ) -> None:
        with self._lock:
            s, a = self.labels(service, agent)
            self.evaluations[(s, a, metric, result)] += 1
            for kind in error_types:
                self.tool_errors[(s, a, kind)] += 1

    def snapshot(self) -> tuple[dict[tuple[str, str, str, str], int], dict[tuple[str, str, str], int]]:
        with self._lock:
            return dict(self.evaluations), dict(self.tool_errors)


class QualityTelemetry(Collector):
    def __init__(self, counts: QualityCounts) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        evaluations, tool_errors = self._counts.snapshot()
        yield counter(
            "evaluations",
            "Evaluations of agent runs this collector committed, by service, agent, metric "
            "and result (pass, fail or error); agents past [metrics] max_agents count as 'other'.",
            sorted(evaluations.items()),
            labels=("service", "agent", "metric", "result"),
        )
        yield counter(
            "tool_errors",
            "Tool-use errors the deterministic detectors found (sure findings), by service, "
            "agent and error type.",
            sorted(tool_errors.items()),
            labels=("service", "agent", "type"),
        )
