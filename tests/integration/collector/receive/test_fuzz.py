"""Fuzzing a real collector on 127.0.0.1, over OTLP/HTTP (protobuf and JSON) and gRPC.

Hostile requests (random bytes, mutated real bodies, valid requests with hostile content, gzip bombs, broken
compression and headers, malformed framing) must each get a clear answer: HTTP 200 (perhaps a partial
success), 400, 413 or 415 with a readable message, or gRPC OK, INVALID_ARGUMENT or RESOURCE_EXHAUSTED; never a
500, INTERNAL or UNKNOWN, a hang or a connection dropped without an answer. After each batch the service still
serves (a valid export over each transport is stored, ``/healthz`` answers, the decode worker is the same
process), a trace stored before any of them is still whole, and memory (the collector's process, which runs
here, and its decode worker) grows by less than a generous bound through the bombs and the huge requests.

Every hypothesis test is derandomized, bounded and writes no example database.
"""

from __future__ import annotations

import gzip
import http.client
import itertools
import json
import socket
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import status_pb2
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from agentotel_eval.otlp.limits import DEFAULT_LIMITS
from tests.support.collector_harness import (
    LOGS_EXPORT,
    TRACE_EXPORT,
    HttpAnswer,
    http_request,
    metric_samples,
    running_collector,
)
from tests.unit.otlp.test_fuzz_decode import (
    ENCODINGS,
    SIGNALS,
    WRONG_ID_SIZES,
    fuzz,
    json_logs,
    json_request,
    json_span,
    json_traces,
    mutated,
    non_hex_ids,
    pb_attribute,
    pb_bytes,
    pb_fixed64,
    pb_logs,
    pb_span,
    pb_traces,
    pb_varint,
    small_bodies,
    swap_hostile,
)

MIB = 1024 * 1024
LIMIT = 20 * MIB  # receiver.max_request_size's default
#: how much the collector's process or its decode worker may grow through the bombs and huge requests
MEMORY_BOUND = 200 * MIB
#: a request not answered within this is a hang
ANSWER_WITHIN = 20.0
MARKER_TRACE = "f00df00df00df00df00df00df00df00d"
MARKER_SPANS = 5
HTTP_STATUSES = (200, 400, 413, 415)
GRPC_CODES = (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED)
_MEDIA = {"protobuf": "application/x-protobuf", "json": "application/json"}
_traces = itertools.count(1)


def new_trace() -> str:
    return f"{0xC0FFEE00 + next(_traces):032x}"


def span_id(i: int) -> bytes:
    return i.to_bytes(8, "big")


def valid_body(trace: str, encoding: str = "protobuf", spans: int = 1) -> bytes:
    if encoding == "json":
        return json_traces(*(json_span(traceId=trace, spanId=span_id(i + 1).hex()) for i in range(spans)))
    return pb_traces(
        *(pb_span(pb_bytes(5, b"op"), trace=bytes.fromhex(trace), span=span_id(i + 1)) for i in range(spans))
    )


# ---- the collector and its clients -------------------------------------------------------------------------


@dataclass
class Service:
    collector: Any
    channel: grpc.Channel
    worker_pids: list[int]

    @property
    def http(self) -> str:
        return self.collector.http_endpoint


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    db: Path = tmp_path_factory.mktemp("fuzz") / "fuzz.duckdb"
    with (
        running_collector(db) as collector,
        grpc.insecure_channel(
            collector.grpc_endpoint, options=[("grpc.max_send_message_length", 256 * MIB)]
        ) as channel,
    ):
        assert collector.decoders is not None and collector.decoders.pids
        running = Service(collector, channel, list(collector.decoders.pids))
        # The marker: stored before any hostile request, it must stay whole through all of them.
        assert post(running, "traces", valid_body(MARKER_TRACE, spans=MARKER_SPANS)).status == 200
        assert span_count(running, MARKER_TRACE) == MARKER_SPANS
        yield running


def span_count(service: Service, trace: str) -> int:
    return service.collector.query("SELECT count(*) FROM spans WHERE trace_id = ?", params=[trace])["rows"][
        0
    ][0]


def post(
    service: Service,
    signal: str,
    body: bytes,
    encoding: str = "protobuf",
    headers: dict[str, str] | None = None,
) -> HttpAnswer:
    all_headers = {"Content-Type": _MEDIA[encoding], **(headers or {})}
    return http_request(service.http, "POST", f"/v1/{signal}", body, all_headers, timeout=ANSWER_WITHIN)


