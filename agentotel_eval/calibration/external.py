"""Human-labelled datasets of agent failures, read from a local copy: TRAIL and MAST.

Neither labels the six tool-use error types; each has its own taxonomy, and only some of its categories mean
one of the six. ``TRAIL_TYPES`` and ``MAST_TYPES`` say which; a category mapped to nothing is kept
(``external``) and counted, never scored. A record labelled only with unmapped categories is a negative for
all six types: figures on these sets measure agreement with annotators who were looking for something wider,
so read precision with that in mind.

- **TRAIL** (Patronus AI): agent runs of GAIA and SWE-bench as OpenInference span trees (``spans``, each with
  ``span_id``, ``span_name``, ``span_attributes``, ``status_code``, ``child_spans``, ...) and annotations
  (``errors``: ``category``, ``location``, ``evidence``, ...). Accepted as rows holding both (``trace`` and
  ``labels``, objects or JSON text: the hub's JSON, JSONL or Parquet files) or as a directory of trace files
  and annotation files joined by ``trace_id``. Their spans go through reconstruction and the detectors as
  collected spans do.
- **MAST** (the MAD dataset): multi-agent transcripts as free text (``trace.trajectory``) with 14 failure-mode
  flags (``mast_annotation``: ``"1.3": 1``). No spans: only the judge can read them (``calibrate --judge``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agentotel_eval.calibration.cases import ERROR_TYPES
from agentotel_eval.otlp.records import STATUS_ERROR, STATUS_OK, STATUS_UNSET, SpanEvent, SpanRecord

#: TRAIL's leaf categories that are one of the six types (by normalised name; see ``_category_key``)
TRAIL_TYPES: Mapping[str, str] = {
    "formatting": "parameter_error",  # malformed calls: missing fields, wrong argument types
    "toolselection": "invalid_function",  # the wrong tool for the sub-task
    "tooloutputmisinterpretation": "result_ignored",  # a result read wrongly or contradicted
    "taskorchestration": "sequence_error",  # dependent steps out of order, a prerequisite missing
    "resourceabuse": "repeated_failure",  # the same call again and again
    "toolrelated": "error_handling",  # a hallucinated tool outcome: a result claimed that no call gave
}
#: MAST's failure modes that are one of the six types
MAST_TYPES: Mapping[str, str] = {
    "1.3": "repeated_failure",  # step repetition
    "2.5": "result_ignored",  # ignored another agent's input
}
_MAX_FILE_BYTES = 2 << 30
_SPAN_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_DURATION = re.compile(r"^PT(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?$")
_STEP_NS = 1_000


class ExternalFormatError(ValueError):
    """A file that is none of the formats this module reads, or a record that breaks its format."""


@dataclass(frozen=True, slots=True)
class LabelledTrace:
    """One record of a labelled dataset: its spans (none for free-text transcripts), the six types its
    annotations map to, and the annotations' own categories (``external``)."""

    id: str
    source: str  # "trail" | "mast"
    labels: frozenset[str]
    external: tuple[str, ...]
    spans: tuple[SpanRecord, ...] = ()
    text: str = ""  # a free-text transcript (MAST)


def _category_key(name: str) -> str:
    key = re.sub(r"[^a-z]", "", name.lower())
    for suffix in ("errors", "error", "issues", "issue"):
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)]
    return key


