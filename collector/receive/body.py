"""Request bodies under a size limit: read (Content-Length or chunked) and inflate (gzip, deflate).

The limit applies twice, as in the OpenTelemetry Collector: to the bytes on the wire and to the inflated body. A
compressed body is inflated in bounded steps and refused the moment it passes the limit, so a small "gzip bomb"
never allocates more than the limit.
"""

from __future__ import annotations

import re
import zlib
from typing import Protocol

from agentotel_eval.collector.receive.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

CONTENT_ENCODINGS = ("identity", "gzip", "x-gzip", "deflate")
_STEP = 256 * 1024
_IN_STEP = 4 * 1024
_chunk_size = re.compile(rb"[0-9a-fA-F]+").fullmatch


class BodyStream(Protocol):
    """What a body is read from: a request's ``rfile`` (or any binary stream)."""

    def read(self, size: int, /) -> bytes: ...

    def readline(self, size: int, /) -> bytes: ...


def _too_large(limit: int, what: str) -> PayloadTooLarge:
    return PayloadTooLarge(f"{what} exceeds the limit of {limit} bytes (receiver.max_request_size)")


def read_body(stream: BodyStream, content_length: str | None, chunked: bool, limit: int) -> bytes:
    """The raw request body; ``PayloadTooLarge`` before reading when the declared length is over the limit."""
    if chunked:
        return _read_chunked(stream, limit)
    if content_length is None:
        raise BadRequest("a request body needs Content-Length or chunked Transfer-Encoding")
    try:
        length = int(content_length)
    except ValueError:
        raise BadRequest(f"invalid Content-Length {content_length!r}") from None
    if length < 0:
        raise BadRequest(f"invalid Content-Length {content_length!r}")
    if length > limit:
        raise _too_large(limit, f"the body ({length} bytes)")
    data = stream.read(length)
    if len(data) != length:
        raise BadRequest(f"the body ended after {len(data)} of {length} bytes")
    return data


def _read_chunked(stream: BodyStream, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = stream.readline(1026)
        if not line.endswith(b"\n"):
            raise BadRequest("malformed chunked body")
        digits = line.split(b";", 1)[0].strip()
        # Hex digits only: int() would also take a sign, and read(-1) of a negative size reads to the end of the
        # stream, past every limit.
        if _chunk_size(digits) is None:
            raise BadRequest("malformed chunk size in a chunked body")
        size = int(digits, 16)
        if size == 0:
            while stream.readline(1026) not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return b"".join(parts)
        total += size
        if total > limit:
            raise _too_large(limit, "the chunked body")
        chunk = stream.read(size)
        if len(chunk) != size:
            raise BadRequest("the chunked body ended early")
        parts.append(chunk)
        stream.readline(3)  # the CRLF after each chunk


def inflate(body: bytes, encoding: str, limit: int) -> bytes:
    """The body decoded per its Content-Encoding, never more than ``limit`` bytes."""
    encoding = (encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding in ("gzip", "x-gzip"):
        wbits = 16 + zlib.MAX_WBITS
    elif encoding == "deflate":
        wbits = zlib.MAX_WBITS  # zlib-wrapped, as HTTP specifies
    else:
        raise UnsupportedMediaType(
            f"unsupported Content-Encoding {encoding!r} (supported: {', '.join(CONTENT_ENCODINGS)})"
        )
    decompressor = zlib.decompressobj(wbits)
    out: list[bytes] = []
    total = 0
    view = memoryview(body)
    pos = 0  # where the input not yet given to zlib starts
    data: bytes | memoryview = b""
    try:
        while True:
            if not data:
                if pos >= len(body):
                    break
                # The input goes in by pieces: zlib copies what it leaves of one (at the end of a gzip member, or
                # when an output step is full), and a piece's copy costs no more than the piece.
                data = view[pos:pos + _IN_STEP]
                pos += len(data)
            chunk = decompressor.decompress(data, _STEP)
            total += len(chunk)
            if total > limit:
                raise _too_large(limit, "the inflated body")
            out.append(chunk)
            if decompressor.eof:
                pos -= len(decompressor.unused_data)
                rest = len(body) - pos
                if not rest or (body[pos] == 0 and body.count(0, pos) == rest):
                    break  # trailing zeros are padding, not another member
                # Another gzip member follows (concatenated streams are one valid gzip body).
                decompressor = zlib.decompressobj(wbits)
                data = b""
                continue
            data = decompressor.unconsumed_tail
        tail = decompressor.flush()
        total += len(tail)
        if total > limit:
            raise _too_large(limit, "the inflated body")
        out.append(tail)
    except zlib.error as exc:
        raise BadRequest(f"the body is not valid {encoding} data: {exc}") from None
    if not decompressor.eof:
        raise BadRequest(f"the {encoding} body is truncated")
    return b"".join(out)