def clear_http(answer: HttpAnswer, signal: str) -> HttpAnswer:
    """A clear OTLP/HTTP answer: one of the expected statuses, and a body that says what happened, in the
    encoding its Content-Type names."""
    assert answer.status in HTTP_STATUSES, (answer.status, answer.body[:500])
    encoding = "json" if answer.headers.get("content-type") == "application/json" else "protobuf"
    assert answer.headers.get("content-type") == _MEDIA[encoding]
    if answer.status == 200:
        if encoding == "json":
            assert isinstance(json.loads(answer.body), dict)
        else:
            (ExportTraceServiceResponse if signal == "traces" else ExportLogsServiceResponse).FromString(
                answer.body
            )
    else:
        message = (
            json.loads(answer.body)["message"]
            if encoding == "json"
            else status_pb2.Status.FromString(answer.body).message
        )
        assert message.strip() and len(message) < 64 * 1024, message[:500]
    return answer


def rejected(answer: HttpAnswer, signal: str) -> int:
    """How many records a 200 answer says were rejected (partial success)."""
    if answer.headers.get("content-type") == "application/json":
        partial = json.loads(answer.body).get("partialSuccess", {})
        return int(partial.get("rejectedSpans" if signal == "traces" else "rejectedLogRecords", 0))
    if signal == "traces":
        return ExportTraceServiceResponse.FromString(answer.body).partial_success.rejected_spans
    return ExportLogsServiceResponse.FromString(answer.body).partial_success.rejected_log_records


@dataclass(frozen=True)
class GrpcAnswer:
    code: grpc.StatusCode
    details: str
    rejected: int = 0


def grpc_call(
    service: Service, signal: str, body: bytes, compression: grpc.Compression | None = None
) -> GrpcAnswer:
    """Export over gRPC: a clear answer, one of the expected codes with a message when it is an error."""
    method = service.channel.unary_unary(TRACE_EXPORT if signal == "traces" else LOGS_EXPORT)
    try:
        raw = method(body, timeout=ANSWER_WITHIN, compression=compression)
    except grpc.RpcError as exc:
        code, details = exc.code(), exc.details() or ""
        assert code in GRPC_CODES, (code, details)
        assert details.strip(), code
        return GrpcAnswer(code, details)
    if signal == "traces":
        partial: Any = ExportTraceServiceResponse.FromString(raw).partial_success
        return GrpcAnswer(grpc.StatusCode.OK, "", partial.rejected_spans)
    partial = ExportLogsServiceResponse.FromString(raw).partial_success
    return GrpcAnswer(grpc.StatusCode.OK, "", partial.rejected_log_records)


def still_serving(service: Service) -> None:
    """What a batch of hostile requests must leave: the marker whole, a valid export over each transport
    stored, /healthz answering, the same decode worker."""
    assert span_count(service, MARKER_TRACE) == MARKER_SPANS
    trace = new_trace()
    assert clear_http(post(service, "traces", valid_body(trace)), "traces").status == 200
    assert span_count(service, trace) == 1
    trace = new_trace()
    assert clear_http(post(service, "traces", valid_body(trace, "json"), "json"), "traces").status == 200
    assert span_count(service, trace) == 1
    trace = new_trace()
    assert grpc_call(service, "traces", valid_body(trace)).code == grpc.StatusCode.OK
    assert span_count(service, trace) == 1
    health = http_request(service.http, "GET", "/healthz", timeout=ANSWER_WITHIN)
    assert health.status == 200 and json.loads(health.body)["status"] == "ok"
    decoders = service.collector.decoders
    assert decoders.pids == service.worker_pids and decoders.stats.restarts == 0, "a decode worker died"


# ---- random and mutated bodies -----------------------------------------------------------------------------


def test_random_bytes_over_both_transports(service: Service) -> None:
    @fuzz(40)
    @given(
        body=st.binary(max_size=2048),
        signal=st.sampled_from(SIGNALS),
        encoding=st.sampled_from(ENCODINGS),
        compress=st.booleans(),
    )
    def run(body: bytes, signal: str, encoding: str, compress: bool) -> None:
        headers = {"Content-Encoding": "gzip"} if compress else {}
        clear_http(
            post(service, signal, gzip.compress(body) if compress else body, encoding, headers), signal
        )
        grpc_call(service, signal, body)

    run()
    still_serving(service)


