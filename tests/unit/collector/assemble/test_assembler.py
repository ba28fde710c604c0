"""The assembler stage, driven step by step with a manual clock, an in-memory store and a recording stage."""

from __future__ import annotations

import dataclasses

from agentotel_eval.collector.assemble import assembler as assembler_module
from agentotel_eval.collector.assemble.assembler import Assembler
from agentotel_eval.collector.config import AssemblerConfig
from agentotel_eval.collector.process.completed import CompletedTrace
from agentotel_eval.collector.process.marks import log_marks, span_marks
from agentotel_eval.collector.store.reader import StoredTrace
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct import reconstruct

AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}


def tool(name: str) -> dict:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}


def span(trace: int, sid: int, parent: int | None, attrs: dict, start: int) -> SpanRecord:
    return SpanRecord(
        f"{trace:032x}",
        f"{sid:016x}",
        None if parent is None else f"{parent:016x}",
        f"s{sid}",
        start_ns=start,
        end_ns=start + 5,
        attributes=attrs,
    )


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class MemoryStore:
    """Stands in for the TraceReader: the spans 'in the database'."""

    def __init__(self, spans=(), with_runs=()) -> None:
        self.spans: list[SpanRecord] = list(spans)
        self.with_runs = set(with_runs)
        self.loads: list[tuple[list[str], int, int]] = []
        self.commits: list[tuple[int, ...] | None] = []  # the commits each load named
        self.ingested: dict[int, int] = {}  # id(span) -> the commit that stored it

    def load(self, trace_ids, lo, hi, whole=True, commits=None):
        ids = sorted(set(trace_ids))
        self.loads.append((ids, lo, hi))
        self.commits.append(commits)
        if commits is not None:  # by the commits the records came in (``commit`` stamps them)
            return {
                t: StoredTrace(
                    [s for s in self.spans if s.trace_id == t and self.ingested[id(s)] in commits], []
                )
                for t in ids
            }
        return {
            t: StoredTrace([s for s in self.spans if s.trace_id == t and lo <= s.start_ns <= hi], [])
            for t in ids
        }

    def latest_span_time(self):
        return max((s.start_ns for s in self.spans), default=None)

    def recent_traces(self, since_ns):
        by: dict[str, list[SpanRecord]] = {}
        for s in self.spans:
            by.setdefault(s.trace_id, []).append(s)
        rows = [(t, min(x.start_ns for x in v), max(x.end_ns for x in v)) for t, v in by.items()]
        return rows, self.with_runs & set(by)

    def close(self):
        pass


class Recorder:
    def __init__(self) -> None:
        self.batches: list[list[CompletedTrace]] = []
        self.started = self.stopped = False

    def consume(self, traces):
        self.batches.append(list(traces))

    def start(self):
        self.started = True

    def shutdown(self):
        self.stopped = True

    @property
    def traces(self) -> list[CompletedTrace]:
        return [t for batch in self.batches for t in batch]


def make(store=None, read_plain_traces=False, **config):
    clock = Clock()
    recorder = Recorder()
    cfg = dataclasses.replace(AssemblerConfig(), grace_period=1.0, max_wait=10.0, late_window=0.0, **config)
    assembler = Assembler(
        cfg,
        recorder,
        store if store is not None else MemoryStore(),
        clock=clock,
        read_plain_traces=read_plain_traces,
    )
    return assembler, recorder, clock


def commit(assembler: Assembler, spans: list[SpanRecord], ingested: int | None = None) -> None:
    """What the writer does: the spans are stored (by the commit ``ingested``), then the assembler is given
    their marks."""
    assembler._reader.spans.extend(spans)
    for s in spans:
        assembler._reader.ingested[id(s)] = ingested
    assembler.consume(span_marks(spans), [], ingested)


