"""Fuzzing the OTLP decoder: whatever the body, ``decode`` returns ``Decoded`` or raises ``DecodeError`` (with
a message), and what it returns is what the store can take: ids of the right size in lowercase hex, times
within int64, every limit kept, rows and assembler marks built without an error (the decode
worker's next steps).

The request bodies before them get the same treatment: ``inflate`` answers with the body (never more than the
limit) or a ``BadRequest``, ``PayloadTooLarge`` or ``UnsupportedMediaType``. (The HTTP framing around them,
Content-Length and chunked bodies, is fuzzed against a running collector in
``tests/integration/collector/receive/test_fuzz.py``.)

Inputs: random bytes and JSON; real fixture bodies mutated (bits flipped, bytes inserted or deleted, cut at
every offset, chunks duplicated, JSON values swapped for hostile ones); requests built field by field with
hostile values; and hand-picked cases (ids of each wrong size, absurd times, invalid UTF-8, lone surrogates,
deep nesting, 50,000 attributes, long strings, duplicate keys, empty and unknown parts). Every hypothesis test
is derandomized, bounded and writes no example database, so each run tries the same examples.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import time
import zlib
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from agentotel_eval.collector.process.marks import log_marks, span_marks
from agentotel_eval.collector.receive.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from agentotel_eval.collector.receive.http.bodies import inflate
from agentotel_eval.otlp import Decoded, DecodeError, LogRecord, SpanRecord, decode
from agentotel_eval.otlp.limits import DEFAULT_LIMITS, TOO_DEEP_MARKER, Limits
from agentotel_eval.reconstruct.declared import BUILTIN
from agentotel_eval.store.rows import logs_to_arrow, spans_to_arrow
from tests.support.fixture_traces import fixtures

SIGNALS = ("traces", "logs")
ENCODINGS = ("protobuf", "json")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT32_MAX = 2**32 - 1
TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
WRONG_ID_SIZES = (0, 1, 15, 17, 33)
#: the longest message an answer may carry: it quotes what is wrong, not the request
MAX_MESSAGE = 2000
_HEX = re.compile(r"[0-9a-f]*")
_CUT = re.compile(r"…\[truncated: (\d+) characters\]")


def non_hex_ids(size: int) -> list[str]:
    """Strings of an id's length that are not its hex: what int(x, 16) or a lax check would still take."""
    n = 2 * size
    return [
        "g" * n,
        "0x" + "1" * (n - 2),
        " " + "1" * (n - 1),
        "1" * (n - 1) + " ",
        "+" + "1" * (n - 1),
        "-" + "1" * (n - 1),
        "1_" + "1" * (n - 2),
        "١" + "1" * (n - 1),
        "１" * n,
        "z" + "0" * (n - 1),
    ]


def fuzz(max_examples: int) -> settings:
    """The same examples on every run, within a budget, with no example database written."""
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# ---- what every outcome must satisfy -----------------------------------------------------------------------


def _is_id(value: Any, nbytes: int) -> bool:
    return (
        isinstance(value, str)
        and len(value) == 2 * nbytes
        and _HEX.fullmatch(value) is not None
        and value != "0" * 2 * nbytes
    )


def _check_text(value: Any, limits: Limits) -> None:
    assert isinstance(value, str)
    if len(value) > limits.max_attribute_value_length and value != TOO_DEEP_MARKER.format(
        depth=limits.max_value_depth
    ):
        cut = _CUT.fullmatch(value, limits.max_attribute_value_length)
        assert cut is not None and int(cut[1]) > limits.max_attribute_value_length, value[-80:]


def _check_value(value: Any, limits: Limits, depth: int = 0) -> None:
    """An attribute value or log body as the decoder may return it: plain values within the limits."""
    if value is None or isinstance(value, bool | float):
        return
    if isinstance(value, int):
        assert INT64_MIN <= value <= INT64_MAX
    elif isinstance(value, str):
        _check_text(value, limits)
    elif isinstance(value, bytes):
        assert len(value) <= limits.max_attribute_value_length
    elif isinstance(value, list | dict):
        assert depth < limits.max_value_depth, f"a container nested {depth} deep"
        for key in value if isinstance(value, dict) else ():
            assert isinstance(key, str)
        for item in value.values() if isinstance(value, dict) else value:
            _check_value(item, limits, depth + 1)
    else:
        raise AssertionError(f"unexpected {type(value).__name__} value {value!r:.80}")


def _check_attributes(attributes: Any, limit: int, limits: Limits) -> None:
    assert isinstance(attributes, dict) and len(attributes) <= limit
    for key, value in attributes.items():
        assert isinstance(key, str)
        _check_value(value, limits)


def _check_span(span: Any, limits: Limits) -> None:
    assert isinstance(span, SpanRecord)
    assert _is_id(span.trace_id, 16) and _is_id(span.span_id, 8), (span.trace_id, span.span_id)
    assert span.parent_span_id is None or _is_id(span.parent_span_id, 8), span.parent_span_id
    assert INT64_MIN <= span.start_ns <= INT64_MAX and INT64_MIN <= span.end_ns <= INT64_MAX
    assert 0 <= span.flags <= UINT32_MAX
    assert isinstance(span.kind, int) and isinstance(span.status_code, int)
    _check_text(span.name, limits)
    _check_text(span.status_message, limits)
    assert all(isinstance(s, str) for s in (span.trace_state, span.scope_name, span.scope_version))
    per_span = limits.max_attributes_per_span
    _check_attributes(span.attributes, per_span, limits)
    _check_attributes(span.resource, limits.max_attributes_per_resource, limits)
    assert len(span.events) <= limits.max_events_per_span and len(span.links) <= limits.max_links_per_span
    for event in span.events:
        assert isinstance(event.name, str) and INT64_MIN <= event.time_ns <= INT64_MAX
        _check_attributes(event.attributes, per_span, limits)
    for link in span.links:
        assert _HEX.fullmatch(link.trace_id) and _HEX.fullmatch(link.span_id), (link.trace_id, link.span_id)
        _check_attributes(link.attributes, per_span, limits)


def _check_log(record: Any, limits: Limits) -> None:
    assert isinstance(record, LogRecord)
    assert record.trace_id is None or _is_id(record.trace_id, 16), record.trace_id
    assert record.span_id is None or _is_id(record.span_id, 8), record.span_id
    assert INT64_MIN <= record.time_ns <= INT64_MAX and INT64_MIN <= record.observed_time_ns <= INT64_MAX
    assert -(2**31) <= record.severity_number < 2**31 and 0 <= record.flags <= UINT32_MAX
    assert all(isinstance(s, str) for s in (record.severity_text, record.event_name, record.scope_name))
    _check_value(record.body, limits)
    _check_attributes(record.attributes, limits.max_attributes_per_span, limits)
    _check_attributes(record.resource, limits.max_attributes_per_resource, limits)


