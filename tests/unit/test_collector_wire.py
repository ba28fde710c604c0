"""Records cross to the assembler process unchanged, whatever values their attributes hold."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentotel_eval.frozen import FrozenDict
from agentotel_eval.otlp.records import LogRecord, SpanEvent, SpanLink, SpanRecord
from collector.process import frames as wire
from tests.fixture_traces import fixtures

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False),
                    st.text(max_size=20), st.binary(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)
attributes = st.dictionaries(st.text(max_size=12), values, max_size=6)


@st.composite
def spans(draw) -> SpanRecord:
    return SpanRecord(
        trace_id=draw(st.text("0123456789abcdef", min_size=32, max_size=32)),
        span_id=draw(st.text("0123456789abcdef", min_size=16, max_size=16)),
        parent_span_id=draw(st.none() | st.text("0123456789abcdef", min_size=16, max_size=16)),
        name=draw(st.text(max_size=20)), kind=draw(st.integers(0, 5)), start_ns=draw(st.integers(0, 2**63 - 1)),
        end_ns=draw(st.integers(0, 2**63 - 1)), status_code=draw(st.integers(0, 2)),
        status_message=draw(st.text(max_size=10)), attributes=draw(attributes),
        events=tuple(SpanEvent(n, t, a) for n, t, a in draw(st.lists(
            st.tuples(st.text(max_size=8), st.integers(0, 2**63 - 1), attributes), max_size=3))),
        links=tuple(SpanLink("a" * 32, "b" * 16, a) for a in draw(st.lists(attributes, max_size=2))),
        resource=draw(attributes), scope_name=draw(st.text(max_size=8)), flags=draw(st.integers(0, 2**32 - 1)),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(spans(), max_size=3))
def test_any_spans_round_trip(records):
    assert wire.loads(wire.dumps(records)) == (records, [])


def test_every_fixture_round_trips_with_its_logs():
    for fx in fixtures():
        spans_, logs = fx.spans("protobuf"), fx.logs("protobuf")
        assert wire.loads(wire.dumps(spans_, logs)) == (spans_, logs)


def test_values_marshal_refuses_still_cross_by_pickle():
    frozen = SpanRecord("a" * 32, "b" * 16, None, "op", attributes=FrozenDict({"k": [1, 2]}))
    log = LogRecord(5, body=FrozenDict({"x": 1}), trace_id="a" * 32)
    payload = wire.dumps([frozen], [log])
    assert payload[:1] == b"P"
    assert wire.loads(payload) == ([frozen], [log])
    assert wire.dumps([SpanRecord("a" * 32, "b" * 16, None, "op")])[:1] == b"M"  # the common case stays fast


def test_a_foreign_payload_is_a_clear_error():
    with pytest.raises(ValueError, match="not a records message"):
        wire.loads(b"Xgarbage")


class RecordingConn:
    """Stands in for the worker's connection: keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list = []

    def send(self, message) -> None:
        self.sent.append(message)


def test_a_late_answer_to_an_earlier_call_is_not_taken_for_the_next_one():
    from collector.assemble.worker import _Link

    link = _Link(RecordingConn())  # type: ignore[arg-type]
    link.replies.put((0, (True, "the answer to a call that timed out")))
    link.replies.put((1, (True, "mine")))
    assert link.call("latest_span_time") == "mine"
    assert link.conn.sent == [("call", 1, "latest_span_time", ())]


def test_outstanding_calls_each_get_their_own_answer_whatever_the_order():
    from collector.assemble.worker import _Link

    link = _Link(RecordingConn())  # type: ignore[arg-type]
    first, second = link.request("load", "a"), link.request("load", "b")
    link.replies.put((second, (True, "b's rows")))  # answered out of order
    link.replies.put((99, (True, "nobody's")))  # a late answer to a call that timed out
    link.replies.put((first, (True, "a's rows")))
    assert link.result(first, "load") == "a's rows"
    assert link.result(second, "load") == "b's rows"
    assert not link._early and not link._outstanding  # nothing kept for nobody


