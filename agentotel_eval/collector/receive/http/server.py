"""The HTTP listener: uvicorn's HTTP/1.1 protocol (httptools' parser) on an asyncio loop of its own thread, serving
the Starlette app, with the guards an exporter-facing port needs that uvicorn leaves to a proxy in front of it.

uvicorn parses requests, frames bodies (Content-Length or chunked), keeps connections alive, pipelines, answers
``Expect: 100-continue`` only when the app reads the body, and applies back-pressure. What is added here
(``GuardedProtocol``):

- **a connection cap**: one connection over ``max_connections`` is answered 503 with ``Retry-After`` at once and
  closed, before any request is read;
- **a read deadline**: a request must arrive whole (request line, headers, body) within ``read_timeout`` of its
  first byte. A client still sending headers then is cut off; one still sending its body is answered 408 by the app
  (``BodyWatch.timed_out`` wakes its read). Waiting for the commit afterwards is not the client's time;
- **an idle timeout** for a connection that never sends a request, as uvicorn has for kept-alive ones;
- **a header budget**: headers past ``MAX_HEADER_BYTES`` are answered 431 (httptools itself sets no bound);
- **a lingering close**: an answer given before the request's body was read (401, 413, 415) closes only the sending
  side, and what the client still sends is read and dropped for a bounded time, so the client reads the answer
  instead of a reset;
- **a half-closed client**: one that stops sending in the middle of its body is told so (400) instead of dropped.

TLS handshakes are made by the loop under ``read_timeout`` (a stalled one holds no thread and is cut then).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

log = logging.getLogger(__name__)


class _QuietLogger(logging.Logger):
    """uvicorn's protocol logger: what it warns about (malformed requests, a client's upgrade) is the client's
    business, so it goes out at debug, under this module's logger."""

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.debug(msg, *args, **kwargs)


_protocol_log = _QuietLogger(f"{__name__}.protocol")
_protocol_log.parent = log

#: request line and headers of one request, at most (the OpenTelemetry Collector's Go server allows 1 MiB; common
#: proxies 8-64 KiB)
MAX_HEADER_BYTES = 64 * 1024
#: a refused connection stays open this long after its 503, so its client reads the answer instead of a reset
LINGER_REFUSED_SECONDS = 2.0
#: an answered request's unread body is read and dropped for at most this long, and this much, before closing
LINGER_BODY_SECONDS = 5.0
LINGER_BODY_BYTES = 256 * 1024 * 1024
#: the ASGI scope extension under which a request's ``BodyWatch`` is (``{"watch": BodyWatch}``)
WATCH = "agentotel.body"
#: the connection of a request whose body was not read must be closed: the app says so with this header
CLOSE = (b"connection", b"close")


@dataclass(slots=True)
class BodyWatch:
    """What the connection knows of a request's body, for the app reading it."""

    #: the request did not arrive whole within the read timeout: the app answers 408
    timed_out: bool = False
    #: the client closed its sending side before the body was complete
    ended_early: bool = False
    #: the read timeout, for the app's message
    timeout: float = 30.0


@dataclass
class HttpStats:
    """The listener's connections: open now, refused over the cap, requests cut at their read deadline. Updated on
    the loop's thread, read from others."""

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


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The guards' settings (``[receiver]``)."""

    read_timeout: float = 30.0
    idle_timeout: float = 60.0
    max_connections: int = 256


