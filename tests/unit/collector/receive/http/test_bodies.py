"""Request bodies: size limits on the wire and while inflating, bodies cut short or late, encodings."""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import zlib

import pytest
from starlette.requests import Request

from agentotel_eval.collector.receive.errors import (
    BadRequest,
    PayloadTooLarge,
    RequestTimeout,
    UnsupportedMediaType,
)
from agentotel_eval.collector.receive.http.bodies import ClientGone, inflate, read_body
from agentotel_eval.collector.receive.http.connection import BodyWatch
from agentotel_eval.collector.receive.http.request_guard import WATCH


class Receive:
    """An ASGI ``receive`` that hands out the given messages and records how many were taken."""

    def __init__(self, *chunks: bytes, watch: BodyWatch | None = None, more: bool = False) -> None:
        self.messages = [
            {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1 or more}
            for i, c in enumerate(chunks)
        ]
        self.taken = 0
        self.watch = watch

    async def __call__(self) -> dict[str, object]:
        self.taken += 1
        if self.messages:
            return self.messages.pop(0)
        return {"type": "http.disconnect"}


def request(receive: Receive, headers: dict[str, str]) -> Request:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/traces",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "extensions": {WATCH: {"watch": receive.watch}} if receive.watch else {},
    }
    return Request(scope, receive)


def read(receive: Receive, headers: dict[str, str], limit: int = 100) -> bytes:
    return asyncio.run(read_body(request(receive, headers), limit))


def test_content_length_over_the_limit_is_refused_before_reading():
    receive = Receive(b"x" * 101)
    with pytest.raises(PayloadTooLarge, match="101 bytes"):
        read(receive, {"Content-Length": "101"})
    assert receive.taken == 0  # nothing was read
    assert read(Receive(b"x" * 60, b"y" * 40), {"Content-Length": "100"}) == b"x" * 60 + b"y" * 40


def test_a_body_needs_a_length_or_chunks():
    with pytest.raises(BadRequest, match="needs Content-Length or chunked"):
        read(Receive(b"abc"), {})


def test_a_body_cut_short_by_the_client_is_an_error():
    with pytest.raises(BadRequest, match="ended after 3 of 10"):
        read(Receive(b"abc", watch=BodyWatch(ended_early=True)), {"Content-Length": "10"})
    with pytest.raises(BadRequest, match="chunked body ended early"):
        read(Receive(b"abc", watch=BodyWatch(ended_early=True)), {"Transfer-Encoding": "chunked"})


def test_a_body_past_its_deadline_is_a_timeout():
    with pytest.raises(RequestTimeout, match=r"within 1\.5s"):
        read(
            Receive(b"abc", more=True, watch=BodyWatch(timed_out=True, timeout=1.5)), {"Content-Length": "10"}
        )


def test_chunked_bodies_are_joined_and_refused_once_past_the_limit():
    assert read(Receive(b"hello ", b"world"), {"Transfer-Encoding": "chunked"}) == b"hello world"
    receive = Receive(b"a" * 60, b"b" * 60, b"c" * 60)
    with pytest.raises(PayloadTooLarge, match="chunked body exceeds the limit of 100"):
        read(receive, {"Transfer-Encoding": "chunked"})
    assert receive.taken == 2  # refused as soon as what arrived passed the limit


def test_a_client_gone_before_its_body_is_not_answered():
    with pytest.raises(ClientGone):
        read(Receive(), {"Content-Length": "10"})


def test_gzip_and_deflate_inflate():
    data = b"payload " * 1000
    assert inflate(gzip.compress(data), "gzip", 1 << 20) == data
    assert inflate(gzip.compress(data), "x-gzip", 1 << 20) == data
    assert inflate(zlib.compress(data), "deflate", 1 << 20) == data
    assert inflate(data, "", 1 << 20) == data
    assert inflate(data, "identity", 1 << 20) == data


def test_concatenated_gzip_members_are_one_body():
    assert inflate(gzip.compress(b"first ") + gzip.compress(b"second"), "gzip", 1 << 20) == b"first second"


def test_a_gzip_bomb_is_refused_while_inflating_without_allocating_it():
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=1)  # 64 MiB of zeros in ~290 KB
    assert len(bomb) < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(PayloadTooLarge, match="inflated body"):
            inflate(bomb, "gzip", 4 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # bounded by the limit, not by the 64 MiB the bomb expands to


def test_corrupt_and_truncated_gzip_are_bad_requests():
    with pytest.raises(BadRequest, match="not valid gzip"):
        inflate(b"definitely not gzip", "gzip", 1 << 20)
    with pytest.raises(BadRequest, match="truncated"):
        inflate(gzip.compress(b"x" * 10000)[:20], "gzip", 1 << 20)


def test_unknown_encodings_are_unsupported():
    with pytest.raises(UnsupportedMediaType, match="br"):
        inflate(b"x", "br", 100)
