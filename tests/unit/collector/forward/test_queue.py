"""The forwarder's queue and sender thread, with a sender that records what it is handed: batching, encoded
bodies sent as they are, redaction before encoding, and the count of what is sent."""

from __future__ import annotations

import threading

from agentotel_eval.collector.config_forward import ForwardConfig
from agentotel_eval.collector.forward.forwarder import ExportRefused, Forwarder
from agentotel_eval.otlp.records import LogRecord, SpanRecord
from agentotel_eval.redaction import RedactionSettings, Redactor
from tests.support.collector_harness import wait_until

SECRET = "sk-abcdefghijklmnopqrstuvwx12345"


class RecordingSender:
    def __init__(self, refuse: int = 0) -> None:
        self.sent: list[tuple[str, object]] = []
        self.refuse = refuse
        self.closed = False
        self._lock = threading.Lock()

    def send(self, signal: str, request: object) -> None:
        with self._lock:
            if self.refuse:
                self.refuse -= 1
                raise ExportRefused("HTTP 400")
            self.sent.append((signal, request))

    def close(self) -> None:
        self.closed = True


def _spans(n: int, trace: int = 1) -> list[SpanRecord]:
    return [
        SpanRecord(
            f"{trace:032x}",
            f"{i + 1:016x}",
            None,
            f"s{i}",
            start_ns=1,
            end_ns=2,
            attributes={"api_key": SECRET},
        )
        for i in range(n)
    ]


def _span_count(request: object) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def test_queued_records_of_one_signal_merge_up_to_the_batch_size():
    sender = RecordingSender()
    forwarder = Forwarder(ForwardConfig(url="http://127.0.0.1:9", max_batch_records=5), sender)
    for k in range(3):
        forwarder.submit_spans(_spans(2, trace=k + 1))
    forwarder.submit_logs([LogRecord(5, 5, event_name="e")])
    forwarder.submit_spans(_spans(1, trace=9))
    assert forwarder.stats.queued == 8
    forwarder.start()
    wait_until(lambda: len(sender.sent) == 4, what="four requests")
    forwarder.shutdown()
    assert [(signal, _span_count(r) if signal == "traces" else 1) for signal, r in sender.sent] == [
        ("traces", 4),
        ("traces", 2),
        ("logs", 1),
        ("traces", 1),
    ]
    assert forwarder.stats.sent_spans == 7 and forwarder.stats.sent_logs == 1 and forwarder.stats.queued == 0
    assert sender.closed


def test_an_encoded_body_goes_alone_and_as_it_is():
    sender = RecordingSender()
    forwarder = Forwarder(ForwardConfig(url="http://127.0.0.1:9"), sender)
    forwarder.submit_spans(_spans(1))
    forwarder.submit_encoded("traces", b"raw-body", 3)
    forwarder.submit_spans(_spans(1, trace=2))
    forwarder.start()
    wait_until(lambda: len(sender.sent) == 3, what="three requests")
    forwarder.shutdown()
    assert sender.sent[1][1].SerializeToString() == b"raw-body"
    assert forwarder.stats.sent_spans == 5


def test_records_are_redacted_before_they_are_encoded():
    sender = RecordingSender()
    forwarder = Forwarder(
        ForwardConfig(url="http://127.0.0.1:9"), sender, redactor=Redactor(RedactionSettings(enabled=True))
    )
    forwarder.start()
    forwarder.submit_spans(_spans(2))
    wait_until(lambda: len(sender.sent) == 1, what="the request")
    forwarder.shutdown()
    body = sender.sent[0][1].SerializeToString()
    assert SECRET.encode() not in body and b"api_key" in body


def test_a_refused_batch_is_dropped_and_the_next_one_goes():
    sender = RecordingSender(refuse=1)
    forwarder = Forwarder(ForwardConfig(url="http://127.0.0.1:9", max_batch_records=2), sender)
    forwarder.submit_spans(_spans(2))
    forwarder.submit_spans(_spans(2, trace=2))
    forwarder.start()
    wait_until(lambda: len(sender.sent) == 1, what="the second batch")
    forwarder.shutdown()
    assert forwarder.stats.dropped_spans == 2 and forwarder.stats.sent_spans == 2
    assert forwarder.stats.last_error == "HTTP 400" and forwarder.stats.failed_attempts == 1