def test_mutated_real_bodies_over_both_transports(service: Service) -> None:
    @fuzz(60)
    @given(data=st.data(), compress=st.booleans())
    def run(data: st.DataObject, compress: bool) -> None:
        _, signal, encoding, body = data.draw(st.sampled_from(small_bodies()))
        body = data.draw(mutated(body, encoding))
        headers = {"Content-Encoding": "gzip"} if compress else {}
        clear_http(
            post(service, signal, gzip.compress(body) if compress else body, encoding, headers), signal
        )
        if encoding == "protobuf":
            grpc_call(service, signal, body, grpc.Compression.Gzip if compress else None)

    run()
    still_serving(service)


def test_hostile_json_requests_over_http(service: Service) -> None:
    @fuzz(30)
    @given(data=st.data(), signal=st.sampled_from(SIGNALS))
    def run(data: st.DataObject, signal: str) -> None:
        body, _ = data.draw(json_request(signal))
        clear_http(post(service, signal, body, "json"), signal)
        hostile = json.dumps(swap_hostile(data, json.loads(body))).encode()
        clear_http(post(service, signal, hostile, "json"), signal)

    run()
    still_serving(service)


# ---- valid requests with hostile content -------------------------------------------------------------------


@dataclass(frozen=True)
class Hostile:
    """A request (built around a fresh trace id), what it must get, how many of its spans are stored under
    that trace id, and how many records a partial success rejects."""

    name: str
    signal: str
    encoding: str
    build: Callable[[str], bytes]
    expected: str  # stored | partial | refused
    stored: int = 0
    rejects: int = 0


def _ids_of_wrong_sizes(trace: str) -> bytes:
    bad = [pb_span(trace=b"\x01" * n) for n in WRONG_ID_SIZES] + [
        pb_span(span=b"\x02" * n) for n in WRONG_ID_SIZES
    ]
    bad += [pb_span(trace=bytes(16)), pb_span(span=bytes(8)), pb_span(pb_bytes(4, b"\x03" * 9))]
    return pb_traces(*bad, pb_span(trace=bytes.fromhex(trace), span=span_id(1)))


def _json_ids_hostile(trace: str) -> bytes:
    bad = [json_span(traceId=t) for t in non_hex_ids(16)] + [json_span(spanId=s) for s in non_hex_ids(8)]
    bad += [json_span(traceId="ab" * n) for n in WRONG_ID_SIZES] + [json_span(traceId="0" * 32)]
    return json_traces(*bad, json_span(traceId=trace.upper(), spanId=span_id(1).hex().upper()))


def _times(trace: str) -> bytes:
    beyond = [pb_span(pb_fixed64(7, t), span=span_id(9)) for t in (2**63, 2**64 - 1)]
    return pb_traces(
        *beyond,
        pb_span(pb_fixed64(7, 0), pb_fixed64(8, 2**63 - 1), trace=bytes.fromhex(trace), span=span_id(1)),
    )


def _json_literal(trace: str, where: str, literal: bytes) -> bytes:
    body = json_traces(json_span(traceId=trace, attributes=[{"key": "k", "value": {where: "@"}}]))
    return body.replace(b'"@"', literal)


def _unknown_fields(trace: str) -> bytes:
    unknown = pb_bytes(1000, b"later") + pb_varint(1001, 7)
    span = unknown + pb_span(
        pb_bytes(9, pb_attribute(b"k", unknown + pb_bytes(1, b"v"))),
        trace=bytes.fromhex(trace),
        span=span_id(1),
    )
    return unknown + pb_bytes(1, unknown + pb_bytes(2, unknown + pb_bytes(2, span))) + unknown


def _pb_nested(depth: int) -> bytes:
    value = pb_bytes(1, b"leaf")
    for _ in range(depth):
        value = pb_bytes(5, pb_bytes(1, value))
    return value