def outcome(signal: str, encoding: str, body: bytes, limits: Limits = DEFAULT_LIMITS) -> Decoded | None:
    """The decoded request, checked, or None when it was refused with a ``DecodeError``; any other exception
    fails the test. The records are turned into rows and marks as the decode worker does next."""
    try:
        decoded = decode(signal, encoding, body, limits)
    except DecodeError as exc:
        assert str(exc), "a DecodeError must say what is wrong"
        assert len(str(exc)) <= MAX_MESSAGE, f"a message of {len(str(exc)):,} characters"
        return None
    assert isinstance(decoded, Decoded)
    assert decoded.rejected >= 0 and bool(decoded.message) == bool(decoded.rejected)
    assert len(decoded.message) <= MAX_MESSAGE, f"a message of {len(decoded.message):,} characters"
    assert all(isinstance(kind, str) and n > 0 for kind, n in decoded.limited.items())
    if signal == "traces":
        for span in decoded.records:
            _check_span(span, limits)
        if decoded.records:
            assert spans_to_arrow(decoded.records).num_rows == len(decoded.records)
            assert len(span_marks(decoded.records, BUILTIN)) == len(decoded.records)
    else:
        for record in decoded.records:
            _check_log(record, limits)
        if decoded.records:
            assert logs_to_arrow(decoded.records).num_rows == len(decoded.records)
            assert len(log_marks(decoded.records)) == len(decoded.records)
    return decoded


# ---- building requests -------------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def pb_bytes(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, by hand (the Python API refuses to build invalid UTF-8 strings)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def pb_varint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def pb_fixed64(number: int, value: int) -> bytes:
    return _varint(number << 3 | 1) + value.to_bytes(8, "little")


def pb_span(*fields: bytes, trace: bytes = bytes.fromhex(TRACE), span: bytes = bytes.fromhex(SPAN)) -> bytes:
    return pb_bytes(1, trace) + pb_bytes(2, span) + b"".join(fields)


def pb_traces(*spans: bytes, scope: bytes = b"", resource: bytes = b"") -> bytes:
    """resource_spans { resource, scope_spans { scope, spans... } }"""
    scope_spans = (pb_bytes(1, scope) if scope else b"") + b"".join(pb_bytes(2, s) for s in spans)
    return pb_bytes(1, (pb_bytes(1, resource) if resource else b"") + pb_bytes(2, scope_spans))


def pb_logs(*records: bytes) -> bytes:
    """resource_logs { scope_logs { log_records... } }"""
    return pb_bytes(1, pb_bytes(2, b"".join(pb_bytes(2, r) for r in records)))


def pb_attribute(key: bytes, value: bytes) -> bytes:
    """A KeyValue; ``value`` is the AnyValue's bytes."""
    return pb_bytes(1, key) + pb_bytes(2, value)


def json_traces(*spans: Any, resource: Any = None) -> bytes:
    entry: dict[str, Any] = {"scopeSpans": [{"scope": {"name": "fuzz"}, "spans": list(spans)}]}
    if resource is not None:
        entry["resource"] = resource
    return json.dumps({"resourceSpans": [entry]}).encode()


def json_logs(*records: Any) -> bytes:
    return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}).encode()


def json_span(**fields: Any) -> dict[str, Any]:
    return {
        "traceId": TRACE,
        "spanId": SPAN,
        "name": "op",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        **fields,
    }


def set_any(target: AnyValue, value: Any) -> None:
    """A plain value into an AnyValue message."""
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, bytes):
        target.bytes_value = value
    elif isinstance(value, dict):
        target.kvlist_value.SetInParent()
        for key, item in value.items():
            kv = target.kvlist_value.values.add()
            kv.key = key
            set_any(kv.value, item)
    elif isinstance(value, list):
        target.array_value.SetInParent()
        for item in value:
            set_any(target.array_value.values.add(), item)


# ---- random bytes and random JSON --------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("signal", SIGNALS)
@fuzz(150)
@given(body=st.binary(max_size=2048))
def test_random_bytes(signal: str, encoding: str, body: bytes) -> None:
    outcome(signal, encoding, body)


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20))
OTLP_KEYS = (
    "resourceSpans",
    "resource_spans",
    "scopeSpans",
    "spans",
    "resourceLogs",
    "scopeLogs",
    "logRecords",
    "resource",
    "attributes",
    "traceId",
    "spanId",
    "key",
    "value",
    "stringValue",
    "arrayValue",
    "values",
)


@pytest.mark.parametrize("signal", SIGNALS)
@fuzz(150)
@given(
    value=st.recursive(
        JSON_SCALARS,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(OTLP_KEYS) | st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=30,
    )
)
def test_random_json(signal: str, value: Any) -> None:
    outcome(signal, "json", json.dumps(value).encode())
    outcome(
        signal,
        "json",
        json.dumps({"resourceSpans" if signal == "traces" else "resourceLogs": value}).encode(),
    )


@fuzz(100)
@given(text=st.text(alphabet=st.sampled_from('{}[]",:0123456789.eE+-\\u dtrue nullfals'), max_size=200))
def test_random_json_text(text: str) -> None:
    for signal in SIGNALS:
        outcome(signal, "json", text.encode())


# ---- mutated real bodies -----------------------------------------------------------------------------------


@cache
def small_bodies() -> tuple[tuple[str, str, str, bytes], ...]:
    """(fixture, signal, encoding, body) of the recorded fixtures up to 16 KB: mutations
    of each stay cheap."""
    out = []
    for fixture in fixtures():
        for encoding in ENCODINGS:
            for signal, body in (("traces", fixture.body(encoding)), ("logs", fixture.logs_body(encoding))):
                if body and len(body) <= 16_000:
                    out.append((fixture.name, signal, encoding, body))
    return tuple(out)


def smallest(signal: str, encoding: str) -> bytes:
    return min((b for _, s, e, b in small_bodies() if s == signal and e == encoding), key=len)


JSON_TOKENS = (
    b'"',
    b"\\",
    b"\\u",
    b"\\ud800",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"null",
    b"-",
    b"1e999",
    b"9" * 30,
    b"\xff",
    b"\xed\xa0\x80",
    b"\x00",
)


@st.composite
def mutated(draw: st.DrawFn, body: bytes, encoding: str) -> bytes:
    """``body`` with one to four mutations: a bit flipped, bytes inserted (random, or JSON tokens in JSON), a
    range deleted, the end cut off, a chunk duplicated, a byte set to a boundary value."""
    data = bytearray(body)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(("flip", "insert", "delete", "truncate", "duplicate", "set")))
        if kind == "flip" and data:
            data[min(at, len(data) - 1)] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            tokens = st.sampled_from(JSON_TOKENS) if encoding == "json" else st.nothing()
            data[at:at] = draw(st.binary(min_size=1, max_size=12) | tokens)
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif kind == "truncate":
            del data[at:]
        elif kind == "duplicate":
            start = draw(st.integers(0, len(data)))
            data[at:at] = data[start : start + draw(st.integers(1, 512))]
        elif kind == "set" and data:
            data[min(at, len(data) - 1)] = draw(st.sampled_from((0x00, 0x01, 0x7F, 0x80, 0xFF, 0x22, 0x5C)))
    return bytes(data)


