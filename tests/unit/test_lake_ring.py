"""tests/support/lake_ring.py against the load-balancing exporter's own test vectors, and its
router over real gRPC.

The vectors are consistent_hashing_test.go's (opentelemetry-collector-contrib,
exporter/loadbalancingexporter).
"""

from __future__ import annotations

import bisect
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from tests.support.lake_ring import (
    DEFAULT_WEIGHT,
    MAX_POSITIONS,
    HashRing,
    TraceRouter,
    bsearch,
    export_handlers,
    moved_fraction,
    positions_for,
    positions_for_endpoints,
    split_traces,
)

# -- the Go tests' vectors -----------------------------------------------------------------------------------


def test_new_hash_ring_has_default_weight_points_per_endpoint() -> None:  # TestNewHashRing
    ring = HashRing(["endpoint-1", "endpoint-2"])
    assert DEFAULT_WEIGHT == 100
    assert MAX_POSITIONS == 36000
    assert len(ring.items) == 2 * DEFAULT_WEIGHT


@pytest.mark.parametrize(
    ("identifier", "expected"),
    [
        (bytes([1, 2, 0, 0]), "endpoint-1"),
        (bytes([128, 128, 0, 0]), "endpoint-2"),
        (b"ad-service-7", "endpoint-1"),
        (b"get-recommendations-1", "endpoint-2"),
    ],
)
def test_endpoint_for_go_vectors(identifier: bytes, expected: str) -> None:  # TestEndpointFor
    assert HashRing(["endpoint-1", "endpoint-2"]).endpoint_for(identifier) == expected


def test_positions_for_gives_num_points() -> None:  # TestPositionsFor
    assert len(positions_for("host1", 10)) == 10


@pytest.mark.parametrize(("requested", "expected"), [(85, 121), (14, 14), (351, 14), (270, 270), (271, 350)])
def test_bsearch_go_vectors(requested: int, expected: int) -> None:  # TestBinarySearch
    positions = [14, 25, 33, 47, 56, 121, 134, 158, 240, 270, 350]
    assert positions[bsearch(requested, positions)] == expected


_ENDPOINT_1 = [
    (1401, "endpoint-1"),
    (4175, "endpoint-1"),
    (14133, "endpoint-1"),
    (17836, "endpoint-1"),
    (21667, "endpoint-1"),
]


@pytest.mark.parametrize(
    ("endpoints", "expected"),
    [
        (["endpoint-1"], _ENDPOINT_1),
        (["endpoint-1", "endpoint-1"], _ENDPOINT_1),  # no duplicate items
        (
            ["endpoint-1", "endpoint-2"],
            [
                (1401, "endpoint-1"),
                (4175, "endpoint-1"),
                (10240, "endpoint-2"),
                (14133, "endpoint-1"),
                (15002, "endpoint-2"),
                (17836, "endpoint-1"),
                (21263, "endpoint-2"),
                (21667, "endpoint-1"),
                (26806, "endpoint-2"),
                (27020, "endpoint-2"),
            ],
        ),
    ],
    ids=["single", "duplicate", "multiple"],
)
def test_positions_for_endpoints_go_vectors(endpoints: list[str], expected: list[tuple[int, str]]) -> None:
    assert positions_for_endpoints(endpoints, 5) == expected  # TestPositionsForEndpoints


def test_ring_equality_is_item_equality() -> None:  # TestEqual, in spirit
    assert HashRing(["a:1", "b:1"]) == HashRing(["b:1", "a:1"])  # the resolvers sort, so order is irrelevant
    assert HashRing(["a:1"]) != HashRing(["a:1", "b:1"])
    assert HashRing(["a:1"]) != HashRing(["a:2"])


# -- properties ----------------------------------------------------------------------------------------------

_RNG_SEED = 20240601
_THREE = ["10.0.0.1:4317", "10.0.0.2:4317", "10.0.0.3:4317"]


def _trace_ids(n: int, seed: int = _RNG_SEED) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(16) for _ in range(n)]


