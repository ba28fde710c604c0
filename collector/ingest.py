"""The one decode-and-enqueue path both receivers call: body or parsed message -> records -> Arrow -> writer.

It answers only after the records are committed, and reports what the OTLP answer needs: how many records were
rejected and why (partial success). Everything protocol-specific (status codes, encodings of the answer) stays in
the receivers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.otlp import Decoded, DecodeError, decode
from agentotel_eval.store.rows import logs_to_arrow, spans_to_arrow
from agentotel_eval.store.writer import QueueFull, RejectedData, StoreWriter, WriterError
from collector.errors import BadRequest, Overloaded, Unavailable

SIGNALS = ("traces", "logs")
ENCODINGS = ("protobuf", "json")


@dataclass(frozen=True, slots=True)
class ExportOutcome:
    """What an export call achieved: ``accepted`` records committed (``duplicates`` of them already stored)."""

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

    def snapshot(self) -> tuple[dict[Any, int], dict[Any, int], dict[Any, int]]:
        with self._lock:
            return dict(self.received), dict(self.rejected), dict(self.requests)


class Ingestor:
    """Decode, convert, enqueue, wait for the commit. Thread-safe; one instance serves every receiver."""

    def __init__(
        self,
        writer: StoreWriter,
        *,
        export_timeout: float = 30.0,
        backlog: Callable[[], int] = lambda: 0,
        stats: IngestStats | None = None,
        cpu_slots: int = 2,
    ) -> None:
        self._writer = writer
        # Decoding is CPU-bound Python: more requests at it at once only take turns on the interpreter lock, and
        # each holds its decoded records meanwhile (several times the request's size).
        self._cpu_slots = threading.BoundedSemaphore(cpu_slots)
        self._timeout = export_timeout
        self._backlog = backlog
        self.stats = stats or IngestStats()

    def ingest_body(self, signal: str, encoding: str, body: bytes, transport: str = "http") -> ExportOutcome:
        """An OTLP request body (already inflated) in ``encoding`` (protobuf | json): both receivers call this."""
        with self._cpu_slots:
            try:
                decoded = decode(signal, encoding, body)
            except DecodeError as exc:
                self.stats.count(transport, signal, "bad_request")
                raise BadRequest(str(exc)) from None
            batch = self._convert(signal, decoded.records)
        return self.ingest_decoded(signal, decoded, transport, batch)

    @staticmethod
    def _convert(signal: str, records: list[Any]) -> Any:
        if not records:
            return None
        return spans_to_arrow(records) if signal == "traces" else logs_to_arrow(records)

    def ingest_decoded(self, signal: str, decoded: Decoded, transport: str, batch: Any = None) -> ExportOutcome:
        """Records already decoded (``batch``: their Arrow form, if already made) -> committed."""
        records = decoded.records
        if not records:
            self.stats.count(transport, signal, "partial" if decoded.rejected else "ok", 0, decoded.rejected)
            return ExportOutcome(signal, 0, decoded.rejected, decoded.message)
        if batch is None:
            with self._cpu_slots:
                batch = self._convert(signal, records)
        try:
            if signal == "traces":
                ticket = self._writer.submit(records, batch, extra_load=self._backlog())
            else:
                ticket = self._writer.submit(logs=records, log_batch=batch, extra_load=self._backlog())
        except QueueFull as exc:
            self.stats.count(transport, signal, "overloaded")
            raise Overloaded(str(exc), exc.retry_after) from None
        except WriterError as exc:
            self.stats.count(transport, signal, "unavailable")
            raise Unavailable(str(exc)) from None
        try:
            result = ticket.wait(self._timeout)
        except RejectedData as exc:
            self.stats.count(transport, signal, "bad_request", 0, decoded.rejected)
            raise BadRequest(str(exc)) from None
        except WriterError as exc:
            self.stats.count(transport, signal, "unavailable")
            raise Unavailable(str(exc)) from None
        outcome = "partial" if decoded.rejected else "ok"
        self.stats.count(transport, signal, outcome, len(records), decoded.rejected)
        return ExportOutcome(signal, len(records), decoded.rejected, decoded.message, result.duplicates)
