"""``[forward]``: the downstream OTLP endpoint spans and logs are forwarded to (``forward.forwarder``), and
the sinks' span endpoints (``config_sinks``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit


class ForwardConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class ForwardConfig:
    url: str
    protocol: str = ""  # "grpc" | "http/protobuf"; "" = infer from the URL
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0
    max_queue_records: int = 100_000
    max_batch_records: int = 2_000
    max_retries: int = 6
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 30.0

    def resolved_protocol(self) -> str:
        if self.protocol:
            return self.protocol
        parts = urlsplit(self.url)
        if parts.scheme in ("grpc", "grpcs") or parts.port == 4317:
            return "grpc"
        return "http/protobuf"

    def validate(self) -> ForwardConfig:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https", "grpc", "grpcs") or not parts.hostname:
            raise ForwardConfigError(
                f"forward.url must be like http://host:4318 or grpc://host:4317, got {self.url!r}"
            )
        if self.protocol not in ("", "grpc", "http/protobuf"):
            raise ForwardConfigError(
                f"forward.protocol must be 'grpc' or 'http/protobuf', got {self.protocol!r}"
            )
        for name in ("timeout_s", "initial_backoff_s", "max_backoff_s"):
            if getattr(self, name) <= 0:
                raise ForwardConfigError(f"forward.{name} must be > 0")
        for name in ("max_queue_records", "max_batch_records"):
            if getattr(self, name) < 1:
                raise ForwardConfigError(f"forward.{name} must be >= 1")
        if self.max_retries < 0:
            raise ForwardConfigError("forward.max_retries must be >= 0")
        return self
