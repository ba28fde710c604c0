"""Process-wide tracing state shared by ``@traced`` and ``configure()`` without importing the SDK.

``configure()`` records the TracerProvider it set up or was given; ``@traced`` functions without a
``tracer_provider=`` of their own use it, falling back to the OpenTelemetry global provider.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context

#: the TracerProvider chosen by the last ``configure()`` (None: use the OpenTelemetry global one)
default_provider: Any = None

#: context key under which a ``@traced(kind="agent")`` span stores itself, so nested code can find its run
AGENT_SPAN_KEY = otel_context.create_key("agentotel-agent-span")
