"""The HTTP listener: ``uvicorn.Server`` with its public settings, serving the Starlette app on uvicorn's
HTTP/1.1 protocol (httptools' parser), on a thread of its own, with the guards an exporter-facing port needs
that uvicorn leaves to a proxy in front of it:

- per connection (``connection.GuardedConnection``, uvicorn's ``http`` setting): TLS handshakes under the read
  timeout, the connection cap (503 with ``Retry-After`` before any request is read), the idle timeout of a
  connection that never sends a request, a request's read deadline from its first byte, the header budget
  (431), malformed framing answered 400 with the reason, a lingering close after an answer given before the
  body was read, and an answer for a client that closes its sending side;
- per request (``request_guard.RequestGuard``, ASGI middleware in front of the app): the app's read of a body
  that came too slowly, or stopped short, returns so the app answers 408 or 400.

uvicorn's own settings do the rest: ``timeout_keep_alive`` closes a connection idle between requests,
``headers`` names the server, ``date_header`` dates the answers, and its shutdown closes idle connections at
once and busy ones after their answer. None of its settings can hold the connection guards, which is why they
sit at the asyncio interface in front of its protocol instead:

- ``limit_concurrency`` is not the cap: it answers only once a request's headers have come (a silent
  connection over it holds its socket), without ``Retry-After``, and it counts the connection asking;
- ``h11_max_incomplete_event_size`` bounds headers for the h11 protocol only, not httptools';
- TLS through ``ssl_*`` has asyncio's 60 s handshake timeout, which uvicorn does not expose;
- nothing bounds the time a request takes to arrive, or closes after an early answer without resetting the
  connection, or answers a client that half-closes.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn

from agentotel_eval.collector.receive.http.connection import ConnectionLimits, HttpStats, Listener
from agentotel_eval.collector.receive.http.request_guard import RequestGuard

__all__ = ["ConnectionLimits", "HttpServer", "HttpStats", "server_tls_context"]

#: how long ``start()`` waits for the server to listen
_START_TIMEOUT = 10.0


def server_tls_context(cert: str, key: str) -> ssl.SSLContext:
    """HTTPS with the certificate (chain) and key, TLS 1.2 at least."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    return context


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # The protocol named, not 0: asyncio turns Nagle's algorithm off only on sockets that say they are TCP,
    # and with it on, a body written after its headers waits for the client's delayed ACK (40 ms on a
    # keep-alive connection).
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
    """Serves ``app`` on ``host:port``: ``start()`` binds (raising ``OSError`` on a taken port) and starts the
    server's thread; ``stop_accepting()`` closes the listener and lets requests in flight finish;
    ``shutdown()`` stops."""

    def __init__(
        self,
        host: str,
        port: int,
        app: Callable[..., Any],
        *,
        limits: ConnectionLimits | None = None,
        tls: ssl.SSLContext | None = None,
        stats: HttpStats | None = None,
    ) -> None:
        self._address = (host, port)
        self._app = app
        self._limits = limits = limits or ConnectionLimits()
        self.stats = stats or HttpStats()
        self._listener = Listener(limits, self.stats, tls)
        self._sock: socket.socket | None = None
        self._bound: tuple[str, int] | None = None
        self._server: uvicorn.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._failure: list[BaseException] = []

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
        config = uvicorn.Config(
            RequestGuard(self._app),
            http=self._listener.protocol(),
            ws="none",
            lifespan="off",
            # uvicorn's own messages are the client's business (a malformed request) or routine (started,
            # stopping); its errors (an app's exception) still show
            log_config=None,
            log_level="error",
            access_log=False,
            proxy_headers=False,
            server_header=False,
            date_header=True,
            headers=[("server", "agentotel-eval")],
            timeout_keep_alive=self._limits.idle_timeout,  # type: ignore[arg-type]  # any number of seconds
            backlog=128,
        )
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._run, args=(server, self._sock), name="agentotel-http", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.002)
        if not server.started:
            self.shutdown()
            raise self._failure[0] if self._failure else OSError(f"cannot serve HTTP on {host}:{port}")

    def _run(self, server: uvicorn.Server, sock: socket.socket) -> None:
        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            try:
                await server.serve(sockets=[sock])
            finally:
                self._listener.close_all()  # what outlived the grace

        try:
            asyncio.run(serve())
        except BaseException as exc:
            self._failure.append(exc)

    def stop_accepting(self) -> None:
        """Stop taking connections; requests in flight finish (and their connections then close)."""
        server, sock, thread = self._server, self._sock, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        # uvicorn's shutdown closes the listening socket (then idle connections) first
        deadline = time.monotonic() + 1.0
        while sock is not None and sock.fileno() != -1 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)

    def shutdown(self, grace: float = 5.0) -> None:
        """Stop accepting, give requests in flight ``grace`` seconds, close every connection, stop."""
        self.stop_accepting()
        server, thread, loop = self._server, self._thread, self._loop
        if server is not None and thread is not None:
            thread.join(grace)
            if thread.is_alive():
                server.force_exit = True  # stop waiting for the connections left
                if loop is not None and not loop.is_closed():
                    loop.call_soon_threadsafe(self._listener.close_all)
                thread.join(5)
        self._thread = None
        self._server = None
        if self._sock is not None:
            self._sock.close()
