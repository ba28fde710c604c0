"""Request bodies under a size limit: read from the ASGI request (uvicorn frames Content-Length and chunked
bodies) and inflated (gzip, deflate).

The limit applies twice, as in the OpenTelemetry Collector: to the bytes on the wire and to the inflated body.
A declared length over the limit is refused before anything is read; a chunked body is refused as soon as what
arrived passes it. A compressed body is inflated in bounded steps and refused the moment it passes the limit,
so a small "gzip bomb" never allocates more than the limit.
"""

from __future__ import annotations

import zlib

from starlette.requests import Request

from agentotel_eval.collector.receive.errors import (
    BadRequest,
    PayloadTooLarge,
    RequestTimeout,
    UnsupportedMediaType,
)
from agentotel_eval.collector.receive.http.connection import BodyWatch
from agentotel_eval.collector.receive.http.request_guard import WATCH

CONTENT_ENCODINGS = ("identity", "gzip", "x-gzip", "deflate")
_STEP = 256 * 1024
_IN_STEP = 4 * 1024


class ClientGone(Exception):
    """The client closed the connection before its body arrived: there is no one to answer."""


def _too_large(limit: int, what: str) -> PayloadTooLarge:
    return PayloadTooLarge(f"{what} exceeds the limit of {limit} bytes (receiver.max_request_size)")


def announces_body(request: Request) -> bool:
    """Whether the request says a body follows (which, unread, means its connection must
    close after the answer)."""
    length = request.headers.get("content-length", "0")
    return "transfer-encoding" in request.headers or length != "0"


def declared_length(request: Request, limit: int) -> int | None:
    """The body's declared length (None: chunked); ``PayloadTooLarge`` before reading when it is over the
    limit, ``BadRequest`` when the request declares neither."""
    if "chunked" in request.headers.get("transfer-encoding", "").lower():
        return None
    text = request.headers.get("content-length")
    if text is None:
        raise BadRequest("a request body needs Content-Length or chunked Transfer-Encoding")
    length = int(text)  # the HTTP parser has refused any other spelling than digits
    if length > limit:
        raise _too_large(limit, f"the body ({length} bytes)")
    return length


async def read_body(request: Request, limit: int) -> bytes:
    """The raw request body, never more than ``limit`` bytes of it; ``RequestTimeout`` when it did not arrive
    within the connection's read deadline, ``BadRequest`` when the client stopped sending before its end."""
    length = declared_length(request, limit)
    watch: BodyWatch = request.scope.get("extensions", {}).get(WATCH, {}).get("watch") or BodyWatch()
    parts: list[bytes] = []
    total = 0
    while True:
        message = await request.receive()
        if watch.timed_out:
            raise RequestTimeout(
                f"the request did not arrive whole within {watch.timeout:g}s (receiver.http_read_timeout)"
            )
        if message["type"] == "http.disconnect":
            if watch.ended_early:
                break
            raise ClientGone()
        chunk = message.get("body", b"")
        if chunk:
            total += len(chunk)
            if total > limit:
                raise _too_large(limit, "the chunked body")
            parts.append(chunk)
        if not message.get("more_body", False):
            break
    if watch.ended_early:
        if length is None:
            raise BadRequest("the chunked body ended early")
        raise BadRequest(f"the body ended after {total} of {length} bytes")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def content_encoding(value: str | None) -> str:
    """A Content-Encoding header, normalised; ``UnsupportedMediaType`` for one this
    receiver cannot inflate."""
    encoding = (value or "identity").strip().lower()
    if encoding not in CONTENT_ENCODINGS:
        raise UnsupportedMediaType(
            f"unsupported Content-Encoding {encoding!r} (supported: {', '.join(CONTENT_ENCODINGS)})"
        )
    return encoding


def inflate(body: bytes, encoding: str, limit: int) -> bytes:
    """The body decoded per its Content-Encoding, never more than ``limit`` bytes."""
    encoding = content_encoding(encoding)
    if encoding == "identity":
        return body
    # gzip, or zlib-wrapped deflate as HTTP specifies
    wbits = zlib.MAX_WBITS if encoding == "deflate" else 16 + zlib.MAX_WBITS
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
                # The input goes in by pieces: zlib copies what it leaves of one (at the end of a gzip member,
                # or when an output step is full), and a piece's copy costs no more than the piece.
                data = view[pos : pos + _IN_STEP]
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
