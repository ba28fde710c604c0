"""The helper processes' metrics: up, restarts, given up, per helper (decode workers, the assembler)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.collector.process.supervisor import Supervisor
from agentotel_eval.collector.telemetry.families import counter, gauge


class HelperTelemetry(Collector):
    """``helpers``: the supervisors now (the assembler's may be absent when assembly runs on a thread)."""

    def __init__(self, helpers: Callable[[], Sequence[Supervisor]]) -> None:
        self._helpers = helpers

    def collect(self) -> Iterator[Metric]:
        helpers = list(self._helpers())
        labels, none = ("helper",), ("none",)
        yield gauge(
            "helper_up",
            "1 while a helper process (decode worker, assembler) is running and ready.",
            [((h.name,), 1 if h.alive else 0) for h in helpers],
            labels=labels,
            empty=none,
        )
        yield counter(
            "helper_restarts",
            "Times a helper process died and its supervisor started it again (failed starts included).",
            [((h.name,), h.restarts) for h in helpers],
            labels=labels,
            empty=none,
        )
        yield gauge(
            "helper_given_up",
            "1 when a helper kept dying and is no longer started.",
            [((h.name,), 1 if h.gave_up else 0) for h in helpers],
            labels=labels,
            empty=none,
        )
