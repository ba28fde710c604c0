"""OTLP/HTTP receiver and the collector's small HTTP API, on the standard library's threading HTTP server.

Routes: ``POST /v1/traces``, ``POST /v1/logs`` (OTLP, protobuf or JSON, gzip/deflate), ``POST /v1/query``
(read-only SQL), ``POST /v1/rescore`` (re-score stored runs), ``GET /healthz``, ``GET /metrics`` (Prometheus
text), and the web UI's pages (``agentotel_eval.collector.ui``). OTLP answers follow the OTLP/HTTP spec: the response is in the
request's encoding; errors carry a ``google.rpc.Status`` body; 400 undecodable, 413 too large, 415 unknown content
type or encoding, 405 wrong method, 503 + ``Retry-After`` when the write queue is full.

Each connection is served by its own thread, which blocks until its records are committed; a client cannot hold
one for long without sending: a request must arrive whole within ``read_timeout`` of its first byte (every read
waits only for what is left of that time), an idle keep-alive connection is closed after ``idle_timeout``, and at
most ``max_connections`` are open at once (one more is answered 503 by the accepting thread and closed). Over TLS
the handshake is made on the connection's thread, under the same read timeout.

With a token (``Authenticator``) every request but ``GET /healthz`` needs ``Authorization: Bearer <token>``; the web
UI's GETs also take the cookie ``/login`` sets, as a browser cannot send the header. A request without either is
answered 401 before its body is read, and its connection closed.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import logging
import math
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from agentotel_eval.collector.receive.body import inflate, read_body
from agentotel_eval.collector.receive.errors import (
    BadRequest,
    PayloadTooLarge,
    ReceiverError,
    RequestTimeout,
    Unauthenticated,
    UnsupportedMediaType,
)
from agentotel_eval.collector.receive.ingest import ExportOutcome, Ingestor
from agentotel_eval.collector.ui.routes import Answer as UiAnswer
from agentotel_eval.collector.ui.routes import is_page, is_ui_path, sign_in

log = logging.getLogger(__name__)

OTLP_PATHS = {"/v1/traces": "traces", "/v1/logs": "logs"}
CONTENT_TYPES = {
    "application/x-protobuf": "protobuf",
    "application/protobuf": "protobuf",
    "application/json": "json",
}
_POST_ONLY = ("/v1/query", "/v1/rescore")
_MEDIA_TYPE = {"protobuf": "application/x-protobuf", "json": "application/json"}
_GRPC_CODES = {"INVALID_ARGUMENT": code_pb2.INVALID_ARGUMENT, "RESOURCE_EXHAUSTED": code_pb2.RESOURCE_EXHAUSTED,
               "UNAVAILABLE": code_pb2.UNAVAILABLE, "UNAUTHENTICATED": code_pb2.UNAUTHENTICATED,
               "DEADLINE_EXCEEDED": code_pb2.DEADLINE_EXCEEDED}
_MAX_QUERY_BODY = 1024 * 1024
_MAX_LOGIN_BODY = 16 * 1024
_READ_BUFFER = 64 * 1024
#: refused connections kept open a moment after their 503, so the client reads it instead of a reset
_LINGER_SECONDS = 2.0
#: an answered request's unread body is read and dropped for at most this long, and this much, before closing
_LINGER_BODY_SECONDS = 5.0
_LINGER_BODY_BYTES = 256 * 1024 * 1024
_MAX_LINGERING = 512

AUTH_CHALLENGE = 'Bearer realm="agentotel-eval"'
UI_COOKIE = "agentotel_session"
_NEEDS_TOKEN = "this collector requires a token: send 'Authorization: Bearer <token>'"


class Authenticator:
    """The collector's bearer token, compared in constant time, and the web UI's cookie derived from it (an HMAC
    of a fixed text under the token: the cookie never holds the token). Counts the refusals, per transport."""

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
        """An ``Authorization`` header (HTTP) or ``authorization`` metadata value (gRPC) carrying the token."""
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


@dataclass
class HttpStats:
    """The HTTP listener's connections: open now, refused over the cap, requests cut at their read deadline."""

    open: int = 0
    refused: int = 0
    timed_out: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def try_open(self, cap: int) -> bool:
        with self._lock:
            if self.open >= cap:
                self.refused += 1
                return False
            self.open += 1
            return True

    def closed(self) -> None:
        with self._lock:
            self.open -= 1

    def count_timeout(self) -> None:
        with self._lock:
            self.timed_out += 1