@pytest.mark.parametrize("encoding", ENCODINGS)
@fuzz(200)
@given(data=st.data())
def test_mutated_fixture_bodies(encoding: str, data: st.DataObject) -> None:
    _, signal, _, body = data.draw(st.sampled_from([b for b in small_bodies() if b[2] == encoding]))
    outcome(signal, encoding, data.draw(mutated(body, encoding)))


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("signal", SIGNALS)
def test_every_truncation_of_a_real_body(signal: str, encoding: str) -> None:
    body = smallest(signal, encoding)
    whole = outcome(signal, encoding, body)
    assert whole is not None and whole.records
    for end in range(len(body)):
        outcome(signal, encoding, body[:end])


def test_every_bit_flip_of_a_real_protobuf_body() -> None:
    body = smallest("traces", "protobuf")
    kept = 0
    for i in range(len(body)):
        for bit in range(8):
            flipped = bytearray(body)
            flipped[i] ^= 1 << bit
            decoded = outcome("traces", "protobuf", bytes(flipped))
            kept += decoded is not None
    assert kept  # most flips land in ids, times and strings: still a request


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from _paths(item, (*path, key))


HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**66), 2**66),
    st.floats(),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from([10**400, -(10**30), "1e3", "0x10", " 12", "", "NaN", "\ud800", "ABCDEF", "0" * 32]),
)


def swap_hostile(data: st.DataObject, tree: Any) -> Any:
    """``tree`` (parsed JSON) with one to three values swapped for hostile ones or keys deleted."""
    for _ in range(data.draw(st.integers(1, 3))):
        paths = list(_paths(tree))[1:]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = tree
        for key in path[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(HOSTILE)
    return tree


@pytest.mark.parametrize("signal", SIGNALS)
@fuzz(200)
@given(data=st.data())
def test_real_json_bodies_with_a_value_swapped_for_a_hostile_one(signal: str, data: st.DataObject) -> None:
    _, _, _, body = data.draw(
        st.sampled_from([b for b in small_bodies() if b[1] == signal and b[2] == "json"])
    )
    outcome(signal, "json", json.dumps(swap_hostile(data, json.loads(body))).encode())


# ---- requests built field by field -------------------------------------------------------------------------


def sometimes(
    valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any] = HOSTILE
) -> st.SearchStrategy[Any]:
    """Mostly ``valid``, about one time in ten ``hostile``, so most requests get deep into the decoder
    (hypothesis draws 0 far more often than other integers: 0 is the valid side, and what a
    failure shrinks towards)."""
    return st.integers(0, 7).flatmap(lambda i: hostile if i == 4 else valid)


