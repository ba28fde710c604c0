"""The assembler's pure core: when a trace is complete, late records, memory bounds. Time is passed in."""

from __future__ import annotations

from agentotel_eval.collector.assemble.trace_buffer import NO_TIME, Decided, DecisionCache, TraceBuffer
from agentotel_eval.collector.process.marks import log_marks, span_marks
from agentotel_eval.otlp.records import LogRecord, SpanRecord

AGENT = {"gen_ai.operation.name": "invoke_agent"}
TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}


def tid(n: int) -> str:
    return f"{n:032x}"


def span(trace: int, sid: int, parent: int | None, attrs: dict | None = None, start: int = 100) -> tuple:
    """The mark the buffer is given for a stored span with these fields."""
    return span_marks(
        [
            SpanRecord(
                tid(trace),
                f"{sid:016x}",
                None if parent is None else f"{parent:016x}",
                f"s{sid}",
                start_ns=start,
                end_ns=start + 10,
                attributes=attrs or {},
            )
        ]
    )[0]


def buffer(**kw) -> TraceBuffer:
    return TraceBuffer(**{"grace_period": 2.0, "max_wait": 30.0, **kw})


def ids(decided) -> list[str]:
    return [t.trace_id for t, _ in decided]


def test_a_trace_completes_when_its_root_arrived_and_it_was_quiet_for_the_grace_period():
    buf = buffer()
    buf.add([span(1, 2, 1, TOOL)], [], now=0.0)
    assert buf.due(now=5.0) == []  # quiet, but no run span yet
    buf.add([span(1, 1, None, AGENT)], [], now=6.0)
    assert buf.due(now=7.9) == []
    buf.add([span(1, 3, 1)], [], now=7.9)  # activity restarts the grace period
    assert buf.due(now=9.8) == []
    done = buf.due(now=10.0)
    assert ids(done) == [tid(1)] and done[0][1] == "quiet"
    assert buf.open == {} and buf.buffered == 0
    assert done[0][0].complete and len(done[0][0].span_ids) == 3


def test_a_run_span_whose_parent_is_elsewhere_completes_the_trace():
    buf = buffer()
    # The service's agent span has a remote parent (the caller's span is not exported here).
    buf.add([span(1, 5, 99, AGENT), span(1, 6, 5, TOOL)], [], now=0.0)
    assert ids(buf.due(now=2.0)) == [tid(1)]


def test_a_nested_agent_does_not_complete_the_trace_while_the_outer_run_goes_on():
    buf = buffer()
    # The sub-agent (run span 3) ended inside the tool span 2 of the outer agent 1, which is still running.
    buf.add([span(1, 3, 2, AGENT), span(1, 2, 1, TOOL)], [], now=0.0)
    assert buf.due(now=10.0) == []
    buf.add([span(1, 1, None, AGENT)], [], now=11.0)
    assert ids(buf.due(now=13.0)) == [tid(1)]


def test_a_trace_without_a_run_span_completes_after_max_wait():
    buf = buffer(max_wait=30.0)
    buf.add([span(1, 2, 1, TOOL)], [], now=0.0)
    buf.add([span(1, 3, 1, TOOL)], [], now=20.0)
    assert buf.due(now=29.0) == []
    done = buf.due(now=30.0)
    assert ids(done) == [tid(1)] and done[0][1] == "timeout" and not done[0][0].complete


def test_a_span_after_completion_is_late_and_reopens_the_trace_for_replacement():
    buf = buffer()
    buf.add([span(1, 1, None, AGENT, start=100)], [], now=0.0)
    assert ids(buf.due(now=3.0)) == [tid(1)]
    late = buf.add([span(1, 2, 1, TOOL, start=50)], [], now=4.0)
    assert list(late) == [tid(1)]
    assert late[tid(1)].lo_ns == 50 and late[tid(1)].hi_ns == 110  # widened to the late span
    assert buf.stats.late_records == 1
    assert tid(1) not in buf.open  # the caller re-reads the stored trace, then:
    trace = buf.reopen(
        late[tid(1)], [span(1, 1, None, AGENT, start=100), span(1, 2, 1, TOOL, start=50)], [], 4.0
    )
    assert trace.replace and trace.span_ids == {f"{1:016x}", f"{2:016x}"}
    assert buf.buffered == 2
    done = buf.due(now=6.0)
    assert ids(done) == [tid(1)] and done[0][0].replace


def test_spans_of_an_open_trace_are_buffered_once():
    buf = buffer()
    s = span(1, 1, None, AGENT)
    buf.add([s, s], [], now=0.0)
    buf.add([s], [], now=0.1)
    assert buf.buffered == 1


def test_logs_join_their_trace_and_an_evaluation_result_does_not_reopen_it():
    buf = buffer()
    choice = log_marks(
        [LogRecord(120, 0, tid(1), f"{1:016x}", event_name="gen_ai.choice", body={"index": 0})]
    )[0]
    buf.add([span(1, 1, None, AGENT)], [choice, log_marks([LogRecord(5, trace_id=None)])[0]], now=0.0)
    done = buf.due(now=2.0)
    assert done[0][0].logs == 1 and buf.buffered == 0
    assert (done[0][0].lo_ns, done[0][0].hi_ns) == (100, 120)  # the log's time is inside the trace's window
    score = log_marks([LogRecord(200, 0, tid(1), f"{1:016x}", event_name="gen_ai.evaluation.result")])[0]
    assert buf.add([], [score], now=3.0) == {}
    late_choice = log_marks([LogRecord(130, 0, tid(1), f"{1:016x}", event_name="gen_ai.choice")])[0]
    assert list(buf.add([], [late_choice], now=3.0)) == [tid(1)]


