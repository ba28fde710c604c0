"""How long a node on a shared lake waits before it takes a split trace as quiet or another node as gone, and the
reconciler started with those times. The nodes are assumed to share ``flush_interval``."""

from __future__ import annotations

from agentotel_eval.collector.config import CollectorConfig, LakeConfig
from agentotel_eval.collector.lake.reconciler import Reconciler


def quiet_after(cfg: CollectorConfig) -> float:
    """A split trace is quiet once every node that holds part of it has had time to complete it (its grace period)
    and copy its build (two flushes)."""
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
