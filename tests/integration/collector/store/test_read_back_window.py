"""Completed traces are read back from the database by the commits that stored their records
(``ingested_at``), or, when those are not known (a trace re-opened by a late span, or recovered at startup),
by a time window: no stored record may be missed either way, whatever times an exporter sent (an unset end, an
end before the start, a start of 0, a log record with no time at all)."""

from __future__ import annotations

import time

import pytest

from agentotel_eval.otlp.encode import encode_logs, encode_traces
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from tests.support.collector_harness import post_otlp, running_collector, wait_until

S = 10**9


def _agent(trace_id: str, span_id: str, start: int, end: int, parent: str | None = None) -> SpanRecord:
    return SpanRecord(
        trace_id,
        span_id,
        parent,
        "invoke_agent helper",
        start_ns=start,
        end_ns=end,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"},
    )


def _tool(trace_id: str, span_id: str, parent: str, start: int, end: int, name: str) -> SpanRecord:
    return SpanRecord(
        trace_id,
        span_id,
        parent,
        f"execute_tool {name}",
        start_ns=start,
        end_ns=end,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name},
    )


def _rows(collector, sql: str) -> list:
    return collector.query(sql)["rows"]


@pytest.mark.parametrize("process", [True, False], ids=["assembler-process", "assembler-thread"])
def test_spans_with_odd_times_are_part_of_their_runs(tmp_path, process):
    t0 = time.time_ns() - 60 * S
    traces = {
        # a root whose end is unset: it starts after its tool's end
        "a" * 32: [
            _tool("a" * 32, "a" * 15 + "2", "a" * 16, t0 + 1000, t0 + 2000, "lookup"),
            _agent("a" * 32, "a" * 16, t0 + 5000, 0),
        ],
        # a tool that starts after every end in the trace, with an end before its start (clock skew)
        "b" * 32: [
            _agent("b" * 32, "b" * 16, t0, t0 + 3000),
            _tool("b" * 32, "b" * 15 + "2", "b" * 16, t0 + 9000, t0 + 10, "late_tool"),
        ],
        # a root with no start time at all
        "c" * 32: [
            _tool("c" * 32, "c" * 15 + "2", "c" * 16, t0 + 1000, t0 + 2000, "lookup"),
            _agent("c" * 32, "c" * 16, 0, t0 + 3000),
        ],
    }
    with running_collector(tmp_path / "w.duckdb", assembler={"process": process}) as c:
        for spans in traces.values():
            assert (
                post_otlp(c.http_endpoint, "traces", encode_traces(spans).SerializeToString()).status == 200
            )
        wait_until(lambda: _rows(c, "SELECT count(*) FROM agent_runs") == [[3]], what="three runs")
        runs = dict(_rows(c, "SELECT trace_id, span_id FROM agent_runs"))
        assert runs == {
            tid: tid[0] * 16 for tid in traces
        }  # each run is its root span, none rebuilt without it
        calls = sorted(map(tuple, _rows(c, "SELECT trace_id, tool_name FROM tool_calls")))
        assert calls == [("a" * 32, "lookup"), ("b" * 32, "late_tool"), ("c" * 32, "lookup")]


def test_a_log_record_with_no_time_is_stored_once_and_read_back(tmp_path):
    from agentotel_eval.collector.store.reader import TraceReader

    trace_id, root = "d" * 32, "d" * 16
    t0 = time.time_ns() - 60 * S
    log = LogRecord(0, 0, trace_id, root, event_name="gen_ai.user.message", body={"content": "hello"})
    body = encode_logs([log]).SerializeToString()
    with running_collector(tmp_path / "w.duckdb", assembler={"process": False}) as c:
        assert post_otlp(c.http_endpoint, "logs", body).status == 200
        assert post_otlp(c.http_endpoint, "logs", body).status == 200  # an exporter's retry
        spans = [_agent(trace_id, root, t0, t0 + 3000)]
        assert post_otlp(c.http_endpoint, "traces", encode_traces(spans).SerializeToString()).status == 200
        wait_until(lambda: _rows(c, "SELECT count(*) FROM agent_runs") == [[1]], what="the run")
        assert _rows(c, "SELECT count(*) FROM logs") == [[1]]
        # the window the assembler read the trace by, as it remembers it: the log record lies in it
        window = c.assembler.assembler.buffer.decided[trace_id]
        assert (
            window.lo_ns == t0
        )  # the timeless record is looked up at the epoch, not by a window back to 1970
        stored = TraceReader(c._cursor).load([trace_id], window.lo_ns, window.hi_ns, whole=False)
        assert [r.body for r in stored[trace_id].logs] == [{"content": "hello"}]
        assert [s.span_id for s in stored[trace_id].spans] == [root]


