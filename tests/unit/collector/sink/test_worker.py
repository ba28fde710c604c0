"""A sink's queue and sender thread: newer evaluations replace queued ones, the bound drops the oldest
(counted), failures are retried with backoff, evaluations waiting for their trace are retried alone, refusals
are counted, and the warning comes once per interval."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from agentotel_eval.collector.config_sinks import SinkConfig
from agentotel_eval.collector.sink.records import RunIdentity, SinkEvaluation
from agentotel_eval.collector.sink.worker import Sent, SinkRefused, SinkRetryable, SinkWorker


def _e(span: str, metric: str = "tool_correctness", score: float = 1.0) -> SinkEvaluation:
    return SinkEvaluation(
        "t" * 32,
        span,
        metric,
        score,
        True,
        "ok",
        "",
        "M",
        "1",
        "CODE",
        0.5,
        None,
        (),
        None,
        RunIdentity("s", "a"),
        0,
    )


class Tool:
    """A tool's API in memory: keeps what it was sent; ``script`` says what each call does first."""

    def __init__(self, *script) -> None:
        self.script = list(script)
        self.calls: list[list[SinkEvaluation]] = []
        self.gate = threading.Event()
        self.gate.set()

    def send(self, batch):
        self.gate.wait(10)
        self.calls.append(list(batch))
        step = self.script.pop(0) if self.script else None
        if isinstance(step, Exception):
            raise step
        if callable(step):
            return step(batch)
        return Sent()

    def close(self) -> None:
        pass


def _worker(tool: Tool, **over) -> SinkWorker:
    config = SinkConfig(kind="phoenix", url="http://127.0.0.1:9", **over)
    return SinkWorker(config, tool, sleep=lambda _s: True)


def _wait(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_newer_evaluation_replaces_the_queued_one_and_the_bound_drops_the_oldest() -> None:
    tool = Tool()
    tool.gate.clear()  # hold the sender on its first batch
    worker = _worker(tool, max_queue=3, max_batch=10)
    worker.start()
    worker.submit([_e("first")])
    _wait(lambda: worker.stats.queued == 0)  # taken, held in send
    worker.submit([_e("a", score=0.0), _e("b"), _e("c")])
    worker.submit([_e("a", score=0.5)])  # a re-score: replaces, keeps its place
    worker.submit([_e("d")])  # over the bound: the oldest (a) goes
    assert (worker.stats.replaced, worker.stats.dropped, worker.stats.queued) == (1, 1, 3)
    tool.gate.set()
    _wait(lambda: worker.stats.sent == 4)
    assert [e.span_id for e in tool.calls[1]] == ["b", "c", "d"]
    worker.shutdown(1)


def test_retries_then_sends_and_only_waiting_evaluations_are_tried_again() -> None:
    later = lambda batch: Sent(waiting=[e for e in batch if e.span_id == "late"])  # noqa: E731
    tool = Tool(SinkRetryable("503"), later, later, Sent())
    worker = _worker(tool)
    worker.start()
    worker.submit([_e("now"), _e("late")])
    _wait(lambda: worker.stats.sent == 2)
    assert [[e.span_id for e in c] for c in tool.calls] == [
        ["now", "late"],
        ["now", "late"],
        ["late"],
        ["late"],
    ]
    assert worker.stats.failed_attempts == 3 and worker.stats.dropped == 0
    worker.shutdown(1)


def test_refusals_and_exhausted_retries_are_dropped_counted_and_warned_once(caplog) -> None:
    tool = Tool(
        lambda batch: Sent(refused=1, why="bad value"), SinkRefused("401"), *[SinkRetryable("down")] * 3
    )
    worker = _worker(tool, max_retries=2, max_batch=2)
    worker.start()
    with caplog.at_level(logging.WARNING, logger="agentotel_eval.collector.sink.worker"):
        worker.submit([_e("a"), _e("b")])
        _wait(lambda: worker.stats.sent == 1 and worker.stats.dropped == 1)
        worker.submit([_e("c")])
        _wait(lambda: worker.stats.dropped == 2)
        worker.submit([_e("d")])
        _wait(lambda: worker.stats.dropped == 3)
    assert "gave up after 3 attempts" in worker.stats.last_error
    warnings = [r for r in caplog.records if "dropping evaluations" in r.getMessage()]
    assert len(warnings) == 1 and "refused: bad value" in warnings[0].getMessage()
    worker.shutdown(1)


def test_shutdown_counts_what_it_could_not_send() -> None:
    tool = Tool(*[SinkRetryable("down")] * 100)
    worker = SinkWorker(SinkConfig(kind="phoenix", url="http://127.0.0.1:9", max_batch=1), tool)  # real waits
    worker.start()
    worker.submit([_e("a"), _e("b")])
    worker.shutdown(0.3)
    assert worker.stats.dropped == 2 and worker.stats.sent == 0
    worker.submit([_e("c")])
    assert worker.stats.dropped == 3


@pytest.mark.parametrize(
    "over, key",
    [
        ({"kind": "jaeger"}, "kind"),
        ({"url": "127.0.0.1:6006"}, "url"),
        ({"experiment": "x"}, "experiment"),
        ({"max_queue": 0}, "max_queue"),
        ({"api_key_env": "AGENTOTEL_TEST_UNSET_VARIABLE"}, "api_key_env"),
    ],
)
def test_bad_sink_settings_name_their_key(over, key) -> None:
    from agentotel_eval.collector.config_sinks import SinkConfigError

    settings = {"kind": "phoenix", "url": "http://127.0.0.1:6006", **over}
    with pytest.raises(SinkConfigError) as raised:
        SinkConfig(**settings).validate()
    assert raised.value.key == key