def test_completed_traces_carry_their_spans_and_reconstructed_runs():
    assembler, recorder, clock = make()
    spans = [span(1, 2, 1, tool("search"), 200), span(1, 1, None, AGENT, 100)]
    commit(assembler, spans)
    assembler.step()
    assert recorder.traces == []
    clock.now = 1.0
    assembler.step()
    (trace,) = recorder.traces
    assert [s.span_id for s in trace.spans] == [spans[1].span_id, spans[0].span_id]  # sorted by start
    assert trace.runs == tuple(reconstruct(spans))
    assert trace.runs[0].tools_called == ["search"]
    assert (trace.reason, trace.complete, trace.replace) == ("quiet", True, False)
    assert (trace.lo_ns, trace.hi_ns) == (100, 205)
    assert assembler.stats.runs_completed == 1
    assert assembler._reader.loads == [([spans[0].trace_id], 100, 205)]  # read back once, in its own window


def test_a_late_span_rereads_the_stored_trace_and_replaces_its_runs():
    first = [span(1, 1, None, AGENT, 100), span(1, 2, 1, tool("search"), 200)]
    late = span(1, 3, 1, tool("book"), 300)
    store = MemoryStore()
    assembler, recorder, clock = make(store)
    commit(assembler, first)
    assembler.step()
    clock.now = 1.0
    assembler.step()
    clock.now = 5.0
    commit(assembler, [late])  # stored before the assembler hears of it
    assembler.step()
    assert store.loads[-1] == ([first[0].trace_id], 100, 305)  # the stored trace, re-read to re-open it
    clock.now = 6.0
    assembler.step()
    initial, rebuilt = recorder.traces
    assert initial.runs[0].tools_called == ["search"] and not initial.replace
    assert rebuilt.replace and rebuilt.runs[0].tools_called == ["search", "book"]
    assert len(rebuilt.spans) == 3
    assert assembler.stats.traces_reopened == 1


def test_startup_recovers_unassembled_traces_and_remembers_assembled_ones():
    assembled = [span(1, 1, None, AGENT, 100)]
    orphaned = [span(2, 1, None, AGENT, 150), span(2, 2, 1, tool("x"), 160)]
    store = MemoryStore(assembled + orphaned, with_runs={assembled[0].trace_id})
    assembler, recorder, clock = make(store)
    assembler.start()
    try:
        assert assembler.stats.traces_recovered == 1
        clock.now = 2.0
        assembler.step()
        (recovered,) = recorder.traces
        assert recovered.trace_id == orphaned[0].trace_id and recovered.replace
        assert recovered.runs[0].tools_called == ["x"]
        # A late span of the trace that already had runs re-opens it rather than starting a partial trace.
        commit(assembler, [span(1, 9, 1, tool("y"), 120)])
        assembler.step()
        clock.now = 4.0
        assembler.step()
        assert recorder.traces[-1].runs[0].tools_called == ["y"] and recorder.traces[-1].replace
    finally:
        assembler.shutdown()
    assert recorder.started and recorder.stopped


def test_a_reconstruction_error_skips_that_trace_only():
    def fragile(spans, logs):
        if spans[0].trace_id == f"{1:032x}":
            raise ValueError("boom")
        return reconstruct(spans, logs)

    clock = Clock()
    recorder = Recorder()
    cfg = dataclasses.replace(AssemblerConfig(), grace_period=1.0)
    assembler = Assembler(cfg, recorder, MemoryStore(), reconstruct=fragile, clock=clock)
    commit(assembler, [span(1, 1, None, AGENT, 1), span(2, 1, None, AGENT, 2)])
    assembler.step()
    clock.now = 2.0
    assembler.step()
    assert [t.trace_id for t in recorder.traces] == [f"{2:032x}"]
    assert assembler.stats.reconstruct_errors == 1


def test_shutdown_completes_open_traces_and_stops_the_next_stage():
    assembler, recorder, _ = make()
    assembler.start()
    commit(assembler, [span(1, 1, None, AGENT, 1)])
    assembler.shutdown()
    assert [t.reason for t in recorder.traces] == ["shutdown"]
    assert recorder.stopped
    assembler.shutdown()  # idempotent
    assert len(recorder.traces) == 1


def test_backlog_counts_records_not_yet_taken():
    assembler, _, _ = make()
    commit(assembler, [span(1, 1, None, AGENT, 1), span(1, 2, 1, AGENT, 2)])
    assert assembler.backlog == 2
    assembler.step()
    assert assembler.backlog == 0 and assembler.buffered_records == 2


