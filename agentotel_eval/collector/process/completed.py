"""What flows between the assembler and the stages after it, and the interface every such stage implements.

The assembler hands each batch of completed traces to the next stage's ``consume``; the last stage writes the
agent runs. A scoring stage sits in between: it receives every ``CompletedTrace`` with its spans, logs
and reconstructed runs, adds evaluation rows (``dataclasses.replace(trace, evaluations=...)``) and passes the
batch on, so the runs and their scores are written in one transaction. Stages of one's own wrap it:
``Collector(config, stages=[lambda next_stage: MyStage(next_stage)])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.store.rows import EvaluationRow


@dataclass(frozen=True, slots=True)
class SpanUpdate:
    """Scores written onto one stored span (the run span), as a delta applied in SQL.

    ``attributes_patch`` is a JSON merge patch (``null`` removes a key); ``events`` is a JSON array appended
    to the span's events after removing the events we wrote earlier for the same ``metrics`` (ours carry the
    ``agentotel.eval.evaluator`` attribute; other tools' events are kept). The span's other attributes are
    never re-encoded in Python.
    """

    trace_id: str
    span_id: str
    start_ns: int | None
    attributes_patch: str
    events: str
    metrics: tuple[str, ...]
    #: the span's whole attributes and events JSON with the update applied, when whoever made the update holds
    #: the span exactly as stored (a trace scored for the first time): set as they are, no merge in SQL, which
    #: is several times cheaper. None: the delta above is applied in SQL (a re-built trace, a judge answer).
    attributes: str | None = None
    all_events: str | None = None


#: Why a trace was completed.
REASON_QUIET = "quiet"  # its run span arrived and it was quiet for the grace period
REASON_TIMEOUT = "timeout"  # its run span never arrived within max_wait
REASON_EARLY = "early"  # memory limits forced it out before it was quiet
REASON_SHUTDOWN = "shutdown"  # the collector stopped


@dataclass(slots=True)
class CompletedTrace:
    """One trace the assembler decided on, with everything known about it. Read-only by convention (one is
    made, and one replaced by the scoring stage, for every trace)."""

    trace_id: str
    spans: tuple[SpanRecord, ...]  # sorted by start time
    logs: tuple[LogRecord, ...]
    runs: tuple[AgentRun, ...]
    reason: str
    #: its run span (or root span) arrived; False for traces forced out or timed out without one
    complete: bool
    #: it was completed before and re-opened by a late record (or found unassembled after a restart): rows of
    #: it may already be stored, and they are replaced, not added to
    replace: bool
    #: every stored row of this trace (spans, logs, runs, calls) lies in [lo_ns, hi_ns]
    lo_ns: int
    hi_ns: int
    #: added by a scoring stage; written with the runs
    evaluations: tuple[EvaluationRow, ...] = ()
    #: added by a scoring stage: stored spans rewritten with the runs (the run span gains its scores)
    span_updates: tuple[SpanUpdate, ...] = ()


class TraceStage(Protocol):
    """A stage after the assembler. ``consume`` may block briefly; ``shutdown`` flushes and is idempotent."""

    def consume(self, traces: Sequence[CompletedTrace]) -> None: ...

    def start(self) -> None: ...

    def shutdown(self) -> None: ...
