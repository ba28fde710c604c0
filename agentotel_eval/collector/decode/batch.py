"""One export request, decoded and converted: the rows to append and what goes on after the commit.

``decode_request`` is the whole per-span work of ingest, and pure: the OTLP decoder's records, their Arrow
rows (``store.rows``), their marks for the assembler (``agentotel_eval.collector.process.marks``), and the
records themselves only where the collector still needs them after the commit (spans it forwards downstream,
log records carrying other tools' evaluation results). It runs in the decode workers
(``agentotel_eval.collector.decode.pool``), so the collector's own process, which holds the DuckDB writer,
does no per-span Python; ``to_message`` / ``from_message`` carry the result across.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from agentotel_eval import semconv as sc
from agentotel_eval.collector.process import wire
from agentotel_eval.collector.process.ingest_batch import KEEP_UNLESS_CLEAN, IngestBatch
from agentotel_eval.collector.process.marks import log_marks, span_marks
from agentotel_eval.collector.process.messages import Decoded
from agentotel_eval.otlp import decode
from agentotel_eval.otlp.limits import DEFAULT_LIMITS, Limits
from agentotel_eval.reconstruct.declared import BUILTIN, Conventions
from agentotel_eval.redaction import Redactor
from agentotel_eval.store.rows import LOG_SCHEMA, SPAN_SCHEMA, logs_to_arrow, spans_to_arrow


def decode_request(
    signal: str,
    encoding: str,
    body: bytes,
    *,
    keep_spans: bool | str = False,
    conventions: Conventions = BUILTIN,
    limits: Limits = DEFAULT_LIMITS,
    redactor: Redactor | None = None,
) -> IngestBatch:
    """Decode and convert one request body (``DecodeError`` when it cannot be parsed at all, or is over a hard
    limit).

    ``keep_spans`` keeps the span records (the collector forwards them; ``KEEP_UNLESS_CLEAN``: only those of a
    request that is not clean protobuf); log records are kept when one of them is
    an evaluation result (stored as an evaluations row too), the rare case. With a ``redactor`` the records
    are redacted before anything is made of them: what is stored, assembled and forwarded
    never held the secret."""
    decoded = decode(signal, encoding, body, limits)
    records = decoded.records
    if redactor is not None and records:
        records = redactor.spans(records) if signal == "traces" else redactor.logs(records)
    limited = decoded.limited or None
    if not records:
        return IngestBatch(signal, None, [], decoded.rejected, decoded.message, limited=limited)
    if signal == "traces":
        keep = keep_spans is True or (
            keep_spans == KEEP_UNLESS_CLEAN
            and not (encoding == "protobuf" and not decoded.rejected and not limited)
        )
        return IngestBatch(
            signal,
            spans_to_arrow(records),
            span_marks(records, conventions),
            decoded.rejected,
            decoded.message,
            records if keep else None,
            limited,
        )
    evaluation = sc.EVENT_EVALUATION_RESULT
    keep = keep_spans is True or any(r.event_name == evaluation for r in records)
    return IngestBatch(
        signal,
        logs_to_arrow(records),
        log_marks(records),
        decoded.rejected,
        decoded.message,
        records if keep else None,
        limited,
    )


_SCHEMAS = {"traces": SPAN_SCHEMA, "logs": LOG_SCHEMA}


def to_message(request_id: int, batch: IngestBatch) -> tuple[Decoded, list[Any]]:
    """The batch as a ``Decoded`` message and its frame: the rows as one Arrow IPC record batch, in Arrow's
    own buffer (sent without a copy; the schema is the signal's, known on both sides). No frame when no record
    was valid."""
    records = None
    if batch.records is not None:
        records = wire.dumps(batch.records) if batch.signal == "traces" else wire.dumps((), batch.records)
    message = Decoded(
        request_id, batch.signal, batch.marks, batch.rejected, batch.message, records, batch.limited
    )
    return message, [batch.rows.serialize()] if batch.rows is not None else []


def from_message(message: Decoded, frames: list[bytes]) -> IngestBatch:
    """The inverse of ``to_message`` (the rows are read in place, from the frame's buffer)."""
    signal = message.signal
    rows = pa.ipc.read_record_batch(pa.py_buffer(frames[0]), _SCHEMAS[signal]) if frames else None
    kept = None
    if message.records is not None:
        spans, logs = wire.loads(message.records)
        kept = spans if signal == "traces" else logs
    return IngestBatch(signal, rows, message.marks, message.rejected, message.message, kept, message.limited)
