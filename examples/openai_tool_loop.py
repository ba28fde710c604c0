"""A hand-written OpenAI tool loop, traced with OpenInference, exporting to the agentotel-eval collector.

    agentotel-eval serve --config examples/agentotel.toml   # in another terminal, from the repository root
    python examples/openai_tool_loop.py "Plan a trip from Berlin to Rome on 2025-07-01 for 3 nights"
    agentotel-eval query "SELECT agent_name, tools_called, input FROM agent_runs ORDER BY start_time"

The chat completions are traced by ``openinference-instrumentation-openai`` (one ``LLM`` span per call, with
the messages, the offered tools and the requested tool calls). The loop itself is ours, so we mark it the way
OpenInference marks agents: one ``AGENT`` span around the loop (``agent.name``, ``input.value``,
``output.value``) and a ``TOOL`` span for each tool we execute (``tool.name``, ``tool_call.id``,
``input.value`` with the arguments, ``output.value`` with the result). Without the agent span every
completion would be a trace of its own, and nothing would say which calls make up one run.

The model calls go to ``examples/fake_openai_server.py``, started here on an ephemeral port (no network, no
API key). Set ``OPENAI_BASE_URL`` (and ``OPENAI_API_KEY``, ``OPENAI_MODEL``) to run the same loop against a
real OpenAI-compatible server instead. Spans go through the standard OpenTelemetry SDK to
``OTEL_EXPORTER_OTLP_ENDPOINT`` (default ``http://127.0.0.1:4317``);
``OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`` exports over HTTP instead (default ``http://127.0.0.1:4318``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from fake_openai_server import FakeOpenAIServer
from openai import OpenAI
from openinference.instrumentation import OITracer, TraceConfig
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Status, StatusCode

AGENT_NAME = "trip-planner"
DEFAULT_QUESTION = "Plan a trip from Berlin to Rome on 2025-07-01 for 3 nights"
MAX_TURNS = 8


def make_exporter() -> SpanExporter:
    """The OTLP exporter for OTEL_EXPORTER_OTLP_PROTOCOL; the exporter itself reads the endpoint variables."""
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"
    )
    # The SDK's defaults say "localhost", which may resolve to ::1 while the collector listens on 127.0.0.1.
    endpoint_set = bool(
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=None if endpoint_set else "http://127.0.0.1:4317")
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        return HttpExporter(endpoint=None if endpoint_set else "http://127.0.0.1:4318/v1/traces")
    raise SystemExit(f"unsupported OTEL_EXPORTER_OTLP_PROTOCOL {protocol!r} (use grpc or http/protobuf)")


# --- the tools ----------------------------------------------------------------------------------------------


def search_flights(origin: str, destination: str, date: str) -> dict[str, Any]:
    number = 100 + sum(map(ord, origin + destination)) % 900  # stable across runs, unlike hash()
    return {
        "flight": f"LH{number}",
        "origin": origin,
        "destination": destination,
        "date": date,
        "price_eur": 129,
    }


def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "condition": "sunny", "temperature_c": 27}


def book_hotel(city: str, nights: int) -> dict[str, Any]:
    if nights < 1:
        raise ValueError("nights must be at least 1")
    confirmation = f"HX-{city[:3].upper()}-{nights}"
    return {"hotel": f"Hotel Centrale {city}", "city": city, "nights": nights, "confirmation": confirmation}


def _function(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


TOOLS = [
    _function(
        "search_flights",
        "Search flights between two cities on a date (YYYY-MM-DD).",
        {"origin": {"type": "string"}, "destination": {"type": "string"}, "date": {"type": "string"}},
    ),
    _function("get_weather", "Get the current weather for a city.", {"city": {"type": "string"}}),
    _function(
        "book_hotel",
        "Book a hotel in a city for a number of nights.",
        {"city": {"type": "string"}, "nights": {"type": "integer"}},
    ),
]
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "search_flights": search_flights,
    "get_weather": get_weather,
    "book_hotel": book_hotel,
}
DEFINITIONS = {tool["function"]["name"]: tool["function"] for tool in TOOLS}


# --- the loop -----------------------------------------------------------------------------------------------


def execute_tool(tracer: OITracer, call: Any) -> str:
    """Run one requested tool call in an OpenInference TOOL span; errors go back to the model as text."""
    name, arguments = call.function.name, call.function.arguments
    with tracer.start_as_current_span(
        name, openinference_span_kind="tool", attributes={"tool_call.id": call.id}
    ) as span:
        definition = DEFINITIONS.get(name)
        if definition is not None:
            span.set_tool(
                name=name, description=definition["description"], parameters=definition["parameters"]
            )
        else:  # the model asked for a tool we do not have: still a call, and a failed one
            span.set_attribute("tool.name", name)
        span.set_input(arguments, mime_type="application/json")
        try:
            if name not in FUNCTIONS:
                raise KeyError(f"unknown tool {name!r}")
            result = json.dumps(FUNCTIONS[name](**json.loads(arguments)))
        except Exception as exc:  # the model gets to see the failure and react, as with any tool loop
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            result = f"Error: {exc}"
            span.set_output(result, mime_type="text/plain")
        else:
            span.set_status(Status(StatusCode.OK))
            span.set_output(result, mime_type="application/json")
        return result


def run_agent(client: OpenAI, tracer: OITracer, question: str, model: str) -> str:
    with tracer.start_as_current_span(
        AGENT_NAME, openinference_span_kind="agent", attributes={"agent.name": AGENT_NAME}
    ) as span:
        span.set_input(question, mime_type="text/plain")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a travel assistant. Plan and book trips with the tools."},
            {"role": "user", "content": question},
        ]
        for _ in range(MAX_TURNS):
            response = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
            reply = response.choices[0].message
            messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                answer = reply.content or ""
                span.set_output(answer, mime_type="text/plain")
                span.set_status(Status(StatusCode.OK))
                return answer
            for call in reply.tool_calls:
                result = execute_tool(tracer, call)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        span.set_status(Status(StatusCode.ERROR, f"no answer after {MAX_TURNS} turns"))
        return "I could not finish planning the trip."


def main(argv: list[str]) -> int:
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: "openai-loop-example"}))
    provider.add_span_processor(BatchSpanProcessor(make_exporter()))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = OITracer(provider.get_tracer("examples.openai_tool_loop"), config=TraceConfig())

    question = argv[1] if len(argv) > 1 else DEFAULT_QUESTION
    with ExitStack() as stack:
        base_url = os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            base_url = stack.enter_context(FakeOpenAIServer()).base_url
        api_key = os.environ.get("OPENAI_API_KEY") or "sk-fake"  # the fake server ignores it
        client = OpenAI(base_url=base_url, api_key=api_key)
        try:
            print(run_agent(client, tracer, question, os.environ.get("OPENAI_MODEL", "gpt-4o-mini")))
        finally:
            provider.force_flush()  # the batch processor holds spans for up to 5 s; send them before exiting
            provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
