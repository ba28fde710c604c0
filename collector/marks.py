"""What the assembler keeps of each stored record: a mark of a few fields, not the record.

Deciding when a trace is complete needs only each span's ids, times and whether it delimits a run; the records
themselves are read back from the database once the trace is complete (``collector.assembler``). A mark is a plain
tuple (cheap to build, to hold by the hundred thousand, and to send to the assembler process with ``marshal``):

    span mark: (trace_id, span_id, parent_span_id, start_ns, end_ns, is_run_span)
    log mark:  (trace_id, time_ns, is_evaluation_result)     trace_id None: the record belongs to no trace
"""

from __future__ import annotations

from collections.abc import Iterable

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct import is_run_span

SpanMark = tuple[str, str, "str | None", int, int, bool]
LogMark = tuple["str | None", int, bool]


def span_mark(span: SpanRecord) -> SpanMark:
    return (span.trace_id, span.span_id, span.parent_span_id, span.start_ns, span.end_ns,
            span.parent_span_id is not None and is_run_span(span))


def log_mark(record: LogRecord) -> LogMark:
    return (record.trace_id, record.timestamp_ns, record.event_name == sc.EVENT_EVALUATION_RESULT)


def span_marks(spans: Iterable[SpanRecord]) -> list[SpanMark]:
    """Marks of these spans (a root span is never tested for being a run span: a root completes its trace
    whatever it is)."""
    return [
        (s.trace_id, s.span_id, p, s.start_ns, s.end_ns, p is not None and is_run_span(s))
        for s in spans
        for p in (s.parent_span_id,)
    ]


def log_marks(logs: Iterable[LogRecord]) -> list[LogMark]:
    evaluation = sc.EVENT_EVALUATION_RESULT
    return [(r.trace_id, r.time_ns or r.observed_time_ns, r.event_name == evaluation) for r in logs]