class _AnswerFirst:
    """A request's transport as uvicorn's request cycle sees it: closing it after an answer given before the body
    was read lingers instead (``GuardedProtocol.close_after_answer``)."""

    __slots__ = ("_protocol", "_transport")

    def __init__(self, transport: asyncio.Transport, protocol: GuardedProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def write(self, data: bytes) -> None:
        self._transport.write(data)

    def close(self) -> None:
        self._protocol.close_after_answer()

    def is_closing(self) -> bool:
        return self._transport.is_closing() or self._protocol.lingering

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the guards of the module docstring."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None, *, limits: ConnectionLimits, stats: HttpStats) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.logger = _protocol_log
        self.access_log = False
        self._limits = limits
        self._stats = stats
        self._counted = False
        self._refused: asyncio.BaseTransport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._in_message = False  # a request has begun and its body has not all arrived
        self._headers_done = False
        self._header_bytes = 0
        self._watch = BodyWatch(timeout=limits.read_timeout)
        self.lingering = False
        self._dropped = 0

    # ---- connections ----------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if not self._stats.try_open(self._limits.max_connections):
            self._refuse(transport)
            return
        self._counted = True
        super().connection_made(transport)
        # a connection that never sends a request is closed as an idle kept-alive one is
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._deadline, self._linger):
            if timer is not None:
                timer.cancel()
        if self._refused is not None:
            return
        if self._counted:
            self._counted = False
            self._stats.closed()
        super().connection_lost(exc)

    def _refuse(self, transport: asyncio.Transport) -> None:
        """Over the cap: 503 at once, no request read; the connection lingers a moment so the client reads it."""
        self._refused = transport
        transport.write(_plain_answer(503, "too many open connections (receiver.http_max_connections = "
                                           f"{self._limits.max_connections}); retry later", retry_after=1))
        if transport.can_write_eof():
            transport.write_eof()
        self._linger = self.loop.call_later(LINGER_REFUSED_SECONDS, transport.close)

    def data_received(self, data: bytes) -> None:
        if self._refused is not None or self.lingering:
            self._drop(data)
            return
        if not self._headers_done:
            self._header_bytes += len(data)
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:  # uvicorn's answer, with what was wrong
            self.send_400_response(f"invalid HTTP request: {exc}\n")
            return
        except httptools.HttpParserUpgrade:
            self._unsupported_upgrade_warning()  # no protocol but HTTP/1.1 is served here
        if self._in_message and not self._headers_done and self._header_bytes > MAX_HEADER_BYTES \
                and not self.transport.is_closing():
            self._answer_and_close(431, f"the request line and headers exceed {MAX_HEADER_BYTES} bytes")

    def eof_received(self) -> bool | None:  # type: ignore[override]
        """The client closed its sending side. A request it is still waiting on is answered (then the connection
        closes); one whose body stopped short is told so; otherwise the connection closes now."""
        cycle = self.cycle
        if self._refused is not None or self.lingering or cycle is None or cycle.response_complete \
                or (self._in_message and not self._headers_done):
            return None  # the transport closes
        if self._in_message:
            self._watch.ended_early = True  # the app reads what came and answers 400
            cycle.more_body = False
            cycle.message_event.set()
        cycle.keep_alive = False
        return True  # keep the transport open to write the answer

    def _drop(self, data: bytes) -> None:
        self._dropped += len(data)
        if self._dropped > LINGER_BODY_BYTES:
            (self._refused or self.transport).close()

    # ---- requests -------------------------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_message = True
        self._headers_done = False
        self._watch = BodyWatch(timeout=self._limits.read_timeout)
        self.scope["extensions"] = {WATCH: {"watch": self._watch}}
        if self._deadline is None:
            self._deadline = self.loop.call_later(self._limits.read_timeout, self._expired)

    def on_headers_complete(self) -> None:
        self._headers_done = True
        self._header_bytes = 0
        super().on_headers_complete()
        self.cycle.transport = _AnswerFirst(self.transport, self)  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_message = False
        self._headers_done = False
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        """The read deadline of the request in progress passed."""
        self._deadline = None
        if not self._in_message or self.transport.is_closing():
            return
        self._stats.count_timeout()
        self._watch.timed_out = True
        cycle = self.cycle
        if self._headers_done and cycle is not None and not cycle.response_started:
            cycle.keep_alive = False
            cycle.message_event.set()  # the app's read wakes up and answers 408
        else:
            self.transport.close()  # headers still coming, or an answered request's body: nothing to answer

    def close_after_answer(self) -> None:
        """The app's answer asked to close the connection. With the body still arriving (the answer came first),
        close only the sending side and read the rest away for a while: closing with unread data would reset the
        connection, which can discard the answer before the client reads it. A client cut off for being slow is not
        waited for again."""
        if not self._in_message or self._watch.timed_out or self.transport.is_closing():
            self.transport.close()
            return
        self.lingering = True
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._linger = self.loop.call_later(LINGER_BODY_SECONDS, self.transport.close)

    def _answer_and_close(self, status: int, message: str) -> None:
        self.transport.write(_plain_answer(status, message))
        self.close_after_answer()


def _plain_answer(status: int, message: str, *, retry_after: int | None = None) -> bytes:
    """A whole text answer written by the connection itself, before any request reached the app; it closes."""
    body = (message + "\n").encode()
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\n")
    if retry_after is not None:
        head += f"Retry-After: {retry_after}\r\n"
    return (head + "Connection: close\r\n\r\n").encode() + body


