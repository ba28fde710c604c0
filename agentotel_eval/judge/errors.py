"""Judge errors, and which failures are worth retrying.

Classification is by duck typing (``status_code``, the exception's class names, a ``response.headers``
mapping), so this module never imports litellm, and a ``CustomLLMClient`` may raise litellm's, the OpenAI
SDK's, httpx's or our own exceptions alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentotel_eval import retry
from agentotel_eval.retry import parse_retry_after


class JudgeError(Exception):
    """The judge could not produce a verdict."""


class RetryableJudgeError(JudgeError):
    """Raise from a custom client for a transient failure; ``retry_after`` (seconds) is
    honoured when given."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, status_code: int | None = None
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status_code = status_code


class PermanentJudgeError(JudgeError):
    """A failure that a retry cannot fix (bad request, authentication, unknown model, content policy)."""


class JudgeOutputError(JudgeError):
    """The judge answered, but not with a usable verdict. ``raw`` keeps what it said."""

    def __init__(self, message: str, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


# Statuses a retry can fix: request timeout, rate limit, and server-side failures (5xx, Cloudflare's 52x).
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})
_RETRYABLE_NAMES = (
    "Timeout",
    "TimeoutError",
    "APIConnectionError",
    "ConnectError",
    "ReadError",
    "RemoteProtocolError",
    "ServiceUnavailable",
    "InternalServerError",
    "BadGatewayError",
)


@dataclass(frozen=True, slots=True)
class Failure(retry.Failure):
    """What the retry loop needs to know about an exception, and what kind of failure it was."""

    kind: str = "other"  # "timeout" | "rate_limit" | "server" | "connection" | "client" | "other"
    status_code: int | None = None


def classify(exc: BaseException) -> Failure:
    """Whether ``exc`` is worth retrying and how long the server asked us to wait."""
    status = _status_code(exc)
    retry_after = _retry_after(exc)
    if isinstance(exc, RetryableJudgeError):
        kind = "rate_limit" if status == 429 else "server" if status and status >= 500 else "other"
        return Failure(True, exc.retry_after if exc.retry_after is not None else retry_after, kind, status)
    if isinstance(exc, PermanentJudgeError | JudgeOutputError):
        return Failure(False, None, "client", status)
    if isinstance(exc, TimeoutError) or status == 408:
        return Failure(True, retry_after, "timeout", status)
    if status == 429:
        return Failure(True, retry_after, "rate_limit", status)
    if status is not None:
        if status in RETRYABLE_STATUSES or status >= 500:
            # litellm reports a connection failure as status 500; keep the distinction for the stats
            names = _class_names(exc)
            kind = "connection" if any("Connection" in n for n in names) else "server"
            if any("Timeout" in n for n in names):
                kind = "timeout"
            return Failure(True, retry_after, kind, status)
        return Failure(False, None, "client", status)
    names = _class_names(exc)
    if any(any(marker in name for marker in _RETRYABLE_NAMES) for name in names):
        kind = "timeout" if any("Timeout" in n for n in names) else "connection"
        return Failure(True, retry_after, kind, None)
    if isinstance(exc, ConnectionError):
        return Failure(True, retry_after, "connection", None)
    return Failure(False, None, "other", None)


def _class_names(exc: BaseException) -> list[str]:
    return [cls.__name__ for cls in type(exc).__mro__]


def _status_code(exc: BaseException) -> int | None:
    for candidate in (
        getattr(exc, "status_code", None),
        getattr(getattr(exc, "response", None), "status_code", None),
    ):
        if isinstance(candidate, int) and not isinstance(candidate, bool):
            return candidate
        if isinstance(candidate, str) and candidate.isdigit():
            return int(candidate)
    return None


def _retry_after(exc: BaseException) -> float | None:
    """Retry-After from any header mapping the exception carries (httpx response, litellm's
    copy, ``headers``)."""
    sources = (
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    )
    for headers in sources:
        if headers is None or not hasattr(headers, "get"):
            continue
        for name in ("retry-after-ms", "Retry-After-Ms"):
            value = headers.get(name)
            if value is not None:
                seconds = parse_retry_after(value)
                if seconds is not None:
                    return seconds / 1000.0
        for name in ("retry-after", "Retry-After"):
            value = headers.get(name)
            if value is not None:
                return parse_retry_after(value)
    return None
