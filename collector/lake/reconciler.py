"""Rebuild whole the traces that more than one node stored, from the lake.

The gateway sends each trace to one node, but not always: when a node joins or leaves, about 1/N of the traces
in flight move mid-trace, and its failover resends a dead node's part elsewhere. Each node then builds and scores
its own part. The reconciler finds such traces in the lake (spans of one trace from two or more nodes), waits
until they are quiet (no span copied for ``quiet`` seconds, so each node has built and copied its part), reads
every node's spans of the trace (a span stored twice, once), rebuilds and scores it whole with the node's own
scoring config, and appends the build to the lake as the trace's newest (``LakeBuilds``): the latest views then
show one whole run where there were parts, scored once.

A trace is rebuilt again when a span of it is copied after its reconciled build, or when a node's build of it is
newer (a part that was built late): the views converge on the whole trace. Every node runs a reconciler, and
each trace is left to one of them: the first by name among the live nodes that stored it (live: copied rows to
the lake within ``live_for`` seconds), else the first live node, so a dead node's traces are taken over.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from agentotel_eval.collector.score.rescore import RescoreRequest
from agentotel_eval.store import lake

if TYPE_CHECKING:
    from agentotel_eval.collector.config import CollectorConfig
    from agentotel_eval.collector.lake.rebuild import LakeRebuilder

log = logging.getLogger(__name__)

#: the name a reconciler's builds carry in the lake's ``node`` column: ``reconciler@<node>``
BUILDER_PREFIX = "reconciler@"
#: how far back the first look goes, and the most a look ever spans
LOOKBACK = timedelta(hours=1)
#: spans of one trace lie within this of each other's start times (the scan of a trace's spans is bounded by it)
TRACE_SPAN = timedelta(hours=1)
#: traces rebuilt together
BATCH = 100


@dataclass(frozen=True, slots=True)
class SplitTrace:
    trace_id: str
    nodes: tuple[str, ...]  # the nodes that stored its spans
    last_copied: datetime  # when its newest span reached the lake
    reconciled: bool  # its newest build is a reconciler's, made after its last span was copied


def owner(trace: SplitTrace, live: Sequence[str]) -> str | None:
    """The node that rebuilds ``trace``: the first by name of the live nodes that stored it, else the first live
    node (its nodes are gone); None with no live node."""
    stored = sorted(n for n in trace.nodes if n in live)
    return stored[0] if stored else min(live, default=None)


class Reconciler:
    """Looks for split traces every ``interval`` seconds on a thread of its own; ``run_once`` is one look."""

    def __init__(self, settings: lake.LakeSettings, config: CollectorConfig, node: str, *, interval: float,
                 quiet: float, live_for: float, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._settings = settings
        self._config = config
        self.node = node
        self._interval = interval
        self._quiet = timedelta(seconds=quiet)
        self._live_for = timedelta(seconds=live_for)
        self._now = clock
        self._since: datetime | None = None  # spans copied after this are looked at
        self._rebuilder: LakeRebuilder | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.traces_rebuilt = 0
        self.failures = 0

    def open(self) -> None:
        from agentotel_eval.collector.lake.rebuild import LakeRebuilder

        self._rebuilder = LakeRebuilder(self._settings, self._config, BUILDER_PREFIX + self.node,
                                        config_name="reconciler")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agentotel-lake-reconcile", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.run_once()
            except Exception as exc:  # the lake unreachable for a while: the next look finds the same traces
                self.failures += 1
                log.warning("lake reconciliation failed (retried in %.0fs): %s", self._interval, exc)

    def run_once(self) -> list[str]:
        """One look: rebuild the quiet split traces this node owns; returns their ids."""
        assert self._rebuilder is not None, "open() first"
        now = self._now()
        since = max(self._since or now - LOOKBACK, now - LOOKBACK)
        found = self.split_traces(since)
        live = self.live_nodes(now)
        due = [t for t in found if not t.reconciled and t.last_copied <= now - self._quiet
               and owner(t, live) == self.node]
        for start in range(0, len(due), BATCH):
            ids = tuple(t.trace_id for t in due[start:start + BATCH])
            summary = self._rebuilder.run(RescoreRequest(trace_ids=ids))
            self.traces_rebuilt += summary.traces
        # Next time look from the oldest trace still waiting (for quiet, or for a node that may die before it
        # rebuilds it), else from when this look's quiet began.
        waiting = [t.last_copied for t in found if not t.reconciled and t not in due]
        self._since = min([*waiting, now - self._quiet]) - timedelta(microseconds=1)
        return [t.trace_id for t in due]

    def split_traces(self, since: datetime) -> list[SplitTrace]:
        """The traces with a span copied after ``since`` whose spans came from more than one node."""
        assert self._rebuilder is not None
        L = lake.LAKE
        rows = self._rebuilder.read(
            f"""
            WITH recent AS (
                SELECT trace_id, min(start_time) AS lo, max(start_time) AS hi FROM {L}.spans
                WHERE flushed_at > ? GROUP BY trace_id
            ), bounds AS (SELECT min(lo) - ?::INTERVAL AS lo, max(hi) + ?::INTERVAL AS hi FROM recent),
            split AS (
                SELECT s.trace_id, list(DISTINCT s.node ORDER BY s.node) AS nodes, max(s.flushed_at) AS last_copied
                FROM {L}.spans s, bounds WHERE s.start_time BETWEEN bounds.lo AND bounds.hi
                AND s.trace_id IN (SELECT trace_id FROM recent)
                GROUP BY s.trace_id HAVING count(DISTINCT s.node) > 1
            ), newest AS (
                SELECT r.trace_id, arg_max(r.node, r.updated_at) AS builder, max(r.updated_at) AS built,
                       arg_max(r.flushed_at, r.updated_at) AS build_copied
                FROM {L}.agent_runs r WHERE r.trace_id IN (SELECT trace_id FROM split) GROUP BY r.trace_id
            )
            SELECT split.trace_id, split.nodes, split.last_copied,
                   coalesce(starts_with(newest.builder, '{BUILDER_PREFIX}') AND newest.build_copied > split.last_copied,
                            FALSE)
            FROM split LEFT JOIN newest USING (trace_id) ORDER BY split.last_copied, split.trace_id
            """, [since, TRACE_SPAN, TRACE_SPAN])
        return [SplitTrace(str(t), tuple(nodes), copied, bool(done)) for t, nodes, copied, done in rows]

    def live_nodes(self, now: datetime) -> list[str]:
        """The nodes that copied rows to the lake within ``live_for``, and this one."""
        assert self._rebuilder is not None
        rows = self._rebuilder.read(f"SELECT DISTINCT node FROM {lake.LAKE}.{lake.MARKS} WHERE flushed_at >= ?",
                                    [now - self._live_for])
        return sorted({str(n) for (n,) in rows} | {self.node})

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._interval + 60)
        if self._rebuilder is not None:
            self._rebuilder.close()
            self._rebuilder = None