def test_over_the_trace_limit_the_least_recently_active_traces_complete_early():
    buf = buffer(max_open_traces=2)
    for n in range(1, 4):
        buf.add([span(n, 1, None, AGENT)], [], now=float(n))
    buf.add([span(1, 2, 1)], [], now=4.0)  # trace 1 is active again: trace 2 is now the oldest
    done = buf.due(now=4.0)
    assert [(t.trace_id, reason) for t, reason in done] == [(tid(2), "early")]
    assert buf.stats.completed == {"early": 1}


def test_over_the_record_limit_traces_complete_early_until_under_it():
    buf = buffer(max_buffered_records=5)
    buf.add([span(1, i, None if i == 1 else 1) for i in range(1, 4)], [], now=0.0)
    buf.add([span(2, i, None if i == 1 else 1) for i in range(1, 4)], [], now=1.0)
    done = buf.due(now=1.0)
    assert ids(done) == [tid(1)] and buf.buffered == 3


def test_the_decision_cache_is_bounded():
    buf = buffer(decision_cache_traces=2)
    for n in range(1, 4):
        buf.add([span(n, 1, None, AGENT)], [], now=0.0)
    buf.due(now=5.0)
    assert list(buf.decided) == [tid(2), tid(3)]
    assert buf.add([span(1, 2, 1)], [], now=6.0) == {}  # forgotten: a new open trace, not a late one


def test_the_decision_cache_keeps_at_most_its_capacity_and_at_least_the_latest_half():
    cache = DecisionCache(10)
    for n in range(1, 101):
        cache.add(Decided(tid(n), n, n + 1))
        assert len(cache) <= 10
        assert all(tid(m) in cache for m in range(max(1, n - 4), n + 1))  # the latest five, always
    assert tid(90) not in cache and cache.get(tid(90)) is None


def test_a_decision_cache_of_one_keeps_one():
    cache = DecisionCache(1)
    for n in range(1, 4):
        cache.add(Decided(tid(n), n, n))
        assert list(cache) == [tid(n)]


def test_the_decision_cache_gives_back_each_window_as_remembered():
    cache = DecisionCache(4)
    windows = [
        (1, 2),
        (NO_TIME, 0),
        (1_764_600_000_123_456_789, (1 << 64) - 1),
    ]  # nothing timed; the extremes
    for n, (lo, hi) in enumerate(windows):
        cache.add(Decided(tid(n), lo, hi))
    assert [cache[tid(n)] for n in range(3)] == [
        Decided(tid(n), lo, hi) for n, (lo, hi) in enumerate(windows)
    ]
    cache.add(Decided(tid(1), 5, 6))  # a refresh replaces the window
    assert cache[tid(1)] == Decided(tid(1), 5, 6) and len(cache) == 3


def test_a_refreshed_decision_outlives_older_ones():
    cache = DecisionCache(4)
    for n in (1, 2):
        cache.add(Decided(tid(n), n, n))
    cache.add(Decided(tid(3), 3, 3))  # the first two are the older generation now
    cache.add(Decided(tid(1), 1, 1))  # refreshed: moves to the newer one
    cache.add(Decided(tid(4), 4, 4))  # the newer is full: the older (only 2 now) is dropped
    assert list(cache) == [tid(3), tid(1), tid(4)] and tid(2) not in cache
    cache.pop(tid(1))
    assert tid(1) not in cache and len(cache) == 2


def test_remember_seeds_decisions_without_touching_open_traces():
    buf = buffer()
    buf.remember(Decided(tid(7), 1, 2))
    assert list(buf.add([span(7, 2, 1)], [], now=0.0)) == [tid(7)]


def test_drain_completes_everything():
    buf = buffer()
    buf.add([span(1, 2, 1), span(2, 1, None, AGENT)], [], now=0.0)
    done = buf.drain("shutdown")
    assert sorted(ids(done)) == [tid(1), tid(2)] and {r for _, r in done} == {"shutdown"}
    assert buf.buffered == 0 and not buf.open


def test_a_trace_keeps_the_commits_its_records_came_in_until_one_is_not_known():
    buf = buffer()
    buf.add([span(1, 2, 1, TOOL), span(2, 1, None, AGENT)], [], now=0.0, commit=1000)
    buf.add([span(1, 1, None, AGENT)], [], now=0.5, commit=2000)
    assert buf.open[tid(1)].commits == {1000, 2000} and buf.open[tid(2)].commits == {1000}
    buf.add([span(2, 2, 1, TOOL)], [], now=0.6)  # a commit reported without its ingested_at
    assert buf.open[tid(2)].commits is None  # read back by its time window
    buf.add([span(2, 3, 1, TOOL)], [], now=0.7, commit=3000)
    assert buf.open[tid(2)].commits is None


def test_a_reopened_trace_is_read_back_by_its_window():
    buf = buffer()
    buf.add([span(1, 1, None, AGENT)], [], now=0.0, commit=1000)
    assert ids(buf.due(now=5.0)) == [tid(1)]
    late = buf.add([span(1, 2, 1, TOOL, start=150)], [], now=6.0, commit=2000)
    trace = buf.reopen(late[tid(1)], [span(1, 1, None, AGENT), span(1, 2, 1, TOOL, start=150)], [], now=6.0)
    assert trace.commits is None and (trace.lo_ns, trace.hi_ns) == (100, 160)
