"""configure() exporting @traced spans over real OTLP (gRPC and HTTP/protobuf) to real servers on 127.0.0.1.

In-process tests pass ``tracer_provider=`` (the global provider can be set once per process); the scenarios
that are about the global provider (none installed, or the application's own) run in subprocesses.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from agentotel_eval import semconv as sc
from agentotel_eval.tracing import configure, force_flush, shutdown, traced
from tests.support.otlp_sink import OtlpSink

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def sink():
    with OtlpSink() as running:
        yield running


@pytest.fixture(autouse=True)
def _forget_configuration():
    yield
    shutdown()


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(REPO)
    return env


def run_script(source: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"script failed:\n{result.stdout}\n{result.stderr}"
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_agent(provider=None):
    @traced(kind="tool", tracer_provider=provider)
    def search(query: str, tool_call_id: str | None = None) -> list[str]:
        """Search the docs."""
        return [f"result for {query}"]

    @traced(kind="tool", tracer_provider=provider)
    def summarise(texts: list[str]) -> str:
        return " / ".join(texts)

    @traced(kind="agent", name="docs-agent", expected_tools=["search", "summarise"], tracer_provider=provider)
    def agent(question: str) -> str:
        return summarise(search(question, tool_call_id="call_42"))

    return agent


def check_agent_trace(spans) -> None:
    by_name = {span.name: span for span in spans}
    assert set(by_name) == {"invoke_agent docs-agent", "execute_tool search", "execute_tool summarise"}
    run = by_name["invoke_agent docs-agent"]
    search, summarise = by_name["execute_tool search"], by_name["execute_tool summarise"]
    assert run.parent_span_id is None
    assert search.parent_span_id == run.span_id and summarise.parent_span_id == run.span_id
    assert {span.trace_id for span in spans} == {run.trace_id}
    assert run.kind_name == "INTERNAL"
    assert run.attributes[sc.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert run.attributes[sc.GEN_AI_AGENT_NAME] == "docs-agent"
    assert run.attributes[sc.AGENTOTEL_EXPECTED_TOOLS] == ["search", "summarise"]
    assert json.loads(run.attributes[sc.GEN_AI_INPUT_MESSAGES])[0]["parts"][0]["content"] == "how?"
    assert (
        json.loads(run.attributes[sc.GEN_AI_OUTPUT_MESSAGES])[0]["parts"][0]["content"] == "result for how?"
    )
    assert search.attributes[sc.GEN_AI_TOOL_CALL_ID] == "call_42"
    assert json.loads(search.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"query": "how?"}
    assert json.loads(search.attributes[sc.GEN_AI_TOOL_CALL_RESULT]) == ["result for how?"]
    assert search.attributes[sc.GEN_AI_TOOL_DESCRIPTION] == "Search the docs."


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_configure_exports_over_otlp(sink, protocol):
    provider = TracerProvider(resource=Resource.create({"service.name": "inproc"}))
    endpoint = (
        sink.grpc_endpoint if protocol == "grpc" else sink.http_endpoint
    )  # base URL: /v1/traces is added
    assert (
        configure(endpoint, protocol=protocol, headers={"X-Tenant": "t1"}, tracer_provider=provider)
        is provider
    )
    agent = build_agent()  # no provider on the decorators: configure()'s is used
    assert agent("how?") == "result for how?"
    assert force_flush() is True
    spans = sink.wait_for_spans(3)
    check_agent_trace(spans)
    assert {span.service_name for span in spans} == {"inproc"}
    request = sink.requests[0]
    assert request.transport == ("grpc" if protocol == "grpc" else "http")
    assert request.headers["x-tenant"] == "t1"
    if protocol != "grpc":
        assert request.path == "/v1/traces" and request.encoding == "protobuf"


def test_reconfigure_moves_export_to_the_new_endpoint(sink):
    provider = TracerProvider()
    with OtlpSink(http_enabled=False) as second:
        configure(sink.grpc_endpoint, tracer_provider=provider)
        agent = build_agent()
        agent("how?")
        configure(
            second.grpc_endpoint, tracer_provider=provider
        )  # the first exporter is flushed, then stopped
        agent("how?")
        force_flush()
        assert len(sink.wait_for_spans(3)) == 3
        assert len(second.wait_for_spans(3)) == 3
        assert len(sink.spans) == 3  # nothing was sent twice


def test_without_an_application_provider_configure_installs_one(sink):
    """No global provider: configure() creates one with the service name; the atexit hook
    flushes (no flush call)."""
    env = _clean_env() | {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.grpc_endpoint, "OTEL_SERVICE_NAME": "from-env"}
    result = run_script(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from agentotel_eval.tracing import configure
        from tests.integration.tracing.test_export import build_agent

        provider = configure(service_name="example-service")
        assert trace.get_tracer_provider() is provider and isinstance(provider, TracerProvider)
        print(build_agent()("how?"))
        """,
        env,
    )
    assert result.stdout.strip() == "result for how?"
    spans = sink.wait_for_spans(3)
    check_agent_trace(spans)
    assert {span.service_name for span in spans} == {
        "example-service"
    }  # the argument beats OTEL_SERVICE_NAME


def test_configure_adds_to_the_applications_own_provider(sink):
    """The app installed an SDK provider with its own processor: both it and our exporter get every span."""
    env = _clean_env() | {
        "OTEL_EXPORTER_OTLP_ENDPOINT": sink.http_endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc",
    }
    result = run_script(
        """
        import json
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from agentotel_eval.tracing import configure, force_flush
        from tests.integration.tracing.test_export import build_agent

        own = InMemorySpanExporter()
        app_provider = TracerProvider(resource=Resource.create({"service.name": "app-service"}))
        app_provider.add_span_processor(SimpleSpanProcessor(own))
        trace.set_tracer_provider(app_provider)

        assert configure() is app_provider
        assert configure() is app_provider  # idempotent
        assert trace.get_tracer_provider() is app_provider  # never replaced
        with trace.get_tracer("app").start_as_current_span("http request"):
            build_agent()("how?")
        assert force_flush()
        print(json.dumps(sorted(span.name for span in own.get_finished_spans())))
        """,
        env,
    )
    expected = ["execute_tool search", "execute_tool summarise", "http request", "invoke_agent docs-agent"]
    assert json.loads(result.stdout) == expected
    spans = sink.wait_for_spans(4)
    assert sorted(span.name for span in spans) == expected
    assert {span.service_name for span in spans} == {"app-service"}
    assert all(request.headers.get("authorization") == "Bearer abc" for request in sink.requests)
    run = next(span for span in spans if span.name == "invoke_agent docs-agent")
    outer = next(span for span in spans if span.name == "http request")
    assert run.parent_span_id == outer.span_id
    assert len(sink.requests) == 1  # one batch: configure() twice did not add a second exporter


def test_argument_endpoint_beats_environment(sink):
    env = _clean_env() | {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    run_script(
        f"""
        from agentotel_eval.tracing import configure
        from tests.integration.tracing.test_export import build_agent

        configure("{sink.grpc_endpoint}")
        build_agent()("how?")
        """,
        env,
    )
    check_agent_trace(sink.wait_for_spans(3))


def test_no_collector_is_not_an_error():
    env = _clean_env() | {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
    }
    result = run_script(
        """
        from agentotel_eval.tracing import configure, force_flush
        from tests.integration.tracing.test_export import build_agent

        configure()
        print(build_agent()("how?"))
        force_flush()
        """,
        env,
    )
    assert result.stdout.strip() == "result for how?"
    assert "export" in result.stderr.lower()  # logged by the exporter, not raised
