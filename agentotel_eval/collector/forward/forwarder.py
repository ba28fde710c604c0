"""Forward spans and logs to a downstream OTLP endpoint (gRPC or HTTP/protobuf) without ever blocking ingest.

A bounded in-memory queue feeds one sender thread (``collector.send_queue``). Failed exports are retried by
the shared policy (``agentotel_eval.retry``: exponential backoff with jitter; the server's Retry-After /
RetryInfo wins, up to ``max_backoff_s``); what cannot be delivered — queue overflow (oldest first), permanent
errors, retries exhausted — is dropped and counted, never silently.

What comes from OpenTelemetry: over gRPC, the service stubs opentelemetry-proto generates
(``TraceServiceStub``, ``LogsServiceStub``); and the OTLP exporters' retry conventions — the gRPC codes they
retry, HTTP 429/502/503/504 (every other error status is final), the delay a server asks for (``RetryInfo`` in
the status details or in the ``google.rpc.retryinfo-bin`` trailer; ``Retry-After`` in seconds or as an HTTP
date), exponential backoff with jitter. What stays ours, and why:

- The exporters themselves (``OTLPSpanExporter``, ``OTLPLogExporter``) export the SDK's ``ReadableSpan`` and
  ``ReadableLogRecord``; the forwarder holds records the collector decoded, and request bodies it passes on
  unchanged (``submit_encoded``), which no exporter takes.
- Their retry loop lives in private classes, waits on the wall clock and on an event of their own, and keeps
  every retry within one request's timeout. The forwarder's retries span an outage (backoff up to
  ``max_backoff_s``), stop at the shutdown deadline the queue shares, count every failed attempt, and take the
  clock, the sleep and the jitter's random source as arguments, so tests see every delay without waiting.
- HTTP goes through the standard library: the exporters' HTTP transports are a beta package of private
  modules, which only their newest releases install.
"""

from __future__ import annotations

import logging
import math
import random
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from agentotel_eval.collector.config_forward import ForwardConfig
from agentotel_eval.collector.send_queue import Dropped, SendQueue
from agentotel_eval.otlp.encode import encode_logs, encode_traces
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.redaction import Redactor
from agentotel_eval.retry import Failure, GaveUp, RetryPolicy, call_with_retries, parse_retry_after

log = logging.getLogger(__name__)

#: the HTTP statuses the OTLP exporters retry, as the OTLP specification lists them; any other error is final
RETRYABLE_HTTP_STATUSES = frozenset({429, 502, 503, 504})
#: the gRPC status codes (``grpc.StatusCode`` names) the OTLP exporters retry
RETRYABLE_GRPC_CODES = frozenset(
    {
        "CANCELLED",
        "DEADLINE_EXCEEDED",
        "RESOURCE_EXHAUSTED",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNAVAILABLE",
        "DATA_LOSS",
    }
)
#: where a gRPC server puts the delay it asks for: a ``google.rpc.Status`` with a ``RetryInfo`` among its
#: details (gRPC's rich error model), or a bare ``RetryInfo`` (the trailer the Python exporters read)
_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_RETRY_INFO_KEY = "google.rpc.retryinfo-bin"
_WARN_EVERY_S = 30.0


class ExportRetryable(Exception):
    """An export a later attempt may get through (the endpoint is down or busy); raised by
    a sender's ``send``."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ExportRefused(Exception):
    """An export the endpoint refused for good; raised by a sender's ``send``."""


class _ExportStub(Protocol):
    """A generated OTLP service stub (``TraceServiceStub``, ``LogsServiceStub``): its one call."""

    def Export(self, request: Any, *, timeout: float, metadata: Sequence[tuple[str, str]]) -> Any: ...


class _GrpcSender:
    def __init__(self, config: ForwardConfig) -> None:
        import grpc
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

        parts = urlsplit(config.url)
        target = f"{parts.hostname}:{parts.port or 4317}"
        if parts.scheme in ("https", "grpcs"):
            self._channel = grpc.secure_channel(target, grpc.ssl_channel_credentials())
        else:
            self._channel = grpc.insecure_channel(target)
        self._grpc = grpc
        self._stubs: dict[str, _ExportStub] = {
            "traces": TraceServiceStub(self._channel),
            "logs": LogsServiceStub(self._channel),
        }
        self._metadata = tuple((k.lower(), v) for k, v in config.headers.items())
        self._timeout = config.timeout_s

    def send(self, signal: str, request: Any) -> None:
        try:
            self._stubs[signal].Export(request, timeout=self._timeout, metadata=self._metadata)
        except self._grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            name = code.name if code is not None else "?"
            message = f"gRPC {name}: {exc.details() if hasattr(exc, 'details') else exc}"
            if name in RETRYABLE_GRPC_CODES:
                trailers = exc.trailing_metadata() if hasattr(exc, "trailing_metadata") else None
                raise ExportRetryable(message, grpc_retry_delay(trailers or ())) from None
            raise ExportRefused(message) from None

    def close(self) -> None:
        self._channel.close()


