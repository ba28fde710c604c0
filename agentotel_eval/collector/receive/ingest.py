"""The one decode-and-enqueue path both receivers call: body -> rows
(``agentotel_eval.collector.decode.batch``) -> writer -> answer.

It answers only after the records are committed, and reports what the OTLP answer needs: how many records were
rejected and why (partial success). Everything protocol-specific (status codes, encodings of the answer) stays
in the receivers. The decoding itself runs in decode workers (``agentotel_eval.collector.decode.pool``), or on
the receiver's thread when the collector is configured without them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.collector.process.ingest_batch import DecodeUnavailable, IngestBatch
from agentotel_eval.collector.receive.errors import BadRequest, Overloaded, Unavailable
from agentotel_eval.collector.store.writer import QueueFull, RejectedData, StoreWriter, WriterError
from agentotel_eval.otlp import DecodeError, LimitExceeded

log = logging.getLogger(__name__)

#: what turns a body into rows: ``decode.batch.decode_request`` here, or a decode pool's ``decode``
#: (wired by the service)
Decoder = Callable[[str, str, bytes], IngestBatch]

SIGNALS = ("traces", "logs")
ENCODINGS = ("protobuf", "json")


@dataclass(frozen=True, slots=True)
class ExportOutcome:
    """What an export call achieved: ``accepted`` records committed (``duplicates`` of
    them already stored)."""

    signal: str
    accepted: int
    rejected: int = 0
    message: str = ""
    duplicates: int = 0


@dataclass
class IngestStats:
    """Counters shared by the receiver threads (updated once per request, under a lock)."""

    received: dict[tuple[str, str], int] = field(default_factory=dict)  # (transport, signal) -> valid records
    rejected: dict[tuple[str, str], int] = field(default_factory=dict)  # invalid records (partial success)
    requests: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (transport, signal, outcome)
    #: (signal, kind) -> what the request limits cut: attributes, events, links dropped; values cut
    limited: dict[tuple[str, str], int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, transport: str, signal: str, outcome: str, received: int = 0, rejected: int = 0) -> None:
        with self._lock:
            key = (transport, signal)
            if received:
                self.received[key] = self.received.get(key, 0) + received
            if rejected:
                self.rejected[key] = self.rejected.get(key, 0) + rejected
            rkey = (transport, signal, outcome)
            self.requests[rkey] = self.requests.get(rkey, 0) + 1

    def count_limited(self, signal: str, cut: dict[str, int]) -> None:
        with self._lock:
            for kind, n in cut.items():
                self.limited[(signal, kind)] = self.limited.get((signal, kind), 0) + n

    def limited_snapshot(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return dict(self.limited)

    def snapshot(self) -> tuple[dict[Any, int], dict[Any, int], dict[Any, int]]:
        with self._lock:
            return dict(self.received), dict(self.rejected), dict(self.requests)


class Ingestor:
    """Decode, enqueue, wait for the commit. Thread-safe; one instance serves every receiver."""

    def __init__(
        self,
        writer: StoreWriter,
        *,
        decoder: Decoder,
        export_timeout: float = 30.0,
        backlog: Callable[[], int] = lambda: 0,
        overloaded: Callable[[], str | None] = lambda: None,
        stats: IngestStats | None = None,
        cpu_slots: int = 2,
    ) -> None:
        self._writer = writer
        self._decode = decoder
        self._overloaded = overloaded
        # Requests being decoded at once: each holds its body and its rows meanwhile (several times the body's
        # size); in this process decoding is CPU-bound Python, so more at once would only take turns.
        self._cpu_slots = threading.BoundedSemaphore(cpu_slots)
        self._timeout = export_timeout
        self._backlog = backlog
        self._decoding = 0  # requests being decoded (or waiting for a slot), not submitted yet
        self._decoding_lock = threading.Lock()
        self.stats = stats or IngestStats()
        self._warned_empty: set[tuple[str, str]] = set()

    @property
    def decoding(self) -> int:
        """Requests on their way to the writer: the writer lingers for them to share a commit."""
        return self._decoding

    def ingest_body(self, signal: str, encoding: str, body: bytes, transport: str = "http") -> ExportOutcome:
        """An OTLP request body (already inflated) in ``encoding`` (protobuf | json): both
        receivers call this.

        A request that would be refused for back-pressure is refused before it is decoded (decoding it would
        only take CPU from the work that is behind)."""
        self._check_room(signal, transport)
        with self._decoding_lock:
            self._decoding += 1
        try:
            with self._cpu_slots:
                batch = self._decode(signal, encoding, body)
        except DecodeError as exc:
            self.stats.count(
                transport, signal, "over_limit" if isinstance(exc, LimitExceeded) else "bad_request"
            )
            raise BadRequest(str(exc)) from None
        except DecodeUnavailable as exc:
            self.stats.count(transport, signal, "unavailable")
            raise Unavailable(str(exc)) from None
        finally:
            with self._decoding_lock:
                self._decoding -= 1
        return self.ingest_batch(batch, transport)

    def _warn_empty(self, transport: str, signal: str) -> None:
        """A request with nothing in it is valid OTLP (answered as a success, as the specification says), but
        a body of the wrong shape (``{"foo": 1}``) reads as one: say so once per transport and signal."""
        key = (transport, signal)
        with self._decoding_lock:
            if key in self._warned_empty:
                return
            self._warned_empty.add(key)
        what = "spans" if signal == "traces" else "log records"
        log.warning(
            "an OTLP/%s %s export request held no %s (is the body an Export%sServiceRequest?); it was "
            "answered as a success with nothing stored. Further ones are counted in "
            'agentotel_export_requests_total{outcome="empty"}, not logged',
            transport,
            signal,
            what,
            "Trace" if signal == "traces" else "Logs",
        )

    def _check_room(self, signal: str, transport: str) -> None:
        why = self._overloaded()
        try:
            if why is not None:
                raise QueueFull(why, self._writer.retry_after)
            self._writer.check_room(extra_load=self._backlog())
        except WriterError as exc:
            raise self._refusal(exc, transport, signal) from None

    def _refusal(self, exc: WriterError, transport: str, signal: str) -> Overloaded | Unavailable:
        """What an exporter is answered when the writer cannot take its request now (counted): retry later."""
        if isinstance(exc, QueueFull):
            self.stats.count(transport, signal, "overloaded")
            return Overloaded(str(exc), exc.retry_after)
        self.stats.count(transport, signal, "unavailable")
        return Unavailable(str(exc))

    def ingest_batch(self, batch: IngestBatch, transport: str) -> ExportOutcome:
        """Rows of a decoded request -> committed."""
        signal = batch.signal
        if batch.limited:
            self.stats.count_limited(signal, batch.limited)
        if batch.rows is None:
            outcome = "partial" if batch.rejected else "empty"
            self.stats.count(transport, signal, outcome, 0, batch.rejected)
            if outcome == "empty":
                self._warn_empty(transport, signal)
            return ExportOutcome(signal, 0, batch.rejected, batch.message)
        try:
            if signal == "traces":
                ticket = self._writer.submit(batch.rows, payload=batch, extra_load=self._backlog())
            else:
                ticket = self._writer.submit(log_batch=batch.rows, payload=batch, extra_load=self._backlog())
        except WriterError as exc:
            raise self._refusal(exc, transport, signal) from None
        try:
            result = ticket.wait(self._timeout)
        except RejectedData as exc:
            self.stats.count(transport, signal, "bad_request", 0, batch.rejected)
            raise BadRequest(str(exc)) from None
        except WriterError as exc:
            raise self._refusal(exc, transport, signal) from None
        outcome = "partial" if batch.rejected else "ok"
        self.stats.count(transport, signal, outcome, batch.size, batch.rejected)
        return ExportOutcome(signal, batch.size, batch.rejected, batch.message, result.duplicates)