TEXT = st.text(st.characters(codec="utf-8"), max_size=24)
TIMES = sometimes(
    st.integers(0, INT64_MAX), st.integers(0, 2**64 - 1) | st.sampled_from([0, INT64_MAX, 2**63, 2**64 - 1])
)
LIMITS = st.builds(
    Limits,
    max_attributes_per_span=st.integers(1, 4),
    max_attributes_per_resource=st.integers(1, 3),
    max_attribute_value_length=st.integers(1, 12),
    max_value_depth=st.integers(1, 3),
    max_events_per_span=st.integers(1, 3),
    max_links_per_span=st.integers(1, 2),
    max_spans_per_request=st.integers(1, 8),
    max_log_records_per_request=st.integers(1, 8),
)
ANY_LIMITS = st.one_of(st.just(DEFAULT_LIMITS), LIMITS)
PLAIN_VALUES = st.recursive(
    st.one_of(TEXT, st.integers(INT64_MIN, INT64_MAX), st.floats(), st.booleans(), st.binary(max_size=16)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=12,
)


def id_bytes(size: int) -> st.SearchStrategy[bytes]:
    bad = st.one_of(
        st.sampled_from([bytes(n) for n in WRONG_ID_SIZES]),
        st.just(bytes(size)),
        st.binary(max_size=2 * size + 1),
    )
    return sometimes(st.binary(min_size=size, max_size=size), bad)


def _attributes(target: Any, attributes: list[tuple[str, Any]]) -> None:
    for key, value in attributes:
        kv = target.add()
        kv.key = key
        set_any(kv.value, value)


ATTRIBUTES = st.lists(st.tuples(TEXT, PLAIN_VALUES), max_size=6)


@st.composite
def pb_trace_request(draw: st.DrawFn) -> tuple[bytes, int]:
    """A protobuf trace request with random ids, times, attributes, events and links, and unknown fields
    appended at random; and how many spans it holds."""
    request = ExportTraceServiceRequest()
    count = 0
    for _ in range(draw(st.integers(0, 2))):
        rs = request.resource_spans.add()
        _attributes(rs.resource.attributes, draw(ATTRIBUTES))
        for _ in range(draw(st.integers(0, 2))):
            ss = rs.scope_spans.add()
            ss.scope.name = draw(TEXT)
            for _ in range(draw(st.integers(0, 4))):
                count += 1
                span: Any = ss.spans.add()  # Any: its enum fields get any int32
                span.trace_id = draw(id_bytes(16))
                span.span_id = draw(id_bytes(8))
                span.parent_span_id = draw(st.just(b"") | id_bytes(8))
                span.name = draw(TEXT)
                span.kind = draw(st.integers(-(2**31), 2**31 - 1))
                span.start_time_unix_nano = draw(TIMES)
                span.end_time_unix_nano = draw(TIMES)
                span.flags = draw(st.integers(0, UINT32_MAX))
                span.status.code = draw(st.integers(-(2**31), 2**31 - 1))
                span.status.message = draw(TEXT)
                _attributes(span.attributes, draw(ATTRIBUTES))
                for _ in range(draw(st.integers(0, 3))):
                    event = span.events.add()
                    event.name = draw(TEXT)
                    event.time_unix_nano = draw(TIMES)
                    _attributes(event.attributes, draw(ATTRIBUTES))
                for _ in range(draw(st.integers(0, 2))):
                    link = span.links.add()
                    link.trace_id = draw(id_bytes(16))
                    link.span_id = draw(id_bytes(8))
    body = request.SerializeToString()
    if draw(st.booleans()):
        body += pb_bytes(draw(st.integers(3, 2**29 - 1)), draw(st.binary(max_size=8)))
    return body, count


@st.composite
def pb_logs_request(draw: st.DrawFn) -> tuple[bytes, int]:
    request = ExportLogsServiceRequest()
    count = 0
    for _ in range(draw(st.integers(0, 2))):
        rl = request.resource_logs.add()
        _attributes(rl.resource.attributes, draw(ATTRIBUTES))
        for _ in range(draw(st.integers(0, 2))):
            sl = rl.scope_logs.add()
            for _ in range(draw(st.integers(0, 4))):
                count += 1
                record: Any = sl.log_records.add()  # Any: its enum fields get any int32
                record.time_unix_nano = draw(TIMES)
                record.observed_time_unix_nano = draw(TIMES)
                record.trace_id = draw(st.just(b"") | id_bytes(16))
                record.span_id = draw(st.just(b"") | id_bytes(8))
                record.severity_number = draw(st.integers(-(2**31), 2**31 - 1))
                record.severity_text = draw(TEXT)
                record.flags = draw(st.integers(0, UINT32_MAX))
                if draw(st.booleans()):
                    set_any(record.body, draw(PLAIN_VALUES))
                _attributes(record.attributes, draw(ATTRIBUTES))
    return request.SerializeToString(), count


def _accounted(decoded: Decoded | None, count: int, per_request: int) -> None:
    """Every record of a request that decoded is either kept or rejected (counted), none lost."""
    if decoded is not None:
        assert len(decoded.records) + decoded.rejected == count
    else:
        assert count > per_request, "a valid request must decode unless it is over a hard limit"


@fuzz(100)
@given(request=pb_trace_request(), limits=ANY_LIMITS)
def test_protobuf_trace_requests_built_field_by_field(request: tuple[bytes, int], limits: Limits) -> None:
    body, count = request
    _accounted(outcome("traces", "protobuf", body, limits), count, limits.max_spans_per_request)


@fuzz(100)
@given(request=pb_logs_request(), limits=ANY_LIMITS)
def test_protobuf_log_requests_built_field_by_field(request: tuple[bytes, int], limits: Limits) -> None:
    body, count = request
    _accounted(outcome("logs", "protobuf", body, limits), count, limits.max_log_records_per_request)


def _hex_id(size: int) -> st.SearchStrategy[str]:
    """Mostly an id in hex (lower or upper case); else one its record is rejected for."""
    good = st.binary(min_size=size, max_size=size).map(bytes.hex)
    bad = st.one_of(
        st.sampled_from(non_hex_ids(size)),
        st.just("0" * 2 * size),
        st.binary(max_size=2 * size + 1).map(bytes.hex),
    )
    return sometimes(good | good.map(str.upper), bad)


JSON_INT64 = st.integers(INT64_MIN, INT64_MAX)
JSON_ANY_LEAF = st.one_of(
    st.builds(lambda v: {"stringValue": v}, TEXT),
    st.builds(lambda v: {"intValue": v}, JSON_INT64.map(str) | st.integers(-(2**53), 2**53)),
    st.builds(lambda v: {"doubleValue": v}, st.floats()),
    st.builds(lambda v: {"boolValue": v}, st.booleans()),
    st.builds(
        lambda v: {"bytesValue": v}, st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
    ),
    st.just({}),
)


def _json_kv(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.builds(lambda k, v: {"key": k, "value": v}, TEXT, values)


JSON_ANY = st.recursive(
    JSON_ANY_LEAF,
    lambda inner: (
        st.builds(lambda vs: {"arrayValue": {"values": vs}}, st.lists(inner, max_size=3))
        | st.builds(lambda kvs: {"kvlistValue": {"values": kvs}}, st.lists(_json_kv(inner), max_size=3))
    ),
    max_leaves=6,
)
JSON_ATTRIBUTES = st.lists(_json_kv(JSON_ANY), max_size=4)
#: mostly a time that fits int64 (as a string or a number); else one beyond it, which rejects its record
JSON_TIMES = sometimes(
    st.integers(0, INT64_MAX).map(str) | st.integers(INT64_MIN, INT64_MAX),
    st.integers(INT64_MAX + 1, 2**64).map(str) | st.integers(-(2**64), INT64_MIN - 1),
)
JSON_FLAGS = sometimes(st.integers(0, UINT32_MAX), st.integers(UINT32_MAX + 1, 2**64) | st.integers(-5, -1))


@st.composite
def json_fields(draw: st.DrawFn, fields: dict[tuple[str, str], st.SearchStrategy[Any]]) -> dict[str, Any]:
    """An object with most of ``fields``, each under its lowerCamelCase or snake_case name."""
    out: dict[str, Any] = {}
    for (camel, snake), strategy in fields.items():
        if draw(st.integers(0, 7)) != 4:  # about one field in ten missing
            out[draw(st.sampled_from((camel, snake)))] = draw(strategy)
    return out


JSON_SPAN = json_fields(
    {
        ("traceId", "trace_id"): _hex_id(16),
        ("spanId", "span_id"): _hex_id(8),
        ("parentSpanId", "parent_span_id"): _hex_id(8) | st.just(""),
        ("name", "name"): TEXT,
        ("kind", "kind"): st.integers(0, 5) | st.sampled_from(["SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"]),
        ("startTimeUnixNano", "start_time_unix_nano"): JSON_TIMES,
        ("endTimeUnixNano", "end_time_unix_nano"): JSON_TIMES,
        ("attributes", "attributes"): JSON_ATTRIBUTES,
        ("flags", "flags"): JSON_FLAGS,
        ("status", "status"): st.fixed_dictionaries(
            {}, optional={"code": st.integers(0, 2), "message": TEXT}
        ),
        ("events", "events"): st.lists(
            json_fields(
                {
                    ("name", "name"): TEXT,
                    ("timeUnixNano", "time_unix_nano"): JSON_TIMES,
                    ("attributes", "attributes"): JSON_ATTRIBUTES,
                }
            ),
            max_size=2,
        ),
        ("links", "links"): st.lists(
            json_fields(
                {
                    ("traceId", "trace_id"): _hex_id(16),
                    ("spanId", "span_id"): _hex_id(8),
                    ("attributes", "attributes"): JSON_ATTRIBUTES,
                }
            ),
            max_size=2,
        ),
        ("traceState", "trace_state"): TEXT,
    }
)
JSON_LOG = json_fields(
    {
        ("timeUnixNano", "time_unix_nano"): JSON_TIMES,
        ("observedTimeUnixNano", "observed_time_unix_nano"): JSON_TIMES,
        ("traceId", "trace_id"): _hex_id(16) | st.just(""),
        ("spanId", "span_id"): _hex_id(8),
        ("severityNumber", "severity_number"): sometimes(
            st.integers(0, 24) | st.just("SEVERITY_NUMBER_WARN"), st.integers(2**31, 2**40)
        ),
        ("severityText", "severity_text"): TEXT,
        ("eventName", "event_name"): TEXT,
        ("body", "body"): JSON_ANY,
        ("attributes", "attributes"): JSON_ATTRIBUTES,
        ("flags", "flags"): JSON_FLAGS,
    }
)


@st.composite
def json_request(draw: st.DrawFn, signal: str) -> tuple[bytes, int]:
    """A valid OTLP/JSON request but for records it must reject (ids, times, flags, severities out of range),
    and how many records it holds."""
    top, scopes, records, record = (
        ("resourceSpans", "scopeSpans", "spans", JSON_SPAN)
        if signal == "traces"
        else ("resourceLogs", "scopeLogs", "logRecords", JSON_LOG)
    )
    count = 0
    resources = []
    for _ in range(draw(st.integers(0, 2))):
        scope_list = []
        for _ in range(draw(st.integers(0, 2))):
            items = draw(st.lists(record, max_size=3))
            count += len(items)
            scope_list.append({"scope": {"name": draw(TEXT)}, records: items})
        resources.append(
            {
                "resource": {"attributes": draw(JSON_ATTRIBUTES)},
                scopes: scope_list,
                "unknownField": draw(st.none() | TEXT),
            }
        )
    return json.dumps({top: resources}).encode(), count


@pytest.mark.parametrize("signal", SIGNALS)
@fuzz(100)
@given(data=st.data())
def test_json_requests_built_field_by_field(signal: str, data: st.DataObject) -> None:
    """Each request decodes with every record kept or rejected; then with values swapped for hostile ones, it
    is still decoded or refused."""
    body, count = data.draw(json_request(signal))
    limits = data.draw(ANY_LIMITS)
    per_request = limits.max_spans_per_request if signal == "traces" else limits.max_log_records_per_request
    _accounted(outcome(signal, "json", body, limits), count, per_request)
    outcome(signal, "json", json.dumps(swap_hostile(data, json.loads(body))).encode(), limits)


# ---- hostile content, case by case -------------------------------------------------------------------------


@pytest.mark.parametrize("size", WRONG_ID_SIZES)
@pytest.mark.parametrize("which", ["trace", "span", "parent"])
def test_protobuf_ids_of_a_wrong_size_reject_their_span(which: str, size: int) -> None:
    bad = b"\x01" * size
    hostile = (
        pb_span(trace=bad)
        if which == "trace"
        else pb_span(span=bad)
        if which == "span"
        else pb_span(pb_bytes(4, bad))
    )
    good = pb_span(span=bytes.fromhex("00000000000000aa"))
    decoded = outcome("traces", "protobuf", pb_traces(hostile, good))
    assert decoded is not None
    if which == "parent" and size == 0:  # no parent: a root span
        assert len(decoded.records) == 2 and decoded.rejected == 0
    else:
        assert [s.span_id for s in decoded.records] == ["00000000000000aa"]
        assert decoded.rejected == 1 and "invalid" in decoded.message


@pytest.mark.parametrize("size", WRONG_ID_SIZES[1:])
def test_protobuf_log_ids_of_a_wrong_size_reject_their_record(size: int) -> None:
    for record in (pb_bytes(9, b"\x01" * size), pb_bytes(10, b"\x02" * size)):
        decoded = outcome("logs", "protobuf", pb_logs(record, pb_varint(2, 9)))
        assert decoded is not None and len(decoded.records) == 1 and decoded.rejected == 1


def test_all_zero_ids() -> None:
    zero_trace = pb_span(trace=bytes(16))
    zero_span = pb_span(span=bytes(8))
    zero_parent = pb_span(pb_bytes(4, bytes(8)))
    decoded = outcome("traces", "protobuf", pb_traces(zero_trace, zero_span, zero_parent))
    assert decoded is not None and decoded.rejected == 2
    assert [(s.span_id, s.parent_span_id) for s in decoded.records] == [(SPAN, None)]  # a zero parent: a root
    as_json = outcome(
        "traces",
        "json",
        json_traces(
            json_span(traceId="0" * 32), json_span(spanId="0" * 16), json_span(parentSpanId="0" * 16)
        ),
    )
    assert as_json is not None and as_json.rejected == 2 and as_json.records[0].parent_span_id is None
    logs = outcome("logs", "protobuf", pb_logs(pb_bytes(9, bytes(16)) + pb_bytes(10, bytes(8))))
    assert logs is not None and (logs.records[0].trace_id, logs.records[0].span_id) == (None, None)


@pytest.mark.parametrize("field", ["traceId", "spanId", "parentSpanId"])
@pytest.mark.parametrize("size", WRONG_ID_SIZES)
def test_json_ids_of_a_wrong_size_reject_their_span(field: str, size: int) -> None:
    decoded = outcome(
        "traces", "json", json_traces(json_span(**{field: "ab" * size}), json_span(spanId="00" * 7 + "aa"))
    )
    assert decoded is not None
    if field == "parentSpanId" and size == 0:  # "" is no parent
        assert len(decoded.records) == 2
    else:
        assert [s.span_id for s in decoded.records] == ["00000000000000aa"] and decoded.rejected == 1


@pytest.mark.parametrize("field", ["traceId", "spanId", "parentSpanId"])
def test_json_ids_that_are_not_hex_reject_their_span(field: str) -> None:
    size = 16 if field == "traceId" else 8
    for bad in non_hex_ids(size):
        decoded = outcome("traces", "json", json_traces(json_span(**{field: bad})))
        assert decoded is not None and not decoded.records and decoded.rejected == 1, bad
    logs = outcome("logs", "json", json_logs(*({"traceId": bad} for bad in non_hex_ids(16))))
    assert logs is not None and not logs.records and logs.rejected == len(non_hex_ids(16))


def test_json_ids_in_uppercase_hex_are_lowercased() -> None:
    decoded = outcome(
        "traces",
        "json",
        json_traces(json_span(traceId=TRACE.upper(), spanId=SPAN.upper(), parentSpanId="ABCDEF0123456789")),
    )
    assert decoded is not None
    (span,) = decoded.records
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE, SPAN, "abcdef0123456789")


@pytest.mark.parametrize("time", [0, 1, INT64_MAX, 2**63, 2**64 - 1])
def test_protobuf_times_beyond_int64_reject_their_record(time: int) -> None:
    fits = time <= INT64_MAX
    for span in (
        pb_span(pb_fixed64(7, time)),
        pb_span(pb_fixed64(8, time)),
        pb_span(pb_bytes(11, pb_fixed64(1, time))),
    ):
        decoded = outcome("traces", "protobuf", pb_traces(span))
        assert decoded is not None and (len(decoded.records), decoded.rejected) == (
            (1, 0) if fits else (0, 1)
        )
    for record in (pb_fixed64(1, time), pb_fixed64(11, time)):
        decoded = outcome("logs", "protobuf", pb_logs(record))
        assert decoded is not None and (len(decoded.records), decoded.rejected) == (
            (1, 0) if fits else (0, 1)
        )


@pytest.mark.parametrize(
    ("time", "expected"),
    [
        (0, "kept"),
        ("0", "kept"),
        (-1, "kept"),
        ("-5", "kept"),
        (str(INT64_MIN), "kept"),
        (str(INT64_MIN - 1), "rejected"),
        (2**63, "rejected"),
        (str(2**64 - 1), "rejected"),
        (1.7e18, "kept"),
        (1e300, "rejected"),
        (1.5, "refused"),
        ("1.5", "refused"),
        ("1e18", "refused"),
        ("soon", "refused"),
        ("0x10", "refused"),
        (True, "refused"),
        ([1], "refused"),
        ({"n": 1}, "refused"),
        ("9" * 5000, "refused"),
    ],
)
@pytest.mark.parametrize("signal", SIGNALS)
def test_json_times_absurd_or_not_numbers(signal: str, time: Any, expected: str) -> None:
    if signal == "traces":
        bodies = [
            json_traces(json_span(startTimeUnixNano=time)),
            json_traces(json_span(endTimeUnixNano=time)),
            json_traces(json_span(events=[{"name": "e", "timeUnixNano": time}])),
        ]
    else:
        bodies = [json_logs({"timeUnixNano": time}), json_logs({"observedTimeUnixNano": time})]
    for body in bodies:
        decoded = outcome(signal, "json", body)
        if expected == "refused":
            assert decoded is None
        else:
            assert decoded is not None
            assert (len(decoded.records), decoded.rejected) == ((1, 0) if expected == "kept" else (0, 1))


@pytest.mark.parametrize(
    "literal", [b"1" * 5000, b"-" + b"1" * 5000, b"1" + b"0" * 400, b"1e999", b"-1e999", b"NaN", b"Infinity"]
)
@pytest.mark.parametrize(
    "where", ["kind", "startTimeUnixNano", "flags", "intValue", "doubleValue", "stringValue", "status"]
)
def test_json_numbers_python_cannot_hold(where: str, literal: bytes) -> None:
    """Number literals past int()'s digit limit, past float range, or non-finite: refused or
    kept, never a crash."""
    span = json.dumps(
        json_span(
            attributes=[{"key": "a", "value": {where: "@"}}] if where.endswith("Value") else [],
            **({} if where.endswith("Value") else {where: "@"}),
        )
    )
    body = json_traces().replace(
        b'"spans": []', b'"spans": [' + span.encode().replace(b'"@"', literal) + b"]"
    )
    assert literal in body
    outcome("traces", "json", body)


@pytest.mark.parametrize("value", [["x" * 1000], {"a": "b"}, [[[[["deep"]]]]], 12, 1.5, True, 10**30])
def test_a_json_string_value_that_is_not_a_string_refuses_the_request(value: Any) -> None:
    """Kept as it came, it would escape the length and depth limits (and int64)."""
    body = json_traces(json_span(attributes=[{"key": "k", "value": {"stringValue": value}}]))
    assert outcome("traces", "json", body, Limits(max_attribute_value_length=10, max_value_depth=2)) is None
    null = outcome(
        "traces", "json", json_traces(json_span(attributes=[{"key": "k", "value": {"stringValue": None}}]))
    )
    assert null is not None and null.records[0].attributes == {"k": None}


INVALID_UTF8 = (b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"ok\x80", b"\xe2\x82")


@pytest.mark.parametrize("bad", INVALID_UTF8)
def test_protobuf_strings_that_are_not_utf8_refuse_the_request(bad: bytes) -> None:
    """proto3 strings must be UTF-8: the parser refuses them, and that must be a DecodeError."""
    string_value = pb_bytes(1, bad)
    traces = [
        pb_traces(pb_span(pb_bytes(5, bad))),  # name
        pb_traces(pb_span(pb_bytes(9, pb_attribute(bad, pb_bytes(1, b"v"))))),  # attribute key
        pb_traces(pb_span(pb_bytes(9, pb_attribute(b"k", string_value)))),  # attribute value
        pb_traces(
            pb_span(pb_bytes(9, pb_attribute(b"k", pb_bytes(5, pb_bytes(1, string_value)))))
        ),  # in an array
        pb_traces(pb_span(pb_bytes(3, bad))),  # trace_state
        pb_traces(pb_span(pb_bytes(15, pb_bytes(2, bad)))),  # status.message
        pb_traces(pb_span(pb_bytes(11, pb_bytes(2, bad)))),  # event name
        pb_traces(pb_span(), scope=pb_bytes(1, bad)),  # scope name
        pb_traces(pb_span(), resource=pb_bytes(1, pb_attribute(b"service.name", string_value))),
    ]
    for body in traces:
        assert outcome("traces", "protobuf", body) is None
    logs = [
        pb_logs(pb_bytes(5, string_value)),
        pb_logs(pb_bytes(3, bad)),  # body, severity_text
        pb_logs(pb_bytes(6, pb_attribute(bad, string_value))),
    ]
    for body in logs:
        assert outcome("logs", "protobuf", body) is None


@pytest.mark.parametrize(
    "text",
    [b"\\ud800", b"\\udfff", b"x\\ud800y", b"\\ud83d", b"\\ude00\\ud83d", b"\\ud83d\\ude00", b"\xed\xa0\x80"],
)
def test_json_lone_surrogates_decode_and_convert_to_rows(text: bytes) -> None:
    span = json.dumps(json_span(name="@", attributes=[{"key": "@", "value": {"stringValue": "@"}}])).encode()
    decoded = outcome(
        "traces",
        "json",
        json_traces().replace(b'"spans": []', b'"spans": [' + span.replace(b"@", text) + b"]"),
    )
    assert decoded is not None and len(decoded.records) == 1
    logs = outcome(
        "logs",
        "json",
        json_logs().replace(
            b'"logRecords": []',
            b'"logRecords": [{"body": {"stringValue": "' + text + b'"}, "severityText": "' + text + b'"}]',
        ),
    )
    assert logs is not None and len(logs.records) == 1


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_messages_quote_hostile_values_cut_short(encoding: str) -> None:
    """A 5 MB id, time or value is named in the answer, not echoed whole."""
    huge = "a" * 5_000_000
    if encoding == "protobuf":
        partial = [
            ("traces", pb_traces(pb_span(trace=b"\x01" * 5_000_000))),
            ("traces", pb_traces(pb_span(pb_bytes(4, b"\x02" * 5_000_000)))),
            ("logs", pb_logs(pb_bytes(9, b"\x03" * 5_000_000))),
        ]
        refused: list[tuple[str, bytes]] = []
    else:
        partial = [
            ("traces", json_traces(json_span(traceId=huge))),
            ("traces", json_traces(json_span(spanId=huge))),
        ]
        refused = [
            ("traces", json_traces(json_span(startTimeUnixNano=huge))),
            ("logs", json_logs({"severityNumber": huge})),
            (
                "traces",
                json_traces(json_span(attributes=[{"key": "k", "value": {"bytesValue": "!" + huge}}])),
            ),
            ("traces", json_traces(json_span(attributes=[{"key": "k", "value": {"doubleValue": huge}}]))),
            ("traces", json_traces(json_span(attributes=[{"key": "k", "value": [huge]}]))),
        ]
    for signal, body in partial:
        decoded = outcome(signal, encoding, body)
        assert decoded is not None and decoded.rejected == 1 and "characters)" in decoded.message
    for signal, body in refused:
        assert outcome(signal, encoding, body) is None


@pytest.mark.parametrize("escape", [b"\\x41", b"\\u12", b"\\u12G4", b"\\", b"\\q", b"\t", b"\x00"])
def test_json_invalid_escapes_refuse_the_request(escape: bytes) -> None:
    body = json_traces(json_span(name="@")).replace(b'"@"', b'"' + escape + b'"')
    assert outcome("traces", "json", body) is None


def _pb_nested(depth: int, container: int) -> bytes:
    """An AnyValue ``depth`` arrays (5) or key/value lists (6) deep around a string."""
    value = pb_bytes(1, b"leaf")
    for _ in range(depth):
        value = (
            pb_bytes(5, pb_bytes(1, value))
            if container == 5
            else pb_bytes(6, pb_bytes(1, pb_attribute(b"k", value)))
        )
    return value


@pytest.mark.parametrize(
    ("container", "depth", "expected"),
    [
        (5, 1, "kept"),
        (5, 32, "kept"),
        (5, 33, "marker"),
        (5, 47, "marker"),
        (5, 48, "refused"),
        (5, 3000, "refused"),
        (6, 1, "kept"),
        (6, 31, "kept"),
        (6, 32, "refused"),
        (6, 200, "refused"),
        (6, 3000, "refused"),
    ],
)
def test_protobuf_values_nested_deep(container: int, depth: int, expected: str) -> None:
    """Within the depth limit: kept; past it: the marker; past the protobuf parser's own depth (100 messages;
    an array level is two, a key/value list level three, the request around the value six):
    refused, never a crash."""
    value = _pb_nested(depth, container)
    decoded = outcome("traces", "protobuf", pb_traces(pb_span(pb_bytes(9, pb_attribute(b"x", value)))))
    if expected == "refused":
        assert decoded is None
    else:
        assert decoded is not None and len(decoded.records) == 1
        assert decoded.limited == ({"values_too_deep": 1} if expected == "marker" else {})
    logs = outcome("logs", "protobuf", pb_logs(pb_bytes(5, value)))  # three messages less around the body
    assert (logs is None) == (depth >= 3000 or (container == 6 and depth >= 33))


@pytest.mark.parametrize("depth", [1, 32, 33, 250, 320, 400, 5000, 200_000])
def test_json_values_nested_deep(depth: int) -> None:
    value = '{"arrayValue": {"values": [' * depth + '{"stringValue": "leaf"}' + "]}}" * depth
    traces = outcome(
        "traces",
        "json",
        json_traces(json_span(attributes=[{"key": "x", "value": "@"}])).replace(b'"@"', value.encode()),
    )
    logs = outcome("logs", "json", json_logs({"body": "@"}).replace(b'"@"', value.encode()))
    if depth <= DEFAULT_LIMITS.max_value_depth:
        assert traces is not None and logs is not None and not traces.limited
    elif depth <= 250:
        assert traces is not None and traces.limited == {"values_too_deep": 1}
        assert logs is not None and logs.limited == {"values_too_deep": 1}
    elif depth >= 400:  # three JSON levels each: past the interpreter's recursion, refused
        assert traces is None and logs is None


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_fifty_thousand_attributes_keep_the_limit_and_count_the_rest(encoding: str) -> None:
    many = [(f"attribute.{i}", i) for i in range(50_000)]
    limit = DEFAULT_LIMITS.max_attributes_per_span
    if encoding == "protobuf":
        request = ExportTraceServiceRequest()
        span = request.resource_spans.add().scope_spans.add().spans.add()
        span.trace_id, span.span_id = bytes.fromhex(TRACE), bytes.fromhex(SPAN)
        _attributes(span.attributes, many)
        _attributes(request.resource_spans[0].resource.attributes, many)
        body = request.SerializeToString()
    else:
        attributes = [{"key": k, "value": {"intValue": str(v)}} for k, v in many]
        body = json_traces(json_span(attributes=attributes), resource={"attributes": attributes})
    decoded = outcome("traces", encoding, body)
    assert decoded is not None
    (got,) = decoded.records
    assert list(got.attributes) == [f"attribute.{i}" for i in range(limit)]
    assert len(got.resource) == DEFAULT_LIMITS.max_attributes_per_resource
    assert decoded.limited == {
        "attributes_dropped": 2 * 50_000 - limit - DEFAULT_LIMITS.max_attributes_per_resource
    }


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_very_long_strings_are_cut_with_a_marker(encoding: str) -> None:
    length = 3_000_000
    limit = DEFAULT_LIMITS.max_attribute_value_length
    long = "é" * length
    if encoding == "protobuf":
        request = ExportTraceServiceRequest()
        span = request.resource_spans.add().scope_spans.add().spans.add()
        span.trace_id, span.span_id, span.name = bytes.fromhex(TRACE), bytes.fromhex(SPAN), long
        _attributes(span.attributes, [("text", long), ("bytes", b"\x00" * length), ("list", [long, "ok"])])
        body = request.SerializeToString()
    else:
        body = json_traces(
            json_span(
                name=long,
                attributes=[
                    {"key": "text", "value": {"stringValue": long}},
                    {"key": "bytes", "value": {"bytesValue": base64.b64encode(b"\x00" * length).decode()}},
                    {
                        "key": "list",
                        "value": {"arrayValue": {"values": [{"stringValue": long}, {"stringValue": "ok"}]}},
                    },
                ],
            )
        )
    decoded = outcome("traces", encoding, body)
    assert decoded is not None
    (got,) = decoded.records
    marked = "é" * limit + f"…[truncated: {length} characters]"
    assert (
        got.name == marked and got.attributes["text"] == marked and got.attributes["list"] == [marked, "ok"]
    )
    assert got.attributes["bytes"] == b"\x00" * limit
    assert decoded.limited == {"values_truncated": 4}


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_duplicate_attribute_keys_keep_one_value(encoding: str) -> None:
    if encoding == "protobuf":
        body = pb_traces(
            pb_span(
                pb_bytes(9, pb_attribute(b"k", pb_bytes(1, b"first"))),
                pb_bytes(9, pb_attribute(b"k", pb_bytes(1, b"second"))),
            )
        )
    else:
        body = json_traces(
            json_span(
                attributes=[
                    {"key": "k", "value": {"stringValue": "first"}},
                    {"key": "k", "value": {"stringValue": "second"}},
                ]
            )
        )
    decoded = outcome("traces", encoding, body)
    assert decoded is not None
    (got,) = decoded.records
    assert list(got.attributes) == ["k"] and got.attributes["k"] in ("first", "second")


EMPTY_PROTOBUF = [
    b"",
    pb_bytes(1, b""),
    pb_bytes(1, pb_bytes(2, b"")),
    pb_bytes(1, pb_bytes(1, b"") + pb_bytes(2, b"")),
]
EMPTY_JSON = [
    b"{}",
    b'{"X": []}',
    b'{"X": null}',
    b'{"X": [{}]}',
    b'{"X": [{"Y": []}]}',
    b'{"X": [{"Y": [{}]}]}',
    b'{"X": [{"resource": {}, "Y": [{"scope": {}, "Z": []}]}]}',
]


@pytest.mark.parametrize("signal", SIGNALS)
def test_empty_requests_decode_to_nothing(signal: str) -> None:
    names = (
        (b"resourceSpans", b"scopeSpans", b"spans")
        if signal == "traces"
        else (b"resourceLogs", b"scopeLogs", b"logRecords")
    )
    for body in EMPTY_PROTOBUF:
        decoded = outcome(signal, "protobuf", body)
        assert decoded is not None and decoded.records == [] and decoded.rejected == 0
    for body in EMPTY_JSON:
        body = (
            body.replace(b'"X"', b'"%s"' % names[0])
            .replace(b'"Y"', b'"%s"' % names[1])
            .replace(b'"Z"', b'"%s"' % names[2])
        )
        decoded = outcome(signal, "json", body)
        assert decoded is not None and decoded.records == [] and decoded.rejected == 0, body
    for body in (b"", b" ", b"null", b"[]", b'""', b"0"):
        assert outcome(signal, "json", body) is None


def _with_unknown(message: bytes) -> bytes:
    """``message`` with unknown fields of every wire type before and after (a newer proto's fields)."""
    unknown = (
        pb_bytes(1000, b"later")
        + pb_varint(1001, 2**63)
        + pb_fixed64(1002, 7)
        + _varint(1003 << 3 | 5)
        + b"\0" * 4
    )
    return unknown + message + unknown


def test_unknown_fields_are_ignored() -> None:
    attribute = pb_bytes(9, _with_unknown(pb_attribute(b"k", _with_unknown(pb_bytes(1, b"v")))))
    span = _with_unknown(pb_span(attribute, pb_bytes(5, b"op")))
    scope_spans = _with_unknown(pb_bytes(1, _with_unknown(pb_bytes(1, b"scope"))) + pb_bytes(2, span))
    body = _with_unknown(pb_bytes(1, _with_unknown(pb_bytes(2, scope_spans))))
    decoded = outcome("traces", "protobuf", body)
    assert decoded is not None
    (got,) = decoded.records
    assert (got.name, got.attributes, got.scope_name) == ("op", {"k": "v"}, "scope")
    plain = json.loads(json_traces(json_span(attributes=[{"key": "k", "value": {"stringValue": "v"}}])))
    extra = json.loads(json.dumps(plain))
    extra["newTopLevel"] = [1]
    extra["resourceSpans"][0]["schemaUrl"] = "x"
    extra["resourceSpans"][0]["scopeSpans"][0]["spans"][0] |= {
        "droppedAttributesCount": 3,
        "newThing": {"a": []},
    }
    extra["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"][0]["value"]["other"] = 1
    with_extra = outcome("traces", "json", json.dumps(extra).encode())
    without = outcome("traces", "json", json.dumps(plain).encode())
    assert with_extra is not None and without is not None and with_extra.records == without.records


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("signal", SIGNALS)
def test_the_generated_requests_reach_the_decoder(signal: str, encoding: str) -> None:
    """Guards the generators above: of what they build, some decodes to records and some
    has records rejected."""
    strategy = (
        json_request(signal)
        if encoding == "json"
        else pb_trace_request()
        if signal == "traces"
        else pb_logs_request()
    )
    seen = {"kept": 0, "rejected": 0}

    @fuzz(60)
    @given(request=strategy)
    def run(request: tuple[bytes, int]) -> None:
        decoded = outcome(signal, encoding, request[0])
        if decoded is not None:
            seen["kept"] += bool(decoded.records)
            seen["rejected"] += bool(decoded.rejected)

    run()
    assert seen["kept"] >= 3 and seen["rejected"] >= 3, seen


# ---- request bodies: inflated within the limit ---------------------------------------------------------

BODY_LIMIT = 64 * 1024


def body_outcome(read: Callable[[], bytes]) -> bytes | None:
    """The body, within the limit, or None when it was refused with a receiver error that says why."""
    try:
        body = read()
    except (BadRequest, PayloadTooLarge, UnsupportedMediaType) as exc:
        assert str(exc)
        return None
    assert isinstance(body, bytes) and len(body) <= BODY_LIMIT
    return body


ENCODING_NAMES = ("gzip", "x-gzip", "deflate", "identity", "", "GZIP", " gzip ", "br", "gzip, deflate")


@fuzz(200)
@given(data=st.data(), encoding=st.sampled_from(ENCODING_NAMES))
def test_inflate_random_and_mutated_bodies(data: st.DataObject, encoding: str) -> None:
    raw = data.draw(st.binary(max_size=3000))
    body = data.draw(
        st.one_of(st.just(raw), st.just(gzip.compress(raw)), st.just(zlib.compress(raw))).flatmap(
            lambda b: st.just(b) | mutated(b, "protobuf")
        )
    )
    body_outcome(lambda: inflate(body, encoding, BODY_LIMIT))


@fuzz(100)
@given(
    parts=st.lists(st.binary(max_size=30_000) | st.just(bytes(50_000)), min_size=1, max_size=5),
    padding=st.integers(0, 16),
    cut=st.integers(0, 64),
)
def test_inflate_concatenated_gzip_members(parts: list[bytes], padding: int, cut: int) -> None:
    """Members are inflated one after the other, zeros after the last are padding; past
    the limit is refused."""
    body = b"".join(gzip.compress(p) for p in parts) + bytes(padding)
    whole = b"".join(parts)
    out = body_outcome(lambda: inflate(body, "gzip", BODY_LIMIT))
    assert out == (whole if len(whole) <= BODY_LIMIT else None)
    if cut and not padding:
        body_outcome(lambda: inflate(body[:-cut], "gzip", BODY_LIMIT))


def test_many_gzip_members_inflate_in_linear_time() -> None:
    body = gzip.compress(b"") * 200_000  # 4 MB of empty members: minutes when each member copied the rest
    started = time.perf_counter()
    assert inflate(body, "gzip", 20 * 1024 * 1024) == b""
    assert time.perf_counter() - started < 5
