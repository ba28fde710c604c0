"""A hostile trajectory spec on a run span cannot stall the collector: real OTLP from the OpenTelemetry SDK to
a running collector. One run carries a spec within the limits whose exact alignment is exponential (order-free
sequences against a long run), another a spec far past them (2,000 nested groups); the run sent after both is
still scored while the collector waits no more than a few seconds, the first is scored as approximate, and the
second gets an error row that names the limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentotel_eval import semconv as sc
from agentotel_eval.tracing import traced
from tests.support.collector_harness import running_collector, wait_until

#: within the limits for a span's spec; six order-free sequences interleave in 7^6 ways
EXPONENTIAL = {"steps": [{"unordered": [{"steps": [{"tool": t} for t in "abcdef"]} for _ in range(6)]}]}
#: past them: the collector refuses it when read
NESTED = '{"steps": [' + '{"unordered": [' * 2000 + '{"tool": "a"}' + "]}" * 2000 + "]}"


def _rows(collector: Any, sql: str, params: list | None = None) -> list[tuple]:
    with collector._cursor() as cursor:
        return cursor.execute(sql, params or []).fetchall()


def test_a_hostile_spec_on_a_span_does_not_delay_the_next_run(tmp_path: Path) -> None:
    with running_collector(tmp_path / "hostile.duckdb") as collector:
        provider = TracerProvider(resource=Resource.create({"service.name": "hostile"}))
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=collector.grpc_endpoint, insecure=True))
        )

        tools = {}
        for name in "abcdef":

            def tool(n: int, name: str = name) -> str:
                return f"{name}{n}"

            tool.__name__ = name
            tools[name] = traced(kind="tool", tracer_provider=provider)(tool)

        def agent(name: str, spec_text: str | None, calls: str) -> Any:
            @traced(kind="agent", name=name, tracer_provider=provider)
            def run() -> str:
                if (
                    spec_text is not None
                ):  # set raw, as any client may: the SDK's own helper checks the limits
                    trace.get_current_span().set_attribute(sc.AGENTOTEL_EXPECTED_TRAJECTORY, spec_text)
                for k, t in enumerate(calls):
                    tools[t](k)
                return "done"

            return run

        agent("exponential", json.dumps(EXPONENTIAL), "abcdef" * 25)()
        agent("nested", NESTED, "ab")()
        assert provider.force_flush(10_000)
        agent("next", json.dumps({"steps": [{"tool": "a"}, {"tool": "b"}]}), "ab")()
        assert provider.force_flush(10_000)
        scored = wait_until(
            lambda: _rows(
                collector,
                "SELECT e.score, e.details FROM evaluations e JOIN agent_runs r USING (trace_id) "
                "WHERE r.agent_name = 'next' AND e.metric = 'trajectory'",
            ),
            timeout=8.0,
            what="the run after the hostile ones scored",
        )
        assert scored[0][0] == 1.0

        rows = dict(
            _rows(
                collector,
                "SELECT r.agent_name, e.details FROM evaluations e JOIN agent_runs r "
                "USING (trace_id) WHERE e.metric = 'trajectory'",
            )
        )
        exponential = json.loads(rows["exponential"])
        assert exponential["approximate"] is True and "units of work" in exponential["approximate_reason"]
        ((status, reason),) = _rows(
            collector,
            "SELECT e.status, e.reason FROM evaluations e JOIN agent_runs r "
            "USING (trace_id) WHERE r.agent_name = 'nested' AND "
            "e.metric = 'trajectory'",
        )
        assert status == "error" and "(limit: nesting)" in reason
        provider.shutdown()