HOSTILE = [
    Hostile("ids of wrong sizes, zero ids", "traces", "protobuf", _ids_of_wrong_sizes, "partial", 1, 13),
    Hostile(
        "non-hex, wrong-size and uppercase JSON ids", "traces", "json", _json_ids_hostile, "partial", 1, 26
    ),
    Hostile("times at and beyond int64", "traces", "protobuf", _times, "partial", 1, 2),
    Hostile(
        "JSON times that are not numbers",
        "traces",
        "json",
        lambda t: json_traces(json_span(traceId=t, startTimeUnixNano="yesterday")),
        "refused",
    ),
    Hostile(
        "JSON negative and float times",
        "traces",
        "json",
        lambda t: json_traces(json_span(traceId=t, startTimeUnixNano="-5", endTimeUnixNano=1.7e18)),
        "stored",
        1,
    ),
    Hostile(
        "invalid UTF-8 in a protobuf span name",
        "traces",
        "protobuf",
        lambda t: pb_traces(pb_span(pb_bytes(5, b"\xff\xfe"), trace=bytes.fromhex(t))),
        "refused",
    ),
    Hostile(
        "invalid UTF-8 in a protobuf attribute key",
        "traces",
        "protobuf",
        lambda t: pb_traces(
            pb_span(pb_bytes(9, pb_attribute(b"\xed\xa0\x80", pb_bytes(1, b"v"))), trace=bytes.fromhex(t))
        ),
        "refused",
    ),
    Hostile(
        "invalid UTF-8 in a protobuf log body",
        "logs",
        "protobuf",
        lambda t: pb_logs(pb_bytes(5, pb_bytes(1, b"\xc3\x28"))),
        "refused",
    ),
    Hostile(
        "lone surrogates in JSON",
        "traces",
        "json",
        lambda t: json_traces(
            json_span(
                traceId=t, name="\ud800", attributes=[{"key": "\udfff", "value": {"stringValue": "x\ud83d"}}]
            )
        ),
        "stored",
        1,
    ),
    Hostile(
        "invalid JSON escape",
        "traces",
        "json",
        lambda t: json_traces(json_span(traceId=t, name="@")).replace(b'"@"', b'"\\x41"'),
        "refused",
    ),
    Hostile(
        "protobuf nested past the parser",
        "traces",
        "protobuf",
        lambda t: pb_traces(
            pb_span(pb_bytes(9, pb_attribute(b"deep", _pb_nested(500))), trace=bytes.fromhex(t))
        ),
        "refused",
    ),
    Hostile(
        "protobuf nested past the depth limit",
        "traces",
        "protobuf",
        lambda t: pb_traces(
            pb_span(pb_bytes(9, pb_attribute(b"deep", _pb_nested(40))), trace=bytes.fromhex(t))
        ),
        "stored",
        1,
    ),
    Hostile(
        "JSON nested past the interpreter",
        "traces",
        "json",
        lambda t: json_traces(json_span(traceId=t, attributes=[{"key": "deep", "value": "@"}])).replace(
            b'"@"', b'{"arrayValue": {"values": [' * 100_000 + b"]}}" * 100_000
        ),
        "refused",
    ),
    Hostile(
        "an integer literal of 5,000 digits",
        "traces",
        "json",
        lambda t: _json_literal(t, "intValue", b"9" * 5000),
        "refused",
    ),
    Hostile(
        "a doubleValue beyond a double",
        "traces",
        "json",
        lambda t: _json_literal(t, "doubleValue", b"1" + b"0" * 400),
        "refused",
    ),
    Hostile(
        "a non-finite doubleValue",
        "traces",
        "json",
        lambda t: _json_literal(t, "doubleValue", b"NaN"),
        "stored",
        1,
    ),
    Hostile(
        "a stringValue that is a list",
        "traces",
        "json",
        lambda t: _json_literal(t, "stringValue", b'["' + b"x" * 1000 + b'"]'),
        "refused",
    ),
    Hostile(
        "duplicate attribute keys",
        "traces",
        "protobuf",
        lambda t: pb_traces(
            pb_span(
                pb_bytes(9, pb_attribute(b"k", pb_bytes(1, b"1"))),
                pb_bytes(9, pb_attribute(b"k", pb_bytes(1, b"2"))),
                trace=bytes.fromhex(t),
            )
        ),
        "stored",
        1,
    ),
    Hostile("unknown fields everywhere", "traces", "protobuf", _unknown_fields, "stored", 1),
    Hostile(
        "unknown JSON keys",
        "traces",
        "json",
        lambda t: json_traces(json_span(traceId=t, newField={"a": [1]}), resource={"attributes": [], "x": 1}),
        "stored",
        1,
    ),
    Hostile("an empty protobuf request", "traces", "protobuf", lambda t: b"", "stored"),
    Hostile(
        "empty resource and scope lists",
        "traces",
        "protobuf",
        lambda t: pb_bytes(1, b"") + pb_bytes(1, pb_bytes(2, b"")),
        "stored",
    ),
    Hostile("an empty JSON object", "logs", "json", lambda t: b"{}", "stored"),
    Hostile(
        "empty JSON lists",
        "traces",
        "json",
        lambda t: b'{"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}',
        "stored",
    ),
    Hostile("an empty JSON body", "traces", "json", lambda t: b"", "refused"),
    Hostile(
        "log records with wrong-size ids",
        "logs",
        "protobuf",
        lambda t: pb_logs(pb_bytes(9, b"\x01" * 15), pb_bytes(10, b"\x02" * 17), pb_varint(2, 9)),
        "partial",
        0,
        2,
    ),
    Hostile(
        "log records with non-hex JSON ids",
        "logs",
        "json",
        lambda t: json_logs(*({"traceId": bad} for bad in non_hex_ids(16))),
        "partial",
        0,
        10,
    ),
]


