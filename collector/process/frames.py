"""What crosses the pipe between the collector and its assembler process, as bytes.

* Marks (``collector.assemble.marks``) of committed records, collector -> assembler: ``marshal`` of plain tuples, the
  cheapest encoding CPython has for them (well under a µs a mark).
* Stored rows read back for the assembler, collector -> assembler: Arrow IPC streams of DuckDB's own Arrow
  export, sent as raw frames after a small header and converted to records on the assembler's side (the
  collector's interpreter does no per-span work for them, and the data is never pickled).
* Rows of runs, assembler -> collector: a small head and the tables as the same frames (``run_rows_frames``).
* Records, assembler -> collector (the held spans it forwards with their scores): ``marshal`` of plain tuples
  (about 4 µs a span to write, a quarter of what pickling the dataclasses costs): decoded records hold only str,
  int, float, bool, bytes, None, lists, tuples and dicts. Records built some other way may hold values marshal
  refuses (a dict subclass, an object); those batches go as pickle instead, so nothing is ever refused here. The
  first byte says which.
"""

from __future__ import annotations

import marshal
import pickle
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from agentotel_eval.otlp.records import LogRecord, SpanEvent, SpanLink, SpanRecord
from collector.assemble.marks import LogMark, SpanMark
from collector.store.operations import SpanUpdate, TraceWindow
from collector.store.runs import RunRows

_MARSHAL = b"M"
_PICKLE = b"P"


def _span_tuple(s: SpanRecord) -> tuple[Any, ...]:
    return (
        s.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.start_ns, s.end_ns, s.status_code,
        s.status_message, s.attributes,
        tuple((e.name, e.time_ns, e.attributes) for e in s.events) if s.events else (),
        tuple((lk.trace_id, lk.span_id, lk.attributes) for lk in s.links) if s.links else (),
        s.resource, s.scope_name, s.scope_version, s.trace_state, s.flags,
    )


def _span(t: tuple[Any, ...]) -> SpanRecord:
    events = tuple(SpanEvent(*e) for e in t[10]) if t[10] else ()
    links = tuple(SpanLink(*lk) for lk in t[11]) if t[11] else ()
    return SpanRecord(*t[:10], events, links, *t[12:])


def _log_tuple(r: LogRecord) -> tuple[Any, ...]:
    return (
        r.time_ns, r.observed_time_ns, r.trace_id, r.span_id, r.severity_number, r.severity_text, r.event_name,
        r.body, r.attributes, r.resource, r.scope_name, r.scope_version, r.flags,
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


def run_rows_frames(rows: RunRows) -> tuple[tuple[Any, ...], list[Any]]:
    """A batch of run rows as a small head (plain values) and its tables as ``ipc_frames``."""
    tables = [rows.runs, rows.calls]
    if rows.evaluations is not None:
        tables.append(rows.evaluations)
    if rows.span_values is not None:
        tables.append(rows.span_values)
    head = (
        tuple(_fields(w) for w in rows.replace),
        tuple(_fields(u) for u in rows.span_updates),
        rows.evaluations is not None,
        rows.span_values is not None,
    )
    return head, ipc_frames(*tables)


def run_rows_from(head: tuple[Any, ...], frames: Sequence[bytes]) -> RunRows:
    """The inverse of ``run_rows_frames``."""
    replace, patches, has_evaluations, has_values = head
    tables = iter(tables_from_frames(frames))
    runs, calls = next(tables), next(tables)
    evaluations = next(tables) if has_evaluations else None
    values = next(tables) if has_values else None
    return RunRows(runs, calls, tuple(TraceWindow(*w) for w in replace), evaluations,
                   tuple(SpanUpdate(*u) for u in patches), values)


def _fields(obj: Any) -> tuple[Any, ...]:
    return tuple(getattr(obj, name) for name in obj.__dataclass_fields__)


def dump_marks(spans: Sequence[SpanMark], logs: Sequence[LogMark], commit: int | None = None) -> bytes:
    """One commit's marks and its ``ingested_at`` (ns, or None)."""
    return marshal.dumps((list(spans), list(logs), commit))


def load_marks(payload: bytes) -> tuple[list[SpanMark], list[LogMark], int | None]:
    spans, logs, commit = marshal.loads(payload)
    return spans, logs, commit


def ipc_frames(*tables: pa.Table) -> list[Any]:
    """Each table as Arrow IPC messages in Arrow's own buffers: its schema, then each record batch, then an empty
    frame that ends the table. Sent as frames of their own (``Connection.send_bytes`` takes a buffer as it is: no
    copy into a Python bytes object); serialising batch by batch costs a fifth of an IPC stream writer's growing
    buffer."""
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
