"""The OpenTelemetry Collector load-balancing exporter's trace-id routing, reproduced for tests.

The scale-out deployment (``deploy/``) puts several ``agentotel-eval serve`` nodes behind a contrib Collector
whose ``loadbalancing`` exporter sends every span of a trace to one node. This module is that routing in
Python, so tests can say which node a trace lands on, how many traces move when a node joins or leaves, and
run a real gRPC front (``TraceRouter``) in place of the Collector.

The ring is a port of ``exporter/loadbalancingexporter/consistent_hashing.go``
(opentelemetry-collector-contrib):

* the ring has ``MAX_POSITIONS = 36000`` positions ("360 degrees with two decimal places");
* each endpoint gets ``DEFAULT_WEIGHT = 100`` points: point ``i`` is ``crc32_ieee(endpoint_utf8 + bytes([i]))
  % 36000`` (Go: ``h.Write([]byte(endpoint)); h.Write([]byte{byte(i)})``);
* endpoints are taken in order and a position already taken by an earlier point is skipped (so the first
  endpoint wins a collision); the items are then sorted by position (positions are unique, so
  the order is total);
* a key's position is ``crc32_ieee(key) % 36000``, and its endpoint is the first item at or after that
  position, wrapping to the first item past the last (``bsearch``, ported as written);
* with ``routing_key: traceID`` the key is the trace id's 16 raw bytes (``tid := span.TraceID(); tid[:]`` in
  ``trace_exporter.go``; log records likewise use their ``TraceID()`` bytes in ``log_exporter.go``).

The resolvers (static, DNS, k8s) sort their endpoint strings before building the ring, and DNS/k8s endpoints
are ``IP:port`` strings, so the string hashed is exactly what the resolver emits (a static ``hostname``
without a port is hashed as written; only the connection adds ``:4317``). ``HashRing`` sorts too, so the order
it is given does not matter, as in the exporter.

Where this differs from the exporter, on purpose:

* an empty ring answers ``""`` as Go's ``findEndpoint`` does; a ring of one item (which Go's ``bsearch``
  cannot search: its left half is empty) answers that item;
* log records without a trace id: the exporter routes them by a random key (older releases) or, in newer ones,
  by service; here they go by the ring position of their resource's deterministic protobuf bytes, so a test
  can predict them;
* ``TraceRouter``'s failover resends a failed part at once to the ring computed without the failed node. The
  exporter reaches the same node only when its own ``retry_on_failure``/``sending_queue`` retries after the
  resolver has dropped the dead backend; without those it returns the error to its sender.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

MAX_POSITIONS = 36000  # consistent_hashing.go: maxPositions
DEFAULT_WEIGHT = 100  # consistent_hashing.go: defaultWeight, the points per endpoint
DEFAULT_PORT = "4317"  # loadbalancer.go: defaultPort, added to an endpoint without one when connecting

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
_EMPTY_TRACE_ID = bytes(16)


def crc32_ieee(data: bytes) -> int:
    """Go's ``crc32.NewIEEE()`` sum: zlib's CRC-32 is the same IEEE polynomial."""
    return zlib.crc32(data) & 0xFFFFFFFF


def positions_for(endpoint: str, num_points: int) -> list[int]:
    """``positionsFor``: the endpoint's ``num_points`` ring positions, in point order (not sorted)."""
    raw = endpoint.encode()
    return [crc32_ieee(raw + bytes([i & 0xFF])) % MAX_POSITIONS for i in range(num_points)]


def positions_for_endpoints(endpoints: Sequence[str], weight: int) -> list[tuple[int, str]]:
    """``positionsForEndpoints``: (position, endpoint) items, first claimant of a position
    keeps it, by position."""
    taken: set[int] = set()
    items: list[tuple[int, str]] = []
    for endpoint in endpoints:
        for pos in positions_for(endpoint, weight):
            if pos in taken:
                continue
            taken.add(pos)
            items.append((pos, endpoint))
    items.sort(key=lambda item: item[0])
    return items


