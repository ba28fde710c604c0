"""How long a node on a shared lake waits before it takes a split trace as quiet or another node as gone, and
the reconciler and peer reads started with those times (``join_lake``). The nodes are assumed to share
``flush_interval``."""

from __future__ import annotations

from agentotel_eval.collector.config import CollectorConfig, LakeConfig
from agentotel_eval.collector.lake.flusher import LakeFlusher
from agentotel_eval.collector.lake.peer_spans import PeerReader, PeerSpans
from agentotel_eval.collector.lake.reconciler import Reconciler
from agentotel_eval.collector.store.reader import TraceReader


def quiet_after(cfg: CollectorConfig) -> float:
    """A split trace is quiet once every node that holds part of it has had time to complete it (its grace
    period) and copy its build (two flushes)."""
    assert cfg.lake is not None
    return cfg.assembler.grace_period + 2 * cfg.lake.flush_interval + 1.0


def away_after(lake: LakeConfig) -> float:
    """A node that copied nothing for three flush intervals (and 5 s) is taken to have left the ring."""
    return 3 * lake.flush_interval + 5.0


def start_reconciler(cfg: CollectorConfig) -> Reconciler:
    """The node's reconciler, open and looking every ``reconcile_interval``."""
    assert cfg.lake is not None
    interval = cfg.lake.reconcile_interval
    reconciler = Reconciler(
        cfg.lake.settings(),
        cfg,
        cfg.lake.node_name(),
        interval=interval,
        quiet=quiet_after(cfg),
        live_for=max(60.0, 10 * cfg.lake.flush_interval, 3 * interval),
        quiet_rootless=quiet_after(cfg) + cfg.assembler.max_wait,
    )
    reconciler.open()
    reconciler.start()
    return reconciler


def join_lake(
    cfg: CollectorConfig, flusher: LakeFlusher, reader: TraceReader
) -> tuple[Reconciler | None, PeerSpans | None]:
    """Open the node's copy to the lake and start it; on a lake several nodes share, the reconciler (when
    ``reconcile_interval`` is set) and the reads of other nodes' parts of a split trace (when ``reader`` takes
    them). One machine's lake (a SQLite catalog) has one node: no trace can be split between nodes."""
    assert cfg.lake is not None
    flusher.open()
    flusher.start()
    if cfg.lake.settings().sqlite_file is not None:
        return None, None
    reconciler = start_reconciler(cfg) if cfg.lake.reconcile_interval > 0 else None
    peers = None
    if isinstance(reader, PeerReader):
        peers = reader.peers = PeerSpans(
            cfg.lake.settings(), cfg.lake.node_name(), away=away_after(cfg.lake), quiet=quiet_after(cfg)
        )
    return reconciler, peers
