"""Plain records <-> DuckDB rows: Arrow batches for the append path, and records back from stored rows.

Pure functions. The append path is the collector's hot loop, so each column is built in one comprehension and
each attribute dict is serialised to JSON exactly once (resource dicts, shared by every span of a resource,
once per batch). Strings that cannot be encoded as UTF-8 (lone surrogates from ``\\ud800`` escapes in
OTLP/JSON) are replaced rather than failing the batch.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from agentotel_eval.jsontext import dumps, loads_stored
from agentotel_eval.otlp.records import (
    SPAN_KINDS,
    STATUS_CODES,
    LogRecord,
    SpanEvent,
    SpanLink,
    SpanRecord,
)
from agentotel_eval.reconstruct.model import AgentRun, Handoff
from agentotel_eval.store import schema

_TS = pa.timestamp("ns", tz="UTC")
_STR = pa.string()
#: Arrow's canonical JSON extension type: DuckDB appends it to a JSON column without re-parsing every value
#: (what this module produces is valid JSON by construction), which makes appends markedly cheaper.
_JSON = pa.json_()
_KIND_BY_NAME = {name: i for i, name in enumerate(SPAN_KINDS)}
_STATUS_BY_NAME = {name: i for i, name in enumerate(STATUS_CODES)}
_SEVERITY_NAMES = (
    "UNSPECIFIED",
    *(
        f"{level}{'' if i == 0 else i + 1}"
        for level in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
        for i in range(4)
    ),
)


# ------------------------------------------------------------------------------------------------------------
# JSON that DuckDB accepts


def to_json(value: Any) -> str:
    """Compact JSON text that DuckDB's JSON type accepts (bytes as base64, non-finite floats as strings; see
    ``agentotel_eval.jsontext``). Frozen containers (``FrozenDict``/``FrozenList``) are dict/list subclasses
    and are written as they are; other mappings and sets go through ``json_default``."""
    return dumps(value)


def _safe_strings(values: Sequence[Any]) -> list[Any]:
    return [v.encode("utf-8", "replace").decode("utf-8") if isinstance(v, str) else v for v in values]


def _str_array(values: Sequence[Any]) -> pa.Array:
    try:
        return pa.array(values, _STR)
    except (UnicodeEncodeError, pa.ArrowInvalid):
        return pa.array(_safe_strings(values), _STR)


def _json_array(values: Sequence[str | None]) -> pa.Array:
    return pa.ExtensionArray.from_storage(_JSON, _str_array(values))


def json_list(items: list[Any]) -> str:
    """``to_json(items)``, with the empty list's text without encoding it (most spans carry no events)."""
    return to_json(items) if items else "[]"


def json_array(values: Sequence[str | None]) -> pa.Array:
    """JSON texts as an Arrow ``arrow.json`` array, lone surrogates replaced as the append
    path replaces them."""
    return _json_array(values)


def safe_text(value: str) -> str:
    """``value`` as Arrow and DuckDB can take it (lone surrogates, which UTF-8 cannot carry, replaced)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def _duckdb_truncates() -> bool:
    """Whether the installed DuckDB truncates nanoseconds when it stores a TIMESTAMPTZ (1.x; 2.x rounds them).
    Read from the package's metadata: the decode workers that build rows never import duckdb."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("duckdb").split(".")[0]) < 2
    except (PackageNotFoundError, ValueError):
        return False


#: round timestamps to the microsecond before DuckDB stores them, as DuckDB 2 does itself
ROUND_TIMESTAMPS = _duckdb_truncates()


def to_microseconds(data: pa.Table) -> pa.Table:
    """``data`` with its timestamp columns rounded to the microsecond, as TIMESTAMPTZ keeps them: DuckDB 2
    rounds nanoseconds itself (``data`` is returned as it is), DuckDB 1.x truncates them."""
    if not ROUND_TIMESTAMPS:
        return data
    import pyarrow.compute as pc  # not at import: the decode workers never load it

    for i, field in enumerate(data.schema):
        if field.type == _TS:
            data = data.set_column(i, field, pc.round_temporal(data.column(i), 1, "microsecond"))
    return data


