"""What the decode stage hands on: one export request decoded (``decode.batch.decode_request``, in a decode
worker or here), which the receivers commit through the store's writer and the sinks may send on; and the
refusal when no decode worker can take a request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa


@dataclass(frozen=True, slots=True)
class IngestBatch:
    """A decoded request. ``rows``, ``marks`` and ``records`` (when kept) are aligned: one
    entry per valid record."""

    signal: str  # traces | logs
    rows: pa.RecordBatch | None  # SPAN_SCHEMA or LOG_SCHEMA; None when no record was valid
    marks: list[Any]
    rejected: int = 0
    message: str = ""
    records: list[Any] | None = None
    #: what the limits cut from the request, by kind (``otlp.limits``)
    limited: dict[str, int] | None = None
    #: the request's protobuf body as received, when it may be sent on as it is
    #: (``sink.hub.SinkHub.keep_raw``)
    raw: bytes | None = None

    @property
    def size(self) -> int:
        return self.rows.num_rows if self.rows is not None else 0


#: ``keep_spans``: the records only where the request's body cannot be sent on as it is (JSON, a span rejected
#: or cut by the limits): the score sinks send a clean protobuf request's body, and need the
#: records of the others
KEEP_UNLESS_CLEAN = "unless_clean"


class DecodeUnavailable(RuntimeError):
    """No decode worker could take the request now (retryable: HTTP 503 / gRPC UNAVAILABLE)."""
