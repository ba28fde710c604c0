"""The collector's background chores, on a thread of their own: retention (``retention``: rows older than it
deleted, at start and then every 1/24 of it, between a minute and an hour) and a periodic summary line in the
log."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta

from agentotel_eval.collector.pipeline.assembly import AssemblyStage
from agentotel_eval.collector.store.operations import DeleteOlderThan
from agentotel_eval.collector.store.writer import StoreWriter

log = logging.getLogger("agentotel.collector")


class Housekeeping:
    def __init__(
        self,
        writer: StoreWriter,
        assembler: AssemblyStage,
        *,
        retention_seconds: float | None,
        summary_interval: float,
    ) -> None:
        self._writer = writer
        self._assembler = assembler
        self._retention_seconds = retention_seconds
        self._summary_interval = summary_interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: rows deleted by retention, by table, since the start
        self.retention_deleted: dict[str, int] = {}

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agentotel-housekeeping", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run_retention(self) -> DeleteOlderThan | None:
        """Queue one retention pass (also run at startup and periodically when ``retention`` is set)."""
        seconds = self._retention_seconds
        if not seconds:
            return None
        op = DeleteOlderThan(datetime.now(UTC) - timedelta(seconds=seconds), on_applied=self._retained)
        self._writer.submit_operation(op)
        return op

    def _retained(self, deleted: dict[str, int]) -> None:
        for table, n in deleted.items():
            self.retention_deleted[table] = self.retention_deleted.get(table, 0) + n
        if any(deleted.values()):
            log.info("retention: deleted %s", ", ".join(f"{n} {t}" for t, n in deleted.items() if n))

    def _run(self) -> None:
        seconds = self._retention_seconds
        retention_every = min(max(seconds / 24, 60.0), 3600.0) if seconds else None
        next_retention = time.monotonic()
        next_summary = time.monotonic() + self._summary_interval
        last = (0, 0)
        while not self._stop.is_set():
            now = time.monotonic()
            if retention_every is not None and now >= next_retention:
                self.run_retention()
                next_retention = now + retention_every
            if now >= next_summary:
                stats = self._writer.stats
                current = (stats.spans_stored, self._assembler.snapshot().assembler.runs_completed)
                if current != last:
                    log.info(
                        "stored %d spans (+%d), %d log records; %d agent runs (+%d); %d "
                        "open traces, queue %d",
                        current[0],
                        current[0] - last[0],
                        stats.logs_stored,
                        current[1],
                        current[1] - last[1],
                        self._assembler.open_traces,
                        self._writer.queued_records,
                    )
                    last = current
                next_summary = now + self._summary_interval
            self._stop.wait(1.0)
