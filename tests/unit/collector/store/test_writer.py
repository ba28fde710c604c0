"""The single writer: group commit, idempotency, bounded queue, isolation of bad data, operations."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from agentotel_eval.collector.store.operations import (
    BaseOperation,
    DeleteOlderThan,
    ReplaceRuns,
    TraceWindow,
    merge_operations,
    ns_to_datetime,
)
from agentotel_eval.collector.store.writer import (
    Committed,
    QueueFull,
    RejectedData,
    StoreWriter,
    WriterSettings,
    WriterUnavailable,
)
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.store.opening import open_store
from agentotel_eval.store.rows import logs_to_arrow, runs_to_arrow, spans_to_arrow
from agentotel_eval.store.sealed import cursor as sealed_cursor
from agentotel_eval.test_case import ToolCall
from tests.support.collector_harness import Blocker, HeldCommits

T0 = 1_700_000_000_000_000_000


def make_spans(trace: int, n: int = 3, t0: int = T0) -> list[SpanRecord]:
    tid = f"{trace:032x}"
    return [
        SpanRecord(
            tid,
            f"{trace:08x}{i:08x}",
            None if i == 0 else f"{trace:08x}{0:08x}",
            f"s{i}",
            start_ns=t0 + i * 1000,
            end_ns=t0 + i * 1000 + 500,
            attributes={"i": i},
        )
        for i in range(n)
    ]


@pytest.fixture()
def store(tmp_path):
    con = open_store(tmp_path / "w.duckdb")
    committed: list[tuple[list, list]] = []

    def listen(commits):
        """What was new in each commit: the submitted records (the payload) of the new rows."""
        spans, logs = [], []
        for c in commits:
            spans.extend(Committed.pick(c.payload, c.new_spans) if c.new_spans != [] else [])
            logs.extend(Committed.pick(c.payload, c.new_logs) if c.new_logs != [] else [])
        committed.append((spans, logs))

    writer = StoreWriter(con, WriterSettings(flush_interval=0.0), on_commit=listen)
    writer.start()
    yield con, writer, committed
    writer.shutdown()
    con.close()


def submit_spans(writer: StoreWriter, spans: list[SpanRecord], **kw):
    return writer.submit(spans_to_arrow(spans), payload=spans, **kw)


def count(con, table: str = "spans") -> int:
    return sealed_cursor(con).execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_a_commit_releases_the_ticket_with_what_was_stored(store):
    con, writer, committed = store
    result = submit_spans(writer, make_spans(1)).wait(5)
    assert (result.stored, result.duplicates) == (3, 0)
    assert count(con) == 3
    assert [len(s) for s, _ in committed] == [3]


def test_a_resent_span_is_stored_once_and_not_passed_on_again(store):
    con, writer, committed = store
    spans = make_spans(2)
    submit_spans(writer, spans).wait(5)
    again = submit_spans(writer, spans[:2] + make_spans(3, 1)).wait(5)
    assert (again.stored, again.duplicates) == (1, 2)
    assert count(con) == 4
    assert [s.span_id for s in committed[-1][0]] == [make_spans(3, 1)[0].span_id]


def test_duplicates_inside_one_batch_are_stored_once(store):
    con, writer, committed = store
    held = HeldCommits(writer, hold=10)
    first = submit_spans(writer, make_spans(99))
    assert held.entered.wait(5)
    spans = make_spans(4)
    tickets = [submit_spans(writer, spans), submit_spans(writer, spans), submit_spans(writer, spans[:1])]
    held.release.set()
    assert first.wait(5).stored == 3
    results = [t.wait(5) for t in tickets]
    assert sum(r.stored for r in results) == 3
    assert sum(r.duplicates for r in results) == 4
    assert count(con) == 6
    assert sorted(s.span_id for s in committed[-1][0]) == sorted(s.span_id for s in spans)


def test_concurrent_requests_share_a_commit(store):
    con, writer, _ = store
    held = HeldCommits(writer, hold=10)
    first = submit_spans(writer, make_spans(99))
    assert held.entered.wait(5)
    tickets = [submit_spans(writer, make_spans(100 + i)) for i in range(20)]
    held.release.set()
    first.wait(5)
    commits_before = writer.stats.commits  # the held one's
    for t in tickets:
        t.wait(5)
    assert writer.stats.commits - commits_before == 1
    assert count(con) == 63


def test_a_full_queue_refuses_with_a_retry_delay_and_loses_nothing_accepted(tmp_path):
    con = open_store(tmp_path / "q.duckdb")
    writer = StoreWriter(con, WriterSettings(max_queue_records=5, flush_interval=0.0, retry_after=2.5))
    writer.start()
    held = HeldCommits(writer, hold=10)
    first = submit_spans(writer, make_spans(1, 3))
    assert held.entered.wait(5)
    with pytest.raises(QueueFull) as refused:
        submit_spans(writer, make_spans(2, 3))
    assert refused.value.retry_after == 2.5
    assert writer.queued_records == 3
    held.release.set()
    assert first.wait(5).stored == 3
    submit_spans(writer, make_spans(2, 3)).wait(5)  # room again
    writer.shutdown()
    assert count(con) == 6
    con.close()


def test_downstream_backlog_counts_against_the_bound(tmp_path):
    con = open_store(tmp_path / "b.duckdb")
    writer = StoreWriter(con, WriterSettings(max_queue_records=10))
    writer.start()
    with pytest.raises(QueueFull):
        submit_spans(writer, make_spans(1, 3), extra_load=9)
    assert submit_spans(writer, make_spans(1, 3), extra_load=0).wait(5).stored == 3
    writer.shutdown()
    con.close()


def test_one_bad_request_fails_alone(store):
    con, writer, _ = store
    held = HeldCommits(writer, hold=10)
    first = submit_spans(writer, make_spans(99))
    assert held.entered.wait(5)
    good = make_spans(7)
    bad_spans = make_spans(8)
    batch = spans_to_arrow(bad_spans)
    broken = batch.set_column(
        batch.schema.get_field_index("flags"), "flags", pa.array(["x"] * 3, pa.string())
    )
    bad = writer.submit(broken, payload=bad_spans)
    ok = submit_spans(writer, good)
    held.release.set()
    assert first.wait(5).stored == 3
    assert ok.wait(5).stored == 3
    with pytest.raises(RejectedData):
        bad.wait(5)
    assert count(con) == 6
    assert writer.stats.rejected_requests == 1


def test_logs_are_idempotent_on_content(store):
    con, writer, committed = store
    logs = [
        LogRecord(T0 + i, 0, f"{1:032x}", f"{1:016x}", 9, "", "gen_ai.choice", {"i": i}) for i in range(3)
    ]
    r1 = writer.submit(log_batch=logs_to_arrow(logs), payload=logs).wait(5)
    r2 = writer.submit(log_batch=logs_to_arrow(logs), payload=logs).wait(5)
    assert (r1.stored, r2.stored, r2.duplicates) == (3, 0, 3)
    assert count(con, "logs") == 3
    assert len(committed[0][1]) == 3 and len(committed) == 1  # the second commit had nothing new to pass on


def test_shutdown_drains_the_queue_then_refuses(tmp_path):
    con = open_store(tmp_path / "s.duckdb")
    writer = StoreWriter(con)
    writer.start()
    tickets = [submit_spans(writer, make_spans(i)) for i in range(50)]
    writer.shutdown()
    assert all(t.done for t in tickets)
    assert count(con) == 150
    with pytest.raises(WriterUnavailable):
        submit_spans(writer, make_spans(99))
    con.close()


def _run(trace: int, tools: list[str], start: int = T0) -> AgentRun:
    return AgentRun(
        trace_id=f"{trace:032x}",
        span_id=f"{trace:016x}",
        agent_name="a",
        start_time_ns=start,
        end_time_ns=start + 10_000,
        tool_calls=tuple(ToolCall(t, start_time_ns=start + 100 * i) for i, t in enumerate(tools)),
    )


def test_replace_runs_replaces_a_traces_rows_instead_of_adding(store):
    con, writer, _ = store
    runs, calls = runs_to_arrow([_run(1, ["a"]), _run(2, ["x", "y"])], 0)
    writer.submit_operation(ReplaceRuns(runs, calls))
    runs, calls = runs_to_arrow([_run(1, ["a", "b"])], 0)
    writer.submit_operation(ReplaceRuns(runs, calls, [TraceWindow(f"{1:032x}", T0, T0 + 10_000)]))
    assert writer.flush(5)
    cur = sealed_cursor(con)
    assert cur.execute("SELECT trace_id, tools_called FROM agent_runs ORDER BY trace_id").fetchall() == [
        (f"{1:032x}", ["a", "b"]),
        (f"{2:032x}", ["x", "y"]),
    ]
    assert cur.execute("SELECT count(*) FROM tool_calls").fetchone() == (4,)


def test_each_write_transaction_stamps_its_rows_with_one_rising_committed_at(store):
    """The lake flush's exact mark: the rows of one transaction share a stamp, a later transaction's is higher
    (even built with an older updated_at), whatever each run's build time says."""
    con, writer, _ = store
    blocker = Blocker()
    writer.submit_operation(blocker)
    assert blocker.entered.wait(5)
    late_build, early_build = (
        runs_to_arrow([_run(1, ["a"])], 2_000_000_000_000),
        runs_to_arrow([_run(2, ["b"])], 0),
    )
    writer.submit_operation(ReplaceRuns(*late_build))  # these two are taken as one group: one transaction
    writer.submit_operation(ReplaceRuns(*runs_to_arrow([_run(3, ["c"])], 0)))
    blocker.release.set()
    assert writer.flush(5)
    writer.submit_operation(ReplaceRuns(*early_build))  # a transaction of its own, later
    assert writer.flush(5)
    cur = sealed_cursor(con)
    stamps = dict(cur.execute("SELECT trace_id, committed_at FROM agent_runs").fetchall())
    assert stamps[f"{1:032x}"] == stamps[f"{3:032x}"] < stamps[f"{2:032x}"]
    calls = dict(cur.execute("SELECT trace_id, committed_at FROM tool_calls").fetchall())
    assert calls == stamps