def bsearch(pos: int, positions: Sequence[int]) -> int:
    """Go's ``bsearch(pos, items[:n/2], items[n/2:])`` over sorted ``positions``: the index of the first
    position at or after ``pos``, or 0 past the last one. Recursion on sub-slices is kept as index bounds."""
    lo, mid, hi = 0, len(positions) // 2, len(positions)
    while True:
        left_last, right_first = positions[mid - 1], positions[mid]
        if left_last == pos:
            return mid - 1
        if right_first == pos:
            return mid
        if pos > positions[hi - 1]:
            return lo
        if pos > left_last:  # on the right side
            size = hi - mid
            if size == 1:
                return mid
            lo, mid = mid, mid + size // 2
        else:  # on the left side
            size = mid - lo
            if size == 1:
                return lo
            hi, mid = mid, lo + size // 2


def trace_id_bytes(trace_id: bytes | str) -> bytes:
    """A trace id as the 16 raw bytes the exporter hashes; a str must be its 32 hex digits."""
    if isinstance(trace_id, str):
        raw = bytes.fromhex(trace_id)
        if len(raw) != 16:
            raise ValueError(f"a hex trace id has 32 digits, got {trace_id!r}")
        return raw
    return bytes(trace_id)


def endpoint_with_port(endpoint: str) -> str:
    """``endpointWithPort``: where the exporter connects for a ring endpoint (the ring
    hashes it unchanged)."""
    return endpoint if ":" in endpoint else f"{endpoint}:{DEFAULT_PORT}"


class HashRing:
    """``newHashRing`` over the endpoints as a resolver hands them over (sorted, duplicates harmless)."""

    def __init__(self, endpoints: Iterable[str], *, weight: int = DEFAULT_WEIGHT) -> None:
        self.endpoints: tuple[str, ...] = tuple(sorted(endpoints))
        self.items: list[tuple[int, str]] = positions_for_endpoints(self.endpoints, weight)
        self._positions = [pos for pos, _ in self.items]

    def position_for(self, key: bytes | str) -> int:
        return crc32_ieee(trace_id_bytes(key)) % MAX_POSITIONS

    def endpoint_for(self, trace_id: bytes | str) -> str:
        """``endpointFor``: the endpoint for a trace id (16 bytes, or 32 hex digits). Bytes of another length
        are hashed as given, as Go's ``endpointFor(identifier []byte)`` does for other routing keys."""
        if not self._positions:
            return ""
        if len(self._positions) == 1:
            return self.items[0][1]
        return self.items[bsearch(self.position_for(trace_id), self._positions)][1]

    def without(self, *endpoints: str) -> HashRing:
        """The ring the exporter builds once the resolver no longer lists these endpoints."""
        return HashRing([e for e in self.endpoints if e not in endpoints])

    def __eq__(self, other: object) -> bool:  # ``equal``: same items in the same order
        return isinstance(other, HashRing) and self.items == other.items

    def __hash__(self) -> int:
        return hash(tuple(self.items))

    def __repr__(self) -> str:
        return f"HashRing({list(self.endpoints)!r}, {len(self.items)} points)"


def moved_fraction(
    old: HashRing | Sequence[str], new: HashRing | Sequence[str], trace_ids: Sequence[bytes | str]
) -> float:
    """The fraction of ``trace_ids`` whose endpoint differs between the two rings."""
    old_ring = old if isinstance(old, HashRing) else HashRing(old)
    new_ring = new if isinstance(new, HashRing) else HashRing(new)
    if not trace_ids:
        return 0.0
    moved = sum(old_ring.endpoint_for(t) != new_ring.endpoint_for(t) for t in trace_ids)
    return moved / len(trace_ids)


# -- splitting requests: pkg/batchpersignal's SplitTraces / SplitLogs ----------------------------------------