def test_the_next_read_is_asked_for_before_this_one_is_handed_over():
    import pyarrow as pa

    from agentotel_eval.store.rows import LOG_SELECT, SPAN_SELECT
    from collector.assemble.worker import RemoteReader, _Link

    conn = RecordingConn()
    link = _Link(conn)  # type: ignore[arg-type]
    reader = RemoteReader(link)
    empty_spans = pa.table({c.strip(): pa.array([], pa.string()) for c in SPAN_SELECT.split(",")})
    empty_logs = pa.table({c.strip(): pa.array([], pa.string()) for c in LOG_SELECT.split(",")})
    frames = [bytes(memoryview(f)) if not isinstance(f, bytes) else f for f in wire.ipc_frames(empty_spans, empty_logs)]
    reads = iter(reader.load_many([(["t1"], 1, 2, None, 0), (["t2"], 3, 4, (7000,), 1), (["t3"], 5, 6, None, 2)],
                                  whole=False))
    link.replies.put((1, (True, frames)))
    link.replies.put((2, (False, "the query failed")))
    link.replies.put((3, (True, frames)))
    read, stored = next(reads)
    assert read[4] == 0 and stored == {"t1": type(stored["t1"])([], [])}
    assert [m[1] for m in conn.sent] == [1, 2]  # the second read was asked for before the first came back
    assert [m[3][4] for m in conn.sent] == [None, (7000,)]  # each with its commits (None: by its window)
    read, failed = next(reads)
    assert read[4] == 1 and "the query failed" in str(failed)  # a failed read is handed over, not raised
    read, stored = next(reads)
    assert read[4] == 2 and list(stored) == ["t3"]
    assert next(reads, None) is None


def test_tables_cross_as_frames_and_come_back_equal():
    import pyarrow as pa

    spans = pa.table({"trace_id": ["a" * 32, "b" * 32], "attributes": ['{"k":1}', None], "n": [1, 2]})
    chunked = pa.concat_tables([spans, spans.slice(0, 1)])  # several batches, as DuckDB returns them
    empty = spans.schema.empty_table()
    frames = wire.ipc_frames(chunked, empty)
    sent = [bytes(memoryview(f)) if not isinstance(f, bytes) else f for f in frames]  # what the pipe carries
    got = wire.tables_from_frames(sent)
    assert [t.to_pylist() for t in got] == [chunked.to_pylist(), []]
    assert got[1].schema == empty.schema


def test_a_decoded_request_crosses_in_two_frames():
    from collector.decode.batch import decode_request, from_frames, to_frames

    for fx in fixtures()[:8]:
        batch = decode_request("traces", "protobuf", fx.body("protobuf"), keep_spans=True)
        head, rows = to_frames(batch)
        again = from_frames(head, bytes(memoryview(rows)))
        assert again.rows.equals(batch.rows) and again.marks == batch.marks and again.records == batch.records
        logs = fx.logs_body("protobuf")
        if logs:
            batch = decode_request("logs", "protobuf", logs)
            again = from_frames(*to_frames(batch))
            assert again.rows.equals(batch.rows) and again.records == batch.records
    nothing = decode_request("traces", "json", b'{"resourceSpans": []}')
    assert from_frames(*to_frames(nothing)).rows is None


def test_run_rows_cross_as_frames_and_come_back_equal():
    import dataclasses

    from agentotel_eval.reconstruct import reconstruct
    from collector.assemble.completed import CompletedTrace
    from collector.store.operations import SpanUpdate, TraceWindow, span_values_table
    from collector.store.runs import RunRows, build_run_rows

    traces = []
    for fx in fixtures()[:6]:
        spans = sorted(fx.spans("protobuf"), key=lambda s: s.start_ns)
        traces.append(CompletedTrace(spans[0].trace_id, tuple(spans), (), tuple(reconstruct(spans)), "quiet", True,
                                     False, spans[0].start_ns, max(s.end_ns for s in spans)))
    rows = build_run_rows(traces, 123)
    whole = SpanUpdate("a" * 32, "b" * 16, 5, '{"k":1}', "[]", ("m",), '{"x":1}', "[]")
    patch = SpanUpdate("c" * 32, "d" * 16, None, '{"k":null}', "[]", ("m", "n"))
    rows = dataclasses.replace(rows, replace=(TraceWindow("e" * 32, 1, 2),), span_updates=(patch,),
                               span_values=span_values_table([whole]))

    def across(r: RunRows) -> RunRows:
        head, frames = wire.run_rows_frames(r)
        return wire.run_rows_from(head, [bytes(memoryview(f)) if not isinstance(f, bytes) else f for f in frames])

    got = across(rows)
    assert got.runs.equals(rows.runs) and got.calls.equals(rows.calls)
    assert got.replace == rows.replace and got.span_updates == (patch,)
    assert got.span_values.to_pylist() == rows.span_values.to_pylist() and got.evaluations is None
    bare = across(RunRows(rows.runs.slice(0, 0), rows.calls.slice(0, 0), (), None, ()))
    assert bare.runs.num_rows == 0 and bare.span_values is None and bare.span_updates == ()


def test_marks_cross_with_their_commit():
    spans = [("a" * 32, "b" * 16, None, 1, 2, False, True)]
    logs = [("a" * 32, 3, False), (None, 4, True)]
    assert wire.load_marks(wire.dump_marks(spans, logs, 1_700_000_000_000_001_000)) == (
        spans, logs, 1_700_000_000_000_001_000)
    assert wire.load_marks(wire.dump_marks(spans, [], None)) == (spans, [], None)