def _ts_array(values: Sequence[int | None]) -> pa.Array:
    if (
        ROUND_TIMESTAMPS
    ):  # DuckDB 1.x truncates nanoseconds (in Python: the decode workers never load pyarrow.compute)
        return pa.array(
            [(v + 500) // 1000 * 1000 if v is not None and 0 < v < _ROUNDABLE else v for v in values], _TS
        )
    return pa.array(values, _TS)


#: above this, rounding up would leave int64 (such times are out of TIMESTAMPTZ's range anyway)
_ROUNDABLE = 2**63 - 1000


# ------------------------------------------------------------------------------------------------------------
# spans and logs -> Arrow


def _events_json(events: tuple[SpanEvent, ...]) -> str:
    if not events:
        return "[]"
    return to_json(
        [{"name": e.name, "time_unix_nano": e.time_ns, "attributes": e.attributes} for e in events]
    )


def _links_json(links: tuple[SpanLink, ...]) -> str:
    if not links:
        return "[]"
    return to_json(
        [{"trace_id": lk.trace_id, "span_id": lk.span_id, "attributes": lk.attributes} for lk in links]
    )


def _resource_json(records: Sequence[SpanRecord] | Sequence[LogRecord]) -> tuple[list[str], list[str | None]]:
    """Resource JSON and service name per record, each computed once per distinct resource dict."""
    cache: dict[int, tuple[str, str | None]] = {}
    texts: list[str] = []
    services: list[str | None] = []
    for r in records:
        resource = r.resource
        key = id(resource)
        hit = cache.get(key)
        if hit is None:
            service = resource.get("service.name")
            hit = cache[key] = (to_json(resource), service if isinstance(service, str) else None)
        texts.append(hit[0])
        services.append(hit[1])
    return texts, services


SPAN_SCHEMA = pa.schema(
    [
        ("trace_id", _STR),
        ("span_id", _STR),
        ("parent_span_id", _STR),
        ("name", _STR),
        ("kind", _STR),
        ("start_time", _TS),
        ("end_time", _TS),
        ("status_code", _STR),
        ("status_message", _STR),
        ("service_name", _STR),
        ("scope_name", _STR),
        ("attributes", _JSON),
        ("resource_attributes", _JSON),
        ("events", _JSON),
        ("scope_version", _STR),
        ("links", _JSON),
        ("trace_state", _STR),
        ("flags", pa.uint32()),
        ("start_time_unix_nano", pa.int64()),
        ("end_time_unix_nano", pa.int64()),
    ]
)
assert tuple(SPAN_SCHEMA.names) == schema.SPAN_COLUMNS


def spans_to_arrow(spans: Sequence[SpanRecord]) -> pa.RecordBatch:
    """One Arrow batch in ``schema.SPAN_COLUMNS`` order."""
    kinds = SPAN_KINDS
    statuses = STATUS_CODES
    starts = [s.start_ns for s in spans]
    ends = [s.end_ns for s in spans]
    resources, services = _resource_json(spans)
    columns = [
        _str_array([s.trace_id for s in spans]),
        _str_array([s.span_id for s in spans]),
        _str_array([s.parent_span_id for s in spans]),
        _str_array([s.name for s in spans]),
        _str_array([kinds[s.kind] if 0 <= s.kind < 6 else "UNSPECIFIED" for s in spans]),
        _ts_array(starts),
        _ts_array(ends),
        _str_array([statuses[s.status_code] if 0 <= s.status_code < 3 else "UNSET" for s in spans]),
        _str_array([s.status_message for s in spans]),
        _str_array(services),
        _str_array([s.scope_name for s in spans]),
        _json_array([to_json(s.attributes) for s in spans]),
        _json_array(resources),
        _json_array([_events_json(s.events) for s in spans]),
        _str_array([s.scope_version for s in spans]),
        _json_array([_links_json(s.links) for s in spans]),
        _str_array([s.trace_state for s in spans]),
        pa.array([s.flags & 0xFFFFFFFF for s in spans], pa.uint32()),
        pa.array(starts, pa.int64()),
        pa.array(ends, pa.int64()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=SPAN_SCHEMA)


LOG_SCHEMA = pa.schema(
    [
        ("trace_id", _STR),
        ("span_id", _STR),
        ("time", _TS),
        ("event_name", _STR),
        ("severity", _STR),
        ("body", _JSON),
        ("attributes", _JSON),
        ("resource_attributes", _JSON),
        ("service_name", _STR),
        ("severity_number", pa.int32()),
        ("observed_time", _TS),
        ("scope_name", _STR),
        ("scope_version", _STR),
        ("flags", pa.uint32()),
        ("time_unix_nano", pa.int64()),
        ("observed_time_unix_nano", pa.int64()),
        ("log_id", _STR),
    ]
)
assert tuple(LOG_SCHEMA.names) == schema.LOG_COLUMNS


def severity_name(record: LogRecord) -> str:
    if record.severity_text:
        return record.severity_text
    number = record.severity_number
    return _SEVERITY_NAMES[number] if 0 <= number < len(_SEVERITY_NAMES) else str(number)


def log_id(record: LogRecord, body_json: str, attributes_json: str, resource_json: str) -> str:
    """A content hash: OTLP log records have no id, and a retried export must not store a record twice."""
    h = hashlib.blake2b(digest_size=16)
    h.update(
        "\x1f".join(
            (
                str(record.time_ns),
                str(record.observed_time_ns),
                record.trace_id or "",
                record.span_id or "",
                str(record.severity_number),
                record.severity_text,
                record.event_name,
                record.scope_name,
                body_json,
                attributes_json,
                resource_json,
            )
        ).encode("utf-8", "replace")
    )
    return h.hexdigest()


def logs_to_arrow(logs: Sequence[LogRecord]) -> pa.RecordBatch:
    """One Arrow batch in ``schema.LOG_COLUMNS`` order."""
    bodies = [None if r.body is None else to_json(r.body) for r in logs]
    attributes = [to_json(r.attributes) for r in logs]
    resources, services = _resource_json(logs)
    times = [r.timestamp_ns for r in logs]
    columns = [
        _str_array([r.trace_id for r in logs]),
        _str_array([r.span_id for r in logs]),
        _ts_array(
            times
        ),  # 0 (no time at all) as the epoch: a NULL would escape the retry check and the read-back
        _str_array([r.event_name or None for r in logs]),
        _str_array([severity_name(r) for r in logs]),
        _json_array(bodies),
        _json_array(attributes),
        _json_array(resources),
        _str_array(services),
        pa.array([r.severity_number for r in logs], pa.int32()),
        _ts_array([r.observed_time_ns or None for r in logs]),
        _str_array([r.scope_name for r in logs]),
        _str_array([r.scope_version for r in logs]),
        pa.array([r.flags & 0xFFFFFFFF for r in logs], pa.uint32()),
        pa.array([r.time_ns for r in logs], pa.int64()),  # as sent (0 = unset), unlike ``time``
        pa.array([r.observed_time_ns for r in logs], pa.int64()),
        _str_array(
            [
                log_id(r, b or "", a, res)
                for r, b, a, res in zip(logs, bodies, attributes, resources, strict=True)
            ]
        ),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=LOG_SCHEMA)


# ------------------------------------------------------------------------------------------------------------
# stored rows -> records (assembly reads completed traces back; a late span re-reads its trace)

SPAN_SELECT = (
    "trace_id, span_id, parent_span_id, name, kind, start_time_unix_nano, end_time_unix_nano, status_code, "
    "status_message, attributes, events, links, resource_attributes, scope_name, "
    "scope_version, trace_state, flags"
)
#: what assembly reads of a stored span: ``SPAN_SELECT`` but the columns only a forwarded copy needs (links,
#: scope version, trace state, flags), which come back as their defaults
SPAN_SELECT_ASSEMBLY = (
    "trace_id, span_id, parent_span_id, name, kind, start_time_unix_nano, end_time_unix_nano, status_code, "
    "status_message, attributes, events, NULL AS links, resource_attributes, scope_name, NULL AS "
    "scope_version, NULL AS trace_state, NULL AS flags"
)
LOG_SELECT = (
    "time_unix_nano, observed_time_unix_nano, trace_id, span_id, severity_number, severity, event_name, "
    "body, attributes, resource_attributes, scope_name, scope_version, flags"
)


def _resource(text: str | None, resources: dict[str | None, dict[str, Any]]) -> dict[str, Any]:
    """The resource dict of a stored text, parsed once per distinct text (every span of a
    process shares one)."""
    res = resources.get(text)
    if res is None:
        res = resources[text] = loads_stored(text) if text else {}
    return res


def _span(row: Sequence[Any], resources: dict[str | None, dict[str, Any]]) -> SpanRecord:
    (
        trace_id,
        span_id,
        parent,
        name,
        kind,
        start,
        end,
        status,
        status_message,
        attributes,
        events,
        links,
        resource,
        scope_name,
        scope_version,
        trace_state,
        flags,
    ) = row
    return SpanRecord(
        trace_id,
        span_id,
        parent,
        name or "",
        _KIND_BY_NAME.get(kind, 0),
        start or 0,
        end or 0,
        _STATUS_BY_NAME.get(status, 0),
        status_message or "",
        loads_stored(attributes) if attributes else {},
        ()
        if not events or events == "[]"
        else tuple(
            SpanEvent(e["name"], e["time_unix_nano"], e.get("attributes") or {}) for e in loads_stored(events)
        ),
        ()
        if not links or links == "[]"
        else tuple(
            SpanLink(lk["trace_id"], lk["span_id"], lk.get("attributes") or {}) for lk in loads_stored(links)
        ),
        _resource(resource, resources),
        scope_name or "",
        scope_version or "",
        trace_state or "",
        flags or 0,
    )


def _log(row: Sequence[Any], resources: dict[str | None, dict[str, Any]]) -> LogRecord:
    (
        time_ns,
        observed_ns,
        trace_id,
        span_id,
        severity_number,
        severity,
        event_name,
        body,
        attributes,
        resource,
        scope_name,
        scope_version,
        flags,
    ) = row
    severity_number = severity_number or 0
    default_text = _SEVERITY_NAMES[severity_number] if 0 <= severity_number < len(_SEVERITY_NAMES) else ""
    return LogRecord(
        time_ns or 0,
        observed_ns or 0,
        trace_id,
        span_id,
        severity_number,
        "" if severity == default_text else (severity or ""),
        event_name or "",
        loads_stored(body) if body is not None else None,
        loads_stored(attributes) if attributes else {},
        _resource(resource, resources),
        scope_name or "",
        scope_version or "",
        flags or 0,
    )


def _columns(table: pa.Table | pa.RecordBatch) -> Iterable[tuple[Any, ...]]:
    return zip(*(column.to_pylist() for column in table.columns), strict=True)


def spans_from_arrow(table: pa.Table | pa.RecordBatch) -> list[SpanRecord]:
    """SpanRecords from rows selected with ``SPAN_SELECT``, converted column by column."""
    resources: dict[str | None, dict[str, Any]] = {}
    return [_span(row, resources) for row in _columns(table)] if table.num_rows else []


def logs_from_arrow(table: pa.Table | pa.RecordBatch) -> list[LogRecord]:
    """LogRecords from rows selected with ``LOG_SELECT``."""
    resources: dict[str | None, dict[str, Any]] = {}
    return [_log(row, resources) for row in _columns(table)] if table.num_rows else []


# ------------------------------------------------------------------------------------------------------------
# agent runs -> Arrow


AGENT_RUN_SCHEMA = pa.schema(
    [
        ("trace_id", _STR),
        ("span_id", _STR),
        ("agent_name", _STR),
        ("service_name", _STR),
        ("input", _STR),
        ("output", _STR),
        ("start_time", _TS),
        ("end_time", _TS),
        ("status", _STR),
        ("tools_called", pa.list_(_STR)),
        ("expected_tools", pa.list_(_STR)),
        ("parent_run_span_id", _STR),
        ("span_name", _STR),
        ("convention", _STR),
        ("error", _STR),
        ("handoffs", _JSON),
        ("tool_call_count", pa.int32()),
        ("updated_at", _TS),
        ("diagnostics", _JSON),
        ("trace_root", pa.bool_()),
    ]
)
assert tuple(AGENT_RUN_SCHEMA.names) == schema.AGENT_RUN_COLUMNS

TOOL_CALL_SCHEMA = pa.schema(
    [
        ("trace_id", _STR),
        ("run_span_id", _STR),
        ("seq", pa.int32()),
        ("span_id", _STR),
        ("call_id", _STR),
        ("tool_name", _STR),
        ("arguments", _JSON),
        ("result", _STR),
        ("status", _STR),
        ("source", _STR),
        ("start_time", _TS),
        ("error", _STR),
        ("llm_turn", _STR),
        ("agent_name", _STR),
        ("sources", _JSON),
        ("updated_at", _TS),
    ]
)
assert tuple(TOOL_CALL_SCHEMA.names) == schema.TOOL_CALL_COLUMNS


_SOURCE_KEYS = ("call", "name", "span")


def call_source(call: Any) -> str:
    """Which evidence produced the call: the convention named in ``sources`` when there is
    one, else its kind."""
    sources = call.sources
    if sources:
        for key in _SOURCE_KEYS:
            value = sources.get(key)
            if isinstance(value, str) and value:
                return value
    return "span" if call.span_id else "llm"


def _handoffs_json(handoffs: tuple[Handoff, ...]) -> str:
    if not handoffs:
        return "[]"
    return to_json([{k: v for k, v in vars_of(h).items() if v is not None} for h in handoffs])


def runs_to_arrow(
    runs: Iterable[AgentRun], updated_at_ns: int, trace_roots: Sequence[bool | None] | None = None
) -> tuple[pa.Table, pa.Table]:
    """The ``agent_runs`` and ``tool_calls`` rows of these runs (calls numbered from 0 within each run);
    ``trace_roots``: per run, whether its build held its trace's root span (None: not known).

    Built column by column (one comprehension each, like ``spans_to_arrow``): this runs in the collector's
    writer for every run, and per-row tuples appended to per-column lists cost more than
    the values themselves."""
    runs = runs if isinstance(runs, list | tuple) else list(runs)
    agent_names = [v if (v := r.agent_name) is None or isinstance(v, str) else str(v) for r in runs]
    run_columns: list[list[Any]] = [
        [r.trace_id for r in runs],
        [r.span_id for r in runs],
        agent_names,
        [v if (v := r.service_name) is None or isinstance(v, str) else str(v) for r in runs],
        [v if (v := r.input) is None or isinstance(v, str) else to_json(v) for r in runs],
        [v if (v := r.output) is None or isinstance(v, str) else to_json(v) for r in runs],
        [r.start_time_ns or None for r in runs],
        [r.end_time_ns or None for r in runs],
        [v if (v := r.status) is None or isinstance(v, str) else str(v) for r in runs],
        [[c.name for c in r.tool_calls] for r in runs],
        [None if (v := r.expected_tools) is None else [str(t) for t in v] for r in runs],
        [v if (v := r.parent_run_span_id) is None or isinstance(v, str) else str(v) for r in runs],
        [v if (v := r.span_name or None) is None or isinstance(v, str) else str(v) for r in runs],
        [v if (v := r.convention or None) is None or isinstance(v, str) else str(v) for r in runs],
        [v if (v := r.error) is None or isinstance(v, str) else str(v) for r in runs],
        [_handoffs_json(r.handoffs) for r in runs],
        [len(r.tool_calls) for r in runs],
        [updated_at_ns] * len(runs),
        [to_json(r.diagnostics) if r.diagnostics else None for r in runs],
        list(trace_roots) if trace_roots is not None else [None] * len(runs),
    ]
    # one entry per call: the call, its run's index, its number within the run
    calls = [c for r in runs for c in r.tool_calls]
    owners = [i for i, r in enumerate(runs) for _ in r.tool_calls]
    seqs = [k for r in runs for k in range(len(r.tool_calls))]
    run_starts = run_columns[6]
    run_arrays = [b(v) for b, v in zip(_RUN_BUILDERS, run_columns, strict=True)]
    take = pa.array(owners, pa.int32())  # run-level values are copied per call by Arrow, not converted again
    call_columns: list[list[Any] | pa.Array] = [
        run_arrays[0].take(take),
        run_arrays[1].take(take),
        seqs,
        [v if (v := c.span_id) is None or isinstance(v, str) else str(v) for c in calls],
        [v if (v := c.call_id) is None or isinstance(v, str) else str(v) for c in calls],
        [c.name for c in calls],
        [
            None
            if (v := c.input_parameters if c.input_parameters is not None else c.raw_arguments) is None
            else to_json(v)
            for c in calls
        ],
        [v if (v := c.output) is None or isinstance(v, str) else to_json(v) for c in calls],
        [c.status or "ok" for c in calls],
        [call_source(c) for c in calls],
        [
            v if (v := c.start_time_ns) is not None else run_starts[i]
            for c, i in zip(calls, owners, strict=True)
        ],
        [v if (v := c.error) is None or isinstance(v, str) else str(v) for c in calls],
        [v if (v := c.llm_turn) is None or isinstance(v, str) else str(v) for c in calls],
        run_arrays[2].take(take),
        [None if c.sources is None else to_json(c.sources) for c in calls],
        [updated_at_ns] * len(calls),
    ]
    return (
        pa.Table.from_arrays(run_arrays, schema=AGENT_RUN_SCHEMA),
        pa.Table.from_arrays(
            [b(v) if isinstance(v, list) else v for b, v in zip(_CALL_BUILDERS, call_columns, strict=True)],
            schema=TOOL_CALL_SCHEMA,
        ),
    )


def vars_of(obj: Any) -> dict[str, Any]:
    """Fields of a slotted dataclass as a dict."""
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}


def _builder(arrow_type: pa.DataType) -> Callable[[list[Any]], pa.Array]:
    """How a column of this type becomes an Arrow array (chosen once per schema, not per batch)."""
    if arrow_type == _JSON:
        return _json_array
    if pa.types.is_string(arrow_type):
        return _str_array
    return lambda values: pa.array(values, arrow_type)


_RUN_BUILDERS = tuple(_builder(field.type) for field in AGENT_RUN_SCHEMA)
_CALL_BUILDERS = tuple(_builder(field.type) for field in TOOL_CALL_SCHEMA)


# ------------------------------------------------------------------------------------------------------------
# evaluations -> Arrow


OWN_SOURCE = schema.OWN_SOURCE


@dataclass(slots=True)
class EvaluationRow:
    """One row of the ``evaluations`` table; (trace_id, run_span_id, metric, evaluator_version) is its key.

    Read-only by convention, not frozen, as the span records are (``otlp.records``): one is made for every
    metric of every scored run."""

    trace_id: str
    run_span_id: str
    metric: str
    score: float | None = None
    threshold: float | None = None
    success: bool | None = None
    reason: str | None = None
    details: Any = None  # JSON-ready
    status: str = "ok"  # ok | pending | error | skipped
    model: str | None = None
    cost_usd: float | None = None
    created_at_ns: int = 0
    evaluator: str | None = None
    evaluator_version: str | None = None
    latency_s: float | None = None
    source: str = OWN_SOURCE
    updated_at_ns: int = 0

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.trace_id, self.run_span_id, self.metric, self.evaluator_version or "")