def grpc_retry_delay(trailing_metadata: Iterable[tuple[str, str | bytes]]) -> float | None:
    """The delay (seconds) a gRPC server asks for in its trailers, or None when it asks for none or the value
    cannot be read: a malformed trailer falls back to our own backoff rather than losing the batch."""
    from google.protobuf.message import DecodeError
    from google.rpc import error_details_pb2, status_pb2

    for key, value in trailing_metadata:
        if not isinstance(value, bytes) or key not in (_STATUS_DETAILS_KEY, _RETRY_INFO_KEY):
            continue
        info = error_details_pb2.RetryInfo()
        try:
            if key == _RETRY_INFO_KEY:
                info.ParseFromString(value)
            else:
                details = status_pb2.Status.FromString(value).details
                found = next((d for d in details if d.Is(error_details_pb2.RetryInfo.DESCRIPTOR)), None)
                if found is None:
                    continue
                found.Unpack(info)
        except DecodeError:
            continue
        if info.HasField("retry_delay"):
            return max(0.0, info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return None


class HttpSender:
    """OTLP/HTTP protobuf to ``config.url`` (``/v1/traces`` and ``/v1/logs`` appended to its path)."""

    def __init__(self, config: ForwardConfig) -> None:
        base = config.url.rstrip("/")
        path = urlsplit(base).path
        if path.endswith(("/v1/traces", "/v1/logs")):
            base = base.rsplit("/v1/", 1)[0]
        self._urls = {"traces": f"{base}/v1/traces", "logs": f"{base}/v1/logs"}
        self._headers = {"Content-Type": "application/x-protobuf", **config.headers}
        self._timeout = config.timeout_s

    def send(self, signal: str, request: Any) -> None:
        req = urllib.request.Request(
            self._urls[signal], data=request.SerializeToString(), headers=self._headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            message = f"HTTP {exc.code} from {self._urls[signal]}"
            if exc.code in RETRYABLE_HTTP_STATUSES:
                raise ExportRetryable(message, parse_retry_after(exc.headers.get("Retry-After"))) from None
            raise ExportRefused(message) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            raise ExportRetryable(f"{self._urls[signal]}: {exc}") from None

    def close(self) -> None:
        pass


class Encoded:
    """An export request already encoded (a request's body as it was received): sent as
    it is, never merged."""

    __slots__ = ("body", "records")

    def __init__(self, body: bytes, records: int) -> None:
        self.body = body
        self.records = records

    def __len__(self) -> int:
        return self.records

    def SerializeToString(self) -> bytes:
        return self.body

    def message(self, signal: str) -> Any:
        """The parsed request, for a sender that takes messages (gRPC)."""
        if signal == "traces":
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

            return ExportTraceServiceRequest.FromString(self.body)
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

        return ExportLogsServiceRequest.FromString(self.body)


@dataclass
class ForwardStats:
    queued: int = 0
    sent_spans: int = 0
    sent_logs: int = 0
    dropped_spans: int = 0
    dropped_logs: int = 0
    failed_attempts: int = 0
    last_error: str = ""


#: one submit: the signal ("traces", "logs") and its records, or a request body sent as it is
Item = tuple[str, list[Any] | Encoded]


class _RecordQueue:
    """The forwarder's ``Buffer``: submits in order, bounded by records; a batch merges the following submits
    of its signal up to ``max_batch`` records (an encoded request goes alone)."""

    def __init__(self, max_records: int, max_batch: int) -> None:
        self._items: deque[Item] = deque()
        self._max_records = max_records
        self._max_batch = max_batch
        self.queued = 0

    def __len__(self) -> int:
        return len(self._items)

    def put(self, items: Sequence[Item]) -> list[Item]:
        pushed_out: list[Item] = []
        for item in items:
            self._items.append(item)
            self.queued += len(item[1])
        while self.queued > self._max_records and len(self._items) > 1:
            old = self._items.popleft()  # drop oldest: fresh data is worth more downstream
            self.queued -= len(old[1])
            pushed_out.append(old)
        return pushed_out

    def take(self) -> list[Item]:
        signal, records = self._items.popleft()
        while (
            isinstance(records, list)
            and self._items
            and self._items[0][0] == signal
            and isinstance(following := self._items[0][1], list)
            and len(records) + len(following) <= self._max_batch
        ):
            self._items.popleft()
            records = records + following
        self.queued -= len(records)
        return [(signal, records)]

    def clear(self) -> list[Item]:
        left = list(self._items)
        self._items.clear()
        self.queued = 0
        return left


class Forwarder:
    """Queue spans/logs for a downstream OTLP endpoint; ``submit_*`` never blocks.

    ``clock`` (monotonic seconds) times the backoff and the shutdown deadline; ``sleep`` replaces the wait
    before a retry (False: stop retrying), ``rng`` the jitter: tests see every delay without waiting."""

    def __init__(
        self,
        config: ForwardConfig,
        sender: Any = None,
        *,
        redactor: Redactor | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], bool] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config.validate()
        self._sender = sender
        #: applied on the sender thread, just before encoding: nothing secret leaves, the producers never wait
        self._redactor = redactor
        self.stats = ForwardStats()
        self._clock = clock
        self._queue = SendQueue[Item](
            _RecordQueue(self.config.max_queue_records, self.config.max_batch_records),
            self._deliver_batch,
            name="agentotel-forwarder",
            on_drop=self._dropped,
            on_queued=self._set_queued,
            clock=clock,
        )
        self._sleep = sleep or self._queue.backoff
        self._rng = rng or random.Random()
        #: a longer delay asked by the server is cut to max_backoff_s (``_classify``), never refused; and
        #: added no jitter: one sender thread is no crowd to spread
        self._retry = RetryPolicy(
            max_attempts=self.config.max_retries + 1,
            base_delay=self.config.initial_backoff_s,
            max_delay=self.config.max_backoff_s,
            max_retry_after=math.inf,
            retry_after_jitter=0.0,
        )
        self._last_warning = -_WARN_EVERY_S

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._queue.started:
            return
        if self._sender is None:
            self._sender = (
                _GrpcSender(self.config)
                if self.config.resolved_protocol() == "grpc"
                else HttpSender(self.config)
            )
        self._queue.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Try to deliver what is queued within ``timeout_s``; count the rest as dropped."""
        if self._queue.shutdown(timeout_s) and self._sender is not None:
            self._sender.close()

    # -- producer side ---------------------------------------------------------------------------------------
    def submit_spans(self, spans: Sequence[SpanRecord]) -> None:
        self._submit("traces", list(spans))

    def submit_logs(self, logs: Sequence[LogRecord]) -> None:
        self._submit("logs", list(logs))

    def submit_encoded(self, signal: str, body: bytes, records: int) -> None:
        """An OTLP request body (protobuf) of ``records`` records, sent as it is: no
        decoding or encoding here."""
        self._submit(signal, Encoded(body, records))

    def _submit(self, signal: str, records: list[Any] | Encoded) -> None:
        if records:
            self._queue.submit([(signal, records)])

    def _set_queued(self, queued: int) -> None:
        self.stats.queued = queued

    def _dropped(self, items: list[Item], why: Dropped, error: Exception | None) -> None:
        if why is Dropped.FAILED:  # an encoder or redaction bug: counted and warned as a failed batch
            for signal, records in items:
                self._fail(signal, records, f"{type(error).__name__}: {error}")
            return
        for signal, records in items:
            self._count_dropped(signal, len(records))

    def _count_dropped(self, signal: str, n: int) -> None:
        if signal == "traces":
            self.stats.dropped_spans += n
        else:
            self.stats.dropped_logs += n

    # -- sender thread ---------------------------------------------------------------------------------------
    def _deliver_batch(self, batch: list[Item]) -> None:
        for signal, records in batch:
            self._deliver(signal, records)

    def _deliver(self, signal: str, records: list[Any] | Encoded) -> None:
        request: Any
        if isinstance(records, Encoded):  # sent as received: the caller chose it knowing no redaction applies
            request = records.message(signal) if isinstance(self._sender, _GrpcSender) else records
        else:
            items: list[Any] = records
            if self._redactor is not None:
                items = self._redactor.spans(items) if signal == "traces" else self._redactor.logs(items)
            request = encode_traces(items) if signal == "traces" else encode_logs(items)
        try:
            call_with_retries(
                lambda: self._sender.send(signal, request),
                self._retry,
                self._classify,
                rng=self._rng,
                sleep=self._sleep,
                on_failure=self._count_failure,
            )
        except GaveUp as gave_up:
            exc = gave_up.__cause__
            if gave_up.failure.retryable:
                self._fail(signal, records, f"gave up after retries: {self.stats.last_error}")
            elif isinstance(exc, ExportRefused):
                self._fail(signal, records, str(exc))
            else:  # an encoder or transport bug must not kill the thread
                self._fail(signal, records, f"{type(exc).__name__}: {exc}")
            return
        if signal == "traces":
            self.stats.sent_spans += len(records)
        else:
            self.stats.sent_logs += len(records)

    def _classify(self, exc: Exception) -> Failure:
        if not isinstance(exc, ExportRetryable):
            return Failure(False)
        asked = exc.retry_after_s
        return Failure(True, None if asked is None else min(asked, self.config.max_backoff_s))

    def _count_failure(self, exc: Exception, failure: Failure) -> None:
        """Every failed attempt, retried or not (as ``forward_failed_attempts`` says, and
        as the sinks count)."""
        self.stats.failed_attempts += 1
        self.stats.last_error = str(exc)

    def _fail(self, signal: str, records: list[Any] | Encoded, message: str) -> None:
        self._count_dropped(signal, len(records))
        self.stats.last_error = message
        now = self._clock()
        if now - self._last_warning >= _WARN_EVERY_S:  # one line per interval, not one per failed batch
            self._last_warning = now
            log.warning(
                "forwarding to %s is dropping data (%d spans, %d logs dropped so far): %s",
                self.config.url,
                self.stats.dropped_spans,
                self.stats.dropped_logs,
                message,
            )
