"""One HTTP connection's guards, around uvicorn's HTTP/1.1 protocol used as it is.

uvicorn parses requests, frames bodies, keeps connections alive, pipelines and applies back-pressure; it
leaves to a proxy in front of it what a port exporters reach directly needs. ``GuardedConnection`` adds that
at the asyncio level, on the ``asyncio.Protocol`` and ``asyncio.Transport`` interfaces alone: it is the class
uvicorn's ``http`` setting names, is built with the arguments uvicorn gives that class, and builds uvicorn's
own httptools protocol with them, to which it hands the connection once its guards allow. It reads the
requests' framing with a parser of its own (httptools, as uvicorn's), so it knows where each request starts,
where its headers end and where its body ends without looking inside uvicorn:

- **TLS** handshakes are made here (``loop.start_tls``) under ``read_timeout``: a stalled one holds nothing
  and is cut then;
- **a connection cap**: one connection over ``max_connections`` is answered 503 with ``Retry-After`` at once
  and closed, before any request is read;
- **an idle timeout** for a connection that never sends a request (uvicorn's keep-alive timeout covers the
  time between requests);
- **a read deadline**: a request must arrive whole (request line, headers, body) within ``read_timeout`` of
  its first byte. A client still sending headers then is cut off; one still sending its body is answered 408
  by the app (``request_guard`` wakes its read). Waiting for the commit afterwards is not the client's time;
- **a header budget**: headers past ``MAX_HEADER_BYTES`` are answered 431 (httptools itself sets no bound);
- **malformed framing** is answered 400 with the parser's reason;
- **a lingering close**: an answer given before the request's body was read (401, 413, 415) closes only the
  sending side, and what the client still sends is read and dropped for a bounded time, so the client reads
  the answer instead of a reset;
- **a half-closed client**: one that stops sending after its request still gets the answer; one that stops in
  the middle of its body is told so (400) instead of dropped.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from collections import deque
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, ClassVar

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

log = logging.getLogger(__name__)

#: request line and headers of one request, at most (the OpenTelemetry Collector's Go server allows 1 MiB;
#: common proxies 8-64 KiB)
MAX_HEADER_BYTES = 64 * 1024
#: a refused connection stays open this long after its 503, so its client reads the answer instead of a reset
LINGER_REFUSED_SECONDS = 2.0
#: an answered request's unread body is read and dropped for at most this long, and this much, before closing
LINGER_BODY_SECONDS = 5.0
LINGER_BODY_BYTES = 256 * 1024 * 1024
#: the key under which each request's ASGI ``scope["state"]`` carries its connection (uvicorn copies the state
#: it is given into every request's scope, as ASGI's lifespan state is)
CONNECTION = "agentotel.connection"


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The guards' settings (``[receiver]``)."""

    read_timeout: float = 30.0
    idle_timeout: float = 60.0
    max_connections: int = 256


@dataclass
class HttpStats:
    """The listener's connections: open now, refused over the cap, requests cut at their read deadline.
    Updated on the loop's thread, read from others."""

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


@dataclass(slots=True)
class BodyWatch:
    """What the connection knows of a request's body, for the app reading it."""

    #: the request did not arrive whole within the read timeout: the app answers 408
    timed_out: bool = False
    #: the client closed its sending side before the body was complete
    ended_early: bool = False
    #: the read timeout, for the app's message
    timeout: float = 30.0


@dataclass(slots=True, eq=False)
class RequestState:
    """What the connection knows of one request, from its first byte until the app is done with it."""

    watch: BodyWatch
    headers_done: bool = False
    #: its body has arrived whole
    complete: bool = False
    #: the app has it (``request_guard``)
    claimed: bool = False
    #: the app has begun its answer
    answering: bool = False
    #: set when the app's read must stop waiting (the deadline passed, or the client stopped sending)
    _woken: asyncio.Future[None] | None = None

    def woken(self) -> asyncio.Future[None]:
        if self._woken is None:
            self._woken = asyncio.get_running_loop().create_future()
            if self.watch.timed_out or self.watch.ended_early:
                self._woken.set_result(None)
        return self._woken

    def wake(self) -> None:
        if self._woken is not None and not self._woken.done():
            self._woken.set_result(None)


@dataclass(eq=False)
class Listener:
    """What the connections of one listener share: the guards' settings, the counters,
    the connections open."""

    limits: ConnectionLimits
    stats: HttpStats
    tls: ssl.SSLContext | None = None
    open: set[GuardedConnection] = field(default_factory=set)

    def protocol(self) -> type[GuardedConnection]:
        """The class to give uvicorn as its ``http`` setting: ``GuardedConnection`` bound to this listener."""
        return type("GuardedConnection", (GuardedConnection,), {"listener": self})

    def close_all(self) -> None:
        for connection in list(self.open):
            connection.abort()


