"""The request side of the connection's guards, as ASGI middleware in front of the app.

Each request's scope carries its connection (``connection.CONNECTION`` in ``scope["state"]``); the middleware
takes what the connection knows of the request and

- puts its ``BodyWatch`` in the scope's extensions (``WATCH``), for ``bodies.read_body``;
- makes the app's ``receive()`` return when the request's read deadline passes or the client stops sending in
  the middle of the body, with ``http.disconnect`` (and the watch saying which), so the app answers 408 or 400
  instead of waiting on a body that will not come;
- tells the connection when the answer starts and when the app is done, so a deadline after the answer began
  closes the connection instead, and a client that has closed its sending side is closed once
  it has its answers.

Without a connection (an app served by other means), requests pass through untouched.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentotel_eval.collector.receive.http.connection import CONNECTION, GuardedConnection, RequestState

#: the ASGI scope extension under which a request's ``BodyWatch`` is (``{"watch": BodyWatch}``)
WATCH = "agentotel.body"
_STOPPED: Message = {"type": "http.disconnect"}


class RequestGuard:
    """ASGI middleware: each request tied to what its connection knows of it (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.get("state")
        connection = state.pop(CONNECTION, None) if scope["type"] == "http" and state else None
        request = connection.claim() if isinstance(connection, GuardedConnection) else None
        if connection is None or request is None:
            await self.app(scope, receive, send)
            return
        scope["extensions"] = {**(scope.get("extensions") or {}), WATCH: {"watch": request.watch}}

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                request.answering = True
            await send(message)

        try:
            await self.app(scope, _guarded_receive(receive, request), guarded_send)
        finally:
            connection.done(request)


def _guarded_receive(receive: Receive, request: RequestState) -> Receive:
    async def guarded() -> Message:
        if request.complete:
            return await receive()  # the body has arrived whole: uvicorn has it and answers at once
        return await _receive_until_woken(receive, request)

    return guarded


async def _receive_until_woken(receive: Receive, request: RequestState) -> Message:
    """uvicorn's ``receive()``, unless the request is woken first (its deadline passed, or the client stopped
    sending): then ``http.disconnect``. What uvicorn already holds is returned first, as its ``receive()``
    returns at once when it holds a part of the body."""
    loop = asyncio.get_running_loop()
    reading: asyncio.Task[Message] = loop.create_task(receive())  # type: ignore[arg-type]
    woken = request.woken()

    def stop(_: object) -> None:
        # after the read's first step: one that returns at once has returned; one that waits on bytes that
        # will not come is cancelled, and nothing of the body is lost
        loop.call_soon(reading.cancel)

    # a callback, not ``asyncio.wait``: this runs for every part of every body, and a wake is rare
    woken.add_done_callback(stop)
    try:
        return await reading
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if woken.done() and not (current is not None and current.cancelling()):
            return _STOPPED
        raise
    finally:
        woken.remove_done_callback(stop)
