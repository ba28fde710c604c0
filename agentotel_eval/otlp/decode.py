"""Decode OTLP export requests (binary protobuf or OTLP/JSON) into plain records.

One function per signal and encoding, all returning ``Decoded``: the valid records and how many were rejected
with a message (OTLP partial success). A body that cannot be parsed at all raises ``DecodeError``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterator, Mapping
from sys import intern
from typing import Any

from google.protobuf.message import DecodeError as _PbDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agentotel_eval.otlp.limits import DEFAULT_LIMITS, TOO_DEEP_MARKER, TRUNCATED_MARKER, Limits
from agentotel_eval.otlp.records import Decoded, LogRecord, SpanEvent, SpanLink, SpanRecord

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_UINT32_MAX = 2**32 - 1
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
_MAX_REJECT_REASONS = 3
_MAX_SHOWN = 100
_hex_digits = re.compile(r"[0-9a-f]+").fullmatch


def _shown(value: Any) -> str:
    """A value quoted in a message, cut short: an answer must not echo megabytes of the request back."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else f"{text[:_MAX_SHOWN]}…({len(text):,} characters)"


class DecodeError(ValueError):
    """The body is not a valid OTLP request in the declared encoding (a permanent error: HTTP 400)."""


class LimitExceeded(DecodeError):
    """The request is valid but over a hard limit (``Limits``); the message names the limit."""


class _Budget:
    """One request's limits, and what they cut (``Decoded.limited``)."""

    __slots__ = ("cut", "limits", "max_depth", "max_len")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.max_len = limits.max_attribute_value_length
        self.max_depth = limits.max_value_depth
        self.cut: dict[str, int] = {}

    def count(self, kind: str, n: int = 1) -> None:
        self.cut[kind] = self.cut.get(kind, 0) + n

    def text(self, value: str) -> str:
        """A string within the length limit: cut, with a marker saying how long it was."""
        if len(value) <= self.max_len:
            return value
        self.count("values_truncated")
        return value[: self.max_len] + TRUNCATED_MARKER.format(length=len(value))

    def raw(self, value: bytes) -> bytes:
        if len(value) <= self.max_len:
            return value
        self.count("values_truncated")
        return value[: self.max_len]

    def too_deep(self) -> str:
        self.count("values_too_deep")
        return TOO_DEEP_MARKER.format(depth=self.max_depth)

    def first(self, items: Any, limit: int, kind: str) -> Any:
        """The first ``limit`` items; those after are counted as dropped."""
        if len(items) <= limit:
            return items
        self.count(kind, len(items) - limit)
        return items[:limit]

    def check_count(self, count: int, limit: int, what: str, key: str) -> None:
        if count > limit:
            raise LimitExceeded(
                f"the request holds {count:,} {what}, more than limits.{key} ({limit:,}); "
                "send smaller batches or raise the limit"
            )


class _Rejects:
    """Counts invalid records and keeps the first few reasons for the partial-success message."""

    __slots__ = ("count", "reasons")

    def __init__(self) -> None:
        self.count = 0
        self.reasons: list[str] = []

    def add(self, reason: str) -> None:
        self.count += 1
        if len(self.reasons) < _MAX_REJECT_REASONS and reason not in self.reasons:
            self.reasons.append(reason)

    def message(self, what: str) -> str:
        if not self.count:
            return ""
        return f"{self.count} {what} rejected: " + "; ".join(self.reasons)


# ------------------------------------------------------------------------------------------------------------
# protobuf