def server_tls_context(cert: str, key: str) -> ssl.SSLContext:
    """HTTPS with the certificate (chain) and key, TLS 1.2 at least."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    return context


def local_path(value: str) -> str:
    """``value`` if it is a path on this server, else ``/``: where a sign-in may lead (never another site)."""
    if (not value.startswith("/") or value.startswith("//") or "\\" in value
            or any(not 0x21 <= ord(c) < 0x7F for c in value)
            or value.split("?", 1)[0] in ("/login", "/logout")):
        return "/"
    return value


@dataclass
class HttpApp:
    """What the HTTP routes need, as plain callables so the receiver knows nothing of the service."""

    ingestor: Ingestor
    max_request_size: int
    query: Callable[[dict[str, Any]], dict[str, Any]]  # raises QueryError
    health: Callable[[], dict[str, Any]]
    metrics: Callable[[], str]
    idle_timeout: float = 60.0
    #: the web UI: (path, query string) -> its answer, or None when the path is not one of its pages
    ui: Callable[[str, str], UiAnswer | None] | None = None
    #: ``POST /v1/rescore``: the JSON body -> (HTTP status, JSON answer)
    rescore: Callable[[Any], tuple[int, dict[str, Any]]] | None = None
    #: a request must arrive whole (request line, headers, body) within this long of its first byte
    read_timeout: float = 30.0
    #: open connections at most; one more is answered 503 and closed
    max_connections: int = 256
    #: the token check; None: no authentication
    auth: Authenticator | None = None
    #: serve HTTPS with this context
    tls: ssl.SSLContext | None = None
    stats: HttpStats = field(default_factory=HttpStats)


def export_response(outcome: ExportOutcome, encoding: str) -> bytes:
    """The Export*ServiceResponse of an outcome, with partial_success when records were rejected."""
    if outcome.signal == "traces":
        response: Any = ExportTraceServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_spans = outcome.rejected
            response.partial_success.error_message = outcome.message
    else:
        response = ExportLogsServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_log_records = outcome.rejected
            response.partial_success.error_message = outcome.message
    if encoding == "json":
        return json.dumps(json_format.MessageToDict(response)).encode()
    return response.SerializeToString()


def status_body(error: ReceiverError, encoding: str) -> bytes:
    status = status_pb2.Status(code=_GRPC_CODES.get(error.grpc_code, code_pb2.UNKNOWN), message=str(error))
    if encoding == "json":
        return json.dumps(json_format.MessageToDict(status)).encode()
    return status.SerializeToString()


class _TimedReader(io.RawIOBase):
    """A connection's reads, each given only the time it may still take: up to ``idle`` for the first byte of a
    request, then what is left of the request's deadline (``arm``). A client sending a byte a second, or fewer
    bytes than its Content-Length, is cut at the deadline instead of holding its thread."""

    def __init__(self, sock: socket.socket, idle: float, limit: float, stats: HttpStats) -> None:
        self._sock = sock
        self._idle = idle
        self._limit = limit
        self._stats = stats
        self._deadline: float | None = None
        self._expired = False

    def readable(self) -> bool:
        return True

    def arm(self) -> None:
        self._deadline = time.monotonic() + self._limit
        self._expired = False

    def disarm(self) -> None:
        self._deadline = None

    def _timeout(self) -> TimeoutError:
        if not self._expired:
            self._expired = True
            self._stats.count_timeout()
        return TimeoutError(f"the request did not arrive whole within {self._limit:g}s "
                            "(receiver.http_read_timeout)")

    def readinto(self, buffer: Any) -> int:
        deadline = self._deadline
        if deadline is None:
            self._sock.settimeout(self._idle)
        else:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._timeout()
            self._sock.settimeout(left)
        try:
            return self._sock.recv_into(buffer)
        except TimeoutError:
            if deadline is None:
                raise
            raise self._timeout() from None


class _SocketWriter(io.BufferedIOBase):
    """Writes straight to the socket (as ``socketserver``'s), each within ``timeout``: a client that does not take
    its answer does not hold the thread longer."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self._sock = sock
        self._timeout = timeout

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sock.settimeout(self._timeout)
        self._sock.sendall(data)
        with memoryview(data) as view:
            return view.nbytes


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are written separately: with Nagle's algorithm on, a keep-alive client's delayed ACK
    # held every body back about 40 ms (docs/benchmarks.md).
    disable_nagle_algorithm = True
    server_version = "agentotel-eval"
    sys_version = ""
    server: OTLPHTTPServer

    def setup(self) -> None:
        app = self.server.app
        self.connection = self.request
        if self.disable_nagle_algorithm:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self._reader = _TimedReader(self.connection, app.idle_timeout, app.read_timeout, app.stats)
        self._buffered = io.BufferedReader(self._reader, _READ_BUFFER)
        self.rfile = self._buffered
        self.wfile = _SocketWriter(self.connection, app.idle_timeout)
        self._usable = True
        if isinstance(self.connection, ssl.SSLSocket):
            # Here, on the connection's own thread: a client that never finishes its handshake holds only this.
            self.connection.settimeout(app.read_timeout)
            try:
                self.connection.do_handshake()
            except (OSError, ValueError) as exc:  # ssl.SSLError and timeouts are OSErrors
                log.debug("TLS handshake with %s failed: %s", self.address_string(), exc)
                self._usable = False

    def handle(self) -> None:
        if self._usable:
            super().handle()

    def handle_one_request(self) -> None:
        self._reader.disarm()
        try:
            first = self._buffered.peek(1)  # up to the idle timeout: a keep-alive connection may wait this long
        except OSError:
            first = b""
        if not first:
            self.close_connection = True
            return
        self._reader.arm()  # the whole request must arrive within the read timeout from here
        self._body_read = False
        self._timed_out = False
        super().handle_one_request()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            # a client cut off for being slow is not waited for again
            if self._usable and self.close_connection and not getattr(self, "_body_read", True) \
                    and not getattr(self, "_timed_out", False) and self._announced_body():
                self._linger()

    def _announced_body(self) -> bool:
        headers = getattr(self, "headers", None)
        if headers is None:
            return False
        length = headers.get("Content-Length", "")
        return "chunked" in headers.get("Transfer-Encoding", "").lower() or (length.isdigit() and int(length) > 0)

    def _linger(self) -> None:
        """An answer given before its request's body was read (413, 415, 401): the client is still sending it, and
        closing now would reset the connection, which can discard the answer before the client reads it. So the
        sending side is closed and what still comes is read and dropped, bounded in time and bytes."""
        sock = self.connection
        deadline = time.monotonic() + _LINGER_BODY_SECONDS
        dropped = 0
        try:
            if not isinstance(sock, ssl.SSLSocket):
                sock.shutdown(socket.SHUT_WR)
            while dropped < _LINGER_BODY_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                data = sock.recv(_READ_BUFFER)
                if not data:
                    break
                dropped += len(data)
        except (OSError, ValueError):
            pass

    def handle_expect_100(self) -> bool:
        # A request about to be refused for its token gets no "100 Continue": its body is never wanted.
        auth = self.server.app.auth
        if auth is not None and self._path() != "/login" and not auth.bearer(self.headers.get("Authorization")):
            return True
        return super().handle_expect_100()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    # ---- plumbing ----

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload, ensure_ascii=False).encode(), "application/json", headers)

    def _send_text(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, (text + "\n").encode(), "text/plain; charset=utf-8", headers)

    def _path(self) -> str:
        return self.path.split("?", 1)[0]

    def _read_body(self, limit: int) -> bytes:
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        try:
            body = read_body(self.rfile, self.headers.get("Content-Length"), chunked, limit)
        except ReceiverError:
            self.close_connection = True  # the unread body would otherwise be parsed as the next request
            raise
        except TimeoutError as exc:
            self.close_connection = True
            self._timed_out = True
            raise RequestTimeout(str(exc)) from None
        self._reader.disarm()  # read whole: waiting for the commit is not the client's time
        self._body_read = True
        return body

    def _body_error(self, exc: Exception) -> int:
        """The status of a JSON API's unreadable body: 408 when it did not arrive in time, else 400."""
        return exc.http_status if isinstance(exc, RequestTimeout) else 400

    # ---- authentication ----

    def _bearer(self) -> bool:
        auth = self.server.app.auth
        return auth is not None and auth.bearer(self.headers.get("Authorization"))

    def _allowed(self, path: str) -> bool:
        """Whether the request may go on: no token required, the bearer header, or (GETs of the UI) its cookie."""
        auth = self.server.app.auth
        if auth is None or auth.bearer(self.headers.get("Authorization")):
            return True
        if self.command in ("GET", "HEAD") and is_ui_path(path) and auth.cookie(self.headers.get("Cookie")):
            return True
        self._refuse(path)
        return False

    def _refuse(self, path: str) -> None:
        """401 without reading the body; the connection is closed, as the unread body cannot be skipped."""
        auth = self.server.app.auth
        assert auth is not None
        auth.failed("http")
        if self.command not in ("GET", "HEAD") or self.headers.get("Content-Length", "0") != "0" \
                or "Transfer-Encoding" in self.headers:
            self.close_connection = True
        challenge = {"WWW-Authenticate": AUTH_CHALLENGE}
        if path in OTLP_PATHS and self.command == "POST":
            media_type = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
            encoding = CONTENT_TYPES.get(media_type, "json")
            body = status_body(Unauthenticated(_NEEDS_TOKEN), encoding)
            self._send(401, body, _MEDIA_TYPE[encoding], challenge)
        elif self.command in ("GET", "HEAD") and is_page(path):
            answer = sign_in(local_path(self.path))
            self._send(answer.status, answer.body, answer.content_type, {**answer.headers, **challenge})
        else:
            self._send_json(401, {"error": _NEEDS_TOKEN}, challenge)

    def _cookie_header(self, value: str, max_age: int | None = None) -> str:
        parts = [f"{UI_COOKIE}={value}", "Path=/", "HttpOnly", "SameSite=Strict"]
        if max_age is not None:
            parts.append(f"Max-Age={max_age}")
        if self.server.app.tls is not None:
            parts.append("Secure")
        return "; ".join(parts)

    def _login_form(self) -> None:
        query = self.path.split("?", 1)[1] if "?" in self.path else ""
        target = parse_qs(query).get("next", ["/"])[0]
        answer = sign_in(local_path(target), status=200)
        self._send(answer.status, answer.body, answer.content_type, answer.headers)

    def _login(self) -> None:
        """The sign-in form's POST: a right token sets the UI's cookie and leads on to the page asked for."""
        auth = self.server.app.auth
        assert auth is not None
        try:
            form = parse_qs(self._read_body(_MAX_LOGIN_BODY).decode("utf-8", "replace"))
        except ReceiverError as exc:
            self._send_text(self._body_error(exc), str(exc))
            return
        target = local_path(form.get("next", ["/"])[0])
        if not auth.token(form.get("token", [""])[0]):
            auth.failed("http")
            answer = sign_in(target, "That is not this collector's token.")
            self._send(answer.status, answer.body, answer.content_type,
                       {**answer.headers, "WWW-Authenticate": AUTH_CHALLENGE})
            return
        self._send(303, b"", "text/plain; charset=utf-8",
                   {"Location": target, "Set-Cookie": self._cookie_header(auth.cookie_value), "Cache-Control": "no-store"})

    def _logout(self) -> None:
        if self.command == "POST":
            self.close_connection = True  # a body, if any, is not read
        self._send(303, b"", "text/plain; charset=utf-8",
                   {"Location": "/", "Set-Cookie": self._cookie_header("", max_age=0), "Cache-Control": "no-store"})

    def _guarded(self, path: str, login: Callable[[], None]) -> bool:
        """With a token: the sign-in routes, or the refusal of a request without credentials. True when this
        answered the request."""
        if path == "/login":
            login()
            return True
        if path == "/logout":
            self._logout()
            return True
        return not self._allowed(path)

    # ---- methods ----

    def do_POST(self) -> None:
        path = self._path()
        if self.server.app.auth is not None and self._guarded(path, self._login):
            return
        if path in OTLP_PATHS:
            self._otlp(OTLP_PATHS[path])
        elif path == "/v1/query":
            self._query()
        elif path == "/v1/rescore":
            self._rescore()
        elif path in ("/healthz", "/metrics") or is_ui_path(path):
            self._method_not_allowed("GET")
        else:
            self.close_connection = True  # the body is not read
            self._send_text(404, f"no route for POST {path}")

    def do_GET(self) -> None:
        path = self._path()
        app = self.server.app
        if app.auth is not None and path != "/healthz" and self._guarded(path, self._login_form):
            return
        if path == "/healthz":
            health = app.health()
            if app.auth is not None and not self._bearer():
                # Enough for discovery (a live collector, and which one), nothing about the host or its files.
                health = {key: health[key] for key in ("status", "token") if key in health}
            self._send_json(200, health)
        elif path == "/metrics":
            self._send(200, app.metrics().encode(), "text/plain; version=0.0.4; charset=utf-8")
        elif path in OTLP_PATHS or path in _POST_ONLY:
            self._method_not_allowed("POST")
        else:
            self._ui(path)

    def do_HEAD(self) -> None:
        self.do_GET()

    def _other(self) -> None:
        path = self._path()
        if not self._allowed(path):
            return
        if path in OTLP_PATHS or path in _POST_ONLY:
            self._method_not_allowed("POST")
        elif path in ("/healthz", "/metrics") or is_ui_path(path):
            self._method_not_allowed("GET")
        else:
            self._send_text(404, f"no route for {self.command} {path}")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _other

    def _method_not_allowed(self, allowed: str) -> None:
        self.close_connection = True
        self._send_text(405, f"{self.command} is not allowed on {self._path()}; use {allowed}", {"Allow": allowed})

    # ---- routes ----

    def _ui(self, path: str) -> None:
        app = self.server.app
        query = self.path.split("?", 1)[1] if "?" in self.path else ""
        try:
            answer = app.ui(path, query) if app.ui is not None else None
        except Exception as exc:  # a page must never take the connection down
            log.exception("UI page %s failed", path)
            self._send_text(500, f"internal error: {exc}")
            return
        if answer is None:
            self._send_text(404, f"no route for GET {path}")
            return
        self._send(answer.status, answer.body, answer.content_type, answer.headers)

    def _otlp(self, signal: str) -> None:
        app = self.server.app
        media_type = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        encoding = CONTENT_TYPES.get(media_type)
        try:
            if encoding is None:
                self.close_connection = True
                raise UnsupportedMediaType(
                    f"unsupported Content-Type {media_type or '(none)'!r}; "
                    "use application/x-protobuf or application/json"
                )
            body = self._read_body(app.max_request_size)
            body = inflate(body, self.headers.get("Content-Encoding", ""), app.max_request_size)
            outcome = app.ingestor.ingest_body(signal, encoding, body, "http")
        except ReceiverError as exc:
            self._error(exc, encoding or "json", signal)
            return
        except Exception as exc:  # never let a bug take the connection down silently
            log.exception("unexpected error on POST /v1/%s", signal)
            self._error(BadRequest(f"internal error: {exc}"), encoding or "json", signal, status=500)
            return
        self._send(200, export_response(outcome, encoding), _MEDIA_TYPE[encoding])

    def _error(self, exc: ReceiverError, encoding: str, signal: str, status: int | None = None) -> None:
        headers: dict[str, str] = {}
        if exc.retryable:
            headers["Retry-After"] = str(max(1, math.ceil(getattr(exc, "retry_after", 1.0))))
        if isinstance(exc, UnsupportedMediaType | PayloadTooLarge):
            self.server.app.ingestor.stats.count("http", signal, "too_large" if isinstance(exc, PayloadTooLarge)
                                                  else "unsupported")
        self._send(status or exc.http_status, status_body(exc, encoding), _MEDIA_TYPE[encoding], headers)

    def _rescore(self) -> None:
        app = self.server.app
        try:
            payload = json.loads(self._read_body(_MAX_QUERY_BODY) or b"{}")
        except (ReceiverError, ValueError) as exc:
            self._send_json(self._body_error(exc), {"error": str(exc)})
            return
        if app.rescore is None:
            self._send_json(404, {"error": "this server does not re-score"})
            return
        try:
            status, answer = app.rescore(payload)
        except Exception as exc:
            log.exception("re-score failed")
            self._send_json(500, {"error": f"internal error: {exc}"})
            return
        self._send_json(status, answer)

    def _query(self) -> None:
        from agentotel_eval.store.query import QueryError

        app = self.server.app
        try:
            body = self._read_body(_MAX_QUERY_BODY)
            payload = json.loads(body or b"{}")
            if not isinstance(payload, dict) or not isinstance(payload.get("sql"), str):
                raise ValueError('expected a JSON object {"sql": "SELECT ..."}')
        except (ReceiverError, ValueError) as exc:
            self._send_json(self._body_error(exc), {"error": str(exc), "kind": "invalid"})
            return
        try:
            result = app.query(payload)
        except QueryError as exc:
            if exc.kind == "unavailable":
                self._send_json(503, {"error": str(exc), "kind": exc.kind}, {"Retry-After": "1"})
            else:
                self._send_json(400, {"error": str(exc), "kind": exc.kind})
            return
        except Exception as exc:
            log.exception("query failed")
            self._send_json(500, {"error": f"internal error: {exc}", "kind": "internal"})
            return
        self._send_json(200, result)


class OTLPHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: HttpApp) -> None:
        self.app = app
        self._lingering: list[tuple[socket.socket, float]] = []
        super().__init__(address, _Handler)
        if app.tls is not None:
            # No handshake here, in the accepting thread: each connection makes its own on its thread.
            self.socket = app.tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.app.stats.try_open(self.app.max_connections):
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.app.stats.closed()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.app.stats.closed()

    def _refuse(self, request: socket.socket) -> None:
        """Over the connection cap: 503 written by this thread without blocking (it fits in the socket's buffer),
        no thread started. Over TLS no answer can be written before a handshake, so the connection is closed."""
        if isinstance(request, ssl.SSLSocket):
            self.shutdown_request(request)
            return
        message = (f"too many open connections (receiver.http_max_connections = {self.app.max_connections}); "
                   "retry later\n").encode()
        head = ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(message)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n").encode()
        try:
            request.setblocking(False)
            request.send(head + message)
            request.shutdown(socket.SHUT_WR)
        except OSError:
            self.close_request(request)
            return
        if len(self._lingering) >= _MAX_LINGERING:
            self.close_request(request)
        else:
            self._lingering.append((request, time.monotonic() + _LINGER_SECONDS))

    def service_actions(self) -> None:
        """Close refused connections once their client has read the 503 and closed (or after a moment): closing
        with its request unread would reset the connection, and a reset can discard the answer before it is read."""
        if not self._lingering:
            return
        now = time.monotonic()
        keep: list[tuple[socket.socket, float]] = []
        for sock, until in self._lingering:
            done = now >= until
            try:
                for _ in range(4):  # a little at a time: a client that keeps sending cannot hold this thread
                    if not sock.recv(65536):
                        done = True  # the client closed its side
                        break
            except BlockingIOError:
                pass
            except OSError:
                done = True
            if done:
                self.close_request(sock)
            else:
                keep.append((sock, until))
        self._lingering = keep

    def server_close(self) -> None:
        super().server_close()
        for sock, _ in self._lingering:
            self.close_request(sock)
        self._lingering = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):  # a client that reset, timed out or broke off its TLS: nothing to report
            log.debug("connection from %s ended: %s", client_address, exc)
        else:
            log.exception("unexpected error serving %s", client_address)


class HttpReceiver:
    """Owns the server and its accept thread: ``start()`` binds (raising on a taken port), ``shutdown()`` stops."""

    def __init__(self, host: str, port: int, app: HttpApp) -> None:
        self._address = (host, port)
        self._app = app
        self._server: OTLPHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def stats(self) -> HttpStats:
        return self._app.stats

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            return self._address
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        if self._server is not None:
            return
        try:
            self._server = OTLPHTTPServer(self._address, self._app)
        except OSError as exc:
            raise OSError(f"cannot listen for HTTP on {self._address[0]}:{self._address[1]}: {exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="agentotel-http", daemon=True)
        self._thread.start()

    def stop_accepting(self) -> None:
        """Stop taking connections; requests in flight finish (their threads wait for their commit)."""
        if self._server is not None and not self._stopped:
            self._stopped = True
            self._server.shutdown()
            self._server.server_close()

    def shutdown(self) -> None:
        if self._server is not None:
            self.stop_accepting()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

