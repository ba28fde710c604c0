"""The forwarder against a real downstream OTLP endpoint (tests/support/otlp_sink.py): delivery,
retries, what is dropped."""

from __future__ import annotations

import random
import socket
import threading
import time

import pytest

from agentotel_eval.collector.config_forward import ForwardConfig, ForwardConfigError
from agentotel_eval.collector.forward.forwarder import Forwarder
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from tests.support.collector_harness import wait_until
from tests.support.otlp_sink import OtlpSink


def _spans(n: int, trace: int = 1) -> list[SpanRecord]:
    return [
        SpanRecord(
            f"{trace:032x}",
            f"{i + 1:016x}",
            None,
            f"s{i}",
            start_ns=1,
            end_ns=2,
            attributes={"i": i},
            resource={"service.name": "svc"},
        )
        for i in range(n)
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_spans_and_logs_arrive_with_headers(protocol):
    with OtlpSink() as sink:
        url = sink.grpc_endpoint if protocol == "grpc" else sink.http_endpoint
        forwarder = Forwarder(ForwardConfig(url=url, protocol=protocol, headers={"x-tenant": "acme"}))
        forwarder.start()
        forwarder.submit_spans(_spans(3))
        forwarder.submit_logs([LogRecord(5, 5, f"{1:032x}", f"{1:016x}", event_name="e", resource={})])
        sink.wait_for(lambda s: len(s.spans) == 3 and len(s.logs) == 1)
        forwarder.shutdown()
        assert sorted(s.attributes["i"] for s in sink.spans) == [0, 1, 2]
        assert all(r.headers.get("x-tenant") == "acme" for r in sink.requests)
        assert forwarder.stats.sent_spans == 3 and forwarder.stats.sent_logs == 1


def test_a_permanent_error_drops_the_batch_at_once_and_counts_it():
    with OtlpSink() as sink:
        sink.reject(times=1, retryable=False)
        forwarder = Forwarder(ForwardConfig(url=sink.http_endpoint, initial_backoff_s=0.05))
        forwarder.start()
        forwarder.submit_spans(_spans(4))
        wait_until(lambda: forwarder.stats.dropped_spans == 4, what="the dropped batch")
        forwarder.submit_spans(_spans(2, trace=2))  # the next batch goes through
        sink.wait_for(lambda s: len(s.spans) == 2)
        forwarder.shutdown()
        assert len(sink.requests) == 2  # no retry of a 400


def test_an_unreachable_endpoint_never_blocks_and_drops_after_retries():
    forwarder = Forwarder(
        ForwardConfig(
            url=f"http://127.0.0.1:{_free_port()}", max_retries=2, initial_backoff_s=0.02, timeout_s=1.0
        )
    )
    forwarder.start()
    started = time.monotonic()
    for k in range(50):
        forwarder.submit_spans(_spans(10, trace=k + 1))
    assert time.monotonic() - started < 0.5  # submitting is queueing, never waiting for the network
    wait_until(lambda: forwarder.stats.dropped_spans == 500, timeout=30, what="every span counted as dropped")
    forwarder.shutdown()
    assert forwarder.stats.sent_spans == 0
    assert forwarder.stats.failed_attempts >= 3  # each batch: the first try and two retries
    assert "127.0.0.1" in forwarder.stats.last_error


class FakeClock:
    """Monotonic seconds that move only when the test says; counts its reads (each is the sender looking)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.reads += 1
            return self.now


class RecordedSleep:
    """Stands in for the wait before a retry: records the delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> bool:
        self.delays.append(seconds)
        return True


def test_backoff_grows_exponentially_with_jitter_up_to_its_cap():
    sleep = RecordedSleep()
    forwarder = Forwarder(
        ForwardConfig(
            url=f"http://127.0.0.1:{_free_port()}",
            max_retries=5,
            initial_backoff_s=1.0,
            max_backoff_s=4.0,
            timeout_s=1.0,
        ),
        sleep=sleep,
        rng=random.Random(5),
    )
    forwarder.start()
    forwarder.submit_spans(_spans(3))
    wait_until(lambda: forwarder.stats.dropped_spans == 3, what="the batch dropped after its retries")
    forwarder.shutdown()
    assert forwarder.stats.failed_attempts == 6 and "gave up after retries" in forwarder.stats.last_error
    assert len(sleep.delays) == 5
    for delay, cap in zip(sleep.delays, [1, 2, 4, 4, 4], strict=True):
        assert cap / 2 <= delay <= cap, sleep.delays


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_the_delay_the_server_asks_for_wins_up_to_max_backoff(protocol):
    """gRPC RetryInfo and HTTP Retry-After: waited exactly (one sender thread: no jitter); a longer ask is cut
    to max_backoff_s, never refused."""
    sleep = RecordedSleep()
    with OtlpSink() as sink:
        url = sink.grpc_endpoint if protocol == "grpc" else sink.http_endpoint
        forwarder = Forwarder(ForwardConfig(url=url, protocol=protocol, max_backoff_s=30.0), sleep=sleep)
        forwarder.start()
        sink.reject(times=2, retry_after=7.5)
        forwarder.submit_spans(_spans(2))
        sink.wait_for(lambda s: len(s.spans) == 2)
        sink.reject(times=1, retry_after=90.0)
        forwarder.submit_spans(_spans(1, trace=2))
        sink.wait_for(lambda s: len(s.spans) == 3)
        forwarder.shutdown()
    assert sleep.delays == [7.5, 7.5, 30.0]
    assert forwarder.stats.failed_attempts == 3 and forwarder.stats.dropped_spans == 0


def test_shutdown_stops_retrying_at_its_deadline():
    """A backoff that would outlast the shutdown deadline ends there, without another attempt: the batch is
    counted as dropped before shutdown returns."""
    with OtlpSink() as sink:
        sink.reject(times=5, retry_after=60.0)
        forwarder = Forwarder(ForwardConfig(url=sink.http_endpoint, max_backoff_s=120.0))
        forwarder.start()
        forwarder.submit_spans(_spans(3))
        wait_until(lambda: forwarder.stats.failed_attempts == 1, what="the first attempt")
        started = time.monotonic()
        forwarder.shutdown(timeout_s=0.2)
        assert time.monotonic() - started < 30.0  # far from the 60 s the server asked for
        assert forwarder.stats.dropped_spans == 3 and len(sink.requests) == 1


def test_a_retry_due_before_the_deadline_still_runs_while_shutting_down():
    with OtlpSink() as sink:
        sink.reject(times=1, retry_after=0.2)
        forwarder = Forwarder(ForwardConfig(url=sink.http_endpoint))
        forwarder.start()
        forwarder.submit_spans(_spans(3))
        wait_until(lambda: forwarder.stats.failed_attempts == 1, what="the first attempt")
        forwarder.shutdown(timeout_s=30.0)
        assert forwarder.stats.sent_spans == 3 and forwarder.stats.dropped_spans == 0
        assert len(sink.spans) == 3


def test_steady_submits_do_not_cut_the_backoff_of_a_retry():
    """The sender's backoff waits on the condition every submit wakes; new records must not end it early, or
    an outage burns every retry in milliseconds and drops what the backoff would have carried over."""
    clock = FakeClock()
    with OtlpSink() as sink:
        sink.reject(times=1, retry_after=5.0)
        forwarder = Forwarder(ForwardConfig(url=sink.http_endpoint), clock=clock)
        forwarder.start()
        forwarder.submit_spans(_spans(1))
        wait_until(lambda: forwarder.stats.failed_attempts == 1, what="the first attempt")
        for k in range(20):  # records keep coming while the backoff runs; the clock stands still
            reads = clock.reads
            forwarder.submit_spans(_spans(1, trace=k + 2))
            wait_until(lambda reads=reads: clock.reads > reads, what="the sender woken by the submit")
        assert len(sink.requests) == 1  # twenty wake-ups, and no retry before its time
        clock.now = 5.0
        forwarder.submit_spans(_spans(1, trace=99))  # wakes the sender, which finds the backoff over
        sink.wait_for(lambda s: len(s.spans) == 22)
        forwarder.shutdown()
        assert forwarder.stats.dropped_spans == 0 and forwarder.stats.failed_attempts == 1


def test_a_full_queue_drops_the_oldest_and_counts_it():
    forwarder = Forwarder(ForwardConfig(url="http://127.0.0.1:9", max_queue_records=25))  # never started
    for k in range(5):
        forwarder.submit_spans(_spans(10, trace=k + 1))
    assert forwarder.stats.queued == 20 and forwarder.stats.dropped_spans == 30
    forwarder.shutdown(0)
    assert forwarder.stats.dropped_spans == 50  # what was still queued at the stop is counted too


def test_bad_settings_are_refused():
    for config in (
        ForwardConfig(url="ftp://x"),
        ForwardConfig(url="http://x:1", protocol="thrift"),
        ForwardConfig(url="http://x:1", max_queue_records=0),
    ):
        with pytest.raises(ForwardConfigError):
            config.validate()
    assert ForwardConfig(url="http://h:4317").resolved_protocol() == "grpc"
    assert ForwardConfig(url="http://h:4318").resolved_protocol() == "http/protobuf"
    assert ForwardConfig(url="grpcs://h:443").resolved_protocol() == "grpc"
