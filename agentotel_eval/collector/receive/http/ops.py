"""``GET /healthz`` (open even with a token, to say the collector is up and which one it is), ``GET /readyz``
(open: 200 while the status is "ok", 503 otherwise, e.g. "degraded" while a lake node cannot copy to its lake)
and ``GET /metrics`` (Prometheus text)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentotel_eval.collector.receive.auth import Authenticator
from agentotel_eval.collector.receive.http.answers import Blocking, JsonAnswer

#: what /healthz tells a client without the token: enough for discovery (a live collector, and which one),
#: nothing about the host or its files
_OPEN_HEALTH = ("status", "token")
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def ops_routes(
    health: Callable[[], dict[str, Any]],
    metrics: Callable[[], str],
    auth: Authenticator | None,
    blocking: Blocking,
) -> list[Route]:
    async def healthz(request: Request) -> Response:
        answer = await blocking.run(health)  # it reads counters under their locks: not on the loop
        if auth is not None and not auth.bearer(request.headers.get("authorization")):
            answer = {key: answer[key] for key in _OPEN_HEALTH if key in answer}
        return JsonAnswer(answer)

    async def readyz(_request: Request) -> Response:
        status = (await blocking.run(health)).get("status")
        return JsonAnswer({"status": status}, status_code=200 if status == "ok" else 503)

    async def scrape(_request: Request) -> Response:
        return Response(await blocking.run(metrics), media_type=METRICS_TYPE)

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", scrape, methods=["GET"]),
    ]
