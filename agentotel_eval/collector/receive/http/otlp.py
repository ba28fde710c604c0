"""``POST /v1/traces`` and ``POST /v1/logs``: OTLP/HTTP, protobuf or JSON, gzip or deflate.

Answers follow the OTLP/HTTP spec: the response is in the request's encoding, ``partial_success`` when records
were rejected; errors carry a ``google.rpc.Status`` body: 400 undecodable, 408 not whole in time, 413 too
large (declared or inflated), 415 unknown content type or encoding, 503 + ``Retry-After`` when the write queue
is full. The answer comes only once the records are committed.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentotel_eval.collector.receive.errors import (
    BadRequest,
    PayloadTooLarge,
    ReceiverError,
    UnsupportedMediaType,
)
from agentotel_eval.collector.receive.http.answers import CLOSE, Blocking
from agentotel_eval.collector.receive.http.bodies import ClientGone, content_encoding, inflate, read_body
from agentotel_eval.collector.receive.ingest import ExportOutcome, Ingestor

log = logging.getLogger(__name__)

OTLP_PATHS = {"/v1/traces": "traces", "/v1/logs": "logs"}
CONTENT_TYPES = {
    "application/x-protobuf": "protobuf",
    "application/protobuf": "protobuf",
    "application/json": "json",
}
MEDIA_TYPE = {"protobuf": "application/x-protobuf", "json": "application/json"}
_GRPC_CODES = {
    "INVALID_ARGUMENT": code_pb2.INVALID_ARGUMENT,
    "RESOURCE_EXHAUSTED": code_pb2.RESOURCE_EXHAUSTED,
    "UNAVAILABLE": code_pb2.UNAVAILABLE,
    "UNAUTHENTICATED": code_pb2.UNAUTHENTICATED,
    "DEADLINE_EXCEEDED": code_pb2.DEADLINE_EXCEEDED,
}


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def encoding_of(request: Request) -> str | None:
    """protobuf or json, from the Content-Type; None for any other."""
    return CONTENT_TYPES.get(_media_type(request))


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


def error_response(
    error: ReceiverError, encoding: str, *, status: int | None = None, close: bool = False
) -> Response:
    """An OTLP error answer: a Status in the request's encoding, ``Retry-After`` when a retry can help."""
    headers = dict(CLOSE) if close else {}
    if error.retryable:
        headers["Retry-After"] = str(max(1, math.ceil(getattr(error, "retry_after", 1.0))))
    return Response(
        status_body(error, encoding),
        status or error.http_status,
        headers=headers,
        media_type=MEDIA_TYPE[encoding],
    )


def otlp_routes(ingestor: Ingestor, max_request_size: int, blocking: Blocking) -> list[Route]:
    """The two export routes over ``ingestor``; bodies over ``max_request_size`` (on the wire
    or inflated) refused."""

    def ingest(signal: str, encoding: str, body: bytes, compression: str) -> ExportOutcome:
        # inflating is CPU work: here, on a thread, not on the loop
        return ingestor.ingest_body(signal, encoding, inflate(body, compression, max_request_size), "http")

    def refused(error: ReceiverError, encoding: str, signal: str, *, close: bool) -> Response:
        if isinstance(error, UnsupportedMediaType | PayloadTooLarge):
            ingestor.stats.count(
                "http", signal, "too_large" if isinstance(error, PayloadTooLarge) else "unsupported"
            )
        return error_response(error, encoding, close=close)

    async def export(request: Request) -> Response:
        signal = OTLP_PATHS[request.url.path]
        encoding = encoding_of(request)
        try:
            if encoding is None:
                raise UnsupportedMediaType(
                    f"unsupported Content-Type {_media_type(request) or '(none)'!r}; "
                    "use application/x-protobuf or application/json"
                )
            compression = content_encoding(request.headers.get("content-encoding"))
            body = await read_body(request, max_request_size)
        except ReceiverError as exc:  # the body was not read (whole): the connection closes after the answer
            return refused(exc, encoding or "json", signal, close=True)
        except ClientGone:
            return Response(status_code=400)  # no one is left to read it
        try:
            outcome = await blocking.run(ingest, signal, encoding, body, compression)
        except ReceiverError as exc:
            return refused(exc, encoding, signal, close=False)
        except Exception as exc:  # never let a bug take the connection down silently
            log.exception("unexpected error on POST /v1/%s", signal)
            return error_response(BadRequest(f"internal error: {exc}"), encoding, status=500)
        return Response(export_response(outcome, encoding), media_type=MEDIA_TYPE[encoding])

    return [Route(path, export, methods=["POST"]) for path in OTLP_PATHS]