EVALUATION_SCHEMA = pa.schema(
    [
        ("trace_id", _STR),
        ("run_span_id", _STR),
        ("metric", _STR),
        ("score", pa.float64()),
        ("threshold", pa.float64()),
        ("success", pa.bool_()),
        ("reason", _STR),
        ("details", _JSON),
        ("status", _STR),
        ("model", _STR),
        ("cost_usd", pa.float64()),
        ("created_at", _TS),
        ("evaluator", _STR),
        ("evaluator_version", _STR),
        ("latency_s", pa.float64()),
        ("source", _STR),
        ("updated_at", _TS),
    ]
)
assert tuple(EVALUATION_SCHEMA.names) == schema.EVALUATION_COLUMNS


_EVALUATION_BUILDERS = tuple(_builder(field.type) for field in EVALUATION_SCHEMA)


def evaluations_to_arrow(rows: Sequence[EvaluationRow]) -> pa.Table:
    """The rows as an Arrow table in ``schema.EVALUATION_COLUMNS`` order: one comprehension per column
    (non-finite floats become null in line, without a call per value)."""
    isfinite = math.isfinite
    columns: tuple[list[Any], ...] = (
        [r.trace_id for r in rows],
        [r.run_span_id for r in rows],
        [r.metric for r in rows],
        [v if (v := r.score) is None or isfinite(v) else None for r in rows],
        [v if (v := r.threshold) is None or isfinite(v) else None for r in rows],
        [r.success for r in rows],
        [r.reason for r in rows],
        [None if (d := r.details) is None else to_json(d) for r in rows],
        [r.status for r in rows],
        [r.model for r in rows],
        [v if (v := r.cost_usd) is None or isfinite(v) else None for r in rows],
        [r.created_at_ns or None for r in rows],
        [r.evaluator for r in rows],
        [r.evaluator_version for r in rows],
        [v if (v := r.latency_s) is None or isfinite(v) else None for r in rows],
        [r.source for r in rows],
        [(r.updated_at_ns or r.created_at_ns) or None for r in rows],
    )
    return pa.Table.from_arrays(
        [b(v) for b, v in zip(_EVALUATION_BUILDERS, columns, strict=True)], schema=EVALUATION_SCHEMA
    )


def events_json(events: tuple[SpanEvent, ...]) -> str:
    """The ``spans.events`` JSON of these events (the same form the append path stores)."""
    return _events_json(events)