@pytest.mark.parametrize("case", HOSTILE, ids=lambda c: c.name)
def test_hostile_content_over_both_transports(service: Service, case: Hostile) -> None:
    transports = ["http", "grpc"] if case.encoding == "protobuf" else ["http"]
    for transport in transports:
        trace = new_trace()
        body = case.build(trace)
        if transport == "http":
            answer = clear_http(post(service, case.signal, body, case.encoding), case.signal)
            assert answer.status in (200, 400), answer.status
            rejects = rejected(answer, case.signal) if answer.status == 200 else 0
            outcome = "refused" if answer.status == 400 else "partial" if rejects else "stored"
        else:
            reply = grpc_call(service, case.signal, body)
            rejects = reply.rejected
            outcome = (
                "refused"
                if reply.code == grpc.StatusCode.INVALID_ARGUMENT
                else "partial"
                if rejects
                else "stored"
            )
        assert (outcome, rejects) == (case.expected, case.rejects), transport
        if case.signal == "traces":
            assert span_count(service, trace) == case.stored, transport


def test_hostile_content_leaves_the_service_serving(service: Service) -> None:
    still_serving(service)


# ---- bombs and huge requests: bounded memory ---------------------------------------------------------------


def deflate_of_zeros(mib: int) -> bytes:
    """A raw deflate stream of ``mib`` MiB of zeros, made cheaply: each MiB after a full flush compresses to
    the same bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = compressor.compress(bytes(MIB)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return block * mib + b"\x03\x00"  # an empty final block


def gzip_of_zeros(mib: int) -> bytes:
    crc = 0
    zeros = bytes(MIB)
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    return (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
        + deflate_of_zeros(mib)
        + struct.pack("<II", crc, (mib * MIB) & 0xFFFFFFFF)
    )


def zlib_of_zeros(mib: int) -> bytes:
    adler = 1
    zeros = bytes(MIB)
    for _ in range(mib):
        adler = zlib.adler32(zeros, adler)
    return b"\x78\xda" + deflate_of_zeros(mib) + struct.pack(">I", adler)


def test_the_bomb_helpers_make_what_they_say() -> None:
    assert gzip.decompress(gzip_of_zeros(3)) == bytes(3 * MIB)
    assert zlib.decompress(zlib_of_zeros(2)) == bytes(2 * MIB)


@dataclass
class Memory:
    rss: int
    peak: int


def memory(pid: int | str) -> Memory:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024
    return Memory(fields["VmRSS"], fields["VmHWM"])


def reset_peak(pid: int | str) -> bool:
    """Reset the process's peak RSS (VmHWM) to its current RSS; False where the kernel does not allow it."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def limited(service: Service, kind: str) -> float:
    samples = metric_samples(
        http_request(service.http, "GET", "/metrics", timeout=ANSWER_WITHIN).body.decode()
    )
    name = f'agentotel_limited_total{{signal="traces",kind="{kind}"}}'
    return samples.get(name, 0.0)


def _many_attributes(trace: str, encoding: str) -> bytes:
    if encoding == "json":
        attributes = [{"key": f"attribute.{i}", "value": {"intValue": str(i)}} for i in range(50_000)]
        return json_traces(json_span(traceId=trace, attributes=attributes))
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = bytes.fromhex(trace), span_id(1), "many"
    for i in range(50_000):
        kv = span.attributes.add()
        kv.key = f"attribute.{i}"
        kv.value.int_value = i
    return request.SerializeToString()