def test_bsearch_is_first_position_at_or_after_with_wraparound() -> None:
    positions = HashRing([*_THREE, "10.0.0.4:4317"])._positions
    for pos in range(MAX_POSITIONS):
        index = bisect.bisect_left(positions, pos)
        assert bsearch(pos, positions) == (0 if index == len(positions) else index), pos


def test_trace_id_is_hashed_as_its_16_raw_bytes() -> None:
    ring = HashRing(_THREE)
    for tid in _trace_ids(200):
        assert ring.endpoint_for(tid.hex()) == ring.endpoint_for(tid)
    with pytest.raises(ValueError):
        ring.endpoint_for("abc")


def test_empty_ring_answers_no_endpoint() -> None:
    assert HashRing([]).endpoint_for(bytes(16)) == ""


def test_adding_a_fourth_endpoint_moves_about_a_quarter_all_to_it() -> None:
    ids = _trace_ids(10_000)
    old, new = HashRing(_THREE), HashRing([*_THREE, "10.0.0.4:4317"])
    fraction = moved_fraction(old, new, ids)
    assert 0.18 <= fraction <= 0.32, fraction
    moved = [t for t in ids if old.endpoint_for(t) != new.endpoint_for(t)]
    assert {new.endpoint_for(t) for t in moved} == {"10.0.0.4:4317"}
    assert moved_fraction(_THREE, [*_THREE, "10.0.0.4:4317"], ids) == fraction  # endpoint lists work too


def test_removing_an_endpoint_moves_only_its_traces() -> None:
    ids = _trace_ids(10_000)
    old = HashRing(_THREE)
    new = old.without("10.0.0.2:4317")
    on_removed = {t for t in ids if old.endpoint_for(t) == "10.0.0.2:4317"}
    moved = {t for t in ids if old.endpoint_for(t) != new.endpoint_for(t)}
    assert moved == on_removed
    assert moved_fraction(old, new, ids) == pytest.approx(len(on_removed) / len(ids))
    assert 0.2 <= len(on_removed) / len(ids) <= 0.45


def test_three_endpoints_share_the_load() -> None:
    counts = Counter(HashRing(_THREE).endpoint_for(t) for t in _trace_ids(10_000))
    assert set(counts) == set(_THREE)
    assert all(2_000 <= c <= 4_700 for c in counts.values()), counts


def test_split_traces_keeps_resource_and_scope_per_trace() -> None:
    request = _mixed_request(_trace_ids(5))
    parts = split_traces(request)
    # one part per (resource, scope, trace) that has spans, each with exactly one resource and one scope
    assert all(len(p.resource_spans) == 1 and len(p.resource_spans[0].scope_spans) == 1 for _, p in parts)
    assert sum(len(p.resource_spans[0].scope_spans[0].spans) for _, p in parts) == _span_count(request)
    for key, part in parts:
        assert {s.trace_id for s in part.resource_spans[0].scope_spans[0].spans} == {key}


# -- the router over real gRPC -------------------------------------------------------------------------------


