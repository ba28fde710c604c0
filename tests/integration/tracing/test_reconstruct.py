"""@traced spans, exported by the real SDK and encoded as OTLP, reconstruct into the run
that really happened."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentotel_eval.otlp import decode
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.tracing import set_expected_tools, traced

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "traced_agent.py"


@pytest.fixture
def exported():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def records():
        body = encode_spans(exporter.get_finished_spans()).SerializeToString()
        return decode("traces", "protobuf", body).records

    return provider, records


def _load_example(provider):
    """The example agent, its decorators bound to our provider instead of the global one."""
    spec = importlib.util.spec_from_file_location("traced_agent_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plain_python_agent_reconstructs_exactly(exported):
    provider, records = exported

    @traced(kind="tool", tracer_provider=provider)
    def search_hotels(city: str, max_price: int = 500, tool_call_id: str | None = None) -> list[dict]:
        """Find hotels."""
        return [{"name": "Le Marais", "price": 120}]

    @traced(kind="tool", tracer_provider=provider)
    def book_hotel(name: str, nights: int) -> dict:
        """Book a hotel."""
        if nights > 30:
            raise ValueError("too many nights")
        return {"confirmation": "X1"}

    @traced(kind="agent", name="hotel-agent", tracer_provider=provider)
    def agent(question: str) -> str:
        set_expected_tools(["search_hotels", "book_hotel"])
        hotels = search_hotels("Paris", max_price=200, tool_call_id="call_1")
        try:
            book_hotel(hotels[0]["name"], 45)
        except ValueError:
            book_hotel(hotels[0]["name"], 3)
        return "Booked Le Marais for 3 nights."

    assert agent("Book the cheapest hotel in Paris") == "Booked Le Marais for 3 nights."
    (run,) = reconstruct(records())
    assert run.agent_name == "hotel-agent"
    assert run.input == "Book the cheapest hotel in Paris"
    assert run.output == "Booked Le Marais for 3 nights."
    assert run.expected_tools == ("search_hotels", "book_hotel")
    assert [(c.name, dict(c.input_parameters), c.status) for c in run.tool_calls] == [
        ("search_hotels", {"city": "Paris", "max_price": 200}, "ok"),
        ("book_hotel", {"name": "Le Marais", "nights": 45}, "error"),
        ("book_hotel", {"name": "Le Marais", "nights": 3}, "ok"),
    ]
    assert run.tool_calls[0].call_id == "call_1"
    assert run.tool_calls[0].output == [{"name": "Le Marais", "price": 120}]
    case = run.to_test_case()
    assert [c.name for c in case.expected_tools] == ["search_hotels", "book_hotel"]


def test_the_shipped_example_agent_reconstructs(exported, monkeypatch):
    provider, records = exported
    from opentelemetry import trace

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    example = _load_example(provider)
    answer = example.travel_assistant("What's the weather in Paris, and how far is it from Lyon?")
    assert answer.startswith("Here is what I found")
    (run,) = reconstruct(records())
    assert run.tools_called == ["get_weather", "get_coordinates", "get_coordinates", "distance_km"]
    assert run.expected_tools == ("get_weather", "get_coordinates", "get_coordinates", "distance_km")
    assert [c.call_id for c in run.tool_calls] == ["call_0", "call_1", "call_2", "call_distance"]
    assert all(c.status == "ok" for c in run.tool_calls)
