"""The payloads of helper messages that are more than plain values: records, and Arrow tables as raw frames.

* Records (``dumps`` / ``loads``): the spans and log records a decode worker keeps for forwarding, and the
  held spans the assembler hands back to forward with their scores. ``marshal`` of plain tuples, about a
  quarter of what pickling the dataclasses costs: decoded records hold only str, int, float, bool, bytes,
  None, lists, tuples and dicts. Records built some other way may hold values marshal refuses (a dict
  subclass, an object); those batches go as pickle instead, so nothing is ever refused. The
  first byte says which.
* Arrow tables (``ipc_frames`` / ``tables_from_frames``): the rows read back for the assembler (DuckDB's own
  Arrow export) and the run rows it sends back (``rows_message`` / ``rows_from``), as IPC messages in Arrow's
  own buffers, converted on the receiving side: the sender does no per-row work for them, nothing is pickled.
"""

from __future__ import annotations

import marshal
import pickle
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from agentotel_eval.otlp.records import LogRecord, SpanEvent, SpanLink, SpanRecord

_MARSHAL = b"M"
_PICKLE = b"P"


def _span_tuple(s: SpanRecord) -> tuple[Any, ...]:
    return (
        s.trace_id,
        s.span_id,
        s.parent_span_id,
        s.name,
        s.kind,
        s.start_ns,
        s.end_ns,
        s.status_code,
        s.status_message,
        s.attributes,
        tuple((e.name, e.time_ns, e.attributes) for e in s.events) if s.events else (),
        tuple((lk.trace_id, lk.span_id, lk.attributes) for lk in s.links) if s.links else (),
        s.resource,
        s.scope_name,
        s.scope_version,
        s.trace_state,
        s.flags,
    )


def _span(t: tuple[Any, ...]) -> SpanRecord:
    events = tuple(SpanEvent(*e) for e in t[10]) if t[10] else ()
    links = tuple(SpanLink(*lk) for lk in t[11]) if t[11] else ()
    return SpanRecord(*(*t[:10], events, links, *t[12:]))  # one tuple: mypy cannot count past a starred slice


def _log_tuple(r: LogRecord) -> tuple[Any, ...]:
    return (
        r.time_ns,
        r.observed_time_ns,
        r.trace_id,
        r.span_id,
        r.severity_number,
        r.severity_text,
        r.event_name,
        r.body,
        r.attributes,
        r.resource,
        r.scope_name,
        r.scope_version,
        r.flags,
    )


def dumps(spans: Sequence[SpanRecord], logs: Sequence[LogRecord] = ()) -> bytes:
    """Spans and log records as one message."""
    data = ([_span_tuple(s) for s in spans], [_log_tuple(r) for r in logs])
    try:
        return _MARSHAL + marshal.dumps(data)
    except ValueError:  # a value marshal cannot write (only plain built-in types): pickle takes anything
        return _PICKLE + pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)


def loads(payload: bytes) -> tuple[list[SpanRecord], list[LogRecord]]:
    """The inverse of ``dumps``."""
    view = memoryview(payload)
    kind, body = bytes(view[:1]), view[1:]
    if kind == _MARSHAL:
        spans, logs = marshal.loads(body)
    elif kind == _PICKLE:
        spans, logs = pickle.loads(body)  # our own process wrote it, over a private socket pair
    else:
        raise ValueError(f"not a records message (starts with {kind!r})")
    return [_span(t) for t in spans], [LogRecord(*t) for t in logs]


def fields_of(obj: Any) -> tuple[Any, ...]:
    return tuple(getattr(obj, name) for name in obj.__dataclass_fields__)


def ipc_frames(*tables: pa.Table) -> list[Any]:
    """Each table as Arrow IPC messages in Arrow's own buffers: its schema, then each record batch, then an
    empty frame that ends the table. Sent as frames of their own (``Connection.send_bytes`` takes a buffer as
    it is: no copy into a Python bytes object); serialising batch by batch costs a fifth of an IPC stream
    writer's growing buffer."""
    out: list[Any] = []
    for table in tables:
        out.append(table.schema.serialize())
        out.extend(batch.serialize() for batch in table.to_batches() if batch.num_rows)
        out.append(b"")
    return out


def tables_from_frames(frames: Sequence[bytes]) -> list[pa.Table]:
    """The tables of ``ipc_frames`` (read in place: no copy of the data)."""
    tables: list[pa.Table] = []
    schema: pa.Schema | None = None
    batches: list[pa.RecordBatch] = []
    for frame in frames:
        if schema is None:
            schema = pa.ipc.read_schema(pa.py_buffer(frame))
        elif not frame:
            tables.append(pa.Table.from_batches(batches, schema=schema))
            schema, batches = None, []
        else:
            batches.append(pa.ipc.read_record_batch(pa.py_buffer(frame), schema))
    return tables
