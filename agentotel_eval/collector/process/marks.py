"""What the assembler keeps of each stored record: a mark of a few fields, not the record.

Deciding when a trace is complete needs only each span's ids, times and whether it delimits a run; the records
themselves are read back from the database once the trace is complete
(``agentotel_eval.collector.assemble.assembler``). A mark is a plain tuple (cheap to build, to hold by the
hundred thousand, and to send to the assembler process with ``marshal``):

    span mark: (trace_id, span_id, parent_span_id, start_ns, end_ns, is_run_span, has_evidence)
    log mark:  (trace_id, time_ns, is_evaluation_result)     trace_id None: the record belongs to no trace

``has_evidence``: the span is a run, tool or LLM span (``classify``), carries an evaluation event, or its
output may be a conversation with tool calls (``holds_transcript``: an agent traced as one plain step). A
trace with no such span and no log record can hold no agent run (reconstruction finds runs only through those)
and no score, so the assembler does not read it back (a web service's own traces, exported to
the same endpoint).
"""

from __future__ import annotations

from collections.abc import Iterable

from agentotel_eval import semconv as sc
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.declared import BUILTIN, Conventions
from agentotel_eval.reconstruct.spans import NO_ROLE, classify
from agentotel_eval.reconstruct.transcripts import holds_transcript

SpanMark = tuple[str, str, "str | None", int, int, bool, bool]
LogMark = tuple["str | None", int, bool]

_EVALUATION = sc.EVENT_EVALUATION_RESULT


def span_marks(spans: Iterable[SpanRecord], conventions: Conventions = BUILTIN) -> list[SpanMark]:
    """Marks of these spans (a root span is never tested for being a run span: a root completes its trace
    whatever it is). ``classify`` gives both flags in one look: its run role is ``is_run_span``'s rule;
    ``conventions``: the declared ones, the user's included, that reconstruction reads the spans with."""
    return [
        (
            s.trace_id,
            s.span_id,
            p,
            s.start_ns,
            s.end_ns,
            p is not None and role.run is not None,
            role is not NO_ROLE
            or (bool(s.events) and any(e.name == _EVALUATION for e in s.events))
            or holds_transcript(s),
        )
        for s in spans
        for p, role in ((s.parent_span_id, classify(s, conventions)),)
    ]


def log_marks(logs: Iterable[LogRecord]) -> list[LogMark]:
    evaluation = _EVALUATION
    return [(r.trace_id, r.time_ns or r.observed_time_ns, r.event_name == evaluation) for r in logs]
