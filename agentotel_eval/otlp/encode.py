"""Encode plain records back into OTLP requests: for forwarding downstream and for replaying traces in tests.

Records sharing a resource (by identity or equal content) and scope are grouped as an
exporter would group them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from agentotel_eval.otlp.records import LogRecord, SpanRecord


def _set_value(target: AnyValue, value: Any) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        if -(2**63) <= value < 2**63:
            target.int_value = value
        else:
            target.string_value = str(value)
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, bytes | bytearray):
        target.bytes_value = bytes(value)
    elif isinstance(value, Mapping):
        kvlist = target.kvlist_value
        kvlist.SetInParent()
        for k, v in value.items():
            kv = kvlist.values.add()
            kv.key = str(k)
            _set_value(kv.value, v)
    elif isinstance(value, list | tuple):
        array = target.array_value
        array.SetInParent()
        for v in value:
            _set_value(array.values.add(), v)
    elif value is None:
        pass
    else:
        target.string_value = str(value)


def _fill_attributes(target: Any, attributes: Mapping[str, Any]) -> None:
    for key, value in attributes.items():
        kv: KeyValue = target.add()
        kv.key = key
        _set_value(kv.value, value)


def _resource_key(resource: Mapping[str, Any]) -> str:
    return json.dumps(resource, sort_keys=True, default=repr)


def encode_traces(spans: Iterable[SpanRecord]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    by_resource: dict[str, Any] = {}
    by_scope: dict[tuple[str, str, str], Any] = {}
    for span in spans:
        rkey = _resource_key(span.resource)
        rs = by_resource.get(rkey)
        if rs is None:
            rs = request.resource_spans.add()
            _fill_attributes(rs.resource.attributes, span.resource)
            by_resource[rkey] = rs
        skey = (rkey, span.scope_name, span.scope_version)
        ss = by_scope.get(skey)
        if ss is None:
            ss = rs.scope_spans.add()
            ss.scope.name = span.scope_name
            ss.scope.version = span.scope_version
            by_scope[skey] = ss
        s = ss.spans.add()
        s.trace_id = bytes.fromhex(span.trace_id)
        s.span_id = bytes.fromhex(span.span_id)
        if span.parent_span_id:
            s.parent_span_id = bytes.fromhex(span.parent_span_id)
        s.name = span.name
        s.kind = span.kind
        s.start_time_unix_nano = span.start_ns
        s.end_time_unix_nano = span.end_ns
        s.trace_state = span.trace_state
        s.flags = span.flags
        if span.status_code:
            s.status.code = span.status_code
        if span.status_message:
            s.status.message = span.status_message
        _fill_attributes(s.attributes, span.attributes)
        for event in span.events:
            e = s.events.add()
            e.name = event.name
            e.time_unix_nano = event.time_ns
            _fill_attributes(e.attributes, event.attributes)
        for link in span.links:
            lk = s.links.add()
            lk.trace_id = bytes.fromhex(link.trace_id)
            lk.span_id = bytes.fromhex(link.span_id)
            _fill_attributes(lk.attributes, link.attributes)
    return request


def encode_logs(logs: Iterable[LogRecord]) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    by_resource: dict[str, Any] = {}
    by_scope: dict[tuple[str, str, str], Any] = {}
    for log in logs:
        rkey = _resource_key(log.resource)
        rl = by_resource.get(rkey)
        if rl is None:
            rl = request.resource_logs.add()
            _fill_attributes(rl.resource.attributes, log.resource)
            by_resource[rkey] = rl
        skey = (rkey, log.scope_name, log.scope_version)
        sl = by_scope.get(skey)
        if sl is None:
            sl = rl.scope_logs.add()
            sl.scope.name = log.scope_name
            sl.scope.version = log.scope_version
            by_scope[skey] = sl
        r = sl.log_records.add()
        r.time_unix_nano = log.time_ns
        r.observed_time_unix_nano = log.observed_time_ns
        if log.trace_id:
            r.trace_id = bytes.fromhex(log.trace_id)
        if log.span_id:
            r.span_id = bytes.fromhex(log.span_id)
        r.severity_number = log.severity_number
        r.severity_text = log.severity_text
        if log.event_name and hasattr(r, "event_name"):
            r.event_name = log.event_name
        if log.body is not None:
            _set_value(r.body, log.body)
        r.flags = log.flags
        _fill_attributes(r.attributes, log.attributes)
    return request


def _json_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes | bytearray):
        return {"bytesValue": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, Mapping):
        return {
            "kvlistValue": {"values": [{"key": str(k), "value": _json_value(v)} for k, v in value.items()]}
        }
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_json_value(v) for v in value]}}
    if value is None:
        return {}
    return {"stringValue": str(value)}


def _json_attrs(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _json_value(v)} for k, v in attributes.items()]


def traces_to_json(spans: Iterable[SpanRecord]) -> dict[str, Any]:
    """The OTLP/JSON form (hex ids, lowerCamelCase, 64-bit ints as strings) of a trace export request."""
    resources: dict[str, dict[str, Any]] = {}
    scopes: dict[tuple[str, str, str], dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for span in spans:
        rkey = _resource_key(span.resource)
        rs = resources.get(rkey)
        if rs is None:
            rs = {"resource": {"attributes": _json_attrs(span.resource)}, "scopeSpans": []}
            resources[rkey] = rs
            out.append(rs)
        skey = (rkey, span.scope_name, span.scope_version)
        ss = scopes.get(skey)
        if ss is None:
            ss = {"scope": {"name": span.scope_name, "version": span.scope_version}, "spans": []}
            scopes[skey] = ss
            rs["scopeSpans"].append(ss)
        item: dict[str, Any] = {
            "traceId": span.trace_id,
            "spanId": span.span_id,
            "name": span.name,
            "kind": span.kind,
            "startTimeUnixNano": str(span.start_ns),
            "endTimeUnixNano": str(span.end_ns),
            "attributes": _json_attrs(span.attributes),
            "status": {
                "code": span.status_code,
                **({"message": span.status_message} if span.status_message else {}),
            },
        }
        if span.parent_span_id:
            item["parentSpanId"] = span.parent_span_id
        if span.flags:
            item["flags"] = span.flags
        if span.trace_state:
            item["traceState"] = span.trace_state
        if span.events:
            item["events"] = [
                {"name": e.name, "timeUnixNano": str(e.time_ns), "attributes": _json_attrs(e.attributes)}
                for e in span.events
            ]
        if span.links:
            item["links"] = [
                {"traceId": lk.trace_id, "spanId": lk.span_id, "attributes": _json_attrs(lk.attributes)}
                for lk in span.links
            ]
        ss["spans"].append(item)
    return {"resourceSpans": out}
