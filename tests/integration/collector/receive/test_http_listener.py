"""The HTTP listener itself (``HttpServer``: uvicorn's server and protocol with the connection's guards)
serving a small app on 127.0.0.1 with real sockets: what the guards must leave as uvicorn does it (pipelining,
``Expect: 100-continue``, a graceful stop), and that it uses uvicorn only through its public settings."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import pkgutil
import socket
import threading
import time
from collections.abc import Iterator
from typing import BinaryIO

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

import agentotel_eval.collector.receive.http as http_package
from agentotel_eval.collector.receive.errors import ReceiverError
from agentotel_eval.collector.receive.http.bodies import read_body
from agentotel_eval.collector.receive.http.server import ConnectionLimits, HttpServer

READ_TIMEOUT = 1.0


class Held:
    """A route that answers only once released (on a thread, as the collector's blocking work runs)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    async def route(self, _request: Request) -> Response:
        self.entered.set()
        await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 20)
        return PlainTextResponse("released")


async def echo(request: Request) -> Response:
    try:
        body = await read_body(request, 1 << 20)
    except (
        ReceiverError
    ) as exc:  # as the collector's routes answer: the body was not read, the connection closes
        return PlainTextResponse(str(exc), exc.http_status, headers={"Connection": "close"})
    return PlainTextResponse(f"{request.url.path} {len(body)} {hashlib.sha256(body).hexdigest()[:12]}")


@pytest.fixture
def held() -> Held:
    return Held()


@pytest.fixture
def server(held: Held) -> Iterator[HttpServer]:
    app = Starlette(routes=[Route("/echo/{name}", echo, methods=["POST"]), Route("/held", held.route)])
    running = HttpServer(
        "127.0.0.1",
        0,
        app,
        limits=ConnectionLimits(read_timeout=READ_TIMEOUT, idle_timeout=10.0, max_connections=8),
    )
    running.start()
    try:
        yield running
    finally:
        held.release.set()
        running.shutdown()


def read_answer(stream: BinaryIO) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 answer (with a Content-Length) from a connection's stream."""
    status = int(stream.readline().split()[1])
    headers: dict[str, str] = {}
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, stream.read(int(headers.get("content-length", "0")))


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:12]


def test_pipelined_requests_are_answered_in_order_each_with_its_own_body(server: HttpServer) -> None:
    bodies = [b"first" * 1000, b"", b"third" * 30_000]
    chunked = b"".join(
        b"%x\r\n" % len(part) + part + b"\r\n" for part in (bodies[2][:70_000], bodies[2][70_000:])
    )
    wire = (
        b"POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(bodies[0])
        + bodies[0]
        + b"POST /echo/b HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
        + b"POST /echo/c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunked
        + b"0\r\n\r\n"
    )
    with socket.create_connection(server.address, timeout=10) as sock, sock.makefile("rb") as stream:
        sock.sendall(wire)  # all three at once: the second and third wait behind the first
        answers = [read_answer(stream) for _ in bodies]
    assert [status for status, _, _ in answers] == [200, 200, 200]
    assert [body.decode() for _, _, body in answers] == [
        f"/echo/{name} {len(body)} {digest(body)}" for name, body in zip("abc", bodies, strict=True)
    ]
    assert all("connection" not in headers for _, headers, _ in answers)  # kept alive throughout


def test_a_pipelined_request_whose_body_stalls_gets_its_own_408_after_the_answer_before_it(
    server: HttpServer,
) -> None:
    whole = b"whole" * 100
    wire = (
        b"POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(whole)
        + whole
        + b"POST /echo/b HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
        + b"only ten b"
    )
    with socket.create_connection(server.address, timeout=10) as sock, sock.makefile("rb") as stream:
        started = time.monotonic()
        sock.sendall(wire)
        first = read_answer(stream)
        second = read_answer(stream)
        assert stream.read() == b""  # then the connection is closed
        elapsed = time.monotonic() - started
    assert first[0] == 200 and first[2].decode() == f"/echo/a {len(whole)} {digest(whole)}"
    assert second[0] == 408 and second[1]["connection"] == "close"
    assert READ_TIMEOUT * 0.9 <= elapsed < READ_TIMEOUT + 2
    assert server.stats.timed_out == 1


def test_expect_100_continue_is_answered_once_the_app_reads(server: HttpServer) -> None:
    body = b"x" * 5000
    with socket.create_connection(server.address, timeout=10) as sock, sock.makefile("rb") as stream:
        sock.sendall(
            b"POST /echo/e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n"
            % len(body)
        )
        assert stream.readline() == b"HTTP/1.1 100 Continue\r\n" and stream.readline() == b"\r\n"
        sock.sendall(body)
        status, _, answer = read_answer(stream)
    assert status == 200 and answer.decode() == f"/echo/e {len(body)} {digest(body)}"


def test_the_answers_name_the_server_and_carry_a_date(server: HttpServer) -> None:
    with socket.create_connection(server.address, timeout=10) as sock, sock.makefile("rb") as stream:
        sock.sendall(b"POST /echo/d HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        _, headers, _ = read_answer(stream)
    assert headers["server"] == "agentotel-eval"
    assert headers["date"].endswith(" GMT")


def test_stopping_lets_a_request_in_flight_finish_and_takes_no_new_connection(
    server: HttpServer, held: Held
) -> None:
    idle = socket.create_connection(server.address, timeout=10)
    with socket.create_connection(server.address, timeout=10) as busy, busy.makefile("rb") as stream:
        busy.sendall(b"GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
        assert held.entered.wait(10)
        stopping = threading.Thread(target=server.shutdown, kwargs={"grace": 10.0})
        stopping.start()
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # the listener closes first
                try:
                    socket.create_connection(server.address, timeout=1).close()
                except ConnectionRefusedError:
                    break
                time.sleep(0.02)
            else:
                pytest.fail("the listener still takes connections while stopping")
            assert idle.recv(1024) == b""  # an idle connection is closed at once
            held.release.set()
            status, headers, body = read_answer(stream)  # the busy one gets its answer, then is closed
            assert (status, body) == (200, b"released")
            assert headers["connection"] == "close"
            assert stream.read() == b""
        finally:
            held.release.set()
            stopping.join(15)
            idle.close()
    assert not stopping.is_alive()
    assert server.stats.open == 0


def test_the_listener_subclasses_nothing_of_uvicorn() -> None:
    """uvicorn is used through its public settings, its server and its protocol as they are: no class of the
    listener derives from one of uvicorn's, whose insides may change in any release."""
    classes = []
    for module_info in pkgutil.iter_modules(http_package.__path__, f"{http_package.__name__}."):
        module = importlib.import_module(module_info.name)
        classes += [
            cls for _, cls in inspect.getmembers(module, inspect.isclass) if cls.__module__ == module.__name__
        ]
    assert len(classes) >= 5
    for cls in classes:
        assert not any(base.__module__.split(".")[0] == "uvicorn" for base in inspect.getmro(cls)), cls
