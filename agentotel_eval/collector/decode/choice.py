"""Where ingest decodes a request body: in the decode workers (``[receiver] decode_workers``, helper
processes), or on the thread that received it."""

from __future__ import annotations

import functools
from collections.abc import Callable

from agentotel_eval.collector.config import CollectorConfig
from agentotel_eval.collector.decode.batch import decode_request
from agentotel_eval.collector.decode.pool import DecodePool
from agentotel_eval.collector.process.ingest_batch import IngestBatch
from agentotel_eval.collector.process.tuning import Tuning
from agentotel_eval.reconstruct.declared import BUILTIN

#: (signal, encoding, body) -> the decoded request
Decoder = Callable[[str, str, bytes], IngestBatch]


def decoder_for(
    config: CollectorConfig, *, keep_spans: bool | str, tuning: Tuning, log_level: int
) -> tuple[DecodePool | None, Decoder]:
    """The decode workers (not started yet; None: decoding runs in this process) and the decoder ingest calls.
    ``keep_spans``: what the decoded answers keep of the span records (``decode_request``)."""
    if not config.receiver.decode_workers:
        return None, functools.partial(
            decode_request,
            keep_spans=keep_spans,
            conventions=BUILTIN.plus(config.conventions),
            limits=config.limits,
            redactor=config.redaction.redactor("store"),
        )
    pool = DecodePool(
        config.receiver.decode_workers,
        keep_spans=keep_spans,
        log_level=log_level,
        tuning=tuning,
        conventions=config.conventions,
        limits=config.limits,
        redaction=config.redaction if config.redaction.applies("store") else None,
    )
    timeout = config.receiver.export_timeout

    def decode(signal: str, encoding: str, body: bytes) -> IngestBatch:
        return pool.decode(signal, encoding, body, timeout)

    return pool, decode