def _pb_value(v: Any, b: _Budget, depth: int = 0) -> Any:
    which = v.WhichOneof("value")
    if which == "string_value":
        text = v.string_value
        return text if len(text) <= b.max_len else b.text(text)
    if which == "int_value":
        return v.int_value
    if which == "bool_value":
        return v.bool_value
    if which == "double_value":
        return v.double_value
    if which == "array_value":
        if depth >= b.max_depth:
            return b.too_deep()
        return [_pb_value(x, b, depth + 1) for x in v.array_value.values]
    if which == "kvlist_value":
        if depth >= b.max_depth:
            return b.too_deep()
        return {kv.key: _pb_value(kv.value, b, depth + 1) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return b.raw(v.bytes_value)
    return None


def _pb_attrs(kvs: Any, b: _Budget, limit: int) -> dict[str, Any]:
    # Keys are interned: the same few dozen names repeat on every span, and a collector buffering thousands of
    # spans would otherwise hold a copy of each per span (about a third of a decoded span's memory).
    if len(kvs) > limit:
        kvs = b.first(kvs, limit, "attributes_dropped")
    return {intern(kv.key): _pb_value(kv.value, b) for kv in kvs}


def _event_times_fit(events: tuple[SpanEvent, ...]) -> bool:
    """Whether every event time fits int64, as stored times must (an event's is read back as an int64 too)."""
    return all(_INT64_MIN <= e.time_ns <= _INT64_MAX for e in events)


def _check_ids(
    trace_id: str | None, span_id: str | None, rejects: _Rejects, raw: tuple[Any, Any] | None = None
) -> bool:
    """Both ids present, of the right size and not all zero; ``raw`` is what the request
    held, for the message."""
    shown_trace, shown_span = raw if raw is not None else (trace_id, span_id)
    if not trace_id or len(trace_id) != 32 or trace_id == _ZERO_TRACE:
        rejects.add(f"invalid trace id {_shown(shown_trace)} (must be 16 non-zero bytes)")
        return False
    if not span_id or len(span_id) != 16 or span_id == _ZERO_SPAN:
        rejects.add(f"invalid span id {_shown(shown_span)} (must be 8 non-zero bytes)")
        return False
    return True


def decode_traces_protobuf(body: bytes, limits: Limits = DEFAULT_LIMITS) -> Decoded:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (_PbDecodeError, ValueError) as exc:
        raise DecodeError(f"body is not an ExportTraceServiceRequest protobuf: {exc}") from None
    return traces_from_message(request, limits)


def traces_from_message(request: ExportTraceServiceRequest, limits: Limits = DEFAULT_LIMITS) -> Decoded:
    """Records from an already-parsed request: what ``decode_traces_protobuf`` does once it has parsed the
    body, for a caller that holds the message itself (a gRPC servicer that lets grpc deserialize)."""
    spans: list[SpanRecord] = []
    rejects = _Rejects()
    b = _Budget(limits)
    b.check_count(
        sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans),
        limits.max_spans_per_request,
        "spans",
        "max_spans_per_request",
    )
    span_attrs, max_events, max_links = (
        limits.max_attributes_per_span,
        limits.max_events_per_span,
        limits.max_links_per_span,
    )
    max_len = b.max_len
    append = spans.append
    for rs in request.resource_spans:
        resource = _pb_attrs(rs.resource.attributes, b, limits.max_attributes_per_resource)
        for ss in rs.scope_spans:
            scope_name = ss.scope.name
            scope_version = ss.scope.version
            for s in ss.spans:
                trace_id = s.trace_id.hex()
                span_id = s.span_id.hex()
                if not _check_ids(trace_id, span_id, rejects):
                    continue
                parent = s.parent_span_id.hex() or None
                if parent is not None and (len(parent) != 16 or parent == _ZERO_SPAN):
                    if parent == _ZERO_SPAN:
                        parent = None
                    else:
                        rejects.add(f"invalid parent span id {_shown(parent)} on span {span_id}")
                        continue
                events = (
                    tuple(
                        SpanEvent(e.name, e.time_unix_nano, _pb_attrs(e.attributes, b, span_attrs))
                        for e in b.first(s.events, max_events, "events_dropped")
                    )
                    if s.events
                    else ()
                )
                links = (
                    tuple(
                        SpanLink(lk.trace_id.hex(), lk.span_id.hex(), _pb_attrs(lk.attributes, b, span_attrs))
                        for lk in b.first(s.links, max_links, "links_dropped")
                    )
                    if s.links
                    else ()
                )
                start, end = s.start_time_unix_nano, s.end_time_unix_nano
                if start > _INT64_MAX or end > _INT64_MAX or (events and not _event_times_fit(events)):
                    rejects.add(f"span {span_id}: a time beyond int64 nanoseconds (the year 2262)")
                    continue
                status = s.status
                append(
                    SpanRecord(
                        trace_id,
                        span_id,
                        parent,
                        name if len(name := s.name) <= max_len else b.text(name),
                        s.kind,
                        start,
                        end,
                        status.code,
                        message if len(message := status.message) <= max_len else b.text(message),
                        _pb_attrs(s.attributes, b, span_attrs),
                        events,
                        links,
                        resource,
                        scope_name,
                        scope_version,
                        s.trace_state,
                        s.flags,
                    )
                )
    return Decoded(spans, rejects.count, rejects.message("spans"), b.cut)