def test_a_failing_operation_does_not_stop_the_writer(store):
    _con, writer, _ = store

    class Broken(BaseOperation):
        name = "broken"

        def apply(self, con):
            con.execute("INSERT INTO no_such_table VALUES (1)")

    writer.submit_operation(Broken())
    assert submit_spans(writer, make_spans(5)).wait(5).stored == 3
    assert writer.flush(5)
    assert writer.stats.operation_failures == {"broken": 1}


def test_pending_operations_share_one_transaction_and_a_bad_one_costs_only_itself(store):
    con, writer, _ = store
    blocker = Blocker()  # holds the operations thread
    writer.submit_operation(blocker)  # holds the writer so the next three are taken as one group
    assert blocker.entered.wait(5)
    applied: list[str] = []

    class Marker(BaseOperation):
        name = "marker"

        def __init__(self, n: int) -> None:
            self.n = n

        def apply(self, con):
            con.execute(f"CREATE TABLE IF NOT EXISTS marks (n INTEGER); INSERT INTO marks VALUES ({self.n})")

        def committed(self):
            applied.append(f"m{self.n}")

    class Broken(BaseOperation):
        name = "broken"

        def apply(self, con):
            con.execute("INSERT INTO no_such_table VALUES (1)")

    writer.submit_operation(Marker(1))
    writer.submit_operation(Broken())
    writer.submit_operation(Marker(2))
    commits_before = writer.stats.operations.get("marker", 0)
    blocker.release.set()
    assert writer.flush(5)
    assert sealed_cursor(con).execute("SELECT n FROM marks ORDER BY n").fetchall() == [
        (1,),
        (2,),
    ]  # each once
    assert applied == ["m1", "m2"]
    assert writer.stats.operations["marker"] == commits_before + 2
    assert writer.stats.operation_failures == {"broken": 1}

    writer.submit_operation(blocker2 := Blocker())
    assert blocker2.entered.wait(5)
    writer.submit_operation(Marker(3))
    writer.submit_operation(Marker(4))
    blocker2.release.set()
    assert writer.flush(5)
    assert applied == ["m1", "m2", "m3", "m4"] and writer.stats.operation_failures == {"broken": 1}


