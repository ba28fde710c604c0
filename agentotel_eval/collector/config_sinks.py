"""``[[sinks]]``: where evaluations also go, as each tool's own object; credentials come only
from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlsplit

from agentotel_eval.collector.config_fields import Duration

KINDS = ("phoenix", "mlflow", "langfuse")
#: spans a sink's forwarder holds while its tool is away (request bodies, ~2 KB a span),
#: oldest dropped past it
SPAN_QUEUE = 20_000


class SinkConfigError(ValueError):
    """A bad ``[[sinks]]`` entry; ``key`` is the setting's name within the entry."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, slots=True)
class SinkConfig:
    #: phoenix | mlflow | langfuse
    kind: str
    #: the tool's base URL (Phoenix http://host:6006, MLflow http://host:5000, Langfuse https://host)
    url: str
    #: Phoenix: the variable holding an API key (sent as a bearer token); empty: none
    api_key_env: str = ""
    #: MLflow: the experiment the traces and assessments go to, created when missing; empty: MLflow's default
    experiment: str = ""
    #: Langfuse: the variables holding the project's public and secret keys (HTTP basic authentication)
    public_key_env: str = ""
    secret_key_env: str = ""
    #: send the spans too (over the tool's OTLP endpoint, with their scores attached); false when the agents
    #: already export to the tool themselves, and only the evaluations are to be added
    forward_spans: bool = True
    #: evaluations waiting to be sent at most; over it the oldest are dropped (counted)
    max_queue: int = 10_000
    #: evaluations per request at most
    max_batch: int = 100
    max_retries: int = 6
    initial_backoff: Annotated[float, Duration] = 0.5
    max_backoff: Annotated[float, Duration] = 30.0
    timeout: Annotated[float, Duration] = 10.0
    #: the share of one core this sink's sender thread may use (it pauses after each batch to stay under it):
    #: the collector's process also commits ingest, which comes first; past it the queue fills
    #: and drops are counted
    cpu_share: float = 0.03

    @property
    def base_url(self) -> str:
        return self.url.rstrip("/")

    @property
    def name(self) -> str:
        """How metrics and logs name this sink: its kind and host."""
        return f"{self.kind}:{urlsplit(self.url).netloc}"

    def validate(self) -> SinkConfig:
        if self.kind not in KINDS:
            raise SinkConfigError("kind", f"expected one of {', '.join(KINDS)}, got {self.kind!r}")
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SinkConfigError("url", f"expected an http:// or https:// URL, got {self.url!r}")
        allowed = {
            "phoenix": ("api_key_env",),
            "mlflow": ("experiment",),
            "langfuse": ("public_key_env", "secret_key_env"),
        }[self.kind]
        for key in ("api_key_env", "experiment", "public_key_env", "secret_key_env"):
            if getattr(self, key) and key not in allowed:
                raise SinkConfigError(
                    key, f"is not a setting of a {self.kind} sink (its own: {', '.join(allowed)})"
                )
        if self.kind == "langfuse":
            for key in ("public_key_env", "secret_key_env"):
                if not getattr(self, key):
                    raise SinkConfigError(
                        key, "name the environment variable that holds it (a Langfuse sink needs both keys)"
                    )
        for key in ("api_key_env", "public_key_env", "secret_key_env"):
            variable = getattr(self, key)
            if variable and not os.environ.get(variable):
                raise SinkConfigError(key, f"the environment variable {variable} is not set")
        for key in ("max_queue", "max_batch"):
            if getattr(self, key) < 1:
                raise SinkConfigError(key, f"must be at least 1, got {getattr(self, key)}")
        if self.max_retries < 0:
            raise SinkConfigError("max_retries", "must not be negative")
        if not 0 < self.cpu_share <= 1:
            raise SinkConfigError(
                "cpu_share", f"must be a share of one core, above 0 and at most 1, got {self.cpu_share!r}"
            )
        for key in ("initial_backoff", "max_backoff", "timeout"):
            if not getattr(self, key) > 0:
                raise SinkConfigError(key, f"must be greater than 0, got {getattr(self, key)!r}")
        return self

    def secret(self, key: str) -> str:
        """The value of the variable ``key`` names (``api_key_env``...), read when it is
        needed; "" when unnamed."""
        variable = getattr(self, key)
        return os.environ.get(variable, "") if variable else ""
