"""``configure()``, ``force_flush()``, ``shutdown()``: export ``@traced`` spans over OTLP without
taking over the app.

Which TracerProvider receives our exporter:

1. ``tracer_provider=`` given: that one (anything with ``add_span_processor``, e.g. an SDK
   ``TracerProvider``). It is not installed as the global provider; ``@traced`` functions use it because
   ``configure()`` said so.
2. else, the application already installed an SDK TracerProvider globally: our batching exporter is *added* to
   it. Its resource, sampler and other processors stay as they are (a ``service_name`` given to us cannot
   change its resource, and is ignored with a warning).
3. else (the global is still the API's proxy): we create an SDK TracerProvider whose resource carries the
   service name and install it as the global provider. This is the only global state we set, and only because
   the application asked by calling ``configure()``.
A global provider that cannot take span processors (e.g. an explicit ``NoOpTracerProvider``) is an error.

Repeated calls: the same settings and provider do nothing. Different settings (endpoint, protocol, headers) or
a different provider replace our exporter: the previous one is flushed and shut down, the new one receives
every span ended afterwards; spans are never sent to both. (The service name of a provider we created cannot
change: the SDK resource is immutable; a warning says so.)

``force_flush()`` exports what is buffered; ``shutdown()`` flushes and stops our exporter (``configure()`` may
be called again afterwards). An ``atexit`` hook flushes and shuts down our exporter, so a short script loses
nothing. Export failures (no collector listening) are logged by the OpenTelemetry exporter and never raised.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from agentotel_eval.tracing import state
from agentotel_eval.tracing.failures import warn_once
from agentotel_eval.tracing.settings import GRPC, ConfigurationError, ExportSettings, resolve_settings

__all__ = ["ConfigurationError", "configure", "force_flush", "shutdown"]


class ExporterSlot(SpanProcessor):
    """The one span processor we add to a provider; the batching exporter inside it can be swapped or removed.

    SDK providers offer no way to remove a processor, so reconfiguring replaces what this slot delegates to.
    """

    def __init__(self) -> None:
        self._delegate: SpanProcessor | None = None

    @property
    def delegate(self) -> SpanProcessor | None:
        return self._delegate

    def replace(self, new: SpanProcessor | None) -> SpanProcessor | None:
        old, self._delegate = self._delegate, new
        return old

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        delegate = self._delegate
        if delegate is not None:
            delegate.on_start(span, parent_context=parent_context)

    def on_end(self, span: Any) -> None:
        delegate = self._delegate
        if delegate is not None:
            delegate.on_end(span)

    def shutdown(self) -> None:
        old = self.replace(None)
        if old is not None:
            old.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        delegate = self._delegate
        return delegate.force_flush(timeout_millis) if delegate is not None else True


@dataclass(frozen=True, slots=True)
class _Configured:
    provider: Any
    slot: ExporterSlot
    settings: ExportSettings


_lock = threading.RLock()
_current: _Configured | None = None
_created_provider: TracerProvider | None = None  # the global provider we installed, if any
_slots: weakref.WeakKeyDictionary[Any, ExporterSlot] = weakref.WeakKeyDictionary()
_atexit_registered = False


def make_exporter(settings: ExportSettings) -> SpanExporter:
    """The OTLP span exporter for these settings (exporter modules load only here: grpc is slow to import)."""
    headers = settings.headers_dict or None
    if settings.protocol == GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=settings.endpoint, headers=headers)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=settings.endpoint, headers=headers)


def _service_resource(settings: ExportSettings) -> Resource:
    return Resource.create({SERVICE_NAME: settings.service_name} if settings.service_name else {})


def _target_provider(explicit: Any, settings: ExportSettings) -> Any:
    global _created_provider
    if explicit is not None:
        if not callable(getattr(explicit, "add_span_processor", None)):
            raise ConfigurationError(
                f"tracer_provider must be an SDK TracerProvider (it needs "
                f"add_span_processor); got {explicit!r}"
            )
        return explicit
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):
        created = TracerProvider(resource=_service_resource(settings))
        trace.set_tracer_provider(created)
        provider = trace.get_tracer_provider()  # another thread may have won the race; use whatever is global
        if provider is created:
            _created_provider = created
    if not callable(getattr(provider, "add_span_processor", None)):
        raise ConfigurationError(
            f"the global TracerProvider {type(provider).__name__} cannot take span processors; install an "
            f"SDK TracerProvider or pass tracer_provider= to configure()"
        )
    return provider


def _warn_if_service_name_ignored(provider: Any, settings: ExportSettings) -> None:
    if settings.service_name is None:
        return
    resource = getattr(provider, "resource", None)
    current = resource.attributes.get(SERVICE_NAME) if resource is not None else None
    if current != settings.service_name:
        warn_once(
            f"service-name-ignored:{id(provider)}:{settings.service_name}",
            "configure(service_name=%r) does not change the TracerProvider in use, whose resource says "
            "service.name=%r (an existing provider's resource cannot be changed)",
            settings.service_name,
            current,
        )


def configure(
    endpoint: str | None = None,
    *,
    protocol: str | None = None,
    service_name: str | None = None,
    headers: Mapping[str, str] | None = None,
    tracer_provider: Any = None,
) -> Any:
    """Export ``@traced`` spans (and every other span of the provider) to an OTLP endpoint;
    returns the provider.

    endpoint / protocol (``"grpc"`` default, or ``"http/protobuf"``) / headers / service_name: an argument
    wins over the standard ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT|PROTOCOL|HEADERS`` and ``OTEL_SERVICE_NAME``
    variables, which win over the defaults ``http://127.0.0.1:4317`` (grpc) / ``http://127.0.0.1:4318/v1/traces``
    (http/protobuf). Timeout, compression and TLS files follow the exporter's own
    ``OTEL_EXPORTER_OTLP_*`` variables.

    Never replaces an application's TracerProvider: adds a batching exporter to ``tracer_provider`` if given,
    else to the global SDK provider, and creates (and installs globally) an SDK provider only when none is
    installed. Idempotent; a call with other settings replaces the previous exporter (see the module
    docstring). Raises ``ConfigurationError`` (a ValueError) for unusable arguments or environment values.
    """
    global _current, _atexit_registered
    settings = resolve_settings(endpoint, protocol=protocol, service_name=service_name, headers=headers)
    with _lock:
        provider = _target_provider(tracer_provider, settings)
        if _current is not None and _current.provider is provider and _current.settings == settings:
            state.default_provider = provider
            return provider
        _warn_if_service_name_ignored(provider, settings)
        processor = BatchSpanProcessor(make_exporter(settings))
        slot = _slots.get(provider)
        if slot is None:
            slot = ExporterSlot()
            provider.add_span_processor(slot)
            _slots[provider] = slot
        previous = _current
        old_processor = slot.replace(processor)
        _current = _Configured(provider, slot, settings)
        state.default_provider = provider
        if previous is not None and previous.slot is not slot:
            previous.slot.shutdown()
        if old_processor is not None:
            old_processor.shutdown()
        if not _atexit_registered:
            atexit.register(_at_exit)
            _atexit_registered = True
        return provider


def force_flush(timeout_millis: int = 30_000) -> bool:
    """Export every span our exporter holds; False if that did not finish within the timeout."""
    with _lock:
        current = _current
    return current.slot.force_flush(timeout_millis) if current is not None else True


def shutdown() -> None:
    """Flush and stop our exporter, and forget the configuration (``@traced`` then follows
    the global provider).

    The application's own provider and processors are untouched. ``configure()`` may be called again.
    """
    global _current
    with _lock:
        current, _current = _current, None
        state.default_provider = None
    if current is not None:
        current.slot.shutdown()


def _at_exit() -> None:
    try:
        shutdown()
    except Exception as exc:  # never turn interpreter exit into a traceback
        warn_once("atexit", "agentotel tracing: flushing spans at exit failed: %r", exc)
