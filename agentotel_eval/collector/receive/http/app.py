"""The collector's HTTP edge as one Starlette app: the OTLP routes, the JSON API, health and metrics, the web
UI, with the bearer token in front (``auth.BearerAuth``) when one is set. ``HttpApp`` is what the routes need,
as plain callables, so the edge knows nothing of the service; ``HttpReceiver`` serves it
(``server.HttpServer``)."""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

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


class WebUi(Protocol):
    """The web UI served beside the API (``collector.ui.web.WebUi``, wired by the service)."""

    def routes(self, blocking: Blocking, auth: Authenticator | None, *, secure: bool) -> list[BaseRoute]: ...

    def is_ui_path(self, path: str) -> bool:
        """The paths that take the sign-in cookie."""

    def sign_in_page(self, request: Request) -> Response | None:
        """The answer to a page opened without the token; None for any other request."""


@dataclass
class HttpApp:
    """What the HTTP routes need, as plain callables so the receiver knows nothing of the service."""

    ingestor: Ingestor
    max_request_size: int
    query: api.Query
    health: Callable[[], dict[str, Any]]
    metrics: Callable[[], str]
    idle_timeout: float = 60.0
    #: the web UI's pages and sign-in; None: no UI
    ui: WebUi | None = None
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


def refusal(request: Request, ui: WebUi | None = None) -> Response:
    """The 401 of a request without the token, in the form its client reads: an OTLP Status, the sign-in form
    for a page a person opened, JSON for the API. Its body is never read, so its connection closes after."""
    path, method = request.url.path, request.method
    close = CLOSE if method not in ("GET", "HEAD") or announces_body(request) else {}
    if method == "POST" and path in otlp.OTLP_PATHS:
        return otlp.error_response(
            Unauthenticated(NEEDS_TOKEN), otlp.encoding_of(request) or "json", close=bool(close)
        )
    page = ui.sign_in_page(request) if ui is not None else None
    if page is not None:
        return page
    return JsonAnswer({"error": NEEDS_TOKEN}, 401, headers=close)


def _no_cookie(_path: str) -> bool:
    return False


async def _not_found(request: Request, _exc: Exception) -> Response:
    return text(
        404, f"no route for {request.method} {request.url.path}", CLOSE if announces_body(request) else None
    )


async def _not_allowed(request: Request, exc: Exception) -> Response:
    allowed = (exc.headers or {}).get("Allow", "") if isinstance(exc, HTTPException) else ""
    allowed = ", ".join(sorted(m.strip() for m in allowed.split(",") if m.strip()))  # one order, not a set's
    return text(
        405,
        f"{request.method} is not allowed on {request.url.path}; use {allowed}",
        {"Allow": allowed, **CLOSE},
    )


def build_app(parts: HttpApp, blocking: Blocking) -> Starlette:
    routes: list[BaseRoute] = [
        *otlp.otlp_routes(parts.ingestor, parts.max_request_size, blocking),
        *api.api_routes(parts.query, parts.rescore, blocking),
        *ops.ops_routes(parts.health, parts.metrics, parts.auth, blocking),
    ]
    middleware = []
    ui = parts.ui
    if ui is not None:
        routes += ui.routes(blocking, parts.auth, secure=parts.tls is not None)
    if parts.auth is not None:
        middleware.append(
            Middleware(
                BearerAuth,
                auth=parts.auth,
                open_paths=frozenset({"/healthz", "/readyz", "/login", "/logout"}),
                cookie_paths=ui.is_ui_path if ui is not None else _no_cookie,
                refusal=functools.partial(refusal, ui=ui),
            )
        )
    return Starlette(
        routes=routes, middleware=middleware, exception_handlers={404: _not_found, 405: _not_allowed}
    )


class HttpReceiver:
    """Owns the server: ``start()`` binds (raising on a taken port), ``stop_accepting()``, ``shutdown()``."""

    def __init__(self, host: str, port: int, app: HttpApp) -> None:
        self._app = app
        self._blocking = Blocking(app.max_connections)
        self._server = HttpServer(
            host,
            port,
            build_app(app, self._blocking),
            tls=app.tls,
            stats=app.stats,
            limits=ConnectionLimits(
                read_timeout=app.read_timeout,
                idle_timeout=app.idle_timeout,
                max_connections=app.max_connections,
            ),
        )

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
