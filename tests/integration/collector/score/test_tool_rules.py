"""``[[tools]]`` in the collector's config, end to end: a traced agent exports over gRPC to a running
collector, whose detectors row names the declared rule each finding broke, with its evidence."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentotel_eval.collector.config import load_config
from agentotel_eval.tracing import traced
from tests.support.collector_harness import running_collector, wait_until

TOOLS = r"""
[[tools]]
name = "book_hotel"
requires = ["search_hotels"]
args = { nights = { "$gte" = 1, "$lte" = 30 } }
"""


def test_declared_tool_rules_find_sequence_and_argument_errors(tmp_path: Path) -> None:
    config_file = tmp_path / "agentotel.toml"
    config_file.write_text(TOOLS)
    rules = load_config(config_file).tools
    with running_collector(tmp_path / "tools.duckdb", tools=rules) as collector:
        provider = TracerProvider(resource=Resource.create({"service.name": "hotel-bot"}))
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=collector.grpc_endpoint, insecure=True))
        )

        @traced(kind="tool", tracer_provider=provider)
        def search_hotels(city: str) -> list:
            return [{"id": "H-1"}]

        @traced(kind="tool", tracer_provider=provider)
        def book_hotel(hotel_id: str, nights: int) -> str:
            return "BK-1"

        @traced(kind="agent", name="hasty", tracer_provider=provider)
        def hasty() -> str:
            book_hotel("H-1", 45)  # before any search, and too many nights
            search_hotels("Rome")
            return "Booked."

        @traced(kind="agent", name="careful", tracer_provider=provider)
        def careful() -> str:
            book_hotel(search_hotels("Rome")[0]["id"], 3)
            return "Booked."

        hasty()
        careful()
        assert provider.force_flush(10_000)
        with collector._cursor() as cursor:

            def rows() -> list:
                return cursor.execute(
                    "SELECT r.agent_name, e.success, e.details FROM evaluations e JOIN agent_runs r "
                    "ON e.trace_id = r.trace_id AND e.run_span_id = r.span_id "
                    "WHERE e.metric = 'tool_errors_detectors' ORDER BY r.agent_name"
                ).fetchall()

            wait_until(lambda: len(rows()) == 2, what="both runs scored")
            (careful_row, hasty_row) = rows()
        provider.shutdown()
    assert careful_row[:2] == ("careful", True)
    agent, success, details = hasty_row
    assert (agent, success) == ("hasty", False)
    findings = {(f["type"], f["subtype"], f["rule"]): f for f in json.loads(details)["detectors"]}
    assert set(findings) == {
        ("sequence_error", "precondition", "tools.book_hotel.requires"),
        ("parameter_error", "rule_violation", "tools.book_hotel.args.nights"),
    }
    nights = findings[("parameter_error", "rule_violation", "tools.book_hotel.args.nights")]
    assert nights["evidence"] == {"value": "45", "expected": "$gte 1, $lte 30", "reason": "45 is not <= 30"}
    assert nights["call_indices"] == [0]
