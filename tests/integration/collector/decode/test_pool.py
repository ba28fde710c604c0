"""The decode workers: requests decoded in another process come back as they would be decoded here; a worker
that dies costs only the requests it held (answered as retryable) and is replaced."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from agentotel_eval.collector.decode.batch import decode_request
from agentotel_eval.collector.decode.pool import DecodePool
from agentotel_eval.collector.process.ingest_batch import DecodeUnavailable
from agentotel_eval.otlp import DecodeError
from tests.support.collector_harness import wait_until
from tests.support.fixture_traces import fixtures


@pytest.fixture()
def pool():
    p = DecodePool(2)
    p.start()
    yield p
    p.shutdown()


def test_requests_decode_in_the_workers_as_they_would_here(pool):
    for fx in fixtures()[:10]:
        body = fx.body("protobuf")
        got, want = pool.decode("traces", "protobuf", body), decode_request("traces", "protobuf", body)
        assert got.rows.equals(want.rows) and got.marks == want.marks and got.records is None
        json_body = fx.body("json")
        assert pool.decode("traces", "json", json_body).rows.equals(
            decode_request("traces", "json", json_body).rows
        )
    assert pool.stats.requests == 20


def test_concurrent_requests_are_answered_each_with_its_own_rows(pool):
    bodies = [fx.body("protobuf") for fx in fixtures()[:12]]
    results: dict[int, object] = {}

    def send(i: int) -> None:
        results[i] = pool.decode("traces", "protobuf", bodies[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for i, body in enumerate(bodies):
        assert results[i].marks == decode_request("traces", "protobuf", body).marks


def test_an_undecodable_body_is_a_decode_error_and_the_worker_goes_on(pool):
    with pytest.raises(DecodeError):
        pool.decode("traces", "protobuf", b"\xff\xff not protobuf")
    assert pool.decode("traces", "protobuf", fixtures()[0].body("protobuf")).size > 0


def test_a_worker_that_dies_is_replaced_and_its_request_answered_as_retryable():
    pool = DecodePool(1)
    pool.start()
    try:
        (pid,) = pool.pids
        os.kill(pid, signal.SIGSTOP)  # it takes the next request and never answers
        outcome: dict[str, object] = {}

        def send() -> None:
            try:
                pool.decode("traces", "protobuf", fixtures()[0].body("protobuf"), timeout=30)
            except DecodeUnavailable as exc:
                outcome["error"] = exc

        sender = threading.Thread(target=send)
        sender.start()
        wait_until(lambda: pool.stats.requests == 1, what="the request to be in the worker's hands")
        os.kill(pid, signal.SIGKILL)
        sender.join(30)
        assert "exited" in str(outcome["error"])  # retryable: the exporter sends it again
        wait_until(lambda: pool.pids and pool.pids != [pid], timeout=30, what="a new worker")
        assert pool.decode("traces", "protobuf", fixtures()[1].body("protobuf")).size > 0
        assert pool.stats.restarts == 1 and pool.stats.failed_in_worker == 1
    finally:
        pool.shutdown()


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # exited, not yet reaped
    except OSError:
        return True


def test_a_worker_stuck_past_the_timeout_is_replaced():
    pool = DecodePool(1)
    pool.start()
    try:
        (pid,) = pool.pids
        os.kill(pid, signal.SIGSTOP)  # stuck: never answers
        with pytest.raises(DecodeUnavailable, match="within"):
            pool.decode("traces", "protobuf", fixtures()[0].body("protobuf"), timeout=0.5)
        wait_until(lambda: pool.pids and pool.pids != [pid], timeout=30, what="a new worker")
        assert pool.decode("traces", "protobuf", fixtures()[1].body("protobuf")).size > 0
    finally:
        pool.shutdown()


def test_shutdown_stops_every_worker(pool):
    pids = pool.pids
    pool.shutdown()
    for pid in pids:
        wait_until(lambda pid=pid: _gone(pid), timeout=30, what=f"worker {pid} to exit")
    with pytest.raises(DecodeUnavailable, match="stopping"):
        pool.decode("traces", "protobuf", fixtures()[0].body("protobuf"))


def test_workers_run_at_the_nice_value_they_are_given():
    pool = DecodePool(1, nice=7)
    pool.start()
    try:
        (pid,) = pool.pids
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(os.getpriority(os.PRIO_PROCESS, 0) + 7, 19)
    finally:
        pool.shutdown()


def test_a_worker_that_stops_reading_costs_a_retryable_answer_within_the_timeout_not_a_hang():
    # A body larger than the socket's buffer blocks its sender until the worker reads it; a frozen worker
    # never does. The watchdog stops it by the request's deadline, the callers queued behind get retryable
    # answers, and the pool goes on with a new worker.
    pool = DecodePool(1)
    pool.start()
    try:
        (pid,) = pool.pids
        os.kill(pid, signal.SIGSTOP)
        big = os.urandom(4 * 1024 * 1024)
        small = fixtures()[0].body("protobuf")
        outcomes: dict[str, BaseException | None] = {}
        started = time.monotonic()

        def call(name: str, body: bytes, timeout: float) -> None:
            try:
                pool.decode("traces", "protobuf", body, timeout=timeout)
                outcomes[name] = None
            except BaseException as exc:  # the test looks at what it was
                outcomes[name] = exc

        threads = [threading.Thread(target=call, args=("big", big, 1.0))]
        threads[0].start()
        wait_until(lambda: pool.stats.requests == 1, what="the big request to be first in line")
        threads.append(threading.Thread(target=call, args=("queued", small, 30.0)))
        threads[1].start()
        for t in threads:
            t.join(15)
        assert not any(t.is_alive() for t in threads), "a decode call hung"
        assert time.monotonic() - started < 10
        assert all(isinstance(e, DecodeUnavailable) for e in outcomes.values()), outcomes
        wait_until(lambda: pool.pids and pool.pids != [pid], timeout=30, what="a new worker")
        body = fixtures()[1].body("protobuf")
        assert (
            pool.decode("traces", "protobuf", body).marks == decode_request("traces", "protobuf", body).marks
        )
    finally:
        t0 = time.monotonic()
        pool.shutdown(timeout=1.0)
        assert time.monotonic() - t0 < 10


def test_a_busy_worker_with_requests_queued_behind_each_other_is_not_taken_for_a_stuck_one():
    # Each request's timeout is four decodes; six at once wait for up to five decodes ahead of theirs. Waiting
    # for one's turn is not the worker being stuck: callers may give up at their deadline, the worker stays.
    from agentotel_eval.otlp.encode import encode_traces
    from agentotel_eval.otlp.records import SpanRecord

    spans = [
        SpanRecord(
            f"{i % 50 + 1:032x}",
            f"{i + 1:016x}",
            None,
            "s",
            start_ns=10**18 + i,
            end_ns=10**18 + i + 5,
            attributes={"k": "v" * 20, "n": i},
        )
        for i in range(15_000)
    ]
    body = encode_traces(spans).SerializeToString()  # ~1.5 MB: more than a socket buffer holds
    pool = DecodePool(1)
    pool.start()
    try:
        started = time.monotonic()
        pool.decode("traces", "protobuf", body, timeout=60)
        timeout = max(time.monotonic() - started, 0.05) * 4
        (pid,) = pool.pids
        outcomes: list[object] = []

        def call() -> None:
            try:
                outcomes.append(len(pool.decode("traces", "protobuf", body, timeout=timeout).marks))
            except DecodeUnavailable as exc:
                outcomes.append(exc)

        threads = [threading.Thread(target=call) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(outcomes) == 6 and all(
            o == len(spans) or isinstance(o, DecodeUnavailable) for o in outcomes
        )
        assert outcomes.count(len(spans)) >= 1, (
            outcomes
        )  # the first in line is decoded well within its timeout
        assert pool.pids == [pid] and pool.stats.restarts == 0 and pool.stats.failed_in_worker == 0
    finally:
        pool.shutdown()
