"""Request bodies: size limits on the wire and while inflating, chunked bodies, encodings."""

from __future__ import annotations

import gzip
import io
import tracemalloc
import zlib

import pytest

from agentotel_eval.collector.receive.body import inflate, read_body
from agentotel_eval.collector.receive.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType


def test_content_length_over_the_limit_is_refused_before_reading():
    stream = io.BytesIO(b"x" * 100)
    with pytest.raises(PayloadTooLarge, match="101 bytes"):
        read_body(stream, "101", False, limit=100)
    assert stream.tell() == 0  # nothing was read
    assert read_body(io.BytesIO(b"x" * 100), "100", False, limit=100) == b"x" * 100


@pytest.mark.parametrize("length", [None, "-1", "ten"])
def test_a_body_needs_a_valid_length(length):
    with pytest.raises(BadRequest):
        read_body(io.BytesIO(b"abc"), length, False, limit=10)


def test_a_short_body_is_an_error():
    with pytest.raises(BadRequest, match="ended after 3 of 10"):
        read_body(io.BytesIO(b"abc"), "10", False, limit=100)


def _chunked(*parts: bytes) -> io.BytesIO:
    wire = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in parts) + b"0\r\n\r\n"
    return io.BytesIO(wire)


def test_chunked_bodies_are_joined_and_limited():
    assert read_body(_chunked(b"hello ", b"world"), None, True, limit=100) == b"hello world"
    with pytest.raises(PayloadTooLarge):
        read_body(_chunked(b"a" * 60, b"b" * 60), None, True, limit=100)
    with pytest.raises(BadRequest):
        read_body(io.BytesIO(b"zz\r\nabc"), None, True, limit=100)


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
