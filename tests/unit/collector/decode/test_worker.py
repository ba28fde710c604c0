"""A decode worker's loop (``worker.serve``) over a real socket pair: every request answered in order, a bad
one failing alone with its reason, and the ways it ends."""

from __future__ import annotations

import multiprocessing
import pickle
import threading
from collections.abc import Iterator

import pytest

from agentotel_eval.collector.decode.batch import decode_request, from_message
from agentotel_eval.collector.decode.worker import serve
from agentotel_eval.collector.process.channel import Channel
from agentotel_eval.collector.process.messages import (
    BAD_REQUEST,
    OVER_LIMIT,
    Decode,
    Decoded,
    DecodeFailed,
    Ready,
    Setup,
    Stop,
    Stopped,
)
from agentotel_eval.otlp.encode import encode_traces
from agentotel_eval.otlp.limits import Limits
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.redaction import RedactionSettings

SECRET = "sk-abcdefghijklmnopqrstuvwx12345"


def _body(n: int) -> bytes:
    return encode_traces(
        [
            SpanRecord(
                f"{1:032x}",
                f"{i + 1:016x}",
                None,
                f"s{i}",
                start_ns=1,
                end_ns=2,
                attributes={"api_key": SECRET},
            )
            for i in range(n)
        ]
    ).SerializeToString()


class Worker:
    """``serve`` on a thread, and the collector's end of its channel."""

    def __init__(self, settings: bytes = b"") -> None:
        ours, theirs = multiprocessing.Pipe()
        self.channel, self._theirs = Channel(ours), Channel(theirs)
        self.thread = threading.Thread(
            target=serve, args=(self._theirs, Setup(0, (0, False), 0, settings)), daemon=True
        )
        self.thread.start()
        ready, _ = self.channel.receive()
        assert isinstance(ready, Ready)

    def decode(self, request_id: int, body: bytes, keep: bool = False) -> tuple[object, list[bytes]]:
        self.channel.send(Decode(request_id, "traces", "protobuf", keep), [body])
        return self.channel.receive()

    def close(self) -> None:
        self.channel.close()
        self.thread.join(5)
        self._theirs.close()


@pytest.fixture
def worker() -> Iterator[Worker]:
    w = Worker()
    yield w
    w.close()


def test_requests_are_answered_in_order_as_they_decode_here(worker):
    for request_id, n in ((1, 3), (2, 1)):
        reply, frames = worker.decode(request_id, _body(n), keep=True)
        assert isinstance(reply, Decoded) and reply.request_id == request_id
        got, want = (
            from_message(reply, frames),
            decode_request("traces", "protobuf", _body(n), keep_spans=True),
        )
        assert got.rows.equals(want.rows) and got.marks == want.marks and got.records == want.records


def test_a_bad_body_fails_alone_and_the_worker_goes_on(worker):
    reply, frames = worker.decode(1, b"\xff\xff not protobuf")
    assert isinstance(reply, DecodeFailed) and reply.request_id == 1 and reply.reason == BAD_REQUEST
    assert frames == []
    reply, _ = worker.decode(2, _body(2))
    assert isinstance(reply, Decoded) and reply.request_id == 2


def test_the_settings_it_is_given_apply_limits_and_redaction():
    w = Worker(pickle.dumps(((), Limits(max_spans_per_request=2), RedactionSettings(enabled=True))))
    try:
        reply, _ = w.decode(1, _body(3))
        assert isinstance(reply, DecodeFailed) and reply.reason == OVER_LIMIT
        reply, frames = w.decode(2, _body(2), keep=True)
        assert SECRET not in str(from_message(reply, frames).records)
    finally:
        w.close()


def test_an_unexpected_message_is_ignored(worker):
    worker.channel.send(Stopped())  # not a request
    worker.channel.send(Decode(1, "traces", "protobuf", False), [_body(1), _body(1)])  # two frames, not one
    reply, _ = worker.decode(2, _body(1))
    assert isinstance(reply, Decoded) and reply.request_id == 2  # the next request is the first answered


def test_stop_is_answered_and_ends_the_loop(worker):
    worker.channel.send(Stop())
    reply, _ = worker.channel.receive()
    assert isinstance(reply, Stopped)
    worker.thread.join(5)
    assert not worker.thread.is_alive()


def test_the_collector_gone_ends_the_loop(worker):
    worker.channel.close()
    worker.thread.join(5)
    assert not worker.thread.is_alive()
