"""configure()/shutdown()/force_flush() against real SDK providers, with the exporter swapped
for in-memory ones.

What goes over the wire is tested in tests/integration/tracing/test_export.py; scenarios that need the global
TracerProvider run there in subprocesses (it can be set only once per process).
"""

from __future__ import annotations

import logging

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentotel_eval.tracing import configure, force_flush, setup, shutdown, state, traced
from agentotel_eval.tracing import failures as tracing_failures
from agentotel_eval.tracing.settings import ConfigurationError


@pytest.fixture
def exporters(monkeypatch) -> dict[str, InMemorySpanExporter]:
    """Each configure() gets an in-memory exporter, keyed by the endpoint it was configured for."""
    made: dict[str, InMemorySpanExporter] = {}

    def fake_exporter(settings):
        made[settings.endpoint] = InMemorySpanExporter()
        return made[settings.endpoint]

    monkeypatch.setattr(setup, "make_exporter", fake_exporter)
    yield made
    shutdown()
    tracing_failures.reset_for_tests()


@pytest.fixture
def app_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    own = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "app"}))
    provider.add_span_processor(SimpleSpanProcessor(own))
    return provider, own


@traced(kind="tool")
def tool(x: int) -> int:
    return x


def names(exporter: InMemorySpanExporter) -> list[str]:
    return [span.name for span in exporter.get_finished_spans()]


def test_configure_with_a_provider_adds_our_exporter_and_keeps_the_apps(exporters, app_provider):
    provider, own = app_provider
    assert configure("http://a:4317", tracer_provider=provider) is provider
    tool(1)  # no tracer_provider on the decorator: configure()'s provider is the default
    assert force_flush() is True
    assert names(exporters["http://a:4317"]) == ["execute_tool tool"]
    assert names(own) == ["execute_tool tool"]
    assert trace.get_tracer_provider() is not provider  # not installed globally


def test_same_settings_twice_changes_nothing(exporters, app_provider):
    provider, _ = app_provider
    configure("http://a:4317", tracer_provider=provider, headers={"k": "v"})
    slot = setup._slots[provider]
    first = slot.delegate
    configure("http://a:4317", tracer_provider=provider, headers={"k": "v"})
    assert slot.delegate is first
    assert len(exporters) == 1
    processors = provider._active_span_processor._span_processors  # the slot was added once
    assert sum(p is slot for p in processors) == 1


def test_new_settings_replace_the_exporter(exporters, app_provider):
    provider, own = app_provider
    configure("http://a:4317", tracer_provider=provider)
    tool(1)
    configure("http://b:4317", tracer_provider=provider)
    tool(2)
    force_flush()
    old, new = exporters["http://a:4317"], exporters["http://b:4317"]
    assert names(old) == ["execute_tool tool"]  # flushed before it was shut down
    assert old._stopped
    assert names(new) == ["execute_tool tool"]  # only the span ended after reconfiguring
    assert names(own) == ["execute_tool tool", "execute_tool tool"]


def test_moving_to_another_provider_stops_the_previous_exporter(exporters, app_provider):
    provider, _ = app_provider
    other = TracerProvider()
    configure("http://a:4317", tracer_provider=provider)
    configure("http://b:4317", tracer_provider=other)
    assert exporters["http://a:4317"]._stopped
    tool(3)
    force_flush()
    assert names(exporters["http://b:4317"]) == ["execute_tool tool"]
    assert state.default_provider is other


def test_shutdown_flushes_and_forgets(exporters, app_provider, monkeypatch):
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())  # nothing global
    provider, own = app_provider
    configure("http://a:4317", tracer_provider=provider)
    tool(1)
    shutdown()
    ours = exporters["http://a:4317"]
    assert names(ours) == ["execute_tool tool"] and ours._stopped
    assert state.default_provider is None
    tool(2)  # untraced now: @traced follows the global provider, the API's proxy
    assert names(own) == ["execute_tool tool"]
    assert force_flush() is True
    shutdown()  # idempotent
    configure("http://c:4317", tracer_provider=provider)  # and configure() works again, on the same slot
    tool(3)
    force_flush()
    assert names(exporters["http://c:4317"]) == ["execute_tool tool"]


def test_a_provider_that_cannot_take_processors_is_refused(exporters):
    with pytest.raises(ConfigurationError, match="add_span_processor"):
        configure(tracer_provider=trace.NoOpTracerProvider())


def test_bad_settings_raise_before_anything_changes(exporters, app_provider):
    provider, _ = app_provider
    with pytest.raises(ConfigurationError):
        configure("ftp://nope", tracer_provider=provider)
    assert exporters == {}
    assert provider not in setup._slots


def test_service_name_cannot_rename_an_existing_provider(exporters, app_provider, caplog):
    provider, _ = app_provider
    with caplog.at_level(logging.WARNING, logger="agentotel_eval.tracing"):
        configure("http://a:4317", tracer_provider=provider, service_name="mine")
    assert any("service.name='app'" in r.getMessage() for r in caplog.records)