def test_bombs_and_huge_requests_keep_memory_bounded(service: Service) -> None:
    processes: list[int | str] = ["self", *service.worker_pids]
    peaks = {pid: reset_peak(pid) for pid in processes}
    before = {pid: memory(pid) for pid in processes}
    started = time.monotonic()

    # 20 MiB of zeros, gzipped to 20 KB: inflates to exactly the limit, then is no request at all
    small_bomb = gzip_of_zeros(20)
    assert len(small_bomb) < 64 * 1024
    for signal, encoding in (("traces", "protobuf"), ("traces", "json"), ("logs", "protobuf")):
        answer = clear_http(post(service, signal, small_bomb, encoding, {"Content-Encoding": "gzip"}), signal)
        assert answer.status == 400
    # 1 GiB of zeros gzipped to 1 MB, and 256 MiB deflated: refused once past the limit, never inflated whole
    for bomb, encoding in ((gzip_of_zeros(1024), "gzip"), (zlib_of_zeros(256), "deflate")):
        answer = clear_http(
            post(service, "traces", bomb, "protobuf", {"Content-Encoding": encoding}), "traces"
        )
        assert answer.status == 413 and b"inflated body" in answer.body
    # over gRPC, a message that inflates past the limit
    reply = grpc_call(service, "traces", bytes(LIMIT + MIB), grpc.Compression.Gzip)
    assert reply.code == grpc.StatusCode.RESOURCE_EXHAUSTED

    # 50,000 attributes on one span, over each transport: stored with the limit's worth, the rest counted
    keep = DEFAULT_LIMITS.max_attributes_per_span
    dropped = limited(service, "attributes_dropped")
    for transport, encoding in (("http", "protobuf"), ("http", "json"), ("grpc", "protobuf")):
        trace = new_trace()
        body = _many_attributes(trace, encoding)
        if transport == "http":
            assert clear_http(post(service, "traces", body, encoding), "traces").status == 200
        else:
            assert grpc_call(service, "traces", body).code == grpc.StatusCode.OK
        (attributes,) = service.collector.query(
            "SELECT attributes FROM spans WHERE trace_id = ?", params=[trace]
        )["rows"][0]
        assert list(attributes) == [f"attribute.{i}" for i in range(keep)]
    assert limited(service, "attributes_dropped") - dropped == 3 * (50_000 - keep)

    # a 5 MB string: stored cut, with the marker
    trace = new_trace()
    long = json_traces(json_span(traceId=trace, name="n" * 5_000_000))
    assert clear_http(post(service, "traces", long, "json"), "traces").status == 200
    (name,) = service.collector.query("SELECT name FROM spans WHERE trace_id = ?", params=[trace])["rows"][0]
    assert name == "n" * DEFAULT_LIMITS.max_attribute_value_length + "…[truncated: 5000000 characters]"

    after = {pid: memory(pid) for pid in processes}
    for pid in processes:
        grown = after[pid].rss - before[pid].rss
        assert grown < MEMORY_BOUND, f"process {pid} grew by {grown / MIB:.0f} MiB"
        if peaks[pid]:
            peak = after[pid].peak - before[pid].rss
            assert peak < MEMORY_BOUND, f"process {pid} peaked {peak / MIB:.0f} MiB above where it started"
    assert time.monotonic() - started < 60
    still_serving(service)


# ---- compression, headers and framing ----------------------------------------------------------------------


def _fixture_body() -> bytes:
    return next(
        body for _, signal, encoding, body in small_bodies() if signal == "traces" and encoding == "protobuf"
    )


@pytest.mark.parametrize(
    ("name", "body", "headers", "expected"),
    [
        ("truncated gzip", lambda: gzip.compress(_fixture_body())[:-20], {"Content-Encoding": "gzip"}, 400),
        (
            "gzip cut after its header",
            lambda: gzip.compress(_fixture_body())[:10],
            {"Content-Encoding": "gzip"},
            400,
        ),
        ("gzip of garbage", lambda: gzip.compress(b"\xff" * 1000), {"Content-Encoding": "gzip"}, 400),
        ("garbage said to be gzip", lambda: b"\x1f\x8b" + b"\xff" * 100, {"Content-Encoding": "gzip"}, 400),
        (
            "gzip said to be deflate",
            lambda: gzip.compress(_fixture_body()),
            {"Content-Encoding": "deflate"},
            400,
        ),
        (
            "deflate said to be gzip",
            lambda: zlib.compress(_fixture_body()),
            {"Content-Encoding": "gzip"},
            400,
        ),
        (
            "raw deflate said to be deflate",
            lambda: zlib.compress(_fixture_body(), wbits=-15),
            {"Content-Encoding": "deflate"},
            400,
        ),
        (
            "gzip followed by junk",
            lambda: gzip.compress(_fixture_body()) + b"junk",
            {"Content-Encoding": "gzip"},
            400,
        ),
        (
            "two gzip members and padding",
            lambda: gzip.compress(b"") + gzip.compress(_fixture_body()) + bytes(8),
            {"Content-Encoding": "gzip"},
            200,
        ),
        ("GZIP in capitals", lambda: gzip.compress(_fixture_body()), {"Content-Encoding": "GZIP"}, 200),
        ("x-gzip", lambda: gzip.compress(_fixture_body()), {"Content-Encoding": "x-gzip"}, 200),
        ("identity", _fixture_body, {"Content-Encoding": "identity"}, 200),
        ("br", _fixture_body, {"Content-Encoding": "br"}, 415),
        ("zstd", _fixture_body, {"Content-Encoding": "zstd"}, 415),
        (
            "two encodings",
            lambda: gzip.compress(gzip.compress(_fixture_body())),
            {"Content-Encoding": "gzip, gzip"},
            415,
        ),
        ("an encoding of *", _fixture_body, {"Content-Encoding": "*"}, 415),
        ("no Content-Type", _fixture_body, {"Content-Type": ""}, 415),
        ("text/plain", _fixture_body, {"Content-Type": "text/plain"}, 415),
        ("application/xml", _fixture_body, {"Content-Type": "application/xml"}, 415),
        ("protobuf said to be JSON", _fixture_body, {"Content-Type": "application/json"}, 400),
        (
            "JSON with a charset",
            lambda: json_traces(json_span(traceId=new_trace())),
            {"Content-Type": "application/json; charset=utf-8"},
            200,
        ),
        ("application/protobuf", _fixture_body, {"Content-Type": "application/protobuf"}, 200),
    ],
)
def test_compression_and_content_headers(
    service: Service, name: str, body: Callable[[], bytes], headers: dict[str, str], expected: int
) -> None:
    all_headers = {"Content-Type": "application/x-protobuf", **headers}
    if not all_headers["Content-Type"]:
        del all_headers["Content-Type"]
    answer = http_request(service.http, "POST", "/v1/traces", body(), all_headers, timeout=ANSWER_WITHIN)
    assert clear_http(answer, "traces").status == expected


