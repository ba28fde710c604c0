"""Rebuild whole the traces that more than one node stored, from the lake.

The gateway sends each trace to one node, but not always: when a node joins or leaves, about 1/N of the traces
in flight move mid-trace, and a failover resend (a node answering UNAVAILABLE when overloaded, or a lost ack)
sends a part elsewhere with no change of the ring at all. Each node then builds and scores its own part. The
reconciler finds such traces, waits until they are quiet (no part copied for ``quiet`` seconds, so each node
has built and copied its part), reads every node's spans of the trace (a span stored twice, once), rebuilds
and scores it whole with the node's own scoring config, and appends the build to the lake as the trace's
newest (``LakeBuilds``): the latest views then show one whole run where there were parts, scored once.

How it finds them, always and cheaply: every flush writes, with its spans, one row per trace to the lake's
narrow index of parts (``lake.PARTS``: trace id, node, flush time, whether the part held a root span). The
reconciler reads only the index rows committed since its last look (DuckLake's insertions between two
snapshots) into a table in its own memory that holds the parts of the last ``TRACE_WINDOW``, and a trace whose
parts come from two nodes there is split. Each index row is read once, whatever the interval; the parts of the
window are read from the lake once when a node becomes the searcher.

Which build stays: the lake's views show a trace's newest build that had its root span
(``lake.shown_builds``), so a node's part built late without the root (after its ``max_wait``) never replaces
a whole build. A split trace is rebuilt when quiet unless the build shown is already a whole-lake build (the
reconciler's, or ``rescore --lake``'s: its rules are kept) made after the last part reached the lake: one
rebuild per split trace. A part copied later, or a node's build of it shown in its place, makes it due again.
A split trace that no node holds the root of (it lives in a service that does not export here) waits
``quiet_rootless`` (the part's ``max_wait`` more), so that every node's part is built before the rebuild.

Every node runs a reconciler, and one of them searches and rebuilds: the first live node by name (live: it
wrote to the lake within ``live_for`` seconds; an idle node writes a heartbeat every flush interval), so when
it dies the next takes over, and the cluster pays for one search, not one per node.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from agentotel_eval.collector.pipeline.rescore import RescoreRequest
from agentotel_eval.store import lake

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from agentotel_eval.collector.config import CollectorConfig
    from agentotel_eval.collector.lake.rebuild import LakeRebuilder

log = logging.getLogger(__name__)

#: the name a reconciler's builds carry in the lake's ``node`` column: ``reconciler@<node>``
BUILDER_PREFIX = "reconciler" + lake.LAKE_BUILDER
#: the most a look at the flush marks ever spans
LOOKBACK = timedelta(hours=1)
#: an agent run lasts at most this: the parts of one trace reach the lake within it of each other
TRACE_WINDOW = timedelta(minutes=15)
#: traces rebuilt together
BATCH = 100


@dataclass(slots=True)
class SplitTrace:
    """A trace whose parts came from two or more nodes, as the reconciler knows it."""

    trace_id: str
    first_part: datetime  # when its first part reached the lake
    last_part: datetime  # when its newest part reached the lake
    rooted: bool  # a node's part held its root span
    settled: bool = False  # its shown build is a whole-lake build made after its last part


def membership_changes(
    marks: Sequence[tuple[str, datetime]], first_marks: dict[str, datetime], now: datetime, away: timedelta
) -> list[datetime]:
    """When the set of nodes changed, from their flush times (``marks``: (node, flushed_at)) and each node's
    first flush ever: a node's first flush (it joined), a flush after a silence longer than ``away`` (it came
    back), the last flush before such a silence and a last flush longer ago than ``away`` (it left or died). A
    node that was only idle looks the same: a look more, never one less."""
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


def changes_in(
    read: Callable[[str, list[Any]], list[tuple[Any, ...]]], now: datetime, away: timedelta
) -> list[datetime]:
    """``membership_changes`` over the lake's flush marks of the last ``LOOKBACK``, through ``read`` (SQL,
    params -> rows). Small rows: DuckLake keeps them in its catalog, not in Parquet files."""
    since = now - LOOKBACK - away
    marks = read(
        f"SELECT DISTINCT node, flushed_at FROM {lake.LAKE}.{lake.MARKS} WHERE flushed_at > ?", [since]
    )
    firsts = read(f"SELECT node, min(flushed_at) FROM {lake.LAKE}.{lake.MARKS} GROUP BY node", [])
    return [
        c
        for c in membership_changes(
            [(str(n), t) for n, t in marks], {str(n): t for n, t in firsts}, now, away
        )
        if c > since + away
    ]


def whole_build_kept(trace: SplitTrace, shown: tuple[str, datetime] | None) -> bool:
    """Whether a split trace's shown build (its writer, its commit stamp) is a whole-lake build (the
    reconciler's, or a re-score's, whose rules are kept) made after its last part reached the lake:
    nothing to rebuild."""
    if shown is None:
        return False
    builder, committed = shown
    return lake.LAKE_BUILDER in builder and committed >= trace.last_part


def searcher(live: Sequence[str]) -> str | None:
    """The node that searches for split traces and rebuilds them: the first live node by name."""
    return min(live, default=None)


class Reconciler:
    """Looks for split traces every ``interval`` seconds on a thread of its own; ``run_once`` is one look."""

    def __init__(
        self,
        settings: lake.LakeSettings,
        config: CollectorConfig,
        node: str,
        *,
        interval: float,
        quiet: float,
        live_for: float,
        quiet_rootless: float | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._settings = settings
        self._config = config
        self.node = node
        self._interval = interval
        self._quiet = timedelta(seconds=quiet)
        self._quiet_rootless = timedelta(
            seconds=quiet if quiet_rootless is None else max(quiet, quiet_rootless)
        )
        self._live_for = timedelta(seconds=live_for)
        self._now = clock
        self._rebuilder: LakeRebuilder | None = None
        self._parts: duckdb.DuckDBPyConnection | None = None  # the window's parts, in this process's memory
        self._snapshot: int | None = (
            None  # the lake snapshot the parts were read up to; None: read the window
        )
        self.splits: dict[str, SplitTrace] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.looks = 0  # looks as the searcher
        self.parts_read = 0  # index rows read
        self.traces_rebuilt = 0
        self.splits_found = 0
        self.failures = 0
        self.last_error = ""

    @property
    def window(self) -> timedelta:
        """How long the parts of a trace are remembered: its parts reach the lake within ``TRACE_WINDOW`` of
        each other, and it is rebuilt at most ``quiet_rootless`` after its last."""
        return TRACE_WINDOW + self._quiet_rootless

    def open(self) -> None:
        import duckdb

        from agentotel_eval.collector.lake.rebuild import LakeRebuilder

        self._rebuilder = LakeRebuilder(
            self._settings, self._config, BUILDER_PREFIX + self.node, config_name="reconciler"
        )
        self._parts = duckdb.connect(
            ":memory:",
            config={"autoinstall_known_extensions": False, "autoload_known_extensions": False, "threads": 1},
        )
        self._parts.execute(
            "CREATE TABLE parts (trace_id VARCHAR, node VARCHAR, copied TIMESTAMPTZ, rooted BOOLEAN)"
        )

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agentotel-lake-reconcile", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.run_once()
                self.last_error = ""
            except Exception as exc:  # the lake unreachable for a while: the next look finds the same traces
                self.failures += 1
                self.last_error = self._settings.scrub(lake.explain(exc))
                log.warning(
                    "lake reconciliation failed (retried in %.0fs): %s", self._interval, self.last_error
                )

    def run_once(self) -> list[str]:
        """One look, when this node is the searcher: read the parts copied since the last look, rebuild the
        split traces now quiet; returns the ids of those rebuilt."""
        assert self._rebuilder is not None, "open() first"
        now = self._now()
        if searcher(self.live_nodes(now)) != self.node:
            self._forget()  # another node searches: what it reads from here on is not ours to keep
            return []
        self.looks += 1
        self.follow(now)
        due = [
            t
            for t in self.splits.values()
            if not t.settled and t.last_part <= now - (self._quiet if t.rooted else self._quiet_rootless)
        ]
        due.sort(key=lambda t: (t.last_part, t.trace_id))
        rebuilt: list[str] = []
        for start in range(0, len(due), BATCH):
            batch = due[start : start + BATCH]
            shown = self._shown_builds(batch)
            todo = [t.trace_id for t in batch if not whole_build_kept(t, shown.get(t.trace_id))]
            if todo:
                summary = self._rebuilder.run(RescoreRequest(trace_ids=tuple(todo)))
                self.traces_rebuilt += summary.traces
                rebuilt += todo
            for t in batch:
                t.settled = True
        for trace_id in [
            t for t, split in self.splits.items() if split.settled and split.last_part < now - self.window
        ]:
            del self.splits[trace_id]
        return rebuilt

    def follow(self, now: datetime) -> None:
        """Read the index rows committed since the last look (or, first, those of the window) into memory;
        mark the traces they split, and those a node's build of may now be shown, as due."""
        assert self._rebuilder is not None and self._parts is not None
        (snapshot,) = self._rebuilder.read(f"SELECT id FROM {lake.LAKE}.current_snapshot()")[0]
        if self._snapshot is not None and snapshot == self._snapshot:
            return
        since = self._snapshot
        if since is None:
            new = self._arrow(
                f"SELECT trace_id, node, flushed_at, rooted FROM {lake.LAKE}.{lake.PARTS} "
                "WHERE flushed_at > ?",
                [now - self.window],
            )
            built: set[str] = set()
        else:
            try:
                new = self._arrow(
                    f"SELECT trace_id, node, flushed_at, rooted FROM ducklake_table_insertions("
                    f"'{lake.LAKE}', 'main', '{lake.PARTS}', ?, ?)",
                    [since + 1, snapshot],
                )
                built = self._built_by_nodes(since + 1, snapshot)
            except Exception as exc:  # its snapshots expired by maintenance, say: read the window again
                log.info(
                    "reading the lake's new trace parts from its snapshot %s failed "
                    "(%s): reading the last %s",
                    since,
                    self._settings.scrub(str(exc)),
                    self.window,
                )
                self._forget()
                self.follow(now)
                return
        self.parts_read += new.num_rows
        mem = self._parts
        mem.register("_new", new)
        try:
            mem.execute("INSERT INTO parts SELECT * FROM _new")
            split = mem.execute(
                "SELECT trace_id, min(copied), max(copied), bool_or(rooted) FROM parts WHERE trace_id IN "
                "(SELECT trace_id FROM _new) GROUP BY trace_id HAVING count(DISTINCT node) > 1"
            ).fetchall()
        finally:
            mem.unregister("_new")
        mem.execute("DELETE FROM parts WHERE copied < ?", [now - self.window])
        for trace_id, first, last, rooted in split:
            known = self.splits.get(trace_id)
            if known is None:
                self.splits_found += 1
                self.splits[trace_id] = SplitTrace(trace_id, first, last, bool(rooted))
            else:
                known.first_part, known.last_part = min(known.first_part, first), max(known.last_part, last)
                known.rooted = known.rooted or bool(rooted)
                known.settled = False
        for trace_id in built & self.splits.keys():  # a node's build may be shown in place of a whole one
            self.splits[trace_id].settled = False
        self._snapshot = snapshot

    def _arrow(self, sql: str, params: list[Any]) -> pa.Table:
        assert self._rebuilder is not None
        return self._rebuilder.arrow(sql, params)

    def _built_by_nodes(self, first: int, last: int) -> set[str]:
        """The traces a node (not a whole-lake builder) wrote runs of between two
        snapshots, among the split."""
        if not self.splits:
            return set()
        rows = self._arrow(
            f"SELECT DISTINCT trace_id FROM ducklake_table_insertions('{lake.LAKE}', 'main', "
            f"'agent_runs', ?, ?) WHERE NOT contains(node, '{lake.LAKE_BUILDER}')",
            [first, last],
        )
        return set(rows.column("trace_id").to_pylist())

    def _shown_builds(self, batch: Sequence[SplitTrace]) -> dict[str, tuple[str, datetime]]:
        """Per trace of ``batch``, who wrote the build the views show (``lake.shown_builds``) and its commit
        stamp; read from the runs copied since the batch's first part."""
        import pyarrow as pa

        assert self._rebuilder is not None
        ids = pa.table({"trace_id": pa.array([t.trace_id for t in batch], pa.string())})
        rows = self._rebuilder.read_with(
            "_due",
            ids,
            f"SELECT trace_id, node, committed_at FROM {lake.LAKE}.agent_runs WHERE flushed_at >= ? AND "
            f"trace_id IN (SELECT trace_id FROM _due) QUALIFY row_number() OVER (PARTITION BY trace_id ORDER "
            f"BY trace_root IS DISTINCT FROM FALSE DESC, updated_at DESC, flushed_at DESC) = 1",
            [min(t.first_part for t in batch)],
        )
        return {str(t): (str(n), at) for t, n, at in rows}

    def _forget(self) -> None:
        """Drop what was read: it is read again from the window when this node searches next."""
        if self._snapshot is None and not self.splits:
            return
        self._snapshot = None
        self.splits.clear()
        if self._parts is not None:
            self._parts.execute("DELETE FROM parts")

    def live_nodes(self, now: datetime) -> list[str]:
        """The nodes that wrote to the lake (rows or a heartbeat) within ``live_for``, and this one."""
        assert self._rebuilder is not None
        rows = self._rebuilder.read(
            f"SELECT DISTINCT node FROM {lake.LAKE}.{lake.MARKS} WHERE flushed_at >= ?",
            [now - self._live_for],
        )
        return sorted({str(n) for (n,) in rows} | {self.node})

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._interval + 60)
        if self._rebuilder is not None:
            self._rebuilder.close()
            self._rebuilder = None
        if self._parts is not None:
            self._parts.close()
            self._parts = None