def test_queued_runs_are_written_with_one_statement_per_table_and_a_replacement_keeps_its_place(store):
    con, writer, _ = store
    blocker = Blocker()
    writer.submit_operation(blocker)
    assert blocker.entered.wait(5)
    heard: list[int] = []

    def op(runs, *, replace=()):
        run_rows, call_rows = runs_to_arrow(runs, 0)
        return ReplaceRuns(run_rows, call_rows, replace, on_applied=lambda o: heard.append(o.runs.num_rows))

    ops = [
        op([_run(1, ["a"])]),
        op([_run(2, ["x"]), _run(3, ["y"])]),
        op([_run(1, ["a", "b"])], replace=[TraceWindow(f"{1:032x}", T0, T0 + 10_000)]),  # trace 1 rebuilt
        op([_run(4, ["z"])]),
        op([_run(5, ["w"])]),
    ]
    merged = merge_operations(ops)
    assert [m.parts for m in merged] == [2, 1, 2]  # the replacement stands alone, in its place
    for o in ops:
        writer.submit_operation(o)
    before = writer.stats.operations.get("replace_runs", 0)
    blocker.release.set()
    assert writer.flush(5)
    cur = sealed_cursor(con)
    assert cur.execute("SELECT trace_id, tools_called FROM agent_runs ORDER BY trace_id").fetchall() == [
        (f"{1:032x}", ["a", "b"]),
        (f"{2:032x}", ["x"]),
        (f"{3:032x}", ["y"]),
        (f"{4:032x}", ["z"]),
        (f"{5:032x}", ["w"]),
    ]
    assert cur.execute("SELECT count(*) FROM tool_calls").fetchone() == (6,)
    assert sorted(heard) == [1, 1, 1, 1, 2]  # every operation heard its commit, merged or not
    assert writer.stats.operations["replace_runs"] == before + 5


