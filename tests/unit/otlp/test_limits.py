"""Request limits in the decoder: counts cut and counted, long strings truncated with a marker, deep values
replaced, too many records refused whole with the limit named; the same in protobuf and OTLP/JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentotel_eval.otlp import DecodeError, LimitExceeded, SpanEvent, SpanLink, SpanRecord, decode
from agentotel_eval.otlp.encode import encode_logs, encode_traces, traces_to_json
from agentotel_eval.otlp.limits import Limits
from agentotel_eval.otlp.records import LogRecord

TRACE = "0102030405060708090a0b0c0d0e0f10"


def span(i: int = 1, **fields: Any) -> SpanRecord:
    base: dict[str, Any] = dict(
        trace_id=TRACE,
        span_id=f"{i:016x}",
        parent_span_id=None,
        name="work",
        kind=1,
        start_ns=1_700_000_000_000_000_000,
        end_ns=1_700_000_001_000_000_000,
        status_code=0,
        status_message="",
        attributes={},
        events=(),
        links=(),
        resource={"service.name": "svc"},
        scope_name="s",
        scope_version="1",
    )
    base.update(fields)
    return SpanRecord(**base)


def bodies(spans: list[SpanRecord]) -> dict[str, bytes]:
    return {
        "protobuf": encode_traces(spans).SerializeToString(),
        "json": json.dumps(traces_to_json(spans)).encode(),
    }


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": [value]}
    return value


ENCODINGS = ("protobuf", "json")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_within_the_limits_nothing_is_cut(encoding: str) -> None:
    records = [span(1, attributes={"a": "x" * 100, "n": nested(3)})]
    decoded = decode("traces", encoding, bodies(records)[encoding])
    assert decoded.records == records and decoded.limited == {}


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_counts_over_the_limits_keep_the_first_and_are_counted(encoding: str) -> None:
    limits = Limits(
        max_attributes_per_span=3, max_attributes_per_resource=2, max_events_per_span=2, max_links_per_span=1
    )
    attributes = {f"k{i}": i for i in range(10)}
    events = tuple(
        SpanEvent(f"e{i}", 1_700_000_000_500_000_000, {f"a{j}": j for j in range(5)}) for i in range(4)
    )
    links = tuple(SpanLink(TRACE, f"{j + 9:016x}", {}) for j in range(3))
    records = [
        span(
            1,
            attributes=attributes,
            events=events,
            links=links,
            resource={"service.name": "svc", "r1": 1, "r2": 2},
        )
    ]
    decoded = decode("traces", encoding, bodies(records)[encoding], limits)
    (got,) = decoded.records
    assert got.attributes == {"k0": 0, "k1": 1, "k2": 2}
    assert [e.name for e in got.events] == ["e0", "e1"] and all(len(e.attributes) == 3 for e in got.events)
    assert len(got.links) == 1 and len(got.resource) == 2
    assert decoded.limited == {"attributes_dropped": 7 + 2 * 2 + 1, "events_dropped": 2, "links_dropped": 2}


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_long_strings_are_truncated_with_a_marker_and_counted(encoding: str) -> None:
    limits = Limits(max_attribute_value_length=10)
    records = [
        span(1, name="n" * 50, attributes={"short": "abc", "long": "é" * 25, "list": ["y" * 11, "ok"]})
    ]
    decoded = decode("traces", encoding, bodies(records)[encoding], limits)
    (got,) = decoded.records
    assert got.attributes["short"] == "abc"
    assert got.attributes["long"] == "é" * 10 + "…[truncated: 25 characters]"
    assert got.attributes["list"] == ["y" * 10 + "…[truncated: 11 characters]", "ok"]
    assert got.name == "n" * 10 + "…[truncated: 50 characters]"
    assert decoded.limited == {"values_truncated": 3}


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_values_nested_too_deep_are_replaced(encoding: str) -> None:
    limits = Limits(max_value_depth=4)
    records = [span(1, attributes={"deep": nested(10), "fine": nested(1)})]
    decoded = decode("traces", encoding, bodies(records)[encoding], limits)
    (got,) = decoded.records
    assert got.attributes["fine"] == nested(1)
    # four levels of lists and maps are kept, the fifth is the marker
    assert got.attributes["deep"] == {"k": [{"k": ["[value nested deeper than 4 levels]"]}]}
    assert decoded.limited == {"values_too_deep": 1}


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_too_many_spans_refuse_the_request_naming_the_limit(encoding: str) -> None:
    body = bodies([span(i) for i in range(1, 6)])[encoding]
    with pytest.raises(LimitExceeded, match=r"5 spans, more than limits\.max_spans_per_request \(4\)"):
        decode("traces", encoding, body, Limits(max_spans_per_request=4))
    assert len(decode("traces", encoding, body, Limits(max_spans_per_request=5)).records) == 5


def test_too_many_log_records_refuse_the_request() -> None:
    logs = [
        LogRecord(
            1_700_000_000_000_000_000,
            0,
            TRACE,
            "0000000000000001",
            9,
            "INFO",
            "",
            f"m{i}",
            {},
            {"service.name": "svc"},
            "s",
            "1",
        )
        for i in range(3)
    ]
    body = encode_logs(logs).SerializeToString()
    with pytest.raises(LimitExceeded, match=r"max_log_records_per_request \(2\)"):
        decode("logs", "protobuf", body, Limits(max_log_records_per_request=2))
    limited = decode("logs", "protobuf", body, Limits(max_attribute_value_length=1))
    assert [r.body for r in limited.records] == ["m…[truncated: 2 characters]"] * 3


def test_a_json_body_nested_past_the_interpreter_is_a_bad_request_not_a_crash() -> None:
    value = '{"arrayValue": {"values": [' * 200_000 + "]}}" * 200_000
    head = (
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "'
        + TRACE
        + '", "spanId": "0000000000000001", '
    )
    body = head + '"attributes": [{"key": "x", "value": ' + value + "}]}]}]}]}"
    with pytest.raises(DecodeError, match="nested too deeply"):
        decode("traces", "json", body.encode())


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, by hand (the Python API refuses to build what is tested here)."""
    key, size, out = (number << 3) | 2, len(payload), bytearray()
    out.append(key)
    while True:
        byte, size = size & 0x7F, size >> 7
        out.append(byte | (0x80 if size else 0))
        if not size:
            return bytes(out) + payload


def test_a_protobuf_body_nested_past_the_parser_is_a_bad_request() -> None:
    value = _field(1, b"leaf")  # AnyValue.string_value
    for _ in range(300):
        value = _field(5, _field(1, value))  # AnyValue.array_value.values[0]
    attribute = _field(1, b"x") + _field(2, value)
    span_bytes = _field(1, bytes.fromhex(TRACE)) + _field(2, bytes(7) + b"\x01") + _field(9, attribute)
    body = _field(1, _field(2, _field(2, span_bytes)))  # resource_spans.scope_spans.spans
    with pytest.raises(DecodeError, match="not an ExportTraceServiceRequest"):
        decode("traces", "protobuf", body)
    shallow = _field(1, b"leaf")
    for _ in range(20):
        shallow = _field(5, _field(1, shallow))
    span_bytes = (
        _field(1, bytes.fromhex(TRACE))
        + _field(2, bytes(7) + b"\x01")
        + _field(9, _field(1, b"x") + _field(2, shallow))
    )
    decoded = decode(
        "traces", "protobuf", _field(1, _field(2, _field(2, span_bytes))), Limits(max_value_depth=8)
    )
    assert decoded.limited == {"values_too_deep": 1} and len(decoded.records) == 1
