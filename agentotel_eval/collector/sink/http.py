"""JSON over HTTP for the sinks: one kept-alive connection per sink (the standard library's ``http.client``, a
third of httpx's CPU per request, which matters on the collector's busy process). Transport failures,
408/425/429/5xx are retryable (with the server's Retry-After), other 4xx are the tool's refusal, and 404 is
the caller's to read (a trace the tool has not stored yet)."""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson

from agentotel_eval.collector.sink.worker import SinkRefused, SinkRetryable

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_BODY_CHARS = 300  # of an error answer, in the message
#: a kept-alive connection the server closed meanwhile fails the request with one of these: one fresh try
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class NotFound(SinkRefused):
    """HTTP 404: the path's object (a trace, a span, an experiment) does not exist there yet."""


class JsonApi:
    def __init__(self, base_url: str, *, headers: Mapping[str, str], timeout: float) -> None:
        parts = urlsplit(base_url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self._headers = {"Accept": "application/json", **headers}
        self._timeout = timeout
        self._connection: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            if self._https:
                self._connection = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self._timeout, context=ssl.create_default_context()
                )
            else:
                self._connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        return self._connection

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """The answer's JSON (None for an empty body); raises ``SinkRetryable``, ``NotFound``
        or ``SinkRefused``."""
        target = self._prefix + path + (f"?{urlencode(params)}" if params else "")
        body = orjson.dumps(json) if json is not None else None
        sent = {**self._headers, **(headers or {}), **({"Content-Type": "application/json"} if body else {})}
        for fresh in (False, True):
            connection = self._connect()
            try:
                connection.request(method, target, body=body, headers=sent)
                response = connection.getresponse()
                data = response.read()
            except _STALE as exc:
                self.close()
                if fresh:
                    raise SinkRetryable(f"{method} {path}: {type(exc).__name__}: {exc}") from None
                continue
            except (OSError, http.client.HTTPException) as exc:  # refused, timed out, a broken answer
                self.close()
                raise SinkRetryable(f"{method} {path}: {type(exc).__name__}: {exc}") from None
            break
        if response.will_close:
            self.close()
        status = response.status
        if status < 300:
            if not data:
                return None
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError:
                return None
        message = f"HTTP {status} from {method} {path}: {data[:_BODY_CHARS].decode(errors='replace')}"
        if status in RETRYABLE_STATUS:
            raise SinkRetryable(message, retry_after(response.getheader("Retry-After")))
        if status == 404:
            raise NotFound(message)
        raise SinkRefused(message)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header; None for an HTTP date or nothing (our own backoff applies)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