def test_json_said_to_be_protobuf_gets_a_clear_answer(service: Service) -> None:
    body = json_traces(json_span(traceId=new_trace()))
    assert clear_http(post(service, "traces", body, "protobuf"), "traces").status in (200, 400)


def test_a_million_gzip_members_are_answered_promptly(service: Service) -> None:
    """20 MB of empty gzip members: one empty request, inflated in linear time (it took minutes when each
    member copied the rest of the body)."""
    body = gzip.compress(b"") * 1_000_000
    assert len(body) <= LIMIT
    started = time.monotonic()
    answer = clear_http(post(service, "traces", body, "protobuf", {"Content-Encoding": "gzip"}), "traces")
    assert answer.status == 200 and time.monotonic() - started < 15


def raw_http(service: Service, request: bytes, *, close_write: bool = False) -> tuple[int, bytes]:
    """Send ``request`` bytes as they are and read one answer (within ``ANSWER_WITHIN``, the connection left
    open unless ``close_write``)."""
    host, port = service.http.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=ANSWER_WITHIN) as sock:
        sock.sendall(request)
        if close_write:
            sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.read()


HEAD = b"POST /v1/traces HTTP/1.1\r\nHost: fuzz\r\nContent-Type: application/x-protobuf\r\n"
CHUNKED = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"


# Framing the HTTP parser refuses: a 400 at once that says what was wrong (in plain text, as the parser
# answers before any route is chosen). Nothing follows what is refused: bytes never read could reset the
# connection before the answer is read.
@pytest.mark.parametrize(
    ("name", "request_bytes", "reason"),
    [
        ("a negative chunk size", CHUNKED + b"-1\r\n", b"chunk size"),
        ("a chunk size with a sign", CHUNKED + b"+5\r\n", b"chunk size"),
        ("a chunk size that is not hex", CHUNKED + b"zz\r\n", b"chunk size"),
        ("a negative Content-Length", HEAD + b"Content-Length: -1\r\n\r\n", b"Content-Length"),
        ("a Content-Length that is not a number", HEAD + b"Content-Length: 1e3\r\n\r\n", b"Content-Length"),
    ],
)
def test_malformed_framing_is_answered_at_once(
    service: Service, name: str, request_bytes: bytes, reason: bytes
) -> None:
    status, body = raw_http(service, request_bytes)
    assert status == 400 and body.startswith(b"invalid HTTP request: ") and reason in body, body[:300]


# What the OTLP route refuses: an OTLP Status in the body, at once (a body past the limit as soon as the part
# past it arrives).
@pytest.mark.parametrize(
    ("name", "request_bytes", "expected"),
    [
        ("a chunk past the limit", CHUNKED + b"%x\r\n" % (LIMIT + 1) + bytes(LIMIT + 1), 413),
        (
            "chunks past the limit",
            CHUNKED + (b"%x\r\n" % MIB + bytes(MIB) + b"\r\n") * 20 + b"%x\r\n" % MIB + b"\0",
            413,
        ),
        ("a Content-Length past the limit", HEAD + b"Content-Length: %d\r\n\r\n" % (LIMIT + 1), 413),
        ("no Content-Length", HEAD + b"\r\n", 400),
    ],
)
def test_bodies_the_route_refuses_are_answered_at_once(
    service: Service, name: str, request_bytes: bytes, expected: int
) -> None:
    status, body = raw_http(service, request_bytes)
    assert status == expected, body[:300]
    assert status_pb2.Status.FromString(body).message