def decode_logs_protobuf(body: bytes, limits: Limits = DEFAULT_LIMITS) -> Decoded:
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(body)
    except (_PbDecodeError, ValueError) as exc:
        raise DecodeError(f"body is not an ExportLogsServiceRequest protobuf: {exc}") from None
    return logs_from_message(request, limits)


def logs_from_message(request: ExportLogsServiceRequest, limits: Limits = DEFAULT_LIMITS) -> Decoded:
    """``traces_from_message`` for logs."""
    logs: list[LogRecord] = []
    rejects = _Rejects()
    b = _Budget(limits)
    b.check_count(
        sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs),
        limits.max_log_records_per_request,
        "log records",
        "max_log_records_per_request",
    )
    for rl in request.resource_logs:
        resource = _pb_attrs(rl.resource.attributes, b, limits.max_attributes_per_resource)
        for sl in rl.scope_logs:
            scope_name = sl.scope.name
            scope_version = sl.scope.version
            for r in sl.log_records:
                trace_id = r.trace_id.hex() or None
                span_id = r.span_id.hex() or None
                if trace_id is not None and (len(trace_id) != 32 or trace_id == _ZERO_TRACE):
                    if trace_id != _ZERO_TRACE:
                        rejects.add(f"invalid trace id {_shown(trace_id)} on a log record")
                        continue
                    trace_id = None
                if span_id is not None and (len(span_id) != 16 or span_id == _ZERO_SPAN):
                    if span_id != _ZERO_SPAN:
                        rejects.add(f"invalid span id {_shown(span_id)} on a log record")
                        continue
                    span_id = None
                if r.time_unix_nano > _INT64_MAX or r.observed_time_unix_nano > _INT64_MAX:
                    rejects.add("a log record's time is beyond int64 nanoseconds (the year 2262)")
                    continue
                attributes = _pb_attrs(r.attributes, b, limits.max_attributes_per_span)
                event_name = getattr(r, "event_name", "") or attributes.get("event.name", "") or ""
                logs.append(
                    LogRecord(
                        r.time_unix_nano,
                        r.observed_time_unix_nano,
                        trace_id,
                        span_id,
                        r.severity_number,
                        r.severity_text,
                        str(event_name),
                        _pb_value(r.body, b) if r.HasField("body") else None,
                        attributes,
                        resource,
                        scope_name,
                        scope_version,
                        r.flags,
                    )
                )
    return Decoded(logs, rejects.count, rejects.message("log records"), b.cut)


# ------------------------------------------------------------------------------------------------------------
# OTLP/JSON: lowerCamelCase keys (snake_case accepted too), hex ids, 64-bit ints as
# strings, enums as integers.

_SPAN_KIND_NAMES = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_STATUS_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_SEVERITY_NAMES = {"SEVERITY_NUMBER_UNSPECIFIED": 0} | {
    f"SEVERITY_NUMBER_{level}{'' if i == 0 else i + 1}": base + i
    for base, level in ((1, "TRACE"), (5, "DEBUG"), (9, "INFO"), (13, "WARN"), (17, "ERROR"), (21, "FATAL"))
    for i in range(4)
}


def _get(obj: Mapping[str, Any], camel: str, snake: str | None = None, default: Any = None) -> Any:
    value = obj.get(camel)
    if value is None and snake is not None:
        value = obj.get(snake)
    return default if value is None else value