def trail_labels(errors: Iterable[Any]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The six types TRAIL's annotated errors map to, and their categories as written."""
    categories = [str(e.get("category") or "") for e in errors if isinstance(e, Mapping)]
    types = {TRAIL_TYPES[k] for k in map(_category_key, categories) if k in TRAIL_TYPES}
    return frozenset(types), tuple(c for c in categories if c)


def mast_labels(annotation: Mapping[str, Any]) -> tuple[frozenset[str], tuple[str, ...]]:
    flagged = [str(mode) for mode, value in annotation.items() if value in (1, True, "1", "yes")]
    return frozenset(MAST_TYPES[m] for m in flagged if m in MAST_TYPES), tuple(flagged)


# -- TRAIL span trees -> spans -------------------------------------------------------------------------------
def _get(span: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in span:
            return span[name]
    return None


def _time_ns(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value:
        if value.isdigit():
            return int(value)
        try:
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return int(stamp.timestamp()) * 1_000_000_000 + stamp.microsecond * 1_000
    return None


def _duration_ns(value: Any) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        match = _DURATION.match(value)
        if match:
            hours, minutes, seconds = (float(g or 0) for g in match.groups())
            return int((hours * 3600 + minutes * 60 + seconds) * 1e9)
    return 0


def _status(value: Any) -> int:
    text = str(value or "").lower()
    if "error" in text or text == "2":
        return STATUS_ERROR
    if text.endswith("ok") or text == "1":
        return STATUS_OK
    return STATUS_UNSET


def _attributes(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): v if isinstance(v, str | int | float | bool) else json.dumps(v, default=str)
        for k, v in value.items()
        if v is not None
    }


def _events(value: Any, fallback_ns: int) -> tuple[SpanEvent, ...]:
    events = []
    for event in value or ():
        if isinstance(event, Mapping):
            name = str(_get(event, "name", "Name") or "event")
            at = _time_ns(_get(event, "timestamp", "Timestamp", "time_unix_nano")) or fallback_ns
            events.append(SpanEvent(name, at, _attributes(_get(event, "attributes", "Attributes"))))
    return tuple(events)


def _walk(spans: Iterable[Any], parent: str | None) -> Iterator[tuple[Mapping[str, Any], str | None]]:
    for span in spans:
        if isinstance(span, Mapping):
            yield span, parent
            yield from _walk(
                _get(span, "child_spans", "children") or (), str(_get(span, "span_id", "SpanId"))
            )


def trail_spans(trace: Mapping[str, Any], trace_id: str) -> list[SpanRecord]:
    """A TRAIL trace's span tree as spans. Times missing or unreadable are replaced by the tree's order (a
    microsecond apart), which is the order reconstruction needs."""
    out = []
    tid = re.sub(r"[^0-9a-f]", "", trace_id.lower())[:32].rjust(32, "0")
    for n, (span, parent) in enumerate(_walk(trace.get("spans") or (), None)):
        span_id = str(_get(span, "span_id", "SpanId") or f"{n:016x}")
        parent_id = _get(span, "parent_span_id", "ParentSpanId") or parent
        start = _time_ns(_get(span, "timestamp", "Timestamp", "start_time")) or n * _STEP_NS
        end = start + max(_duration_ns(_get(span, "duration", "Duration")), 0)
        if end <= start:
            end = start + _STEP_NS
        kind = _SPAN_KINDS.get(
            str(_get(span, "span_kind", "SpanKind") or "").lower().removeprefix("span_kind_"), 1
        )
        attributes = _attributes(_get(span, "span_attributes", "SpanAttributes", "attributes"))
        out.append(
            SpanRecord(
                trace_id=tid,
                span_id=span_id,
                parent_span_id=str(parent_id) if parent_id else None,
                name=str(_get(span, "span_name", "SpanName", "name") or ""),
                kind=kind,
                start_ns=start,
                end_ns=end,
                status_code=_status(_get(span, "status_code", "StatusCode")),
                status_message=str(_get(span, "status_message", "StatusMessage") or ""),
                attributes=attributes,
                events=_events(_get(span, "events", "Events"), start),
                resource=_attributes(_get(span, "resource_attributes", "ResourceAttributes")),
                scope_name=str(_get(span, "scope_name", "ScopeName") or ""),
            )
        )
    return out


# -- records -------------------------------------------------------------------------------------------------
def _json_field(value: Any, what: str, where: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ExternalFormatError(f"{where}: its {what} is not JSON ({exc})") from None
    return value


def _trace_id(trace: Mapping[str, Any], labels: Mapping[str, Any], where: str) -> str:
    found = labels.get("trace_id") or trace.get("trace_id")
    if not found:
        spans = trace.get("spans") or ()
        found = next((_get(s, "trace_id", "TraceId") for s in spans if isinstance(s, Mapping)), None)
    return str(found or hashlib.sha256(where.encode()).hexdigest()[:32])


def _trail_record(trace: Any, labels: Any, where: str) -> LabelledTrace:
    trace = _json_field(trace, "trace", where)
    labels = _json_field(labels, "labels", where) or {}
    if not isinstance(trace, Mapping) or not isinstance(trace.get("spans"), list):
        raise ExternalFormatError(f"{where}: a TRAIL trace is an object with a 'spans' list")
    if not isinstance(labels, Mapping):
        raise ExternalFormatError(f"{where}: TRAIL labels are an object with an 'errors' list")
    trace_id = _trace_id(trace, labels, where)
    types, external = trail_labels(labels.get("errors") or ())
    return LabelledTrace(trace_id, "trail", types, external, tuple(trail_spans(trace, trace_id)))


def _mast_record(row: Mapping[str, Any], where: str) -> LabelledTrace:
    annotation = _json_field(row.get("mast_annotation"), "mast_annotation", where)
    trace = _json_field(row.get("trace"), "trace", where)
    text = trace.get("trajectory") if isinstance(trace, Mapping) else trace
    if not isinstance(annotation, Mapping) or not isinstance(text, str):
        raise ExternalFormatError(
            f"{where}: a MAST record has 'mast_annotation' flags and a 'trace' with a 'trajectory' text"
        )
    types, external = mast_labels(annotation)
    ident = "/".join(
        str(row.get(k)) for k in ("mas_name", "benchmark_name", "trace_id") if row.get(k) is not None
    )
    return LabelledTrace(ident or where, "mast", types, external, (), text)


def _record(row: Any, where: str) -> LabelledTrace | None:
    """One row of any accepted shape; None for a bare annotation or trace (joined by ``load``)."""
    if not isinstance(row, Mapping):
        raise ExternalFormatError(f"{where}: a record is a JSON object")
    if "mast_annotation" in row:
        return _mast_record(row, where)
    if "trace" in row and ("labels" in row or "errors" in row):
        return _trail_record(row["trace"], row.get("labels", {"errors": row.get("errors")}), where)
    if isinstance(row.get("spans"), list) and isinstance(row.get("errors"), list):  # a trace with its labels
        return _trail_record(row, row, where)
    return None


def _rows(path: Path) -> Iterator[tuple[Any, str]]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import duckdb

        con = duckdb.connect()
        try:
            cursor = con.execute("SELECT * FROM read_parquet(?)", [str(path)])
            names = [d[0] for d in cursor.description]
            for n, row in enumerate(cursor.fetchall()):
                yield dict(zip(names, row, strict=True)), f"{path.name}[{n}]"
        finally:
            con.close()
        return
    if path.stat().st_size > _MAX_FILE_BYTES:
        raise ExternalFormatError(f"{path}: larger than {_MAX_FILE_BYTES >> 30} GiB")
    text = path.read_text(encoding="utf-8")
    if suffix == ".jsonl":
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    yield json.loads(line), f"{path.name}:{n}"
                except ValueError as exc:
                    raise ExternalFormatError(f"{path.name}:{n}: not JSON ({exc})") from None
        return
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ExternalFormatError(f"{path.name}: not JSON ({exc})") from None
    if isinstance(data, list):
        for n, row in enumerate(data):
            yield row, f"{path.name}[{n}]"
    else:
        yield data, path.name


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(
        p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".json", ".jsonl", ".parquet")
    )


def load_rows(rows: Iterable[Any], where: str = "row") -> list[LabelledTrace]:
    """Records given as rows (TRAIL's ``trace`` and ``labels``, or MAST's), e.g. from a dataset library."""
    out = []
    for n, row in enumerate(rows):
        record = _record(row, f"{where}[{n}]")
        if record is None:
            raise ExternalFormatError(
                f"{where}[{n}]: neither a TRAIL row ('trace' and 'labels') nor a MAST record"
            )
        out.append(record)
    return out


def load(path: Path) -> list[LabelledTrace]:
    """Every labelled record under ``path`` (a file or a directory). Trace files and annotation files apart
    (TRAIL's repository layout) are joined by trace id, or by file name; a trace with no
    annotation is left out."""
    records: list[LabelledTrace] = []
    traces: dict[str, tuple[Mapping[str, Any], str]] = {}
    annotations: dict[str, Mapping[str, Any]] = {}
    for file in _files(path):
        for row, where in _rows(file):
            record = _record(row, where)
            if record is not None:
                records.append(record)
            elif isinstance(row, Mapping) and isinstance(row.get("spans"), list):
                traces[str(row.get("trace_id") or file.stem)] = (row, where)
                traces.setdefault(file.stem, (row, where))
            elif isinstance(row, Mapping) and isinstance(row.get("errors"), list):
                annotations[str(row.get("trace_id") or file.stem)] = row
                annotations.setdefault(file.stem, row)
    joined: set[int] = set()
    for key, labels in annotations.items():
        found = traces.get(key)
        if found is not None and id(found[0]) not in joined:
            joined.add(id(found[0]))
            records.append(_trail_record(found[0], labels, found[1]))
    if not records:
        raise ExternalFormatError(
            f"{path}: no labelled record found (TRAIL rows with 'trace' and 'labels', TRAIL trace and "
            f"annotation files, or MAST records with 'mast_annotation')"
        )
    return records


def describe(records: Sequence[LabelledTrace]) -> list[str]:
    """What was read and how its labels map: for the report's notes."""
    lines = []
    for source in sorted({r.source for r in records}):
        mine = [r for r in records if r.source == source]
        mapped = {t: sum(1 for r in mine if t in r.labels) for t in ERROR_TYPES}
        outside = sum(1 for r in mine if r.external and not r.labels)
        shown = ", ".join(f"{t} {n}" for t, n in mapped.items() if n) or "none"
        lines.append(
            f"{source}: {len(mine)} record(s); labelled with the six types: {shown}; {outside} labelled "
            "only with categories outside them (scored as negatives)"
        )
    return lines
