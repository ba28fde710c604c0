"""When a sink may send a request's body on as it is: protobuf traces, every span valid, nothing cut by the
limits, no redaction; and what a sink's forwarder is handed for a commit."""

from __future__ import annotations

import dataclasses

from agentotel_eval.collector.config_sinks import SinkConfig
from agentotel_eval.collector.decode.batch import decode_request
from agentotel_eval.collector.forward.forwarder import Encoded
from agentotel_eval.collector.sink.hub import SinkHub
from agentotel_eval.collector.sink.worker import Sent
from agentotel_eval.otlp.limits import Limits
from agentotel_eval.redaction import RedactionSettings, Redactor
from tests.support.fixture_traces import fixtures


class _Client:
    def send(self, batch):
        return Sent()

    def close(self) -> None:
        pass


class _Forwarder:
    def __init__(self) -> None:
        self.got: list = []

    def submit_encoded(self, signal, body, records):
        self.got.append(Encoded(body, records))

    def submit_spans(self, spans):
        self.got.append(list(spans))


def _hub(**kw) -> tuple[SinkHub, _Forwarder]:
    forwarder = _Forwarder()
    hub = SinkHub(
        (SinkConfig(kind="phoenix", url="http://127.0.0.1:9"),),
        max_agents=5,
        clients=lambda _c: (_Client(), forwarder),
        **kw,
    )
    return hub, forwarder


def test_a_clean_protobuf_request_goes_on_as_its_body() -> None:
    body = next(f for f in fixtures() if f.entry["span_count"] >= 5).body("protobuf")
    hub, forwarder = _hub()
    batch = hub.keep_raw(
        decode_request("traces", "protobuf", body, keep_spans=hub.keep_records), "traces", "protobuf", body
    )
    assert batch.raw == body and batch.records is None  # not decoded into records to send: the body goes
    hub.received(batch, [])
    assert isinstance(forwarder.got[0], Encoded) and forwarder.got[0].body == body
    kept = decode_request(
        "traces",
        "json",
        next(f for f in fixtures() if f.entry["span_count"] >= 5).body("json"),
        keep_spans=hub.keep_records,
    )
    assert kept.records and hub.keep_raw(kept, "traces", "json", b"").raw is None
    hub.received(kept, kept.records[:2])  # a request that cannot go as is: its new records
    assert forwarder.got[1] == kept.records[:2]


def test_otherwise_the_records_go() -> None:
    body = next(f for f in fixtures() if f.entry["span_count"] >= 5).body("protobuf")
    decoded = decode_request("traces", "protobuf", body, keep_spans=True)
    hub, _ = _hub()
    assert hub.keep_raw(decoded, "traces", "json", body).raw is None
    assert hub.keep_raw(dataclasses.replace(decoded, rejected=1), "traces", "protobuf", body).raw is None
    cut = decode_request(
        "traces", "protobuf", body, keep_spans=True, limits=Limits(max_attribute_value_length=4)
    )
    assert cut.limited and hub.keep_raw(cut, "traces", "protobuf", body).raw is None
    redacted, _ = _hub(redactor=Redactor(RedactionSettings(enabled=True)))
    assert redacted.keep_raw(decoded, "traces", "protobuf", body).raw is None
    at_store, _ = _hub(redacted_at_store=True)
    assert at_store.keep_raw(decoded, "traces", "protobuf", body).raw is None
