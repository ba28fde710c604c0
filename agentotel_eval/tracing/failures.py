"""Tracing must never break the traced function: failures are swallowed here and logged once per kind."""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("agentotel_eval.tracing")

_seen: set[tuple[str, str]] = set()
_lock = threading.Lock()


def report_failure(stage: str, exc: BaseException) -> None:
    """Log a tracing failure at ``stage`` the first time this (stage, exception type)
    occurs; stay silent after."""
    key = (stage, f"{type(exc).__module__}.{type(exc).__qualname__}")
    with _lock:
        if key in _seen:
            return
        _seen.add(key)
    logger.warning(
        "agentotel tracing failed while %s (%s: %s); the traced function is unaffected and "
        "further failures of this kind are not logged",
        stage,
        type(exc).__name__,
        exc,
        exc_info=exc,
    )


def warn_once(key: str, message: str, *args: object) -> None:
    """Log a usage warning once per ``key``."""
    with _lock:
        if ("warn", key) in _seen:
            return
        _seen.add(("warn", key))
    logger.warning(message, *args)


def reset_for_tests() -> None:
    with _lock:
        _seen.clear()
