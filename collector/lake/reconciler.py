"""Rebuild whole the traces that more than one node stored, from the lake.

The gateway sends each trace to one node, but not always: when a node joins or leaves, about 1/N of the traces
in flight move mid-trace, and its failover resends a dead node's part elsewhere. Each node then builds and scores
its own part. The reconciler finds such traces in the lake (spans of one trace from two or more nodes), waits
until they are quiet (no span copied for ``quiet`` seconds, so each node has built and copied its part), reads
every node's spans of the trace (a span stored twice, once), rebuilds and scores it whole with the node's own
scoring config, and appends the build to the lake as the trace's newest (``LakeBuilds``): the latest views then
show one whole run where there were parts, scored once.

A trace is rebuilt again when a span of it is copied after its reconciled build, or when a node's build of it is
newer (a part that was built late): the views converge on the whole trace. Every node runs a reconciler, and one
of them searches and rebuilds: the first live node by name (live: it copied rows to the lake within ``live_for``
seconds), so when it dies the next takes over, and the cluster pays for one search, not one per node.

Looking costs a scan of the trace ids of every span copied in the window looked at (random ids: no file can be
skipped by them), so a reconciler looks only when traces can have been split: the ring changes only when a node
joins, leaves or comes back, and each node's flush marks in the lake show when (``membership_changes``). After a
change it looks every interval at the spans copied since ``TRACE_WINDOW`` before it (traces in flight then), for
``TRACE_WINDOW`` after it; otherwise a look is one small read of the marks.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from agentotel_eval.collector.score.rescore import RescoreRequest
from agentotel_eval.store import lake

if TYPE_CHECKING:
    from agentotel_eval.collector.config import CollectorConfig
    from agentotel_eval.collector.lake.rebuild import LakeRebuilder

log = logging.getLogger(__name__)

#: the name a reconciler's builds carry in the lake's ``node`` column: ``reconciler@<node>``
BUILDER_PREFIX = "reconciler@"
#: the most a look ever spans
LOOKBACK = timedelta(hours=1)
#: an agent run lasts at most this: the parts of a trace in flight at a change lie within it (of the change, and
#: of each other's start times)
TRACE_WINDOW = timedelta(minutes=15)
#: traces rebuilt together
BATCH = 100


@dataclass(frozen=True, slots=True)
class SplitTrace:
    trace_id: str
    last_copied: datetime  # when its newest span reached the lake
    reconciled: bool  # its newest build is a reconciler's, made after its last span was copied


def membership_changes(marks: Sequence[tuple[str, datetime]], first_marks: dict[str, datetime], now: datetime,
                       away: timedelta) -> list[datetime]:
    """When the set of nodes changed, from their flush times (``marks``: (node, flushed_at)) and each node's first
    flush ever: a node's first flush (it joined), a flush after a silence longer than ``away`` (it came back),
    the last flush before such a silence and a last flush longer ago than ``away`` (it left or died). A node that
    was only idle looks the same: a look more, never one less."""
    by_node: dict[str, list[datetime]] = {}
    for node, at in marks:
        by_node.setdefault(node, []).append(at)
    changes = []
    for node, times in by_node.items():
        times.sort()
        if first_marks.get(node) == times[0]:
            changes.append(times[0])
        for before, after in itertools.pairwise(times):
            if after - before > away:
                changes += [before, after]
        if now - times[-1] > away:
            changes.append(times[-1])
    return sorted(changes)


def changes_in(read: Callable[[str, list[Any]], list[tuple[Any, ...]]], now: datetime,
               away: timedelta) -> list[datetime]:
    """``membership_changes`` over the lake's flush marks of the last ``LOOKBACK``, through ``read`` (SQL, params
    -> rows). Small rows: DuckLake keeps them in its catalog, not in Parquet files."""
    since = now - LOOKBACK - away
    marks = read(f"SELECT DISTINCT node, flushed_at FROM {lake.LAKE}.{lake.MARKS} WHERE flushed_at > ?", [since])
    firsts = read(f"SELECT node, min(flushed_at) FROM {lake.LAKE}.{lake.MARKS} GROUP BY node", [])
    return [c for c in membership_changes([(str(n), t) for n, t in marks], {str(n): t for n, t in firsts}, now, away)
            if c > since + away]


def searcher(live: Sequence[str]) -> str | None:
    """The node that searches for split traces and rebuilds them: the first live node by name."""
    return min(live, default=None)


class Reconciler:
    """Looks for split traces every ``interval`` seconds on a thread of its own; ``run_once`` is one look."""

    def __init__(self, settings: lake.LakeSettings, config: CollectorConfig, node: str, *, interval: float,
                 quiet: float, live_for: float, away: float,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._settings = settings
        self._config = config
        self.node = node
        self._interval = interval
        self._quiet = timedelta(seconds=quiet)
        self._live_for = timedelta(seconds=live_for)
        self._away = timedelta(seconds=away)
        self.looks = 0  # the looks that searched the spans (not only the marks)
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
        """One look, when this node is the searcher: rebuild the quiet split traces; returns their ids."""
        assert self._rebuilder is not None, "open() first"
        now = self._now()
        starts = [change - TRACE_WINDOW for change in self.changes(now) if change > now - TRACE_WINDOW - self._quiet]
        if self._since is not None:  # split traces found last time still wait for quiet
            starts.append(self._since)
        if not starts:  # no node joined or left lately: no trace can have been split
            return []
        if searcher(self.live_nodes(now)) != self.node:
            return []
        since = max(min(starts), now - LOOKBACK)
        self.looks += 1
        found = self.split_traces(since)
        due = [t for t in found if not t.reconciled and t.last_copied <= now - self._quiet]
        for start in range(0, len(due), BATCH):
            ids = tuple(t.trace_id for t in due[start:start + BATCH])
            summary = self._rebuilder.run(RescoreRequest(trace_ids=ids))
            self.traces_rebuilt += summary.traces
        # Keep looking from the oldest trace still waiting for quiet, even once the change is past.
        waiting = [t.last_copied for t in found if not t.reconciled and t not in due]
        self._since = min(waiting) - timedelta(microseconds=1) if waiting else None
        return [t.trace_id for t in due]

    def changes(self, now: datetime) -> list[datetime]:
        assert self._rebuilder is not None
        return changes_in(self._rebuilder.read, now, self._away)

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
                SELECT s.trace_id, max(s.flushed_at) AS last_copied
                FROM {L}.spans s, bounds WHERE s.start_time BETWEEN bounds.lo AND bounds.hi
                AND s.trace_id IN (SELECT trace_id FROM recent)
                GROUP BY s.trace_id HAVING count(DISTINCT s.node) > 1
            ), newest AS (
                SELECT r.trace_id, arg_max(r.node, r.updated_at) AS builder,
                       arg_max(r.flushed_at, r.updated_at) AS build_copied
                FROM {L}.agent_runs r WHERE r.trace_id IN (SELECT trace_id FROM split) GROUP BY r.trace_id
            )
            SELECT split.trace_id, split.last_copied,
                   coalesce(starts_with(newest.builder, '{BUILDER_PREFIX}') AND newest.build_copied > split.last_copied,
                            FALSE)
            FROM split LEFT JOIN newest USING (trace_id) ORDER BY split.last_copied, split.trace_id
            """, [since, TRACE_WINDOW, TRACE_WINDOW])
        return [SplitTrace(str(t), copied, bool(done)) for t, copied, done in rows]

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
