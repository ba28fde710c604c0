import json

import pytest

from agentotel_eval.otlp import DecodeError, decode
from agentotel_eval.otlp.encode import encode_logs, encode_traces, traces_to_json
from tests.support.fixture_traces import fixtures

FIXTURES = fixtures()


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_protobuf_and_json_decode_to_the_same_records(fixture):
    pb = decode("traces", "protobuf", fixture.body("protobuf"))
    js = decode("traces", "json", fixture.body("json"))
    assert pb.rejected == js.rejected == 0
    assert pb.records == js.records
    assert len(pb.records) == fixture.entry["span_count"]
    assert len({s.trace_id for s in pb.records}) == fixture.entry["trace_count"]
    for span in pb.records:
        assert len(span.trace_id) == 32 and span.trace_id == span.trace_id.lower()
        assert len(span.span_id) == 16
        assert span.start_ns > 1_600_000_000 * 10**9
    if fixture.logs_body("protobuf"):
        assert (
            decode("logs", "protobuf", fixture.logs_body("protobuf")).records
            == decode("logs", "json", fixture.logs_body("json")).records
        )


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_encode_round_trips(fixture):
    spans = fixture.spans()
    assert decode("traces", "protobuf", encode_traces(spans).SerializeToString()).records == spans
    assert decode("traces", "json", json.dumps(traces_to_json(spans)).encode()).records == spans
    logs = fixture.logs()
    if logs:  # (the encoder groups records by resource and scope: the order across scopes may change)
        back = decode("logs", "protobuf", encode_logs(logs).SerializeToString()).records
        assert sorted(back, key=repr) == sorted(logs, key=repr)


def test_attribute_values_become_plain_python():
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "s"},
                        "spans": [
                            {
                                "traceId": "0102030405060708090A0B0C0D0E0F10",
                                "spanId": "0102030405060708",
                                "parentSpanId": "",
                                "name": "n",
                                "kind": "SPAN_KIND_CLIENT",
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": 1700000000000000001,
                                "status": {"code": 2, "message": "boom"},
                                "attributes": [
                                    {"key": "i", "value": {"intValue": "9007199254740993"}},
                                    {"key": "d", "value": {"doubleValue": 1.5}},
                                    {"key": "b", "value": {"boolValue": True}},
                                    {
                                        "key": "a",
                                        "value": {
                                            "arrayValue": {
                                                "values": [{"stringValue": "x"}, {"intValue": "2"}]
                                            }
                                        },
                                    },
                                    {
                                        "key": "m",
                                        "value": {
                                            "kvlistValue": {
                                                "values": [{"key": "k", "value": {"stringValue": "v"}}]
                                            }
                                        },
                                    },
                                    {"key": "y", "value": {"bytesValue": "AQI="}},
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    (span,) = decode("traces", "json", json.dumps(body).encode()).records
    assert span.trace_id == "0102030405060708090a0b0c0d0e0f10"
    assert span.parent_span_id is None
    assert span.kind_name == "CLIENT" and span.status_name == "ERROR" and span.status_message == "boom"
    assert span.attributes == {
        "i": 9007199254740993,
        "d": 1.5,
        "b": True,
        "a": ["x", 2],
        "m": {"k": "v"},
        "y": b"\x01\x02",
    }
    assert span.service_name == "svc"
    assert span.end_ns == 1700000000000000001


def test_invalid_ids_are_rejected_not_fatal():
    good = {"traceId": "01" * 16, "spanId": "02" * 8, "name": "ok"}
    body = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {"traceId": "abc", "spanId": "02" * 8, "name": "short trace id"},
                            {"traceId": "00" * 16, "spanId": "02" * 8, "name": "zero trace id"},
                            {"traceId": "01" * 16, "spanId": "zz" * 8, "name": "non-hex span id"},
                            good,
                        ]
                    }
                ]
            }
        ]
    }
    decoded = decode("traces", "json", json.dumps(body).encode())
    assert [s.name for s in decoded.records] == ["ok"]
    assert decoded.rejected == 3
    assert "invalid trace id 'abc'" in decoded.message


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("json", b"not json"),
        ("json", b"[1]"),
        ("json", b'{"resourceSpans": 3}'),
        (
            "json",
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "'
            + b"01" * 16
            + b'", "spanId": "'
            + b"02" * 8
            + b'", "attributes": [{"key": "a", "value": {"intValue": "x"}}]}]}]}]}',
        ),
        ("protobuf", b"\xff\xff\xff"),
    ],
)
def test_undecodable_bodies_raise(encoding, body):
    with pytest.raises(DecodeError):
        decode("traces", encoding, body)


def test_log_event_name_falls_back_to_attribute():
    body = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": "5",
                                "attributes": [
                                    {"key": "event.name", "value": {"stringValue": "gen_ai.choice"}}
                                ],
                                "body": {"stringValue": "x"},
                                "severityNumber": "SEVERITY_NUMBER_INFO",
                            },
                        ]
                    }
                ]
            }
        ]
    }
    (log,) = decode("logs", "json", json.dumps(body).encode()).records
    assert log.event_name == "gen_ai.choice"
    assert log.severity_number == 9
    assert log.trace_id is None and log.span_id is None


def test_a_json_int_value_outside_64_bits_is_refused_as_protobuf_would():
    body = (
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "'
        + b"01" * 16
        + b'", "spanId": "'
        + b"02" * 8
        + b'", "attributes": [{"key": "a", "value": {"intValue": "'
        + str(2**63).encode()
        + b'"}}]}]}]}]}'
    )
    with pytest.raises(DecodeError, match="64-bit"):
        decode("traces", "json", body)
    ok = body.replace(str(2**63).encode(), str(2**63 - 1).encode())
    assert decode("traces", "json", ok).records[0].attributes == {"a": 2**63 - 1}