@fuzz(100)
@given(data=st.data())
def test_a_real_body_in_random_chunks_is_stored(service: Service, data: st.DataObject) -> None:
    """Chunked framing at any boundaries (hex in either case, chunk extensions, trailers)
    carries the body whole."""
    trace = new_trace()
    body = valid_body(trace, spans=3)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=8)))
    parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    upper = data.draw(st.booleans())
    extension = data.draw(st.sampled_from([b"", b";name=value"]))
    trailer = data.draw(st.sampled_from([b"", b"X-Trailer: 1\r\n"]))
    wire = b"".join((b"%X" if upper else b"%x") % len(p) + extension + b"\r\n" + p + b"\r\n" for p in parts)
    status, answer = raw_http(service, CHUNKED + wire + b"0\r\n" + trailer + b"\r\n")
    assert status == 200, answer[:300]
    assert span_count(service, trace) == 3


CHUNK_SIZES = st.one_of(
    st.integers(0, 400).map(lambda n: b"%x" % n),
    st.integers(0, 400).map(lambda n: b"%X" % n),
    st.sampled_from([b"-1", b"-0", b"+5", b"0x5", b" 5", b"5_0", b"", b"zz", b"f" * 20]),
)


@st.composite
def chunked(draw: st.DrawFn) -> bytes:
    """A chunked body, well formed or not: size lines (hex, or signed, prefixed, empty,
    huge), data, the end."""
    out = b""
    for _ in range(draw(st.integers(0, 5))):
        out += (
            draw(CHUNK_SIZES)
            + draw(st.sampled_from([b"", b";name=value"]))
            + draw(st.sampled_from([b"\r\n", b"\n", b""]))
        )
        out += draw(st.binary(max_size=400)) + draw(st.sampled_from([b"\r\n", b""]))
    if draw(st.booleans()):
        out += b"0\r\n" + draw(st.sampled_from([b"\r\n", b"X-Trailer: 1\r\n\r\n", b""]))
    return out


@fuzz(150)
@given(raw=chunked())
def test_any_chunked_framing_gets_a_clear_answer(service: Service, raw: bytes) -> None:
    """Well formed or not, cut anywhere (the client then stops sending): a 200, a 400 that
    says why, or a 413."""
    status, body = raw_http(service, CHUNKED + raw, close_write=True)
    assert status in (200, 400, 413), (status, body[:300])
    assert body or status == 200  # an empty export has an empty protobuf answer


@pytest.mark.parametrize("length", ["-1", "1e3", "", "0x10", str(LIMIT + 1), "9" * 5000, " 10", "10", "0"])
def test_any_content_length_gets_a_clear_answer(service: Service, length: str) -> None:
    status, body = raw_http(
        service, HEAD + b"Content-Length: %s\r\n\r\n" % length.encode() + b"\x0a" * 20, close_write=True
    )
    expected = {"0": 200, str(LIMIT + 1): 413}.get(length, 400)
    assert status == expected, (status, body[:300])
    if length == "10":  # read whole, exactly 10 bytes: the decoder says what is wrong with them
        assert b"not an ExportTraceServiceRequest" in status_pb2.Status.FromString(body).message.encode()


def test_a_body_shorter_than_its_content_length_is_a_bad_request(service: Service) -> None:
    status, body = raw_http(service, HEAD + b"Content-Length: 1000\r\n\r\n" + b"\x0a" * 10, close_write=True)
    assert status == 400 and b"ended after 10 of 1000 bytes" in body


@pytest.mark.parametrize(("content_type", "expected"), [("application/x-protobuf", 413), ("text/plain", 415)])
def test_a_large_refused_body_still_gets_its_answer(
    service: Service, content_type: str, expected: int
) -> None:
    answer = http_request(
        service.http,
        "POST",
        "/v1/traces",
        bytes(2 * LIMIT),
        {"Content-Type": content_type},
        timeout=ANSWER_WITHIN,
    )
    assert answer.status == expected


def test_compression_and_framing_leave_the_service_serving(service: Service) -> None:
    still_serving(service)