def test_operations_run_beside_ingest_which_an_operation_in_progress_does_not_hold_up(store):
    con, writer, _ = store
    slow = Blocker()
    writer.submit_operation(slow)  # an operation in progress on its thread (a big batch of runs, say)
    assert slow.entered.wait(5)
    assert submit_spans(writer, make_spans(7)).wait(5).stored == 3  # committed meanwhile
    runs, calls = runs_to_arrow([_run(7, ["a"])], 0)
    writer.submit_operation(ReplaceRuns(runs, calls))
    assert writer.pending_operations == 1 and not writer.flush(0.2)  # flush waits for operations too
    assert writer.pending_operation_rows == 1 + 2  # the blocker in progress; one run and its one call
    slow.release.set()
    assert writer.flush(5)
    assert writer.pending_operation_rows == 0
    assert sealed_cursor(con).execute("SELECT count(*) FROM agent_runs").fetchone() == (1,)


def test_retention_deletes_only_older_rows(store):
    con, writer, _ = store
    old = make_spans(1, 2, t0=T0)
    new = make_spans(2, 2, t0=T0 + 3600 * 10**9)
    submit_spans(writer, old + new).wait(5)
    runs, calls = runs_to_arrow([_run(1, ["a"], T0), _run(2, ["b"], T0 + 3600 * 10**9)], 0)
    writer.submit_operation(ReplaceRuns(runs, calls))
    seen: list[dict] = []
    writer.submit_operation(DeleteOlderThan(ns_to_datetime(T0 + 1800 * 10**9), on_applied=seen.append))
    assert writer.flush(5)
    assert seen == [{"spans": 2, "logs": 0, "agent_runs": 1, "tool_calls": 1, "evaluations": 0}]
    assert count(con) == 2


def test_ns_to_datetime_rounds_outward():
    assert ns_to_datetime(1_500) == datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert ns_to_datetime(1_500, ceil=True) == datetime(1970, 1, 1, 0, 0, 0, 2, tzinfo=UTC)


def test_span_updates_patch_attributes_and_replace_only_our_events(tmp_path):
    """The run span's scores are a delta applied in SQL: other attributes and other tools' events stay."""
    import json

    from agentotel_eval.collector.store.operations import SpanUpdate, update_spans
    from agentotel_eval.otlp.records import SpanEvent, SpanRecord
    from agentotel_eval.store.opening import open_store
    from agentotel_eval.store.rows import spans_to_arrow

    con = open_store(tmp_path / "u.duckdb")
    theirs = SpanEvent("gen_ai.evaluation.result", 5, {"gen_ai.evaluation.name": "tool_correctness"})
    span = SpanRecord(
        "ab" * 16,
        "cd" * 8,
        None,
        "invoke_agent a",
        start_ns=1_700_000_000_000_000_000,
        attributes={"gen_ai.agent.name": "a", "agentotel.eval.tool_correctness.status": "error"},
        events=(theirs,),
    )
    con.register("s", spans_to_arrow([span]))
    con.execute("INSERT INTO spans BY NAME SELECT * FROM s")

    def ours(value: float) -> str:
        return json.dumps(
            [
                {
                    "name": "gen_ai.evaluation.result",
                    "time_unix_nano": 9,
                    "attributes": {
                        "gen_ai.evaluation.name": "tool_correctness",
                        "agentotel.eval.evaluator": "T/1",
                        "v": value,
                    },
                }
            ]
        )

    for value in (0.5, 1.0):  # scored, then re-scored
        update_spans(
            con,
            [
                SpanUpdate(
                    span.trace_id,
                    span.span_id,
                    span.start_ns,
                    json.dumps(
                        {
                            "agentotel.eval.tool_correctness.score": value,
                            "agentotel.eval.tool_correctness.status": None,
                        }
                    ),
                    ours(value),
                    ("tool_correctness",),
                )
            ],
        )
    attributes, events = con.execute("SELECT attributes, events FROM spans").fetchone()
    assert json.loads(attributes) == {"gen_ai.agent.name": "a", "agentotel.eval.tool_correctness.score": 1.0}
    assert [e["attributes"].get("v") for e in json.loads(events)] == [None, 1.0]  # theirs kept, ours replaced


