"""What crosses between the collector and its helpers: typed messages, records, Arrow tables,
over real channels."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentotel_eval.collector.process import wire
from agentotel_eval.frozen import FrozenDict
from agentotel_eval.otlp.records import LogRecord, SpanEvent, SpanLink, SpanRecord
from tests.support.fixture_traces import fixtures

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
attributes = st.dictionaries(st.text(max_size=12), values, max_size=6)


@st.composite
def spans(draw) -> SpanRecord:
    return SpanRecord(
        trace_id=draw(st.text("0123456789abcdef", min_size=32, max_size=32)),
        span_id=draw(st.text("0123456789abcdef", min_size=16, max_size=16)),
        parent_span_id=draw(st.none() | st.text("0123456789abcdef", min_size=16, max_size=16)),
        name=draw(st.text(max_size=20)),
        kind=draw(st.integers(0, 5)),
        start_ns=draw(st.integers(0, 2**63 - 1)),
        end_ns=draw(st.integers(0, 2**63 - 1)),
        status_code=draw(st.integers(0, 2)),
        status_message=draw(st.text(max_size=10)),
        attributes=draw(attributes),
        events=tuple(
            SpanEvent(n, t, a)
            for n, t, a in draw(
                st.lists(st.tuples(st.text(max_size=8), st.integers(0, 2**63 - 1), attributes), max_size=3)
            )
        ),
        links=tuple(SpanLink("a" * 32, "b" * 16, a) for a in draw(st.lists(attributes, max_size=2))),
        resource=draw(attributes),
        scope_name=draw(st.text(max_size=8)),
        flags=draw(st.integers(0, 2**32 - 1)),
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


def channels():
    """Both ends of a real socket pair, as the collector and a helper hold them."""
    import socket
    from multiprocessing.connection import Connection

    from agentotel_eval.collector.process.channel import Channel

    a, b = socket.socketpair()
    return Channel(Connection(a.detach())), Channel(Connection(b.detach()))


def across(message, frames=()):
    """A message and its frames through a real channel: what the other end reads."""
    ours, theirs = channels()
    try:
        ours.send(message, frames)
        return theirs.receive()
    finally:
        ours.close()
        theirs.close()


def test_calls_get_their_own_answers_whatever_the_order_and_late_ones_are_nobodys():
    import threading

    from agentotel_eval.collector.pipeline.worker import _Calls
    from agentotel_eval.collector.process.messages import LatestSpanTime, Reply

    helper, collector = channels()
    calls = _Calls(helper)
    first, second = calls.request(LatestSpanTime), calls.request(LatestSpanTime)
    asked = [collector.receive()[0] for _ in range(2)]
    assert asked == [LatestSpanTime(first), LatestSpanTime(second)]

    def answer() -> None:
        for call_id, value in (
            (second, "b"),
            (99, "nobody's"),
            (first, "a"),
        ):  # out of order, and a stray one
            collector.send(Reply(call_id, value))

    threading.Thread(target=answer, daemon=True).start()

    def receive() -> None:
        for _ in range(3):
            message, frames = helper.receive()
            calls.answered(message, frames)

    receiver = threading.Thread(target=receive, daemon=True)
    receiver.start()
    assert calls.result(first, "a") == "a" and calls.result(second, "b") == "b"
    receiver.join(5)
    assert not calls._waiting  # nothing kept for nobody
    calls.close()
    helper.close()
    collector.close()


def test_a_closed_link_fails_the_calls_waiting_on_it():
    from agentotel_eval.collector.pipeline.worker import RemoteCallError, _Calls
    from agentotel_eval.collector.process.messages import LatestSpanTime

    helper, collector = channels()
    calls = _Calls(helper)
    waiting = calls.request(LatestSpanTime)
    calls.close()
    with pytest.raises(RemoteCallError, match="closed"):
        calls.result(waiting, "latest_span_time")
    with pytest.raises(RemoteCallError, match="closed"):
        calls.request(LatestSpanTime)
    helper.close()
    collector.close()


def test_the_next_read_is_asked_for_before_this_one_is_handed_over():
    import threading

    import pyarrow as pa

    from agentotel_eval.collector.pipeline.worker import RemoteReader, _Calls
    from agentotel_eval.collector.process.messages import CallFailed, ReadTraces, Reply
    from agentotel_eval.store.rows import LOG_SELECT, SPAN_SELECT

    helper, collector = channels()
    calls = _Calls(helper)
    reader = RemoteReader(calls)
    empty_spans = pa.table({c.strip(): pa.array([], pa.string()) for c in SPAN_SELECT.split(",")})
    empty_logs = pa.table({c.strip(): pa.array([], pa.string()) for c in LOG_SELECT.split(",")})
    tables = wire.ipc_frames(empty_spans, empty_logs)
    asked: list = []

    def serve() -> None:
        """The collector's side: the first read is answered only once the second is asked for (it must be,
        before the first is handed over); the second fails."""
        asked.append(collector.receive()[0])
        if collector._conn.poll(10):
            asked.append(collector.receive()[0])
        collector.send(Reply(asked[0].call_id, None), tables)
        collector.send(CallFailed(asked[1].call_id, "the query failed"))
        asked.append(collector.receive()[0])
        collector.send(Reply(asked[2].call_id, None), tables)

    def receive() -> None:
        for _ in range(3):
            calls.answered(*helper.receive())

    threading.Thread(target=serve, daemon=True).start()
    threading.Thread(target=receive, daemon=True).start()
    reads = iter(
        reader.load_many(
            [(["t1"], 1, 2, None, 0), (["t2"], 3, 4, (7000,), 1), (["t3"], 5, 6, None, 2)], whole=False
        )
    )
    read, stored = next(reads)
    assert read[4] == 0 and stored == {"t1": type(stored["t1"])([], [])}
    assert [type(m) for m in asked[:2]] == [ReadTraces, ReadTraces]
    assert [m.commits for m in asked[:2]] == [None, [7000]] and asked[0].whole is False
    read, failed = next(reads)
    assert read[4] == 1 and "the query failed" in str(failed)  # a failed read is handed over, not raised
    read, stored = next(reads)
    assert read[4] == 2 and list(stored) == ["t3"]
    assert next(reads, None) is None
    helper.close()
    collector.close()


def test_a_message_crosses_typed_and_what_is_not_one_is_refused():
    import marshal

    from agentotel_eval.collector.process.messages import Kind, Marks, Stop, decode, encode

    spans = [("a" * 32, "b" * 16, None, 1, 2, False, True)]
    logs = [("a" * 32, 3, False), (None, 4, True)]
    message, frames = across(Marks(spans, logs, 1_700_000_000_000_001_000))
    assert message == Marks(spans, logs, 1_700_000_000_000_001_000) and frames == []
    assert message.commit == 1_700_000_000_000_001_000 and type(message) is Marks
    assert across(Stop()) == (Stop(), [])
    with pytest.raises(ValueError, match="not a message"):
        decode(b"not marshal at all")
    with pytest.raises(ValueError, match="not a message"):
        decode(marshal.dumps((999, 0)))  # no such kind
    with pytest.raises(ValueError, match="not a message"):
        decode(marshal.dumps((int(Kind.STOP), 0, "a field Stop has not")))
    with pytest.raises(ValueError):
        encode(Marks([object()], [], None))  # marshal refuses it: an error here, before anything is sent


def test_a_value_marshal_refuses_is_an_error_and_the_channel_goes_on():
    from agentotel_eval.collector.process.messages import Marks, Stop

    ours, theirs = channels()
    with pytest.raises(ValueError):
        ours.send(Marks([object()], [], None))
    ours.send(Stop())
    assert theirs.receive() == (Stop(), [])
    ours.close()
    theirs.close()


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


def test_a_decoded_request_crosses_as_one_message_and_its_rows():
    from agentotel_eval.collector.decode.batch import decode_request, from_message, to_message

    for fx in fixtures()[:8]:
        batch = decode_request("traces", "protobuf", fx.body("protobuf"), keep_spans=True)
        message, frames = across(*to_message(7, batch))
        again = from_message(message, frames)
        assert message.request_id == 7 and len(frames) == 1
        assert again.rows.equals(batch.rows) and again.marks == batch.marks and again.records == batch.records
        logs = fx.logs_body("protobuf")
        if logs:
            batch = decode_request("logs", "protobuf", logs)
            again = from_message(*across(*to_message(8, batch)))
            assert again.rows.equals(batch.rows) and again.records == batch.records
    nothing = decode_request("traces", "json", b'{"resourceSpans": []}')
    assert from_message(*across(*to_message(9, nothing))).rows is None


def test_run_rows_cross_as_frames_and_come_back_equal():
    import dataclasses

    from agentotel_eval.collector.process.completed import CompletedTrace
    from agentotel_eval.collector.store.operations import SpanUpdate, TraceWindow, span_values_table
    from agentotel_eval.collector.store.runs import RunRows, build_run_rows, rows_from, rows_message
    from agentotel_eval.reconstruct import reconstruct

    traces = []
    for fx in fixtures()[:6]:
        spans = sorted(fx.spans("protobuf"), key=lambda s: s.start_ns)
        traces.append(
            CompletedTrace(
                spans[0].trace_id,
                tuple(spans),
                (),
                tuple(reconstruct(spans)),
                "quiet",
                True,
                False,
                spans[0].start_ns,
                max(s.end_ns for s in spans),
            )
        )
    rows = build_run_rows(traces, 123)
    whole = SpanUpdate("a" * 32, "b" * 16, 5, '{"k":1}', "[]", ("m",), '{"x":1}', "[]")
    patch = SpanUpdate("c" * 32, "d" * 16, None, '{"k":null}', "[]", ("m", "n"))
    rows = dataclasses.replace(
        rows,
        replace=(TraceWindow("e" * 32, 1, 2),),
        span_updates=(patch,),
        span_values=span_values_table([whole]),
    )

    def sent(r: RunRows) -> RunRows:
        return rows_from(*across(*rows_message(r)))

    got = sent(rows)
    assert got.runs.equals(rows.runs) and got.calls.equals(rows.calls)
    assert got.replace == rows.replace and got.span_updates == (patch,)
    assert got.span_values.to_pylist() == rows.span_values.to_pylist() and got.evaluations is None
    bare = sent(RunRows(rows.runs.slice(0, 0), rows.calls.slice(0, 0), (), None, ()))
    assert bare.runs.num_rows == 0 and bare.span_values is None and bare.span_updates == ()