def test_when_the_stored_trace_cannot_be_read_the_runs_are_left_alone():
    class Failing(MemoryStore):
        fail = False

        def load(self, trace_ids, lo, hi, whole=True, commits=None):
            if self.fail:
                raise OSError("disk gone")
            return super().load(trace_ids, lo, hi, whole, commits)

    store = Failing()
    assembler, recorder, clock = make(store)
    commit(assembler, [span(1, 1, None, AGENT, 100)])
    assembler.step()
    clock.now = 1.0
    assembler.step()
    store.fail = True
    commit(assembler, [span(1, 2, 1, tool("x"), 110)])
    for second in range(2, 40):  # through every retry (READ_RETRY_DELAYS), the disk still gone
        clock.now = float(second)
        assembler.step()
    assert len(recorder.traces) == 1  # no rebuilt (partial) trace replaced the first one
    assert assembler.stats.reload_errors == 1 and assembler.open_traces == 0


def test_a_completed_trace_that_cannot_be_read_back_is_counted_and_the_others_go_on():
    class Flaky(MemoryStore):
        def load(self, trace_ids, lo, hi, whole=True, commits=None):
            if f"{1:032x}" in trace_ids:
                raise OSError("disk gone")
            return super().load(trace_ids, lo, hi, whole, commits)

    assembler, recorder, clock = make(Flaky())
    commit(assembler, [span(1, 1, None, AGENT, 100)])
    commit(assembler, [span(2, 1, None, AGENT, 100 + 60 * 10**9)])  # a minute later: read in its own query
    assembler.step()
    for second in range(2, 40):  # the first trace's read fails each time it is tried again
        clock.now = float(second)
        assembler.step()
    assert [t.trace_id for t in recorder.traces] == [f"{2:032x}"]
    assert assembler.stats.read_errors == 1


def test_completed_traces_are_read_in_bounded_queries_grouped_by_time(monkeypatch):
    monkeypatch.setattr(assembler_module, "MAX_READ_RECORDS", 4)
    store = MemoryStore()
    assembler, recorder, clock = make(store)
    minute = 60 * 10**9
    for n, start in ((1, 100), (2, 200), (3, 300), (4, 100 + minute)):
        commit(assembler, [span(n, 1, None, AGENT, start), span(n, 2, 1, tool("t"), start + 1)])
    assembler.step()
    clock.now = 2.0
    assembler.step()
    assert [ids for ids, _, _ in store.loads] == [[f"{1:032x}", f"{2:032x}"], [f"{3:032x}"], [f"{4:032x}"]]
    assert len(recorder.traces) == 4 and all(len(t.spans) == 2 for t in recorder.traces)


def test_traces_decided_close_together_are_read_back_in_one_query():
    store = MemoryStore()
    assembler, recorder, clock = make(store, read_interval=0.5)
    commit(assembler, [span(1, 1, None, AGENT, 100)])
    assembler.step()
    clock.now = 0.1
    commit(assembler, [span(2, 1, None, AGENT, 200)])
    assembler.step()
    clock.now = 1.05
    assembler.step()  # trace 1 is due (quiet for 1 s): the first read of the interval
    assert [ids for ids, _, _ in store.loads] == [[f"{1:032x}"]]
    clock.now = 1.15
    commit(assembler, [span(3, 1, None, AGENT, 300)])
    assembler.step()  # trace 2 is due, but the last read was 0.1 s ago: it waits
    assert len(store.loads) == 1 and len(recorder.traces) == 1
    clock.now = 2.2
    assembler.step()  # 0.5 s later: traces 2 and 3 in one read
    assert [ids for ids, _, _ in store.loads][1:] == [[f"{2:032x}", f"{3:032x}"]]
    assert [t.trace_id for t in recorder.traces] == [f"{n:032x}" for n in (1, 2, 3)]


