"""A trace's spans that other nodes stored, read from the lake as this node reads the trace
back to assemble it.

While the ring changes (a node joined, left or came back), a trace in flight can reach two nodes: each holds a
part, and each would build and score its part. A part always shows it: it has no root span, or a span whose
parent it does not hold. So while the ring may have changed (``TRACE_WINDOW`` after a change seen in the
lake's flush marks, and after this node's own start), the spans and log records other nodes copied of such
traces in that window are added to what this node read from its file. The part that is assembled last (the one
without the root waits for it longest) then builds the whole trace, the newest build the lake's views show.
Outside such a window nothing is read: a trace whose root lives in another service is incomplete
here too, every time.

The reconciler (``reconciler``) remains what guarantees the result: a part built before the other reached the
lake is rebuilt with it there. Reading the lake never fails an assembly: an error is logged and the trace is
built from this node's part.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from agentotel_eval.collector.lake.reconciler import TRACE_WINDOW, changes_in
from agentotel_eval.collector.store.reader import TraceReader
from agentotel_eval.store import lake
from agentotel_eval.store.rows import LOG_SELECT, SPAN_SELECT, SPAN_SELECT_ASSEMBLY

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)

#: how often the flush marks are read again to know whether the ring may be changing
CHECK_EVERY = 1.0


def incomplete_traces(
    trace_ids: Sequence[str], span_ids: Sequence[str], parents: Sequence[str | None]
) -> set[str]:
    """The traces, of the spans given as columns, that have no root span or a span whose
    parent is not given."""
    spans: dict[str, set[str]] = {}
    wanted: dict[str, set[str]] = {}
    rooted: set[str] = set()
    for trace_id, span_id, parent in zip(trace_ids, span_ids, parents, strict=True):
        spans.setdefault(trace_id, set()).add(span_id)
        if parent:
            wanted.setdefault(trace_id, set()).add(parent)
        else:
            rooted.add(trace_id)
    return {t for t, held in spans.items() if t not in rooted or wanted.get(t, set()) - held}


class PeerSpans:
    """Reads other nodes' parts of traces from the lake, through a sealed reader of its own."""

    def __init__(
        self,
        settings: lake.LakeSettings,
        node: str,
        *,
        away: float,
        quiet: float,
        clock: Any = lambda: datetime.now(UTC),
    ) -> None:
        self.node = node
        self._settings = settings
        self._away = timedelta(seconds=away)
        self._window = TRACE_WINDOW + timedelta(seconds=quiet)
        self._now = clock
        self._con: duckdb.DuckDBPyConnection = lake.open_reader(settings)
        self._changing_until = self._now() + self._window  # this node has just joined the ring
        self._checked = 0.0
        self._lock = threading.Lock()
        self.reads = 0
        self.spans_added = 0
        self.failures = 0

    def close(self) -> None:
        self._con.close()

    def _read(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        cur = self._con.cursor()
        try:
            return cur.execute(sql, params).fetchall()
        finally:
            cur.close()

    def changing(self) -> bool:
        """Whether the ring may have changed within ``TRACE_WINDOW`` (the marks read at most every second)."""
        now = self._now()
        with self._lock:
            if time.monotonic() - self._checked >= CHECK_EVERY:
                self._checked = time.monotonic()
                latest = max(changes_in(self._read, now, self._away), default=None)
                if latest is not None:
                    self._changing_until = max(self._changing_until, latest + self._window)
            return now < self._changing_until

    def add(self, spans: pa.Table, logs: pa.Table, *, whole: bool) -> tuple[pa.Table, pa.Table]:
        """``spans`` and ``logs`` (a read of this node's file) with the other nodes' records of the incomplete
        traces among them, while the ring may be changing."""
        if not spans.num_rows:
            return spans, logs
        try:
            if not self.changing():
                return spans, logs
            wanted = incomplete_traces(
                spans.column("trace_id").to_pylist(),
                spans.column("span_id").to_pylist(),
                spans.column("parent_span_id").to_pylist(),
            )
            if not wanted:
                return spans, logs
            since = self._now() - self._window
            their_spans = self._records(
                "spans", SPAN_SELECT if whole else SPAN_SELECT_ASSEMBLY, wanted, since, "span_id"
            )
            their_logs = self._records("logs", LOG_SELECT, wanted, since, "log_id")
        except (
            Exception
        ) as exc:  # the lake unreachable: build from this node's part; the reconciler catches up
            self.failures += 1
            log.warning(
                "could not read other nodes' parts of traces from the lake (built from this node's): %s",
                self._settings.scrub(lake.explain(exc)),
            )
            return spans, logs
        self.reads += 1
        held = set(
            zip(spans.column("trace_id").to_pylist(), spans.column("span_id").to_pylist(), strict=True)
        )
        keep = [
            (t, s) not in held
            for t, s in zip(
                their_spans.column("trace_id").to_pylist(),
                their_spans.column("span_id").to_pylist(),
                strict=True,
            )
        ]
        their_spans = their_spans.filter(pa.array(keep, pa.bool_()))
        self.spans_added += their_spans.num_rows
        return (_concat(spans, their_spans), _concat(logs, their_logs))

    def _records(
        self, table: str, select: str, trace_ids: Iterable[str], since: datetime, key: str
    ) -> pa.Table:
        """Other nodes' rows of ``table`` for these traces, copied since ``since``, each once."""
        cur = self._con.cursor()
        try:
            cur.register("_peer_ids", pa.table({"trace_id": pa.array(sorted(trace_ids), pa.string())}))
            return cur.execute(
                f"SELECT {select} FROM {lake.LAKE}.{table} WHERE node <> ? AND flushed_at > ? AND trace_id "
                f"IN (SELECT trace_id FROM _peer_ids) QUALIFY row_number() OVER (PARTITION BY trace_id, "
                f"{key} ORDER BY flushed_at DESC) = 1",
                [self.node, since],
            ).to_arrow_table()
        finally:
            cur.close()


def _concat(ours: pa.Table, theirs: pa.Table) -> pa.Table:
    if not theirs.num_rows:
        return ours
    return pa.concat_tables([ours, theirs.cast(ours.schema)])


class PeerReader(TraceReader):
    """``TraceReader`` that adds other nodes' parts of incomplete traces (``PeerSpans``)
    once ``peers`` is set."""

    peers: PeerSpans | None = None

    def load_tables(
        self,
        trace_ids: Iterable[str],
        lo_ns: int,
        hi_ns: int,
        *,
        whole: bool = True,
        commits: Sequence[int] | None = None,
    ) -> tuple[pa.Table, pa.Table]:
        spans, logs = super().load_tables(trace_ids, lo_ns, hi_ns, whole=whole, commits=commits)
        peers = self.peers
        return peers.add(spans, logs, whole=whole) if peers is not None else (spans, logs)
