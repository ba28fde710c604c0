"""examples/traced_agent.py runs as a script, exports to a real OTLP endpoint, and its run
is reconstructable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentotel_eval import semconv as sc
from agentotel_eval.reconstruct import reconstruct
from tests.support.otlp_sink import OtlpSink

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "traced_agent.py"


def run_example(env_overrides: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | env_overrides
    return subprocess.run(
        [sys.executable, str(EXAMPLE), "What's the weather in Paris, and how far is it from Lyon?"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_example_exports_a_scoreable_agent_run(protocol):
    with OtlpSink() as sink:
        endpoint = sink.grpc_endpoint if protocol == "grpc" else sink.http_endpoint
        result = run_example(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
        )
        assert result.returncode == 0, result.stderr
        assert "392.5" in result.stdout  # Paris-Lyon, computed by the distance tool
        spans = sink.wait_for_spans(10)  # 1 agent + 4 tools + 5 model calls; flushed by the atexit hook

    names = sorted(span.name for span in spans)
    assert names.count("chat scripted-model") == 5
    assert {span.service_name for span in spans} == {"traced-agent-example"}
    (run,) = reconstruct(spans)
    assert run.agent_name == "travel-assistant"
    assert run.tools_called == ["get_weather", "get_coordinates", "get_coordinates", "distance_km"]
    assert run.expected_tools == ("get_weather", "get_coordinates", "get_coordinates", "distance_km")

    # each execution carries the id of the call the model requested
    requested = [
        part["id"]
        for span in spans
        if span.name == "chat scripted-model"
        for message in json.loads(span.attributes[sc.GEN_AI_OUTPUT_MESSAGES])
        for part in message["parts"]
        if part["type"] == "tool_call"
    ]
    executed = [
        span.attributes[sc.GEN_AI_TOOL_CALL_ID]
        for span in sorted(spans, key=lambda s: s.start_ns)
        if span.name.startswith("execute_tool")
    ]
    assert executed == requested == ["call_0", "call_1", "call_2", "call_distance"]


def test_example_runs_without_a_collector():
    with OtlpSink(grpc_enabled=False) as sink:  # an unused port: take one, then close it
        port = sink.http_port
    result = run_example(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    )
    assert result.returncode == 0, result.stderr
    assert "Here is what I found" in result.stdout
    assert "export" in result.stderr.lower()  # the exporter logged that it could not deliver
