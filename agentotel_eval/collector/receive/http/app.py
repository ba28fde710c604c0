"""The collector's HTTP edge as one Starlette app: the OTLP routes, the JSON API, health and metrics, the web UI,
with the bearer token in front (``auth.BearerAuth``) when one is set. ``HttpApp`` is what the routes need, as plain
callables, so the edge knows nothing of the service; ``HttpReceiver`` serves it (``server.HttpServer``)."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from agentotel_eval.collector.receive.auth import NEEDS_TOKEN, Authenticator, BearerAuth
from agentotel_eval.collector.receive.errors import Unauthenticated
from agentotel_eval.collector.receive.http import api, ops, otlp
from agentotel_eval.collector.receive.http.answers import CLOSE, Blocking, JsonAnswer, text
from agentotel_eval.collector.receive.http.bodies import announces_body
from agentotel_eval.collector.receive.http.server import ConnectionLimits, HttpServer, HttpStats
from agentotel_eval.collector.receive.ingest import Ingestor
from agentotel_eval.collector.ui.routes import UiPages, is_page, is_ui_path, ui_routes
from agentotel_eval.collector.ui.sign_in import local_path, sign_in, sign_in_routes


@dataclass
class HttpApp:
    """What the HTTP routes need, as plain callables so the receiver knows nothing of the service."""

    ingestor: Ingestor
    max_request_size: int
    query: api.Query
    health: Callable[[], dict[str, Any]]
    metrics: Callable[[], str]
    idle_timeout: float = 60.0
    #: the web UI's pages; None: no UI
    ui: UiPages | None = None
    rescore: api.Rescore | None = None
    #: a request must arrive whole (request line, headers, body) within this long of its first byte
    read_timeout: float = 30.0
    #: open connections at most; one more is answered 503 and closed
    max_connections: int = 256
    #: the token check; None: no authentication
    auth: Authenticator | None = None
    #: serve HTTPS with this context
    tls: ssl.SSLContext | None = None
    stats: HttpStats = field(default_factory=HttpStats)


def refusal(request: Request) -> Response:
    """The 401 of a request without the token, in the form its client reads: an OTLP Status, the sign-in form for a
    page a person opened, JSON for the API. Its body is never read, so its connection closes after."""
    path, method = request.url.path, request.method
    close = CLOSE if method not in ("GET", "HEAD") or announces_body(request) else {}
    if method == "POST" and path in otlp.OTLP_PATHS:
        return otlp.error_response(Unauthenticated(NEEDS_TOKEN), otlp.encoding_of(request) or "json", close=bool(close))
    if method in ("GET", "HEAD") and is_page(path):
        target = path + (f"?{request.url.query}" if request.url.query else "")
        return sign_in(local_path(target))
    return JsonAnswer({"error": NEEDS_TOKEN}, 401, headers=close)


async def _not_found(request: Request, _exc: Exception) -> Response:
    return text(404, f"no route for {request.method} {request.url.path}", CLOSE if announces_body(request) else None)


async def _not_allowed(request: Request, exc: Exception) -> Response:
    allowed = (exc.headers or {}).get("Allow", "") if isinstance(exc, HTTPException) else ""
    allowed = ", ".join(sorted(m.strip() for m in allowed.split(",") if m.strip()))  # one order, not a set's
    return text(405, f"{request.method} is not allowed on {request.url.path}; use {allowed}",
                {"Allow": allowed, **CLOSE})


def build_app(parts: HttpApp, blocking: Blocking) -> Starlette:
    routes: list[BaseRoute] = [
        *otlp.otlp_routes(parts.ingestor, parts.max_request_size, blocking),
        *api.api_routes(parts.query, parts.rescore, blocking),
        *ops.ops_routes(parts.health, parts.metrics, parts.auth, blocking),
    ]
    middleware = []
    if parts.auth is not None:
        routes += sign_in_routes(parts.auth, secure=parts.tls is not None)
        middleware.append(Middleware(BearerAuth, auth=parts.auth, open_paths=frozenset({"/healthz", "/readyz",
                                                                                        "/login", "/logout"}),
                                     cookie_paths=is_ui_path, refusal=refusal))
    if parts.ui is not None:
        routes += ui_routes(parts.ui, blocking)
    return Starlette(routes=routes, middleware=middleware,
                     exception_handlers={404: _not_found, 405: _not_allowed})


class HttpReceiver:
    """Owns the server: ``start()`` binds (raising on a taken port), ``stop_accepting()``, ``shutdown()``."""

    def __init__(self, host: str, port: int, app: HttpApp) -> None:
        self._app = app
        self._blocking = Blocking(app.max_connections)
        self._server = HttpServer(host, port, build_app(app, self._blocking), tls=app.tls, stats=app.stats,
                                  limits=ConnectionLimits(read_timeout=app.read_timeout, idle_timeout=app.idle_timeout,
                                                max_connections=app.max_connections))

    @property
    def stats(self) -> HttpStats:
        return self._app.stats

    @property
    def address(self) -> tuple[str, int]:
        return self._server.address

    def start(self) -> None:
        self._server.start()

    def stop_accepting(self) -> None:
        """Stop taking connections; requests in flight finish (their threads wait for their commit)."""
        self._server.stop_accepting()

    def shutdown(self) -> None:
        self._server.shutdown()
        self._blocking.close()
