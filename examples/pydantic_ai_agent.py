"""A pydantic-ai support agent, traced by pydantic-ai's own OpenTelemetry instrumentation into agentotel-eval.

    agentotel-eval serve --config examples/agentotel.toml   # in another terminal, from the repository root
    python examples/pydantic_ai_agent.py "Order A-1042 arrived broken, can I get my money back?"
    agentotel-eval query "SELECT agent_name, tools_called, input FROM agent_runs ORDER BY start_time"

Nothing here is specific to agentotel-eval: the agent is instrumented with ``Agent.instrument_all()`` and the
spans go through the standard OpenTelemetry SDK (``TracerProvider`` + ``BatchSpanProcessor`` + the OTLP
exporter), so pointing the same program at Jaeger, Phoenix or Logfire only changes the endpoint. The endpoint
is ``OTEL_EXPORTER_OTLP_ENDPOINT`` (default ``http://127.0.0.1:4317``);
``OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`` exports over HTTP instead (default ``http://127.0.0.1:4318``).

The model is pydantic-ai's offline ``FunctionModel`` driven by a scripted policy (no network, no API key): it
looks the order up and, when the customer asks for their money back, checks the refund policy, issues the
refund, then answers ("Where is my order A-1042?" stops after the lookup). Each argument is one customer
message, answered by a run of its own. Swap the model for ``"openai:gpt-4o-mini"`` and nothing else changes.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

AGENT_NAME = "support-agent"
DEFAULT_QUESTION = "Order A-1042 arrived broken, can I get my money back?"

ORDERS: dict[str, dict[str, Any]] = {
    "A-1042": {"item": "espresso machine", "amount": 249.0, "status": "delivered", "days_since_delivery": 6},
    "B-2077": {"item": "desk lamp", "amount": 39.5, "status": "delivered", "days_since_delivery": 75},
}
REFUND_WINDOW_DAYS = 30


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


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id (like A-1042)."""
    order = ORDERS.get(order_id.upper())
    if order is None:
        return {"order_id": order_id, "error": "no such order"}
    return {"order_id": order_id.upper(), **order}


def check_refund_policy(order_id: str, reason: str) -> dict[str, Any]:
    """Whether an order can be refunded for this reason, and up to which amount."""
    order = ORDERS[order_id.upper()]
    eligible = order["days_since_delivery"] <= REFUND_WINDOW_DAYS or reason == "damaged"
    refundable = order["amount"] if eligible else 0.0
    return {"order_id": order_id.upper(), "eligible": eligible, "max_refund": refundable}


def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an amount to the customer's original payment method."""
    return {"order_id": order_id.upper(), "refund_id": f"RF-{order_id.upper()}", "amount": amount}


def scripted_support_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stands in for an LLM: decides the next step from the conversation so far, as a model would."""
    question = ""
    results: dict[str, Any] = {}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    results[part.tool_name] = part.content
                elif part.part_kind == "user-prompt" and isinstance(part.content, str) and not question:
                    question = part.content
    offered = {tool.name for tool in info.function_tools}

    def say(text: str) -> ModelResponse:
        return ModelResponse(parts=[TextPart(text)])

    def call(tool: str, **args: Any) -> ModelResponse:
        assert tool in offered, f"{tool} is not one of the agent's tools"
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=f"call_{tool}")])

    match = re.search(r"\b[A-Z]-\d{4}\b", question.upper())
    if match is None:
        return say("Which order is this about? Please give me its number, like A-1042.")
    order_id = match.group(0)

    if "lookup_order" not in results:
        return call("lookup_order", order_id=order_id)
    order = results["lookup_order"]
    if "error" in order:
        return say(f"I could not find order {order_id}.")
    if not re.search(r"refund|money back|return", question, re.IGNORECASE):  # a status question: answer it
        return say(f"Your {order['item']} ({order_id}) is {order['status']}.")
    if "check_refund_policy" not in results:
        damaged = re.search(r"broken|damaged|cracked", question, re.IGNORECASE) is not None
        return call("check_refund_policy", order_id=order_id, reason="damaged" if damaged else "changed_mind")
    policy = results["check_refund_policy"]
    if not policy["eligible"]:
        return say(f"Sorry, order {order_id} is outside the refund window.")
    if "issue_refund" not in results:
        return call("issue_refund", order_id=order_id, amount=policy["max_refund"])
    refund = results["issue_refund"]
    return say(f"Done: refund {refund['refund_id']} of ${refund['amount']:.2f} for your {order['item']}.")


def build_agent() -> Agent[None, str]:
    return Agent(
        FunctionModel(scripted_support_model, model_name="scripted-support-model"),
        name=AGENT_NAME,
        instructions="You are a customer-support agent. Look the order up before deciding anything.",
        tools=[lookup_order, check_refund_policy, issue_refund],
    )


def main(argv: list[str]) -> int:
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: "pydantic-ai-support-example"}))
    provider.add_span_processor(BatchSpanProcessor(make_exporter()))
    trace.set_tracer_provider(provider)
    Agent.instrument_all()  # pydantic-ai's built-in instrumentation, on the global provider set above

    agent = build_agent()
    try:
        for question in argv[1:] or [DEFAULT_QUESTION]:  # each message is one agent run, one trace
            print(agent.run_sync(question).output)
    finally:
        provider.force_flush()  # the batch processor holds spans for up to 5 s; send them before exiting
        provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
