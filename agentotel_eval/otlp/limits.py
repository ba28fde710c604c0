"""Bounds on what one export request may hold, so hostile or broken input costs bounded memory and time.

Counts beyond a bound are cut and counted, as the OpenTelemetry SDK does with its span limits: the first
attributes, events and links are kept, a longer string is truncated with a marker, a value nested deeper than
``max_value_depth`` is replaced by a marker. A request with more spans or log records than its bound is
refused whole, with the bound named (nothing of it is stored, so a smaller retry can be). The defaults follow
the SDK's (128 attributes, events and links) where a GenAI span does not need more, and leave room for the
long message contents of LLM spans.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

#: what replaces the cut end of a string value; the original length follows it
TRUNCATED_MARKER = "…[truncated: {length} characters]"
#: what replaces a value nested deeper than the limit
TOO_DEEP_MARKER = "[value nested deeper than {depth} levels]"


@dataclass(frozen=True, slots=True)
class Limits:
    #: attributes kept on a span (and on each of its events and links, and on a log record); the rest are
    #: dropped and counted
    max_attributes_per_span: int = 128
    #: attributes kept on a resource
    max_attributes_per_resource: int = 128
    #: characters of one string value (bytes of a bytes value) kept; the rest is cut and marked
    max_attribute_value_length: int = 262_144
    #: levels of arrays and maps inside one value; deeper parts are replaced by a marker
    max_value_depth: int = 32
    #: events kept on one span
    max_events_per_span: int = 1_000
    #: links kept on one span
    max_links_per_span: int = 128
    #: spans in one export request; a request with more is refused whole
    max_spans_per_request: int = 100_000
    #: log records in one export request; a request with more is refused whole
    max_log_records_per_request: int = 100_000

    def check(self) -> list[str]:
        """The names of the settings that are not positive integers."""
        return [
            f.name
            for f in fields(self)
            if not isinstance(getattr(self, f.name), int)
            or isinstance(getattr(self, f.name), bool)
            or getattr(self, f.name) < 1
        ]


DEFAULT_LIMITS = Limits()
