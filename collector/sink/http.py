"""JSON over HTTP for the sinks (httpx, one pooled client per sink): transport failures, 408/429/5xx are
retryable (with the server's Retry-After), other 4xx are the tool's refusal, and 404 is the caller's to read (a
trace the tool has not stored yet)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from agentotel_eval.collector.sink.worker import SinkRefused, SinkRetryable

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_BODY_CHARS = 300  # of an error answer, in the message


class NotFound(SinkRefused):
    """HTTP 404: the path's object (a trace, a span, an experiment) does not exist there yet."""


class JsonApi:
    def __init__(self, base_url: str, *, headers: Mapping[str, str], timeout: float) -> None:
        import httpx

        if logging.getLogger("httpx").level == logging.NOTSET:  # not a log line per request at the service's INFO
            logging.getLogger("httpx").setLevel(logging.WARNING)
        self._httpx = httpx
        self._client = httpx.Client(base_url=base_url, headers=dict(headers), timeout=timeout)

    def call(self, method: str, path: str, *, json: Any = None, params: Mapping[str, str] | None = None,
             headers: Mapping[str, str] | None = None) -> Any:
        """The answer's JSON (None for an empty body); raises ``SinkRetryable``, ``NotFound`` or ``SinkRefused``."""
        try:
            response = self._client.request(method, path, json=json, params=params, headers=headers)
        except self._httpx.HTTPError as exc:  # connection refused, timeouts, protocol errors
            raise SinkRetryable(f"{method} {path}: {type(exc).__name__}: {exc}") from None
        status = response.status_code
        if status < 300:
            if not response.content:
                return None
            try:
                return response.json()
            except ValueError:
                return None
        message = f"HTTP {status} from {method} {path}: {response.text[:_BODY_CHARS]}"
        if status in RETRYABLE_STATUS:
            raise SinkRetryable(message, retry_after(response.headers.get("Retry-After")))
        if status == 404:
            raise NotFound(message)
        raise SinkRefused(message)

    def close(self) -> None:
        self._client.close()


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header; None for an HTTP date or nothing (our own backoff applies)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