def test_a_whole_value_write_back_stores_what_the_sql_delta_stores(tmp_path):
    """First-time scoring sets the span's new attributes and events computed in Python; they must equal what
    the SQL merge patch and event filter make of the same span (the path re-built traces
    and the judge take)."""
    import json

    from agentotel_eval.collector.store.operations import SpanUpdate, update_spans
    from agentotel_eval.otlp.records import SpanEvent, SpanRecord
    from agentotel_eval.scores import updated_span_json
    from agentotel_eval.store.opening import open_store
    from agentotel_eval.store.rows import spans_to_arrow

    con = open_store(tmp_path / "w.duckdb")
    theirs = SpanEvent(
        "gen_ai.evaluation.result", 5, {"gen_ai.evaluation.name": "tool_correctness", "x": [1, 2]}
    )
    earlier = SpanEvent(
        "gen_ai.evaluation.result",
        6,
        {"gen_ai.evaluation.name": "tool_correctness", "agentotel.eval.evaluator": "T/1", "v": 0.1},
    )
    other_metric = SpanEvent(
        "gen_ai.evaluation.result",
        7,
        {"gen_ai.evaluation.name": "tool_errors", "agentotel.eval.evaluator": "J/1"},
    )
    attributes = {
        "gen_ai.agent.name": "a",
        "n": 1.5,
        "nested": {"k": ["é", None]},
        "agentotel.eval.tool_correctness.status": "error",
        "agentotel.eval.tool_errors.score": 0.2,
    }
    spans = [
        SpanRecord(
            "ab" * 16,
            f"{i:016x}",
            None,
            "invoke_agent a",
            start_ns=1_700_000_000_000_000_000 + i,
            attributes=attributes,
            events=(theirs, earlier, other_metric, SpanEvent("log", 8)),
        )
        for i in (1, 2)
    ]
    con.register("s", spans_to_arrow(spans))
    con.execute("INSERT INTO spans BY NAME SELECT * FROM s")
    patch = {
        "agentotel.eval.tool_correctness.score": 1.0,
        "agentotel.eval.tool_correctness.success": True,
        "agentotel.eval.tool_correctness.status": None,
        "agentotel.eval.tool_correctness.reason": "all ✓",
    }
    new_events = [
        {
            "name": "gen_ai.evaluation.result",
            "time_unix_nano": 9,
            "attributes": {
                "gen_ai.evaluation.name": "tool_correctness",
                "agentotel.eval.evaluator": "T/1",
                "v": 1.0,
            },
        }
    ]
    metrics = ("tool_correctness",)
    delta, whole = spans
    update_spans(
        con,
        [
            SpanUpdate(
                delta.trace_id,
                delta.span_id,
                delta.start_ns,
                json.dumps(patch),
                json.dumps(new_events),
                metrics,
            ),
            SpanUpdate(
                whole.trace_id,
                whole.span_id,
                whole.start_ns,
                json.dumps(patch),
                json.dumps(new_events),
                metrics,
                *updated_span_json(whole, patch, new_events, metrics),
            ),
        ],
    )
    stored = {
        row[0]: (json.loads(row[1]), json.loads(row[2]))
        for row in con.execute("SELECT span_id, attributes, events FROM spans").fetchall()
    }
    assert stored[whole.span_id] == stored[delta.span_id]
    got_attributes, got_events = stored[whole.span_id]
    assert "agentotel.eval.tool_correctness.status" not in got_attributes
    assert got_attributes["agentotel.eval.tool_errors.score"] == 0.2  # another metric's scores stay
    assert [e["time_unix_nano"] for e in got_events] == [5, 7, 8, 9]  # ours of the same metric replaced