def server_tls_context(cert: str, key: str) -> ssl.SSLContext:
    """HTTPS with the certificate (chain) and key, TLS 1.2 at least."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    return context


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # The protocol named, not 0: asyncio turns Nagle's algorithm off only on sockets that say they are TCP, and with
    # it on, a body written after its headers waits for the client's delayed ACK (40 ms on a keep-alive connection).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class HttpServer:
    """Serves ``app`` on ``host:port``: ``start()`` binds (raising ``OSError`` on a taken port) and starts the loop's
    thread; ``stop_accepting()`` closes the listener and lets requests in flight finish; ``shutdown()`` stops."""

    def __init__(self, host: str, port: int, app: Callable[..., Any], *, limits: ConnectionLimits = ConnectionLimits(),
                 tls: ssl.SSLContext | None = None, stats: HttpStats | None = None) -> None:
        self._address = (host, port)
        self._app = app
        self._limits = limits
        self._tls = tls
        self.stats = stats or HttpStats()
        self._sock: socket.socket | None = None
        self._bound: tuple[str, int] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._state = ServerState()
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def address(self) -> tuple[str, int]:
        return self._bound or self._address

    def start(self) -> None:
        if self._thread is not None:
            return
        host, port = self._address
        try:
            self._sock = _bind(host, port)
        except OSError as exc:
            raise OSError(f"cannot listen for HTTP on {host}:{port}: {exc.strerror or exc}") from None
        bound = self._sock.getsockname()
        self._bound = (str(bound[0]), int(bound[1]))
        config = Config(self._app, http=GuardedProtocol, ws="none", lifespan="off", log_config=None,
                        access_log=False, proxy_headers=False, server_header=False, date_header=False,
                        timeout_keep_alive=self._limits.idle_timeout)  # type: ignore[arg-type]
        config.load()
        loop = asyncio.new_event_loop()
        self._loop = loop
        ready = threading.Event()
        failure: list[BaseException] = []

        def protocol() -> GuardedProtocol:
            return GuardedProtocol(config, self._state, {}, loop, limits=self._limits, stats=self.stats)

        async def serve() -> None:
            try:
                assert self._sock is not None
                self._server = await loop.create_server(
                    protocol, sock=self._sock, ssl=self._tls, backlog=128,
                    ssl_handshake_timeout=self._limits.read_timeout if self._tls is not None else None)
                self._tick()
            except BaseException as exc:
                failure.append(exc)
            finally:
                ready.set()

        def run() -> None:
            asyncio.set_event_loop(loop)
            started = loop.create_task(serve())
            loop.run_forever()
            started.cancel()

        self._thread = threading.Thread(target=run, name="agentotel-http", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self.shutdown()
            raise failure[0]

    def _tick(self) -> None:
        """The default headers, with a Date refreshed every second as an origin server's answers carry one."""
        self._state.default_headers = [(b"server", b"agentotel-eval"),
                                       (b"date", formatdate(time.time(), usegmt=True).encode())]
        assert self._loop is not None
        self._loop.call_later(1.0, self._tick)

    def _call(self, fn: Callable[[], Any], timeout: float = 5.0) -> None:
        """Run ``fn`` on the loop's thread and wait for it."""
        loop = self._loop
        if loop is None or loop.is_closed() or not loop.is_running():
            return
        done = threading.Event()

        def call() -> None:
            try:
                fn()
            finally:
                done.set()

        loop.call_soon_threadsafe(call)
        done.wait(timeout)

    def stop_accepting(self) -> None:
        """Stop taking connections; requests in flight finish (and their connections then close)."""
        if self._stopped:
            return
        self._stopped = True

        def close() -> None:
            if self._server is not None:
                self._server.close()
            for connection in list(self._state.connections):
                connection.shutdown()  # idle ones close now, busy ones after their answer

        self._call(close)

    def shutdown(self, grace: float = 5.0) -> None:
        """Stop accepting, give requests in flight ``grace`` seconds, close every connection, stop the loop."""
        self.stop_accepting()
        deadline = time.monotonic() + grace
        while self._state.tasks and time.monotonic() < deadline:
            time.sleep(0.02)
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:

            def stop() -> None:
                for connection in list(self._state.connections):
                    connection.transport.close()
                for task in list(self._state.tasks):
                    task.cancel()
                loop.call_later(0.05, loop.stop)

            if loop.is_running():
                loop.call_soon_threadsafe(stop)
            thread.join(5)
            if not loop.is_running():
                with contextlib.suppress(Exception):
                    loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()
        self._thread = None
        self._loop = None
        if self._sock is not None:
            self._sock.close()
