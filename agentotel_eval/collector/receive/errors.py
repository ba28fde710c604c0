"""Errors that cross the receiver boundary, each knowing whether a retry can help and how it is answered.

Receivers map them, and only them, to protocol answers: a retryable error becomes HTTP 503 /
gRPC UNAVAILABLE with a retry delay; a permanent one 400 / INVALID_ARGUMENT, 401 / UNAUTHENTICATED, 408, 413,
or 415.
"""

from __future__ import annotations


class ReceiverError(Exception):
    retryable = False
    http_status = 400
    grpc_code = "INVALID_ARGUMENT"  # a grpc.StatusCode name (grpc is imported only by the gRPC receiver)


class BadRequest(ReceiverError):
    """The body is not a valid OTLP request, or the data cannot be stored: resending it cannot succeed."""


class PayloadTooLarge(ReceiverError):
    http_status = 413
    grpc_code = "RESOURCE_EXHAUSTED"


class UnsupportedMediaType(ReceiverError):
    http_status = 415


class Overloaded(ReceiverError):
    """The write queue is full; the exporter should retry after ``retry_after`` seconds."""

    retryable = True
    http_status = 503
    grpc_code = "UNAVAILABLE"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(ReceiverError):
    """The records could not be committed now (shutting down, a failed or slow commit): retry later."""

    retryable = True
    http_status = 503
    grpc_code = "UNAVAILABLE"

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unauthenticated(ReceiverError):
    """No bearer token, or the wrong one: the request is refused before its body is read."""

    http_status = 401
    grpc_code = "UNAUTHENTICATED"


class RequestTimeout(ReceiverError):
    """The request did not arrive whole within ``receiver.http_read_timeout`` of its first byte."""

    http_status = 408
