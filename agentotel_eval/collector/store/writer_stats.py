"""The writer's counters: kept by its ingest thread, its operations queue and its reopen policy, read by the
metrics endpoint and the periodic summary."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

#: upper bounds (seconds) of the commit-time histogram's buckets
FLUSH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


@dataclass(slots=True)
class WriterStats:
    """Each counter is written by one thread only (ingest, operations, or the reopen the
    ingest thread runs)."""

    spans_stored: int = 0
    spans_duplicate: int = 0
    logs_stored: int = 0
    logs_duplicate: int = 0
    commits: int = 0
    commit_failures: int = 0
    rejected_requests: int = 0
    #: times the database was closed and opened again (``reopen_rows``), and attempts that failed to open it
    reopens: int = 0
    reopen_failures: int = 0
    #: operations applied and failed, by name (merged ones count each operation they stand for)
    operations: dict[str, int] = field(default_factory=dict)
    operation_failures: dict[str, int] = field(default_factory=dict)
    flush_buckets: list[int] = field(default_factory=lambda: [0] * (len(FLUSH_BUCKETS) + 1))
    flush_sum: float = 0.0
    flush_count: int = 0
    last_flush_seconds: float = 0.0

    @property
    def records_stored(self) -> int:
        """Spans and log records appended (what ``reopen_rows`` counts)."""
        return self.spans_stored + self.logs_stored

    def observe_flush(self, seconds: float) -> None:
        self.flush_buckets[bisect.bisect_left(FLUSH_BUCKETS, seconds)] += 1
        self.flush_sum += seconds
        self.flush_count += 1
        self.last_flush_seconds = seconds
