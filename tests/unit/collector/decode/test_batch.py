"""One request decoded into what the collector appends (``decode_request``), and its trip
to and from a worker."""

from __future__ import annotations

import pytest

from agentotel_eval import semconv as sc
from agentotel_eval.collector.decode.batch import KEEP_UNLESS_CLEAN, decode_request, from_message, to_message
from agentotel_eval.otlp import DecodeError, LimitExceeded
from agentotel_eval.otlp.encode import encode_logs, encode_traces
from agentotel_eval.otlp.limits import Limits
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.redaction import RedactionSettings, Redactor

SECRET = "sk-abcdefghijklmnopqrstuvwx12345"


def _spans(n: int = 3) -> list[SpanRecord]:
    return [
        SpanRecord(
            f"{1:032x}",
            f"{i + 1:016x}",
            None,
            f"s{i}",
            start_ns=1,
            end_ns=2,
            attributes={"i": i, "api_key": SECRET},
            resource={"service.name": "svc"},
        )
        for i in range(n)
    ]


def _body(spans: list[SpanRecord], *, bad: int = 0) -> bytes:
    request = encode_traces(spans)
    if bad and not request.resource_spans:
        request.resource_spans.add().scope_spans.add()
    for k in range(bad):  # spans the decoder rejects: a trace id of two bytes
        request.resource_spans[0].scope_spans[0].spans.add(
            trace_id=b"\x01\x02", span_id=b"\x03" * 8, name=f"b{k}"
        )
    return request.SerializeToString()


def _logs(*event_names: str) -> bytes:
    return encode_logs(
        [LogRecord(5, 5, f"{1:032x}", f"{1:016x}", event_name=name) for name in event_names]
    ).SerializeToString()


def test_rows_marks_and_records_are_aligned_one_per_valid_span():
    batch = decode_request("traces", "protobuf", _body(_spans(3), bad=2), keep_spans=True)
    assert batch.size == 3 and len(batch.marks) == 3 and len(batch.records) == 3
    assert batch.rows.column("span_id").to_pylist() == [r.span_id for r in batch.records]
    assert batch.rejected == 2 and "invalid trace id" in batch.message


def test_span_records_are_kept_only_when_asked():
    assert decode_request("traces", "protobuf", _body(_spans())).records is None
    assert len(decode_request("traces", "protobuf", _body(_spans()), keep_spans=True).records) == 3


def test_unless_clean_keeps_the_records_of_a_body_that_cannot_be_sent_on_as_it_is():
    clean = decode_request("traces", "protobuf", _body(_spans()), keep_spans=KEEP_UNLESS_CLEAN)
    assert clean.records is None  # the body itself is sent on
    with_rejected = decode_request("traces", "protobuf", _body(_spans(), bad=1), keep_spans=KEEP_UNLESS_CLEAN)
    assert len(with_rejected.records) == 3
    cut = decode_request(
        "traces",
        "protobuf",
        _body(_spans()),
        keep_spans=KEEP_UNLESS_CLEAN,
        limits=Limits(max_attributes_per_span=1),
    )
    assert cut.limited and len(cut.records) == 3


def test_log_records_are_kept_when_one_is_an_evaluation_result():
    assert decode_request("logs", "protobuf", _logs("a", "b")).records is None
    kept = decode_request("logs", "protobuf", _logs("a", sc.EVENT_EVALUATION_RESULT))
    assert [r.event_name for r in kept.records] == ["a", sc.EVENT_EVALUATION_RESULT]
    assert kept.size == 2 and len(kept.marks) == 2


def test_a_request_without_a_valid_record_has_no_rows_and_says_why():
    batch = decode_request("traces", "protobuf", _body([], bad=2), keep_spans=True)
    assert batch.rows is None and batch.size == 0 and batch.marks == [] and batch.records is None
    assert batch.rejected == 2 and batch.message


def test_the_redactor_runs_before_anything_is_made_of_the_records():
    redactor = Redactor(RedactionSettings(enabled=True))
    batch = decode_request("traces", "protobuf", _body(_spans()), keep_spans=True, redactor=redactor)
    assert SECRET not in str(batch.rows.column("attributes")) and SECRET not in str(batch.records)
    assert SECRET in str(decode_request("traces", "protobuf", _body(_spans())).rows.column("attributes"))


def test_a_body_that_is_not_a_request_or_is_over_a_hard_limit_raises():
    with pytest.raises(DecodeError):
        decode_request("traces", "protobuf", b"\xff\xff\xff not protobuf")
    with pytest.raises(LimitExceeded):
        decode_request("traces", "protobuf", _body(_spans(3)), limits=Limits(max_spans_per_request=2))


@pytest.mark.parametrize(
    "signal, body, keep",
    [
        ("traces", _body(_spans(3), bad=1), True),
        ("traces", _body(_spans(3)), False),
        ("logs", _logs("x", sc.EVENT_EVALUATION_RESULT), False),
        ("traces", _body([], bad=1), True),
    ],
)
def test_a_batch_crosses_to_the_collector_unchanged(signal, body, keep):
    batch = decode_request(signal, "protobuf", body, keep_spans=keep)
    message, frames = to_message(7, batch)
    assert message.request_id == 7 and len(frames) == (0 if batch.rows is None else 1)
    back = from_message(message, [bytes(f) for f in frames])
    assert back.signal == batch.signal and back.marks == batch.marks and back.records == batch.records
    assert (back.rejected, back.message, back.limited) == (batch.rejected, batch.message, batch.limited)
    assert (back.rows is None and batch.rows is None) or back.rows.equals(batch.rows)