def test_a_run_whose_root_has_no_start_time_is_replaced_not_duplicated_when_a_late_span_rebuilds_it(tmp_path):
    t0 = time.time_ns() - 60 * S
    trace_id, root = "e" * 32, "e" * 16
    first = [
        _tool(trace_id, "e" * 15 + "2", root, t0 + 1000, t0 + 2000, "lookup"),
        _agent(trace_id, root, 0, t0 + 3000),
    ]
    with running_collector(tmp_path / "w.duckdb") as c:
        assert post_otlp(c.http_endpoint, "traces", encode_traces(first).SerializeToString()).status == 200
        wait_until(lambda: _rows(c, "SELECT count(*) FROM tool_calls") == [[1]], what="the first run")
        late = [_tool(trace_id, "e" * 15 + "3", root, t0 + 2500, t0 + 2600, "book")]
        assert post_otlp(c.http_endpoint, "traces", encode_traces(late).SerializeToString()).status == 200
        wait_until(lambda: _rows(c, "SELECT count(*) FROM tool_calls") == [[2]], what="the rebuilt run")
        assert _rows(c, "SELECT count(*) FROM agent_runs") == [[1]]
        assert sorted(r[0] for r in _rows(c, "SELECT tool_name FROM tool_calls")) == ["book", "lookup"]


@pytest.mark.parametrize("process", [True, False], ids=["assembler-process", "assembler-thread"])
def test_a_long_trace_sent_in_two_exports_is_read_back_by_its_two_commits(tmp_path, process):
    """An agent that ran for two minutes: its spans' time window holds everything stored meanwhile; the read
    names the two commits instead."""
    now = time.time_ns()
    trace_id, root = "f" * 32, "f" * 16
    first = [_tool(trace_id, "f" * 15 + "1", root, now - 110 * S, now - 100 * S, "search")]
    second = [
        _tool(trace_id, "f" * 15 + "2", root, now - 20 * S, now - 10 * S, "book"),
        _agent(trace_id, root, now - 120 * S, now),
    ]
    other = [_agent("9" * 32, "9" * 16, now - 60 * S, now - 59 * S)]  # stored in between, inside the window
    with running_collector(tmp_path / "l.duckdb", assembler={"process": process, "grace_period": 0.5}) as c:
        reader = c.assembler.reader
        asked: list = []
        load_tables = reader.load_tables

        def spy(ids, lo, hi, **kw):
            asked.append((list(ids), kw.get("commits")))
            return load_tables(ids, lo, hi, **kw)

        reader.load_tables = spy
        for spans in (first, other, second):
            assert (
                post_otlp(c.http_endpoint, "traces", encode_traces(spans).SerializeToString()).status == 200
            )
        wait_until(lambda: _rows(c, "SELECT count(*) FROM agent_runs") == [[2]], what="the two runs")
        assert [
            r[0]
            for r in _rows(c, f"SELECT tool_name FROM tool_calls WHERE trace_id = '{trace_id}' ORDER BY seq")
        ] == ["search", "book"]

        def stamps(ids):
            listed = ", ".join(f"'{i}'" for i in ids)
            return sorted(
                r[0]
                for r in _rows(
                    c, f"SELECT DISTINCT epoch_ns(ingested_at) FROM spans WHERE trace_id IN ({listed})"
                )
            )

        assert len(stamps([trace_id])) == 2
        (read,) = [(ids, commits) for ids, commits in asked if trace_id in ids]
        assert sorted(read[1]) == stamps(read[0])  # the commits of the traces it reads, and no time window
