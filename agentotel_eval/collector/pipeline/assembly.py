"""The assembly stage as the collector sees it: one interface, two places to run.

``AssemblyStage`` is what the service calls: the writer hands it each commit's marks (``consume``);
back-pressure reads its ``backlog``; ``/metrics`` and ``/healthz`` read its ``snapshot``. ``LocalAssembly``
runs the assembler, the scoring stage and the run writer on a thread of the collector's process (tests that
hook a stage or the reconstruction in, or ``assembler.process = false``); ``helper_proxy.ProcessAssembly``
runs them in the assembler process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentotel_eval.collector.assemble.assembler import Assembler, AssemblerStats, Reconstruct
from agentotel_eval.collector.assemble.trace_buffer import BufferStats
from agentotel_eval.collector.config import AssemblerConfig
from agentotel_eval.collector.config_scoring import ScoringConfig
from agentotel_eval.collector.process.completed import TraceStage
from agentotel_eval.collector.process.marks import LogMark, SpanMark
from agentotel_eval.collector.score.stage import ScoringStage, ScoringStats
from agentotel_eval.collector.store.reader import TraceReader
from agentotel_eval.collector.store.runs import RunWriter
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct.declared import Convention

StageFactory = Callable[[TraceStage], TraceStage]


@dataclass(frozen=True, slots=True)
class AssemblyStats:
    """The stage's counters (cumulative, over every assembler process the collector ran) and gauges."""

    assembler: AssemblerStats
    buffer: BufferStats
    scoring: ScoringStats
    #: completed traces whose runs could not be turned into rows
    conversion_errors: int = 0
    open_traces: int = 0
    buffered_records: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain values (what a ``Counters`` message carries)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AssemblyStats:
        return cls(
            AssemblerStats(**data["assembler"]),
            BufferStats(**data["buffer"]),
            ScoringStats(**data["scoring"]),
            data["conversion_errors"],
            data["open_traces"],
            data["buffered_records"],
        )

    def plus(self, newer: AssemblyStats) -> AssemblyStats:
        """This process's counters added to a newer one's (the gauges are the newer's)."""
        return AssemblyStats(
            _added(self.assembler, newer.assembler),
            _added(self.buffer, newer.buffer),
            _added(self.scoring, newer.scoring),
            self.conversion_errors + newer.conversion_errors,
            newer.open_traces,
            newer.buffered_records,
        )


def _added(a: Any, b: Any) -> Any:
    """Two counter dataclasses of one type, field by field (dicts of counts key by key)."""
    values: dict[str, Any] = {}
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, dict):
            values[name] = {k: x.get(k, 0) + y.get(k, 0) for k in {**x, **y}}
        else:
            values[name] = x + y
    return type(a)(**values)


def assembly_stats(assembler: Assembler, scoring: ScoringStage, conversion_errors: int) -> AssemblyStats:
    """The counters of an assembler and its scoring stage, copied (they go on changing on the
    assembler's thread)."""
    buffer = assembler.buffer.stats
    return AssemblyStats(
        dataclasses.replace(assembler.stats),
        BufferStats(buffer.records_added, buffer.late_records, dict(buffer.completed)),
        dataclasses.replace(scoring.stats, evaluations=dict(scoring.stats.evaluations)),
        conversion_errors,
        assembler.open_traces,
        assembler.buffered_records,
    )


class AssemblyStage(Protocol):
    #: reads the collector's database for the stage (completed traces, recovery)
    reader: TraceReader

    def consume(self, spans: Sequence[SpanMark], logs: Sequence[LogMark], commit: int | None = None) -> None:
        """The marks of one commit's new records and its ``ingested_at`` (ns); never blocks on assembly."""

    @property
    def backlog(self) -> int:
        """Records committed but not yet taken into the trace buffer (counted against the
        write queue's bound)."""

    @property
    def open_traces(self) -> int: ...

    @property
    def pid(self) -> int | None:
        """The process assembly runs in, when it is not the collector's."""

    def snapshot(self) -> AssemblyStats: ...

    def start(self) -> None: ...

    def shutdown(self) -> None:
        """Complete every open trace and write its runs; idempotent."""


def behind(assembler: AssemblyStage, bound: int) -> str | None:
    """Why ingest must wait for the assembler, if it must: it has not taken ``bound``
    committed records yet."""
    backlog = assembler.backlog
    if backlog < bound:
        return None
    return f"the assembler is behind ({backlog} committed records not taken yet, bound {bound})"


class LocalAssembly:
    """Assembly, reconstruction and scoring on a thread of the collector's process. ``stages`` wrap the
    scoring stage, outermost first (each gets the next); ``reconstruct`` replaces the reconstruction."""

    pid = None

    def __init__(
        self,
        config: AssemblerConfig,
        scoring: ScoringConfig,
        reader: TraceReader,
        run_writer: RunWriter,
        *,
        forward: Callable[[Sequence[SpanRecord]], None] | None = None,
        stages: Sequence[StageFactory] = (),
        reconstruct: Reconstruct | None = None,
        conventions: Sequence[Convention] = (),
        text_failures: bool = True,
    ) -> None:
        self.reader = reader
        self._run_writer = run_writer
        self.scoring = ScoringStage(run_writer, scoring, forward=forward)
        stage: TraceStage = self.scoring
        for factory in reversed(stages):
            stage = factory(stage)
        self.assembler = Assembler(
            config,
            stage,
            reader,
            reconstruct=reconstruct,
            whole_spans=forward is not None,
            conventions=conventions,
            text_failures=text_failures,
            # another reconstruction may find runs by other rules, and a stage of its own is promised every
            # completed trace; a forwarder sends the held spans (roots) of plain traces only after them
            read_plain_traces=forward is not None or reconstruct is not None or bool(stages),
        )

    def consume(self, spans: Sequence[SpanMark], logs: Sequence[LogMark], commit: int | None = None) -> None:
        self.assembler.consume(spans, logs, commit)

    @property
    def backlog(self) -> int:
        return self.assembler.backlog

    @property
    def open_traces(self) -> int:
        return self.assembler.open_traces

    def snapshot(self) -> AssemblyStats:
        return assembly_stats(self.assembler, self.scoring, self._run_writer.conversion_errors)

    def start(self) -> None:
        self.assembler.start()

    def shutdown(self) -> None:
        self.assembler.shutdown()
