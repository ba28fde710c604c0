"""Plain span and log records decoded from OTLP: the one internal model everything downstream reads.

Ids are lowercase hex (32 chars for traces, 16 for spans), times are integer nanoseconds since the epoch,
attribute values are plain Python values (str, bool, int, float, bytes, list, dict). The ``attributes``,
``resource`` and event dicts are shared, not copied: treat them as read-only.

Records are read-only by convention, not frozen: they are made by the hundred thousand (decoded, read back,
received from a helper process), and a frozen dataclass's ``__init__`` sets each field through
``object.__setattr__``, nine times the cost of a plain one (docs/benchmarks.md). Nothing changes a record
after it is made; ``dataclasses.replace`` makes a new one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SPAN_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_CODES = ("UNSET", "OK", "ERROR")
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2

Attributes = dict[str, Any]


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Attributes = field(default_factory=dict)


@dataclass(slots=True)
class SpanLink:
    trace_id: str
    span_id: str
    attributes: Attributes = field(default_factory=dict)


@dataclass(slots=True)
class SpanRecord:
    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int = 1
    start_ns: int = 0
    end_ns: int = 0
    status_code: int = STATUS_UNSET
    status_message: str = ""
    attributes: Attributes = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    links: tuple[SpanLink, ...] = ()
    resource: Attributes = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    trace_state: str = ""
    flags: int = 0

    @property
    def service_name(self) -> str | None:
        value = self.resource.get("service.name")
        return value if isinstance(value, str) else None

    @property
    def kind_name(self) -> str:
        return SPAN_KINDS[self.kind] if 0 <= self.kind < len(SPAN_KINDS) else "UNSPECIFIED"

    @property
    def status_name(self) -> str:
        return STATUS_CODES[self.status_code] if 0 <= self.status_code < len(STATUS_CODES) else "UNSET"

    @property
    def is_error(self) -> bool:
        return self.status_code == STATUS_ERROR

    @property
    def key(self) -> tuple[str, str]:
        return (self.trace_id, self.span_id)


@dataclass(slots=True)
class LogRecord:
    time_ns: int
    observed_time_ns: int = 0
    trace_id: str | None = None
    span_id: str | None = None
    severity_number: int = 0
    severity_text: str = ""
    event_name: str = ""  # LogRecord.event_name, else the legacy ``event.name`` attribute
    body: Any = None
    attributes: Attributes = field(default_factory=dict)
    resource: Attributes = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    flags: int = 0

    @property
    def service_name(self) -> str | None:
        value = self.resource.get("service.name")
        return value if isinstance(value, str) else None

    @property
    def timestamp_ns(self) -> int:
        """The event time; OTLP allows ``time`` to be unset, then the observed time stands in."""
        return self.time_ns or self.observed_time_ns


@dataclass(frozen=True, slots=True)
class Decoded:
    """The records of one export request, and what was rejected from it (OTLP partial success)."""

    records: list[Any]
    rejected: int = 0
    message: str = ""
    #: what the limits cut, by kind (``otlp.limits``): attributes, events and links dropped, values truncated
    #: or too deep; empty when nothing was
    limited: dict[str, int] = field(default_factory=dict)
