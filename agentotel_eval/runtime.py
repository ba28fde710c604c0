"""Ambient settings shared between ``evaluate()`` and the metrics it runs, without importing each other."""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path

#: Set by ``evaluate()`` (cache on by default): the directory of the on-disk judge response cache.
#: A judge metric with no cache of its own uses it; None means no cache.
judge_cache_dir: ContextVar[Path | None] = ContextVar("agentotel_judge_cache_dir", default=None)
