"""The collector's bearer token on both transports: one ``Authenticator``, an ASGI middleware in front of
every HTTP route and a gRPC interceptor in front of both Export services.

With a token every request but ``GET /healthz`` (and the sign-in routes) needs ``Authorization: Bearer
<token>`` (gRPC: the ``authorization`` metadata); the web UI's GETs also take the cookie the sign-in sets, as
a browser cannot send the header. A request without either is refused before its body is read, and
its connection closed.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Callable, Iterable
from typing import Any

import grpc
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

AUTH_CHALLENGE = 'Bearer realm="agentotel-eval"'
UI_COOKIE = "agentotel_session"
NEEDS_TOKEN = "this collector requires a token: send 'Authorization: Bearer <token>'"
_NEEDS_GRPC_TOKEN = "this collector requires a token: send the metadata 'authorization: Bearer <token>'"


class Authenticator:
    """The collector's bearer token, compared in constant time, and the web UI's cookie derived from it (an
    HMAC of a fixed text under the token: the cookie never holds the token). Counts the
    refusals, per transport."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("an empty token authenticates nothing")
        self._token = token.encode()
        self.cookie_value = hmac.new(self._token, b"agentotel-ui", hashlib.sha256).hexdigest()
        self._cookie = self.cookie_value.encode()
        self._failures: dict[str, int] = {}
        self._lock = threading.Lock()

    def token(self, value: str) -> bool:
        return hmac.compare_digest(value.encode(), self._token)

    def bearer(self, header: str | None) -> bool:
        """An ``Authorization`` header (HTTP) or ``authorization`` metadata value (gRPC)
        carrying the token."""
        if not header:
            return False
        scheme, _, credentials = header.strip().partition(" ")
        return scheme.lower() == "bearer" and self.token(credentials.strip())

    def metadata(self, pairs: Iterable[tuple[str, Any]] | None) -> bool:
        """gRPC invocation metadata carrying the token."""
        for key, value in pairs or ():
            if key == "authorization" and isinstance(value, str):
                return self.bearer(value)
        return False

    def cookie(self, header: str | None) -> bool:
        """A ``Cookie`` header carrying the UI's cookie."""
        if not header:
            return False
        for part in header.split(";"):
            name, _, value = part.strip().partition("=")
            if name == UI_COOKIE and hmac.compare_digest(value.strip().encode(), self._cookie):
                return True
        return False

    def failed(self, transport: str) -> None:
        with self._lock:
            self._failures[transport] = self._failures.get(transport, 0) + 1

    def failures(self) -> dict[str, int]:
        with self._lock:
            return dict(self._failures)


class BearerAuth:
    """ASGI middleware: lets a request through with the token (or, for ``cookie_paths``' GETs, the UI's
    cookie), or answers it with ``refusal(request)`` (401 with a challenge) without reading its body."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        auth: Authenticator,
        open_paths: frozenset[str],
        cookie_paths: Callable[[str], bool],
        refusal: Callable[[Request], Response],
    ) -> None:
        self.app = app
        self._auth = auth
        self._open = open_paths
        self._cookie_paths = cookie_paths
        self._refusal = refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._open:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        headers = request.headers
        if self._auth.bearer(headers.get("authorization")) or (
            scope["method"] in ("GET", "HEAD")
            and self._cookie_paths(scope["path"])
            and self._auth.cookie(headers.get("cookie"))
        ):
            await self.app(scope, receive, send)
            return
        self._auth.failed("http")
        response = self._refusal(request)
        response.headers["WWW-Authenticate"] = AUTH_CHALLENGE
        await response(scope, receive, send)


class BearerInterceptor(grpc.ServerInterceptor):
    """gRPC: a call without the token is UNAUTHENTICATED before its handler runs."""

    def __init__(self, auth: Authenticator) -> None:
        self._auth = auth

        def refuse(_request: Any, context: grpc.ServicerContext) -> None:
            self._auth.failed("grpc")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, _NEEDS_GRPC_TOKEN)

        self._refuse = grpc.unary_unary_rpc_method_handler(refuse)

    def intercept_service(self, continuation: Callable[[Any], Any], handler_call_details: Any) -> Any:
        if self._auth.metadata(handler_call_details.invocation_metadata):
            return continuation(handler_call_details)
        return self._refuse
