"""OTLP in and out: decode export requests into plain records, encode records back into requests."""

from agentotel_eval.otlp.decode import (
    DecodeError,
    LimitExceeded,
    decode,
    decode_logs_json,
    decode_logs_protobuf,
    decode_traces_json,
    decode_traces_protobuf,
    logs_from_message,
    traces_from_message,
)
from agentotel_eval.otlp.records import Decoded, LogRecord, SpanEvent, SpanLink, SpanRecord

__all__ = [
    "DecodeError",
    "Decoded",
    "LimitExceeded",
    "LogRecord",
    "SpanEvent",
    "SpanLink",
    "SpanRecord",
    "decode",
    "decode_logs_json",
    "decode_logs_protobuf",
    "decode_traces_json",
    "decode_traces_protobuf",
    "logs_from_message",
    "traces_from_message",
]
