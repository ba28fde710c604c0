"""Instrumentation for plain Python agents: ``@traced`` spans in the OpenTelemetry GenAI shape, and
``configure()`` to export them over OTLP.

Importing this package loads the OpenTelemetry API and SDK (about 0.1 s); the OTLP exporters (and grpc) load
only when ``configure()`` is first called. ``@traced`` itself needs only the API.
"""

from agentotel_eval.tracing.decorator import traced
from agentotel_eval.tracing.expectations import set_expected_tools, set_expected_trajectory
from agentotel_eval.tracing.settings import ConfigurationError
from agentotel_eval.tracing.setup import configure, force_flush, shutdown

__all__ = [
    "ConfigurationError",
    "configure",
    "force_flush",
    "set_expected_tools",
    "set_expected_trajectory",
    "shutdown",
    "traced",
]