def split_traces(
    request: trace_service_pb2.ExportTraceServiceRequest,
) -> list[tuple[bytes, trace_service_pb2.ExportTraceServiceRequest]]:
    """``batchpersignal.SplitTraces``: one request per (resource, scope, trace id), each with a copy of its
    resource and scope (and their schema URLs) and that trace's spans from that scope, in first-seen order."""
    parts: list[tuple[bytes, trace_service_pb2.ExportTraceServiceRequest]] = []
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            batches: dict[bytes, Any] = {}
            for span in ss.spans:
                if span.trace_id not in batches:
                    part = trace_service_pb2.ExportTraceServiceRequest()
                    new_rs = part.resource_spans.add(schema_url=rs.schema_url)
                    new_rs.resource.CopyFrom(rs.resource)
                    new_ss = new_rs.scope_spans.add(schema_url=ss.schema_url)
                    new_ss.scope.CopyFrom(ss.scope)
                    batches[span.trace_id] = new_ss
                    parts.append((bytes(span.trace_id), part))
                batches[span.trace_id].spans.add().CopyFrom(span)
    return parts


def split_logs(
    request: logs_service_pb2.ExportLogsServiceRequest,
) -> list[tuple[bytes, logs_service_pb2.ExportLogsServiceRequest]]:
    """``batchpersignal.SplitLogs``, keyed by routing key: a record's trace id, or for one without (empty or
    all zero) its resource's deterministic protobuf bytes."""
    parts: list[tuple[bytes, logs_service_pb2.ExportLogsServiceRequest]] = []
    for rl in request.resource_logs:
        resource_key = b"resource:" + rl.resource.SerializeToString(deterministic=True)
        for sl in rl.scope_logs:
            batches: dict[bytes, Any] = {}
            for record in sl.log_records:
                tid = bytes(record.trace_id)
                key = tid if tid and tid != _EMPTY_TRACE_ID else resource_key
                if key not in batches:
                    part = logs_service_pb2.ExportLogsServiceRequest()
                    new_rl = part.resource_logs.add(schema_url=rl.schema_url)
                    new_rl.resource.CopyFrom(rl.resource)
                    new_sl = new_rl.scope_logs.add(schema_url=sl.schema_url)
                    new_sl.scope.CopyFrom(sl.scope)
                    batches[key] = new_sl
                    parts.append((key, part))
                batches[key].log_records.add().CopyFrom(record)
    return parts


# -- the front: an OTLP/gRPC server that routes like the exporter --------------------------------------------


class _Backend:
    """The client stubs for one endpoint (the exporter's per-endpoint OTLP sub-exporter)."""

    def __init__(self, endpoint: str) -> None:
        self.channel = grpc.insecure_channel(endpoint_with_port(endpoint))
        self.traces = trace_service_pb2_grpc.TraceServiceStub(self.channel)
        self.logs = logs_service_pb2_grpc.LogsServiceStub(self.channel)


