"""[redaction] in a running collector: an API key and an e-mail address an agent passed to a tool are gone
from what is stored, from what the judge is shown and from what is forwarded, each where asked; the redacted
argument still makes the tool call a call with that argument."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentotel_eval.collector.config_forward import ForwardConfig
from agentotel_eval.collector.config_scoring import JudgeSettings
from agentotel_eval.redaction import RedactionSettings
from agentotel_eval.tracing import traced
from tests.support.collector_harness import running_collector, wait_until
from tests.support.llm_stub import LLMStub, Reply
from tests.support.otlp_sink import OtlpSink

SECRET = "sk-live-" + "Q" * 32
EMAIL = "jane.doe@example.com"
CLEAN = {
    "detected": False,
    "confidence": 0.0,
    "reason": "no errors",
    "error_types": [],
    "errors": [],
    "error_severity": "none",
}


def run_agent(endpoint: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "billing-bot"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, insecure=True)))

    @traced(kind="tool", tracer_provider=provider)
    def charge_card(note: str, receipt_to: str, amount: int) -> dict:
        return {"status": "charged", "receipt_sent_to": receipt_to}

    @traced(kind="agent", name="billing-agent", tracer_provider=provider)
    def agent(question: str) -> str:
        charge_card(f"use the key {SECRET}", EMAIL, 20)
        return f"Charged 20 EUR; receipt sent to {EMAIL}."

    agent(f"Charge 20 EUR and mail the receipt to {EMAIL}")
    assert provider.force_flush(10_000)
    provider.shutdown()


def stored_text(collector: Any) -> str:
    rows = collector.query(
        "SELECT name, status_message, attributes, events, resource_attributes FROM spans", limit=10_000
    )["rows"]
    rows += collector.query("SELECT input, output FROM agent_runs")["rows"]
    rows += collector.query("SELECT arguments, result FROM tool_calls")["rows"]
    return json.dumps(rows)


def the_call(collector: Any) -> dict[str, Any]:
    (arguments,) = wait_until(
        lambda: collector.query("SELECT arguments FROM tool_calls")["rows"], what="the call"
    )[0]
    return arguments if isinstance(arguments, dict) else json.loads(arguments)


@pytest.mark.parametrize("where", [["store"], ["judge"], ["forward"]])
def test_each_place_is_redacted_when_asked_and_only_then(tmp_path: Any, where: list[str]) -> None:
    redaction = RedactionSettings.from_dict({"where": where})
    with OtlpSink() as sink, LLMStub(default=Reply.json(CLEAN)) as stub:
        judge = JudgeSettings(
            model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="sk-test", max_retries=0
        )
        forward = ForwardConfig(url=sink.grpc_endpoint.replace("http://", "grpc://"))
        with running_collector(
            tmp_path / "r.duckdb", redaction=redaction, judge=judge, forward=forward
        ) as collector:
            run_agent(collector.grpc_endpoint)
            arguments = the_call(collector)
            wait_until(
                lambda: (
                    collector.query(
                        "SELECT count(*) FROM evaluations WHERE metric = 'tool_errors' AND status = 'ok'"
                    )["rows"][0][0]
                    == 1
                ),
                timeout=30,
                what="the judge",
            )
            wait_until(
                lambda: any(s.name.startswith("invoke_agent") for s in sink.spans), what="the forwarded run"
            )
            stored = stored_text(collector)
        prompt = json.dumps([r.body for r in stub.requests])
        forwarded = json.dumps(
            [[s.attributes, s.resource, [e.attributes for e in s.events]] for s in sink.spans]
        )

    for place, text in (("store", stored), ("judge", prompt), ("forward", forwarded)):
        if place in where or "store" in where:  # the judge and forwarding take what is stored
            assert SECRET not in text and EMAIL not in text, place
            assert "[REDACTED:api_key:32-63]" in text and "[REDACTED:email:16-31]" in text, place
        else:
            assert SECRET in text and EMAIL in text, place
    # redacted or not, it is one call of charge_card with its three arguments
    assert set(arguments) == {"note", "receipt_to", "amount"} and arguments["amount"] == 20
    if "store" in where:
        assert arguments["note"] == "use the key [REDACTED:api_key:32-63]"