def test_a_whole_value_write_back_takes_text_utf8_cannot_carry(tmp_path):
    """A lone surrogate (OTLP/JSON allows ``\\ud83d``) is replaced on append; the whole-value write-back must
    store the span's scores all the same (a failure there would cost the whole batch its runs)."""
    import json

    from agentotel_eval.collector.store.operations import SpanUpdate, update_spans
    from agentotel_eval.otlp.records import SpanRecord
    from agentotel_eval.scores import updated_span_json
    from agentotel_eval.store.opening import open_store
    from agentotel_eval.store.rows import spans_to_arrow

    con = open_store(tmp_path / "s.duckdb")
    span = SpanRecord(
        "ab" * 16,
        "cd" * 8,
        None,
        "invoke_agent a",
        start_ns=1_700_000_000_000_000_000,
        attributes={"gen_ai.input": "cut \ud83d here"},
    )
    con.register("s", spans_to_arrow([span]))
    con.execute("INSERT INTO spans BY NAME SELECT * FROM s")
    patch = {"agentotel.eval.tool_correctness.score": 1.0}
    update_spans(
        con,
        [
            SpanUpdate(
                span.trace_id,
                span.span_id,
                span.start_ns,
                json.dumps(patch),
                "[]",
                ("tool_correctness",),
                *updated_span_json(span, patch, [], ("tool_correctness",)),
            )
        ],
    )
    stored = json.loads(con.execute("SELECT attributes FROM spans").fetchone()[0])
    assert stored == {"gen_ai.input": "cut ? here", "agentotel.eval.tool_correctness.score": 1.0}


@pytest.mark.parametrize("sub_microsecond", [0, 499, 500, 999])
def test_a_judge_answer_finds_its_run_span_whatever_its_nanoseconds(tmp_path, sub_microsecond):
    # DuckDB keeps microseconds, rounded to the nearest: the span is looked up between the two around its time
    from agentotel_eval.collector.store.operations import SpanUpdate, WriteEvaluation
    from agentotel_eval.store.rows import EvaluationRow, evaluations_to_arrow

    start = 1_700_000_000_000_000_000 + sub_microsecond
    run = SpanRecord(
        "a" * 32,
        "b" * 16,
        None,
        "invoke_agent",
        start_ns=start,
        end_ns=start + 10,
        resource={"service.name": "svc"},
    )
    con = open_store(tmp_path / "j.duckdb")
    con.register("_s", spans_to_arrow([run]))
    con.execute("INSERT INTO spans BY NAME SELECT * FROM _s")
    row = EvaluationRow(run.trace_id, run.span_id, "tool_error_detection", score=1.0, created_at_ns=start)
    update = SpanUpdate(run.trace_id, run.span_id, start, "{}", "[]", ("tool_error_detection",))
    write = WriteEvaluation(evaluations_to_arrow([row]), row.key, None, span_update=update)
    write.apply(con)
    assert write.applied and write.span_resource == {"service.name": "svc"}
    con.close()


def test_each_commit_stamps_its_rows_with_one_rising_ingested_at(tmp_path):
    con = open_store(tmp_path / "i.duckdb")
    stamps: list[int] = []
    writer = StoreWriter(
        con,
        WriterSettings(flush_interval=0.0),
        on_commit=lambda commits: stamps.extend(c.ingested_ns for c in commits),
    )
    writer.start()
    try:
        logs = [LogRecord(T0, trace_id=f"{1:032x}", event_name="gen_ai.choice", body={"i": 0})]
        submit_spans(writer, make_spans(1)).wait(5)
        writer.submit(spans_to_arrow(make_spans(2)), logs_to_arrow(logs), payload=None).wait(5)
    finally:
        writer.shutdown()
    assert len(stamps) == 2 and stamps[0] < stamps[1] and all(s % 1000 == 0 for s in stamps)
    rows = con.execute(
        "SELECT trace_id, epoch_ns(ingested_at) FROM spans UNION ALL "
        "SELECT 'log', epoch_ns(ingested_at) FROM logs ORDER BY 1"
    ).fetchall()
    assert rows == [(f"{1:032x}", stamps[0])] * 3 + [(f"{2:032x}", stamps[1])] * 3 + [("log", stamps[1])]
    con.close()


def test_the_next_stamp_rises_even_if_the_clock_steps_back(tmp_path, monkeypatch):
    writer = StoreWriter(open_store(tmp_path / "c.duckdb"))
    clock = iter([5_000_000, 4_000_000])
    monkeypatch.setattr("agentotel_eval.collector.store.writer.time.time_ns", lambda: next(clock))
    first = writer._next_ingested_ns()
    writer._last_ingested_ns = first  # what a successful commit records
    assert (first, writer._next_ingested_ns()) == (5_000_000, 5_001_000)