def test_shutdown_reads_back_what_is_waiting_for_the_next_read():
    store = MemoryStore()
    assembler, recorder, clock = make(store, read_interval=60.0)
    commit(assembler, [span(1, 1, None, AGENT, 100)])
    assembler.step()
    clock.now = 1.5
    assembler.step()  # trace 1 decided and read: the first read
    commit(assembler, [span(2, 1, None, AGENT, 200)])
    assembler.step()
    clock.now = 3.0
    assembler.step()  # trace 2 decided; the next read is a minute away
    assert len(recorder.traces) == 1
    assembler.shutdown()
    assert sorted(t.trace_id for t in recorder.traces) == [f"{1:032x}", f"{2:032x}"]


class FlakyStore(MemoryStore):
    """Fails its first ``failures`` reads, as a database briefly unable to answer would."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def load(self, trace_ids, lo, hi, whole=True, commits=None):
        if self.failures:
            self.failures -= 1
            self.loads.append((sorted(set(trace_ids)), lo, hi))
            raise RuntimeError("database busy")
        return super().load(trace_ids, lo, hi, whole, commits)


def test_a_failed_read_back_is_tried_again_later_and_the_runs_are_written():
    store = FlakyStore(failures=2)
    assembler, recorder, clock = make(store)
    spans = [span(1, 1, None, AGENT, 100), span(1, 2, 1, tool("search"), 200)]
    commit(assembler, spans)
    assembler.step()
    clock.now = 1.0
    assembler.step()  # decided; the read fails
    assert recorder.traces == [] and len(store.loads) == 1 and assembler.open_traces == 1
    clock.now = 1.5
    assembler.step()  # not yet due again
    assert len(store.loads) == 1
    clock.now = 2.0
    assembler.step()  # the second try fails too
    clock.now = 4.0
    assembler.step()  # the third reads it
    (trace,) = recorder.traces
    assert trace.runs[0].tools_called == ["search"]
    assert assembler.stats.read_errors == 0 and assembler.open_traces == 0


def test_a_read_back_that_keeps_failing_is_given_up_on_and_counted():
    store = FlakyStore(failures=100)
    assembler, recorder, clock = make(store)
    commit(assembler, [span(1, 1, None, AGENT, 100)])
    assembler.step()
    for second in range(1, 40):
        clock.now = float(second)
        assembler.step()
    assert recorder.traces == [] and assembler.stats.read_errors == 1
    assert len(store.loads) == 1 + len(assembler_module.READ_RETRY_DELAYS) and assembler.open_traces == 0


def test_a_late_span_whose_trace_cannot_be_re_read_is_tried_again():
    store = MemoryStore()
    assembler, recorder, clock = make(store)
    commit(assembler, [span(1, 1, None, AGENT, 100), span(1, 2, 1, tool("search"), 200)])
    assembler.step()
    clock.now = 1.0
    assembler.step()
    original_load = store.load
    calls = []

    def failing_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("database busy")
        return original_load(*args, **kwargs)

    store.load = failing_once
    clock.now = 5.0
    commit(assembler, [span(1, 3, 1, tool("book"), 300)])
    assembler.step()  # the re-read fails: the runs stay as they were, for now
    assert len(recorder.traces) == 1 and assembler.stats.reload_errors == 0
    clock.now = 6.0
    assembler.step()  # tried again: re-opened
    clock.now = 7.5
    assembler.step()
    assert [t.runs[0].tools_called for t in recorder.traces] == [["search"], ["search", "book"]]
    assert recorder.traces[1].replace


def test_a_trace_re_opened_by_a_late_span_while_its_read_back_waits_for_a_retry_is_emitted_once_whole():
    # The retry would otherwise emit the trace a second time, as it was before the late span, after the
    # rebuilt trace: a stale second run row.
    store = FlakyStore(failures=1)
    assembler, recorder, clock = make(store)
    commit(assembler, [span(1, 1, None, AGENT, 100), span(1, 2, 1, tool("search"), 200)])
    assembler.step()
    clock.now = 1.0
    assembler.step()  # the read fails: a retry is due at 2.0
    commit(assembler, [span(1, 3, 1, tool("book"), 300)])
    clock.now = 1.2
    assembler.step()  # the late span re-opens it (this read works)
    for now in (2.0, 2.5, 3.0, 5.0, 10.0):
        clock.now = now
        assembler.step()
    assert [t.runs[0].tools_called for t in recorder.traces] == [["search", "book"]]
    assert assembler.open_traces == 0


def test_retries_count_each_trace_s_own_tries():
    # a trace read in the same group as one on its last try still gets all of its own
    store = FlakyStore(failures=10**9)
    assembler, recorder, clock = make(store)
    commit(assembler, [span(1, 1, None, AGENT, 100)])
    assembler.step()
    second = 1.0
    for second in (1.0, 2.0, 4.0, 8.0):  # trace 1 fails four times
        clock.now = second
        assembler.step()
    commit(assembler, [span(2, 1, None, AGENT, 150)])
    assembler.step()
    clock.now = second + 1.0
    assembler.step()
    clock.now = 17.0  # trace 1's last try, with trace 2's first (both fail)
    assembler.step()
    assert assembler.stats.read_errors == 1
    store.failures = 0
    for now in (18.0, 19.0, 21.0):
        clock.now = now
        assembler.step()
    assert [t.trace_id for t in recorder.traces] == [f"{2:032x}"]


# ---- traces that can hold no run ---------------------------------------------------------------------------

HTTP = {"http.request.method": "GET", "url.path": "/orders", "http.response.status_code": 200}
DB = {"db.system.name": "postgresql", "db.query.text": "SELECT 1"}


def test_a_trace_with_no_agent_span_is_stored_but_not_read_back():
    assembler, recorder, clock = make()
    commit(assembler, [span(1, 2, 1, DB, 120), span(1, 1, None, HTTP, 100)])
    commit(assembler, [span(2, 1, None, AGENT, 100), span(2, 2, 1, tool("search"), 110)])
    assembler.step()
    clock.now = 1.0
    assembler.step()
    assert [t.trace_id for t in recorder.traces] == [f"{2:032x}"]
    assert assembler._reader.loads == [([f"{2:032x}"], 100, 115)]  # the web trace is not read
    assert assembler.stats.traces_without_evidence == 1
    assert f"{1:032x}" in assembler.buffer.decided  # remembered: a late span of it re-opens it


def test_a_late_agent_span_makes_a_plain_trace_assembled():
    assembler, recorder, clock = make()
    commit(assembler, [span(1, 1, None, HTTP, 100)])
    assembler.step()
    clock.now = 1.0
    assembler.step()
    assert recorder.traces == [] and assembler.stats.traces_without_evidence == 1
    clock.now = 3.0
    commit(
        assembler, [span(1, 2, 1, AGENT, 110), span(1, 3, 2, tool("book"), 120)]
    )  # its agent, exported later
    assembler.step()
    clock.now = 4.0
    assembler.step()
    (trace,) = recorder.traces
    assert trace.replace and [r.tools_called for r in trace.runs] == [["book"]]
    assert assembler.stats.traces_reopened == 1 and assembler.stats.traces_without_evidence == 1


def test_a_log_record_of_a_plain_trace_makes_it_read_back_a_score_does_not():
    assembler, recorder, clock = make()
    commit(assembler, [span(1, 1, None, HTTP, 100), span(2, 1, None, HTTP, 100)])
    choice = LogRecord(105, 0, f"{1:032x}", f"{1:016x}", event_name="gen_ai.choice", body={"index": 0})
    score = LogRecord(105, 0, f"{2:032x}", f"{1:016x}", event_name="gen_ai.evaluation.result")
    assembler.consume([], log_marks([choice, score]))  # tool calls may come only as gen_ai events
    assembler.step()
    clock.now = 1.0
    assembler.step()
    assert [t.trace_id for t in recorder.traces] == [f"{1:032x}"]
    assert assembler.stats.traces_without_evidence == 1


def test_with_read_plain_traces_every_trace_is_passed_on():
    assembler, recorder, clock = make(read_plain_traces=True)
    commit(assembler, [span(1, 1, None, HTTP, 100)])
    assembler.step()
    clock.now = 1.0
    assembler.step()
    (trace,) = recorder.traces
    assert trace.runs == () and len(trace.spans) == 1
    assert assembler.stats.traces_without_evidence == 0


# ---- read back by commits ----------------------------------------------------------------------------------


def test_a_trace_is_read_back_by_the_commits_its_spans_came_in():
    assembler, recorder, clock = make()
    long_ago = span(1, 2, 1, tool("search"), 100)
    commit(assembler, [long_ago], ingested=1000)
    commit(assembler, [span(1, 1, None, AGENT, 50), span(1, 3, 1, tool("book"), 10**12)], ingested=2000)
    assembler.step()
    clock.now = 1.0
    assembler.step()
    (trace,) = recorder.traces
    assert trace.runs[0].tools_called == ["search", "book"]
    assert assembler._reader.commits == [(1000, 2000)]


def test_traces_whose_commits_are_not_all_known_are_read_by_their_window_in_a_query_of_their_own():
    assembler, recorder, clock = make()
    commit(assembler, [span(1, 1, None, AGENT, 100)], ingested=1000)
    commit(assembler, [span(2, 1, None, AGENT, 110)])  # no ingested_at reported
    assembler.step()
    clock.now = 1.0
    assembler.step()
    assert sorted(t.trace_id for t in recorder.traces) == [f"{1:032x}", f"{2:032x}"]
    assert sorted(assembler._reader.commits, key=str) == [(1000,), None]


def test_a_read_names_at_most_max_read_commits_and_a_trace_of_more_is_read_by_its_window(monkeypatch):
    monkeypatch.setattr(assembler_module, "MAX_READ_COMMITS", 2)
    assembler, recorder, clock = make()
    for n, ingested in ((1, 1000), (2, 2000), (3, 3000)):  # three traces of one commit each: two queries
        commit(assembler, [span(n, 1, None, AGENT, 100)], ingested=ingested)
    for k, ingested in enumerate((4000, 5000, 6000)):  # one trace of three commits: by its window
        commit(
            assembler,
            [span(4, 1 + k, None if k == 0 else 1, AGENT if k == 0 else tool("t"), 100 + k)],
            ingested=ingested,
        )
    assembler.step()
    clock.now = 1.0
    assembler.step()
    assert len(recorder.traces) == 4
    assert sorted(assembler._reader.commits, key=str) == [(1000, 2000), (3000,), None]


def test_when_recovery_cannot_reopen_every_stored_trace_new_traces_are_read_by_their_window_for_a_while():
    stored = [span(n, 1, None, AGENT, 100 + n) for n in (1, 2, 3)]  # three unassembled traces; room for two
    store = MemoryStore(stored)
    assembler, _recorder, clock = make(store, max_open_traces=2)
    assembler.start()
    try:
        assert assembler.stats.traces_recovered == 2 and not assembler.buffer.track_commits
        assert sorted(t.trace_id for t in assembler.buffer.open.values()) == [
            f"{2:032x}",
            f"{3:032x}",
        ]  # latest
        # a later span of the one left out: its trace's earlier records have no marks here
        commit(assembler, [span(1, 2, 1, tool("x"), 150)], ingested=9000)
        assembler.step()
        assert assembler.buffer.open[f"{1:032x}"].commits is None
        clock.now = 12.0  # max_wait + grace_period later: marks name every record of a new trace again
        assembler.step()
        commit(assembler, [span(5, 1, None, AGENT, 200)], ingested=9500)
        assembler.step()
        assert assembler.buffer.track_commits and assembler.buffer.open[f"{5:032x}"].commits == {9500}
    finally:
        assembler.shutdown()


def test_a_recovered_trace_with_no_agent_span_is_not_read_back_again():
    store = MemoryStore([span(1, 1, None, HTTP, 100), span(2, 1, None, AGENT, 100)])
    assembler, recorder, clock = make(store)
    assembler.start()
    try:
        assert assembler.stats.traces_recovered == 2 and len(store.loads) == 1  # the recovery's one read
        clock.now = 2.0
        assembler.step()
        assert [t.trace_id for t in recorder.traces] == [f"{2:032x}"]
        assert [ids for ids, _, _ in store.loads[1:]] == [[f"{2:032x}"]]  # the web trace is not read again
        assert assembler.stats.traces_without_evidence == 1
    finally:
        assembler.shutdown()
