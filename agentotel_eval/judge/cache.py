"""On-disk cache of judge answers, so re-running an evaluation costs nothing.

The key is a SHA-256 of the model, the exact messages and the parameters that shape the answer (temperature,
JSON mode, prompt version); change any of them and the entry no longer matches. Only answers that passed
validation are stored, so a malformed reply is retried on the next run instead of being replayed forever.

One small JSON file per entry (``<dir>/<k[:2]>/<k>.json``), written to a temporary file in the same directory
and moved into place with ``os.replace``: a reader sees the old entry or the new one, never half of one,
whatever the number of threads or processes sharing the directory. A file that cannot be read
is treated as a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentotel_eval.frozen import thaw

CACHE_FORMAT = 1


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    text: str
    cost_usd: float | None  # what the answer cost when it was first obtained
    model: str
    created_at: float


def cache_key(
    model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any] | None = None
) -> str:
    """A stable hex key for (model, messages, parameters); dict key order does not matter."""
    payload = {
        "format": CACHE_FORMAT,
        "model": model,
        "messages": thaw(list(messages)),
        "params": thaw(dict(params or {})),
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """A directory of cached judge answers. Safe to share between threads, tasks and processes."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

    def _path(self, key: str) -> Path:
        if len(key) < 8 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedAnswer | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if (
            not isinstance(data, dict)
            or data.get("format") != CACHE_FORMAT
            or not isinstance(data.get("text"), str)
        ):
            return None
        cost = data.get("cost_usd")
        return CachedAnswer(
            text=data["text"],
            cost_usd=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
            model=str(data.get("model", "")),
            created_at=float(data.get("created_at") or 0.0),
        )

    def put(self, key: str, text: str, *, cost_usd: float | None, model: str) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "format": CACHE_FORMAT,
            "model": model,
            "text": text,
            "cost_usd": cost_usd,
            "created_at": time.time(),
        }
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(record, handle, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def __len__(self) -> int:
        if not self.directory.is_dir():
            return 0
        return sum(1 for _ in self.directory.glob("??/*.json"))

    def clear(self) -> None:
        """Remove every entry (the directory itself stays)."""
        for path in self.directory.glob("??/*.json"):
            with contextlib.suppress(OSError):
                path.unlink()


def resolve_cache(value: ResponseCache | str | os.PathLike[str] | bool | None) -> ResponseCache | None:
    """A metric's ``cache=`` argument as a cache: False disables; None means ``runtime.judge_cache_dir``."""
    if value is False:
        return None
    if value is True:
        raise ValueError("cache=True is ambiguous: pass a directory, a ResponseCache, False, or None")
    if isinstance(value, ResponseCache):
        return value
    if value is None:
        from agentotel_eval.runtime import judge_cache_dir

        directory = judge_cache_dir.get()
        return ResponseCache(directory) if directory is not None else None
    if isinstance(value, str | os.PathLike):
        return ResponseCache(value)
    raise TypeError(f"cache must be a directory, a ResponseCache, False or None, got {type(value).__name__}")