class RoutingError(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code


def export_handlers(on_traces: Callable[..., Any], on_logs: Callable[..., Any]) -> tuple[Any, Any]:
    """gRPC handlers of OTLP's trace and log Export calls, for a server's ``add_generic_rpc_handlers``."""
    return (
        grpc.method_handlers_generic_handler(
            TRACE_SERVICE,
            {
                "Export": grpc.unary_unary_rpc_method_handler(
                    on_traces,
                    request_deserializer=trace_service_pb2.ExportTraceServiceRequest.FromString,
                    response_serializer=trace_service_pb2.ExportTraceServiceResponse.SerializeToString,
                )
            },
        ),
        grpc.method_handlers_generic_handler(
            LOGS_SERVICE,
            {
                "Export": grpc.unary_unary_rpc_method_handler(
                    on_logs,
                    request_deserializer=logs_service_pb2.ExportLogsServiceRequest.FromString,
                    response_serializer=logs_service_pb2.ExportLogsServiceResponse.SerializeToString,
                )
            },
        ),
    )


class TraceRouter:
    """A small OTLP/gRPC front that routes each request's spans and log records by trace id
    over a ``HashRing``.

    Each request is split per (resource, scope, trace id), the parts are grouped by the endpoint the ring
    names and each group is sent to its endpoint as one ``Export`` (the exporter's merge per backend). A
    failed send answers the sender with its status, unless ``failover`` is on and the status is UNAVAILABLE:
    then that group's parts go to the ring without the failed endpoint, and so on until one takes
    them or none is left.

        router = TraceRouter(["127.0.0.1:5001", "127.0.0.1:5002"]).start()
        ... export to router.endpoint ...
        router.set_endpoints([...])   # a resolver update
        router.stop()
    """

    def __init__(
        self,
        endpoints: Iterable[str] = (),
        *,
        failover: bool = False,
        listen: str = "127.0.0.1:0",
        timeout: float = 5.0,
    ) -> None:
        self.failover = failover
        self.timeout = timeout
        self.failovers = 0  # parts resent to another endpoint
        self._listen = listen
        self._lock = threading.Lock()
        self._ring = HashRing(())
        self._backends: dict[str, _Backend] = {}
        self._server: grpc.Server | None = None
        self.port = 0
        self.set_endpoints(endpoints)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ring(self) -> HashRing:
        with self._lock:
            return self._ring

    def set_endpoints(self, endpoints: Iterable[str]) -> None:
        """The resolver's new list: rebuild the ring, open stubs for new endpoints, close removed ones."""
        ring = HashRing(endpoints)
        with self._lock:
            if ring == self._ring:
                return
            self._ring = ring
            gone = [e for e in self._backends if e not in ring.endpoints]
            closing = [self._backends.pop(e) for e in gone]
            for endpoint in ring.endpoints:
                if endpoint not in self._backends:
                    self._backends[endpoint] = _Backend(endpoint)
        for backend in closing:
            backend.channel.close()

    def start(self) -> TraceRouter:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers(export_handlers(self._export_traces, self._export_logs))
        self.port = server.add_insecure_port(self._listen)
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None
        with self._lock:
            backends, self._backends = list(self._backends.values()), {}
        for backend in backends:
            backend.channel.close()

    def __enter__(self) -> TraceRouter:
        return self.start() if self._server is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # routing

    def _export_traces(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self.route("traces", split_traces(request))
        except RoutingError as exc:
            context.abort(exc.code, str(exc))
        return trace_service_pb2.ExportTraceServiceResponse()

    def _export_logs(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            self.route("logs", split_logs(request))
        except RoutingError as exc:
            context.abort(exc.code, str(exc))
        return logs_service_pb2.ExportLogsServiceResponse()

    def route(
        self, signal: str, parts: Sequence[tuple[bytes, Any]], excluded: frozenset[str] = frozenset()
    ) -> None:
        """Send ``parts`` (routing key, single-trace request) to their endpoints; see the class docstring."""
        with self._lock:
            ring = self._ring.without(*excluded) if excluded else self._ring
            backends = dict(self._backends)
        if not ring.endpoints:
            raise RoutingError(
                grpc.StatusCode.UNAVAILABLE, f"no endpoint left for {signal} (tried {sorted(excluded)})"
            )
        groups: dict[str, list[tuple[bytes, Any]]] = {}
        for key, part in parts:
            groups.setdefault(ring.endpoint_for(key), []).append((key, part))
        errors: list[RoutingError] = []
        for endpoint, group in groups.items():
            try:
                self._send(backends[endpoint], signal, [part for _, part in group])
            except grpc.RpcError as exc:
                code = exc.code()
                if self.failover and code == grpc.StatusCode.UNAVAILABLE:
                    with self._lock:
                        self.failovers += len(group)
                    try:
                        self.route(signal, group, excluded | {endpoint})
                    except RoutingError as again:
                        errors.append(again)
                else:
                    errors.append(RoutingError(code, f"{endpoint}: {exc.details()}"))
        if errors:
            raise errors[0]

    def _send(self, backend: _Backend, signal: str, parts: Sequence[Any]) -> None:
        if signal == "traces":
            traces = trace_service_pb2.ExportTraceServiceRequest()
            for part in parts:
                traces.resource_spans.extend(part.resource_spans)
            backend.traces.Export(traces, timeout=self.timeout)
        else:
            logs = logs_service_pb2.ExportLogsServiceRequest()
            for part in parts:
                logs.resource_logs.extend(part.resource_logs)
            backend.logs.Export(logs, timeout=self.timeout)
