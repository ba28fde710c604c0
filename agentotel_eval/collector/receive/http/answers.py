"""What the HTTP routes share: JSON and text answers, the header that closes a connection whose request body
was not read, and the threads that blocking work (ingest waiting for its commit, DuckDB reads)
runs on, off the loop."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from starlette.responses import Response

T = TypeVar("T")

#: an answer given before the request's body was read: the connection closes (lingering) after it
CLOSE = {"Connection": "close"}


class JsonAnswer(Response):
    """JSON as the collector has always written it (non-ASCII kept; NaN as the stdlib writes it)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False).encode()


def text(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        message + "\n", status, headers=dict(headers or {}), media_type="text/plain; charset=utf-8"
    )


class Blocking:
    """Threads for the routes' blocking calls: an ingest waits for its commit (up to the export timeout) and a
    page or query for DuckDB. One thread a call in flight, up to ``workers`` (the connection cap): as many
    concurrent exports as connections, as on a thread-per-connection server; threads
    start only when needed."""

    def __init__(self, workers: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentotel-http")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, functools.partial(fn, *args))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