class GuardedConnection(asyncio.Protocol):
    """A connection, with the guards of the module docstring, handed to uvicorn's protocol."""

    listener: ClassVar[Listener]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self._config = config
        self._server_state = server_state
        self._app_state = app_state
        self._loop = _loop or asyncio.get_running_loop()
        self._limits = self.listener.limits
        self._stats = self.listener.stats
        self._transport: asyncio.Transport | None = None
        self._http: HttpToolsProtocol | None = None  # uvicorn's protocol, once the connection is accepted
        self._parser = httptools.HttpRequestParser(self)
        # as uvicorn's parser is: bytes after a request that closes the connection are not an error
        self._parser.set_dangerous_leniencies(lenient_data_after_close=True)
        self._counted = False
        self._dropping = False  # refused or lingering: what arrives is read and dropped
        self._dropped = 0
        self._broken = False  # the framing was malformed: nothing more is parsed
        self._eof = False
        self._early: list[bytes] = []  # what arrived before the handshake's end was seen
        self._idle: asyncio.TimerHandle | None = None
        self._deadline: asyncio.TimerHandle | None = None  # of the request arriving
        self._linger: asyncio.TimerHandle | None = None
        self._requests: deque[RequestState] = deque()  # begun and not yet done with by the app, oldest first
        self._arriving: RequestState | None = None  # the request whose bytes are arriving
        self._header_bytes = 0

    # ---- connections ---------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self.listener.open.add(self)
        tls = self.listener.tls
        if tls is None:
            self._accept(transport)
            return
        transport.pause_reading()  # nothing reaches this protocol until the handshake is made
        self._loop.create_task(self._handshake(transport, tls))

    async def _handshake(self, raw: asyncio.Transport, tls: ssl.SSLContext) -> None:
        try:
            secured = await self._loop.start_tls(
                raw, self, tls, server_side=True, ssl_handshake_timeout=self._limits.read_timeout
            )
        except Exception as exc:  # a client that never completes it, or a plain-text one
            log.debug("TLS handshake failed: %r", exc)  # start_tls has closed the connection
            self.listener.open.discard(self)
            return
        if secured is None or secured.is_closing():
            return
        self._accept(secured)

    def _accept(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        if not self._stats.try_open(self._limits.max_connections):
            self._refuse(transport)
            return
        self._counted = True
        self._http = HttpToolsProtocol(
            config=self._config,
            server_state=self._server_state,
            app_state={**self._app_state, CONNECTION: self},
            _loop=self._loop,
        )
        self._http.connection_made(_Transport(transport, self))
        # a connection that never begins a request is closed as an idle kept-alive one is
        self._idle = self._loop.call_later(self._limits.idle_timeout, transport.close)
        early, self._early = self._early, []
        if early:
            self.data_received(b"".join(early))
        if self._eof and not transport.is_closing() and not self.eof_received():
            transport.close()

    def _refuse(self, transport: asyncio.Transport) -> None:
        """Over the cap: 503 at once, no request read; the connection lingers a moment so
        the client reads it."""
        self._dropping = True
        transport.write(
            plain_answer(
                503,
                "too many open connections (receiver.http_max_connections = "
                f"{self._limits.max_connections}); retry later",
                retry_after=1,
            )
        )
        if transport.can_write_eof():
            transport.write_eof()
        self._linger = self._loop.call_later(LINGER_REFUSED_SECONDS, transport.close)

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._idle, self._deadline, self._linger):
            if timer is not None:
                timer.cancel()
        self.listener.open.discard(self)
        if self._counted:
            self._counted = False
            self._stats.closed()
        if self._http is not None:
            self._http.connection_lost(exc)

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def pause_writing(self) -> None:
        if self._http is not None:
            self._http.pause_writing()

    def resume_writing(self) -> None:
        if self._http is not None:
            self._http.resume_writing()

    # ---- bytes in ------------------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._dropping:
            self._drop(data)
            return
        if self._http is None:
            self._early.append(data)  # TLS: the first bytes came with the end of the handshake
            return
        if self._broken:
            return
        arriving = self._arriving
        if arriving is None or not arriving.headers_done:
            self._header_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._broken = True
            self._answer_and_close(400, f"invalid HTTP request: {exc}", linger=False)
            return
        except httptools.HttpParserUpgrade:
            pass  # no protocol but HTTP/1.1 is served here; uvicorn's parser stops where this one did
        arriving = self._arriving
        if arriving is not None and not arriving.headers_done and self._header_bytes > MAX_HEADER_BYTES:
            self._answer_and_close(431, f"the request line and headers exceed {MAX_HEADER_BYTES} bytes")
            return
        self._http.data_received(data)

    def eof_received(self) -> bool | None:
        """The client closed its sending side. A request it is still waiting on is answered (then the
        connection closes); one whose body stopped short is told so; otherwise the connection closes now."""
        self._eof = True
        if self._http is None and not self._dropping:
            return True  # the handshake's end is not seen yet: decided then
        arriving = self._arriving
        if self._dropping or not self._requests or (arriving is not None and not arriving.headers_done):
            return None  # the transport closes
        if arriving is not None:
            arriving.watch.ended_early = True  # the app reads what came and answers 400
            arriving.wake()
        return True  # keep the transport open to write the answer

    def _drop(self, data: bytes) -> None:
        self._dropped += len(data)
        if self._dropped > LINGER_BODY_BYTES and self._transport is not None:
            self._transport.close()

    # ---- the parser's callbacks ----------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        request = RequestState(BodyWatch(timeout=self._limits.read_timeout))
        self._arriving = request
        self._requests.append(request)
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        self._deadline = self._loop.call_later(self._limits.read_timeout, self._expired)

    def on_headers_complete(self) -> None:
        assert self._arriving is not None
        self._arriving.headers_done = True
        self._header_bytes = 0

    def on_message_complete(self) -> None:
        assert self._arriving is not None
        self._arriving.complete = True
        self._arriving = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        """The read deadline of the request arriving passed."""
        self._deadline = None
        request, transport = self._arriving, self._transport
        if request is None or transport is None or transport.is_closing():
            return
        self._stats.count_timeout()
        request.watch.timed_out = True
        if request.headers_done and not request.answering:
            request.wake()  # the app's read wakes up and answers 408
        else:
            transport.close()  # headers still coming, or an answered request's body: nothing to answer

    # ---- the app's requests (``request_guard``) ------------------------------------------------------------

    def claim(self) -> RequestState | None:
        """The oldest request the app has not had yet: uvicorn hands a connection's requests over in order."""
        for request in self._requests:
            if not request.claimed and request.headers_done:
                request.claimed = True
                return request
        return None

    def done(self, request: RequestState) -> None:
        """The app is done with ``request``; a client that has closed its side is closed
        once all are answered."""
        if request in self._requests:
            self._requests.remove(request)
        if self._eof and not self._requests and request.answering and self._transport is not None:
            self._transport.close()

    # ---- bytes out -----------------------------------------------------------------------------------------

    def close_requested(self) -> None:
        """uvicorn closes the connection. With a body still arriving (the answer came first), close only the
        sending side and read the rest away for a while: closing with unread data would reset the connection,
        which can discard the answer before the client reads it. A client cut off for being slow, or that has
        stopped sending, is not waited for."""
        transport, arriving = self._transport, self._arriving
        if transport is None or transport.is_closing() or self._dropping:
            return
        if arriving is None or arriving.watch.timed_out or self._eof or self._broken:
            transport.close()
            return
        self._linger_body(transport)

    def _linger_body(self, transport: asyncio.Transport) -> None:
        self._dropping = True
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        transport.resume_reading()  # uvicorn may have paused it with the body unread
        if transport.can_write_eof():
            transport.write_eof()
        self._linger = self._loop.call_later(LINGER_BODY_SECONDS, transport.close)

    def is_lingering(self) -> bool:
        return self._dropping

    def _answer_and_close(self, status: int, message: str, *, linger: bool = True) -> None:
        """An answer of the connection's own, before the request reached the app; the connection closes."""
        transport = self._transport
        assert transport is not None
        transport.write(plain_answer(status, message))
        if linger and self._arriving is not None:
            self._linger_body(transport)
        else:
            transport.close()


class _Transport(asyncio.Transport):
    """The connection's transport as uvicorn's protocol sees it: closing it goes through ``close_requested``,
    and it is closing while the connection lingers."""

    def __init__(self, transport: asyncio.Transport, connection: GuardedConnection) -> None:
        super().__init__()
        self._transport = transport
        self._connection = connection

    def close(self) -> None:
        self._connection.close_requested()

    def is_closing(self) -> bool:
        return self._transport.is_closing() or self._connection.is_lingering()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._transport.write(data)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def can_write_eof(self) -> bool:
        return False  # the connection decides when its sending side closes

    def abort(self) -> None:
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)


def plain_answer(status: int, message: str, *, retry_after: int | None = None) -> bytes:
    """A whole text answer written by the connection itself, before any request reached the app; it closes."""
    body = (message + "\n").encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
    )
    if retry_after is not None:
        head += f"Retry-After: {retry_after}\r\n"
    return (head + "Connection: close\r\n\r\n").encode() + body