def _json_int(value: Any, what: str) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise DecodeError(f"{what} must be an integer, got {_shown(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise DecodeError(f"{what} must be an integer, got {_shown(value)}")


def _json_enum(value: Any, names: Mapping[str, int], what: str) -> int:
    if isinstance(value, str) and value in names:
        return names[value]
    return _json_int(value, what)


def _json_value(v: Any, b: _Budget, depth: int = 0) -> Any:
    if not isinstance(v, Mapping):
        raise DecodeError(f"attribute value must be an AnyValue object, got {_shown(v)}")
    for key, value in v.items():
        if key in ("stringValue", "string_value"):
            if isinstance(value, str):
                return value if len(value) <= b.max_len else b.text(value)
            if value is None:
                return None
            # Anything else would be stored as it is, past the length and depth limits.
            raise DecodeError(f"stringValue must be a string, got {type(value).__name__}")
        if key in ("intValue", "int_value"):
            number = _json_int(value, "intValue")
            if not _INT64_MIN <= number <= _INT64_MAX:  # AnyValue.int_value is an int64, as in protobuf
                raise DecodeError(f"intValue {_shown(value)} is outside the 64-bit signed range")
            return number
        if key in ("boolValue", "bool_value"):
            return bool(value)
        if key in ("doubleValue", "double_value"):
            try:
                return float(value)
            except (
                TypeError,
                ValueError,
                OverflowError,
            ):  # OverflowError: an integer beyond a double's range
                raise DecodeError(f"doubleValue must be a number, got {_shown(value)}") from None
        if key in ("arrayValue", "array_value"):
            if depth >= b.max_depth:
                return b.too_deep()
            return [_json_value(x, b, depth + 1) for x in _get(value, "values", default=[])]
        if key in ("kvlistValue", "kvlist_value"):
            if depth >= b.max_depth:
                return b.too_deep()
            return _json_attrs(_get(value, "values", default=[]), b, 2**62, depth + 1)
        if key in ("bytesValue", "bytes_value"):
            try:
                return b.raw(base64.b64decode(value, validate=True))
            except (binascii.Error, ValueError, TypeError):
                raise DecodeError(f"bytesValue is not base64: {_shown(value)}") from None
    return None


def _json_attrs(kvs: Any, b: _Budget, limit: int, depth: int = 0) -> dict[str, Any]:
    if not isinstance(kvs, list):
        raise DecodeError(f"attributes must be a list of key/value objects, got {type(kvs).__name__}")
    out: dict[str, Any] = {}
    for kv in b.first(kvs, limit, "attributes_dropped"):
        if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
            raise DecodeError(f"attribute must be an object with a string 'key', got {str(kv)[:200]}")
        out[intern(kv["key"])] = _json_value(kv.get("value", {}), b, depth)
    return out


def _json_id(value: Any, nbytes: int) -> str | None:
    """Hex id, lowercased; '' or missing is None; anything else that is not hex of the right size is ''."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        return ""
    lowered = value.lower()
    # Hex digits only: int(x, 16) would also take a sign, "0x", "_", spaces and non-ASCII digits.
    if len(lowered) != nbytes * 2 or _hex_digits(lowered) is None:
        return ""
    return lowered


def _parse_json(body: bytes | str, top_key: str, top_snake: str) -> list[Any]:
    try:
        data = json.loads(body)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of over 4,300 digits
        raise DecodeError(f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise DecodeError("body is not valid JSON: nested too deeply") from None
    if not isinstance(data, Mapping):
        raise DecodeError("OTLP/JSON body must be an object")
    items = _get(data, top_key, top_snake, default=[])
    if not isinstance(items, list):
        raise DecodeError(f"'{top_key}' must be a list")
    return items


def _each_scope(
    items: list[Any],
    scope_key: str,
    scope_snake: str,
    records_key: str,
    records_snake: str,
    b: _Budget,
) -> Iterator[tuple[dict[str, Any], str, str, list[Any]]]:
    for rs in items:
        if not isinstance(rs, Mapping):
            raise DecodeError("resource entries must be objects")
        resource = _json_attrs(
            _get(_get(rs, "resource", default={}), "attributes", default=[]),
            b,
            b.limits.max_attributes_per_resource,
        )
        for ss in _get(rs, scope_key, scope_snake, default=[]):
            scope = _get(ss, "scope", default={})
            records = _get(ss, records_key, records_snake, default=[])
            if not isinstance(records, list):
                raise DecodeError(f"'{records_key}' must be a list")
            yield resource, str(scope.get("name") or ""), str(scope.get("version") or ""), records


def _json_count(
    items: list[Any], scope_key: str, scope_snake: str, records_key: str, records_snake: str
) -> int:
    return sum(
        len(records)
        for rs in items
        if isinstance(rs, Mapping)
        for ss in _get(rs, scope_key, scope_snake, default=[])
        if isinstance(ss, Mapping)
        if isinstance(records := _get(ss, records_key, records_snake, default=[]), list)
    )


def decode_traces_json(body: bytes | str, limits: Limits = DEFAULT_LIMITS) -> Decoded:
    items = _parse_json(body, "resourceSpans", "resource_spans")
    spans: list[SpanRecord] = []
    rejects = _Rejects()
    b = _Budget(limits)
    span_attrs = limits.max_attributes_per_span
    try:
        b.check_count(
            _json_count(items, "scopeSpans", "scope_spans", "spans", "spans"),
            limits.max_spans_per_request,
            "spans",
            "max_spans_per_request",
        )
        for resource, scope_name, scope_version, records in _each_scope(
            items, "scopeSpans", "scope_spans", "spans", "spans", b
        ):
            for s in records:
                if not isinstance(s, Mapping):
                    raise DecodeError("spans must be objects")
                raw_ids = (_get(s, "traceId", "trace_id"), _get(s, "spanId", "span_id"))
                trace_id = _json_id(raw_ids[0], 16)
                span_id = _json_id(raw_ids[1], 8)
                if not _check_ids(trace_id, span_id, rejects, raw_ids):
                    continue
                assert trace_id is not None and span_id is not None
                parent = _json_id(_get(s, "parentSpanId", "parent_span_id"), 8)
                if parent == "":
                    rejects.add(f"invalid parent span id on span {span_id}")
                    continue
                if parent == _ZERO_SPAN:
                    parent = None
                status = _get(s, "status", default={})
                events = tuple(
                    SpanEvent(
                        str(e.get("name", "")),
                        _json_int(_get(e, "timeUnixNano", "time_unix_nano"), "timeUnixNano"),
                        _json_attrs(_get(e, "attributes", default=[]), b, span_attrs),
                    )
                    for e in b.first(
                        _get(s, "events", default=[]), limits.max_events_per_span, "events_dropped"
                    )
                )
                links = tuple(
                    SpanLink(
                        _json_id(_get(lk, "traceId", "trace_id"), 16) or "",
                        _json_id(_get(lk, "spanId", "span_id"), 8) or "",
                        _json_attrs(_get(lk, "attributes", default=[]), b, span_attrs),
                    )
                    for lk in b.first(
                        _get(s, "links", default=[]), limits.max_links_per_span, "links_dropped"
                    )
                )
                record = SpanRecord(
                    trace_id,
                    span_id,
                    parent,
                    b.text(str(s.get("name", ""))),
                    _json_enum(s.get("kind", 0), _SPAN_KIND_NAMES, "kind"),
                    _json_int(_get(s, "startTimeUnixNano", "start_time_unix_nano"), "startTimeUnixNano"),
                    _json_int(_get(s, "endTimeUnixNano", "end_time_unix_nano"), "endTimeUnixNano"),
                    _json_enum(status.get("code", 0), _STATUS_NAMES, "status.code"),
                    b.text(str(status.get("message", "") or "")),
                    _json_attrs(_get(s, "attributes", default=[]), b, span_attrs),
                    events,
                    links,
                    resource,
                    scope_name,
                    scope_version,
                    str(_get(s, "traceState", "trace_state", "")),
                    _json_int(s.get("flags", 0), "flags"),
                )
                if not (
                    _INT64_MIN <= record.start_ns <= _INT64_MAX
                    and _INT64_MIN <= record.end_ns <= _INT64_MAX
                    and _event_times_fit(events)
                    and 0 <= record.flags <= _UINT32_MAX
                ):
                    rejects.add(f"span {span_id}: a time beyond int64 nanoseconds or flags beyond uint32")
                    continue
                spans.append(record)
    except (AttributeError, TypeError) as exc:
        raise DecodeError(f"malformed OTLP/JSON trace request: {exc}") from None
    return Decoded(spans, rejects.count, rejects.message("spans"), b.cut)


def decode_logs_json(body: bytes | str, limits: Limits = DEFAULT_LIMITS) -> Decoded:
    items = _parse_json(body, "resourceLogs", "resource_logs")
    logs: list[LogRecord] = []
    rejects = _Rejects()
    b = _Budget(limits)
    try:
        b.check_count(
            _json_count(items, "scopeLogs", "scope_logs", "logRecords", "log_records"),
            limits.max_log_records_per_request,
            "log records",
            "max_log_records_per_request",
        )
        for resource, scope_name, scope_version, records in _each_scope(
            items, "scopeLogs", "scope_logs", "logRecords", "log_records", b
        ):
            for r in records:
                if not isinstance(r, Mapping):
                    raise DecodeError("log records must be objects")
                trace_id = _json_id(_get(r, "traceId", "trace_id"), 16)
                span_id = _json_id(_get(r, "spanId", "span_id"), 8)
                if trace_id == "" or span_id == "":
                    rejects.add("invalid trace or span id on a log record")
                    continue
                if trace_id == _ZERO_TRACE:
                    trace_id = None
                if span_id == _ZERO_SPAN:
                    span_id = None
                attributes = _json_attrs(_get(r, "attributes", default=[]), b, limits.max_attributes_per_span)
                body_value = _get(r, "body")
                record = LogRecord(
                    _json_int(_get(r, "timeUnixNano", "time_unix_nano"), "timeUnixNano"),
                    _json_int(
                        _get(r, "observedTimeUnixNano", "observed_time_unix_nano"), "observedTimeUnixNano"
                    ),
                    trace_id,
                    span_id,
                    _json_enum(
                        _get(r, "severityNumber", "severity_number", 0), _SEVERITY_NAMES, "severityNumber"
                    ),
                    str(_get(r, "severityText", "severity_text", "")),
                    str(_get(r, "eventName", "event_name", "") or attributes.get("event.name", "") or ""),
                    _json_value(body_value, b) if body_value is not None else None,
                    attributes,
                    resource,
                    scope_name,
                    scope_version,
                    _json_int(r.get("flags", 0), "flags"),
                )
                if not (
                    _INT64_MIN <= record.time_ns <= _INT64_MAX
                    and _INT64_MIN <= record.observed_time_ns <= _INT64_MAX
                    and _INT32_MIN <= record.severity_number <= _INT32_MAX
                    and 0 <= record.flags <= _UINT32_MAX
                ):
                    rejects.add(
                        "a log record's time is beyond int64 nanoseconds, its severityNumber beyond int32 or "
                        "its flags beyond uint32"
                    )
                    continue
                logs.append(record)
    except (AttributeError, TypeError) as exc:
        raise DecodeError(f"malformed OTLP/JSON logs request: {exc}") from None
    return Decoded(logs, rejects.count, rejects.message("log records"), b.cut)


# ------------------------------------------------------------------------------------------------------------

DECODERS: dict[tuple[str, str], Callable[[bytes, Limits], Decoded]] = {
    ("traces", "protobuf"): decode_traces_protobuf,
    ("traces", "json"): decode_traces_json,
    ("logs", "protobuf"): decode_logs_protobuf,
    ("logs", "json"): decode_logs_json,
}


def decode(signal: str, encoding: str, body: bytes, limits: Limits = DEFAULT_LIMITS) -> Decoded:
    """Decode an export request body: ``signal`` is traces|logs, ``encoding`` protobuf|json; ``limits`` bound
    what it may hold (``LimitExceeded``, a ``DecodeError``, when a hard one is passed)."""
    try:
        decoder = DECODERS[(signal, encoding)]
    except KeyError:
        raise ValueError(f"no decoder for signal={signal!r} encoding={encoding!r}") from None
    return decoder(body, limits)
