"""The inlined hot path of a traced plain function: each failure branch runs the function exactly once, and
the span still starts as a child of the caller's context (which is now looked up once and
handed to the SDK)."""

from __future__ import annotations

import logging

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentotel_eval import semconv as sc
from agentotel_eval.tracing import decorator, traced
from agentotel_eval.tracing import failures as tracing_failures


@pytest.fixture(autouse=True)
def _fresh_failure_log():
    tracing_failures.reset_for_tests()
    yield
    tracing_failures.reset_for_tests()


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


class _BrokenTracer:
    def start_span(self, *args, **kwargs):
        raise RuntimeError("tracer exploded")


class _BrokenProvider:
    def get_tracer(self, *args, **kwargs):
        return _BrokenTracer()


def test_a_failing_tracer_runs_a_raising_function_once_and_keeps_its_exception(caplog):
    calls = []

    @traced(kind="tool", tracer_provider=_BrokenProvider())
    def fails(x: int) -> int:
        calls.append(x)
        raise KeyError(x)

    with caplog.at_level(logging.WARNING, logger="agentotel_eval.tracing"), pytest.raises(KeyError):
        fails(1)
    assert calls == [1]
    assert any("tracer exploded" in r.getMessage() for r in caplog.records)


def test_an_untraced_raising_function_runs_once(monkeypatch):
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    calls = []

    @traced(kind="tool")
    def fails() -> None:
        calls.append(1)
        raise ValueError("user error")

    with pytest.raises(ValueError, match="user error"):
        fails()
    assert calls == [1]


def test_a_failure_to_attach_the_context_still_records_and_ends_the_span(
    provider, exporter, monkeypatch, caplog
):
    def broken_attach(ctx):
        raise RuntimeError("attach exploded")

    monkeypatch.setattr(decorator, "attach", broken_attach)
    calls = []

    @traced(kind="tool", tracer_provider=provider)
    def lookup(key: str) -> str:
        calls.append(key)
        return key.upper()

    with caplog.at_level(logging.WARNING, logger="agentotel_eval.tracing"):
        assert lookup("k") == "K"
    assert calls == ["k"]
    (span,) = exporter.get_finished_spans()
    assert span.attributes[sc.GEN_AI_TOOL_CALL_RESULT] == '"K"'
    assert any("attach exploded" in r.getMessage() for r in caplog.records)


def test_the_parent_context_reaches_the_span_and_its_processors(provider, exporter):
    seen = []

    class ParentRecorder(SpanProcessor):
        def on_start(self, span, parent_context=None):
            current = trace.get_current_span(parent_context)
            seen.append((span.name, current.get_span_context().span_id))

    provider.add_span_processor(ParentRecorder())
    tracer = provider.get_tracer("test")

    @traced(kind="tool", tracer_provider=provider)
    def inner() -> int:
        return 1

    with tracer.start_as_current_span("outer") as outer:
        before = otel_context.get_current()
        assert inner() == 1
        assert otel_context.get_current() is before  # the wrapper restored the caller's context
    spans = {s.name: s for s in exporter.get_finished_spans()}
    outer_id = outer.get_span_context().span_id
    assert spans["execute_tool inner"].parent.span_id == outer_id
    assert ("execute_tool inner", outer_id) in seen