class _Sink:
    """A tiny OTLP/gRPC receiver on 127.0.0.1 that keeps every request it is sent."""

    def __init__(self) -> None:
        self.traces: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.logs: list[logs_service_pb2.ExportLogsServiceRequest] = []
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers(export_handlers(self._traces, self._logs))
        self.endpoint = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def _traces(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        with self._lock:
            self.traces.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()

    def _logs(
        self, request: logs_service_pb2.ExportLogsServiceRequest, context: grpc.ServicerContext
    ) -> logs_service_pb2.ExportLogsServiceResponse:
        with self._lock:
            self.logs.append(request)
        return logs_service_pb2.ExportLogsServiceResponse()

    def spans(
        self,
    ) -> list[tuple[bytes, trace_pb2.Span, resource_pb2.Resource, common_pb2.InstrumentationScope]]:
        with self._lock:
            return [
                (span.trace_id, span, rs.resource, ss.scope)
                for req in self.traces
                for rs in req.resource_spans
                for ss in rs.scope_spans
                for span in ss.spans
            ]

    def log_records(self) -> list[tuple[logs_pb2.LogRecord, resource_pb2.Resource]]:
        with self._lock:
            return [
                (rec, rl.resource)
                for req in self.logs
                for rl in req.resource_logs
                for sl in rl.scope_logs
                for rec in sl.log_records
            ]

    def stop(self) -> None:
        self.server.stop(grace=None).wait()


@pytest.fixture
def sinks() -> Iterator[list[_Sink]]:
    started = [_Sink() for _ in range(3)]
    yield started
    for sink in started:
        sink.stop()


def _resource(service: str) -> resource_pb2.Resource:
    return resource_pb2.Resource(
        attributes=[common_pb2.KeyValue(key="service.name", value=common_pb2.AnyValue(string_value=service))]
    )


def _mixed_request(trace_ids: list[bytes]) -> trace_service_pb2.ExportTraceServiceRequest:
    """Two resources x two scopes, the traces' spans interleaved across all four (span i of trace t goes to
    scope (t + i) % 4), so most traces span several resources and scopes."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    scopes = []
    for service in ("agent-a", "agent-b"):
        rs = request.resource_spans.add(
            resource=_resource(service), schema_url="https://opentelemetry.io/schemas/1.26.0"
        )
        for scope in ("pydantic-ai", "openinference"):
            scopes.append(rs.scope_spans.add(scope=common_pb2.InstrumentationScope(name=scope, version="1")))
    for t, tid in enumerate(trace_ids):
        for i in range(1 + t % 4):
            scopes[(t + i) % 4].spans.add(
                trace_id=tid, span_id=(t * 16 + i + 1).to_bytes(8, "big"), name=f"span-{t}-{i}"
            )
    return request


def _span_count(request: trace_service_pb2.ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def _origins(request: trace_service_pb2.ExportTraceServiceRequest) -> dict[bytes, tuple[str, str]]:
    """span id -> (service.name, scope name) as sent."""
    return {
        span.span_id: (rs.resource.attributes[0].value.string_value, ss.scope.name)
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    }


def _export(router: TraceRouter, request: trace_service_pb2.ExportTraceServiceRequest) -> None:
    with grpc.insecure_channel(router.endpoint) as channel:
        trace_service_pb2_grpc.TraceServiceStub(channel).Export(request, timeout=10)


def _assert_routed(
    sinks: list[_Sink], ring: HashRing, request: trace_service_pb2.ExportTraceServiceRequest
) -> None:
    origins = _origins(request)
    received = [
        (sink.endpoint, tid, span, res, scope) for sink in sinks for tid, span, res, scope in sink.spans()
    ]
    assert len(received) == _span_count(request)  # nothing lost, nothing duplicated
    assert {span.span_id for _, _, span, _, _ in received} == set(origins)
    nodes_per_trace: dict[bytes, set[str]] = {}
    for endpoint, tid, span, res, scope in received:
        nodes_per_trace.setdefault(tid, set()).add(endpoint)
        assert (res.attributes[0].value.string_value, scope.name) == origins[span.span_id]  # structure kept
    for tid, nodes in nodes_per_trace.items():
        assert nodes == {ring.endpoint_for(tid)}, tid.hex()


def test_router_sends_every_span_of_a_trace_to_the_ring_node(sinks: list[_Sink]) -> None:
    ids = _trace_ids(50, seed=7)
    request = _mixed_request(ids)
    with TraceRouter([s.endpoint for s in sinks]) as router:
        _export(router, request)
        ring = router.ring
    _assert_routed(sinks, ring, request)
    assert len({ring.endpoint_for(t) for t in ids}) == 3  # the 50 traces did spread over all three nodes
    assert all(len(sink.traces) == 1 for sink in sinks)  # one Export per node per incoming request


def test_router_without_failover_reports_a_stopped_node(sinks: list[_Sink]) -> None:
    with TraceRouter([s.endpoint for s in sinks]) as router:
        sinks[1].stop()
        with pytest.raises(grpc.RpcError) as caught:
            _export(router, _mixed_request(_trace_ids(50, seed=8)))
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


def test_router_fails_over_to_the_ring_without_the_stopped_node(sinks: list[_Sink]) -> None:
    ids = _trace_ids(50, seed=9)
    request = _mixed_request(ids)
    with TraceRouter([s.endpoint for s in sinks], failover=True) as router:
        full = router.ring
        dead = sinks[1]
        dead.stop()
        _export(router, request)
        failovers = router.failovers
    alive = [sinks[0], sinks[2]]
    reduced = full.without(dead.endpoint)
    _assert_routed(alive, reduced, request)
    moved = [t for t in ids if full.endpoint_for(t) == dead.endpoint]
    assert moved and failovers >= len(moved)
    for tid in ids:  # a trace whose node is alive stays where the full ring put it
        if full.endpoint_for(tid) != dead.endpoint:
            assert reduced.endpoint_for(tid) == full.endpoint_for(tid)


def test_router_follows_set_endpoints(sinks: list[_Sink]) -> None:
    fourth = _Sink()
    try:
        with TraceRouter([s.endpoint for s in sinks]) as router:
            router.set_endpoints([*(s.endpoint for s in sinks), fourth.endpoint])
            request = _mixed_request(_trace_ids(50, seed=10))
            _export(router, request)
            ring = router.ring
        assert ring == HashRing([*(s.endpoint for s in sinks), fourth.endpoint])
        _assert_routed([*sinks, fourth], ring, request)
        router2 = TraceRouter([s.endpoint for s in sinks])
        router2.set_endpoints([sinks[0].endpoint])
        assert router2.ring.endpoints == (sinks[0].endpoint,)
        router2.stop()
    finally:
        fourth.stop()


def test_router_routes_logs_with_their_trace(sinks: list[_Sink]) -> None:
    ids = _trace_ids(20, seed=11)
    request = logs_service_pb2.ExportLogsServiceRequest()
    rl = request.resource_logs.add(resource=_resource("agent-a"))
    sl = rl.scope_logs.add(scope=common_pb2.InstrumentationScope(name="logger"))
    for n, tid in enumerate(ids):
        sl.log_records.add(trace_id=tid, body=common_pb2.AnyValue(string_value=f"traced {n}"))
    for n in range(5):  # no trace id: routed by the resource, so all five land together
        sl.log_records.add(body=common_pb2.AnyValue(string_value=f"untraced {n}"))
    with TraceRouter([s.endpoint for s in sinks]) as router:
        with grpc.insecure_channel(router.endpoint) as channel:
            logs_service_pb2_grpc.LogsServiceStub(channel).Export(request, timeout=10)
        ring = router.ring
    got = [(sink.endpoint, rec) for sink in sinks for rec, _ in sink.log_records()]
    assert len(got) == 25
    for endpoint, rec in got:
        if rec.trace_id:
            assert endpoint == ring.endpoint_for(rec.trace_id)
    assert len({endpoint for endpoint, rec in got if not rec.trace_id}) == 1


def test_sdk_exporter_through_router(sinks: list[_Sink]) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    with TraceRouter([s.endpoint for s in sinks]) as router:
        provider = TracerProvider(resource=Resource.create({"service.name": "sdk-agent"}))
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=router.endpoint, insecure=True))
        )
        tracer = provider.get_tracer("test")
        trace_ids = []
        for n in range(12):
            with tracer.start_as_current_span(f"run-{n}") as run:
                trace_ids.append(run.get_span_context().trace_id.to_bytes(16, "big"))
                for m in range(3):
                    with tracer.start_as_current_span(f"tool-{m}"):
                        pass
        assert provider.force_flush(10_000)
        provider.shutdown()
        ring = router.ring
        deadline = time.monotonic() + 5
        while sum(len(s.spans()) for s in sinks) < 48 and time.monotonic() < deadline:
            time.sleep(0.02)
    placed = {(sink.endpoint, tid) for sink in sinks for tid, *_ in sink.spans()}
    assert sum(len(s.spans()) for s in sinks) == 48
    assert placed == {(ring.endpoint_for(t), t) for t in trace_ids}
