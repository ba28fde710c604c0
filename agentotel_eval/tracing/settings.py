"""Where and how ``configure()`` exports: arguments, then ``OTEL_*`` environment variables, then defaults.

Pure: ``resolve_settings`` reads only the mapping it is given, so precedence is testable without exporters.

- protocol: argument > ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` > ``OTEL_EXPORTER_OTLP_PROTOCOL`` > ``grpc``.
  ``grpc`` and ``http/protobuf`` are supported (``http`` is accepted for the latter); ``http/json`` is
  refused, the Python OTLP exporters cannot send it.
- endpoint: argument > ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as is) > ``OTEL_EXPORTER_OTLP_ENDPOINT``
  (for HTTP, ``/v1/traces`` is appended, as the OTLP exporter spec says for the base endpoint) > default
  ``http://127.0.0.1:4317`` (grpc) / ``http://127.0.0.1:4318/v1/traces`` (http/protobuf). An HTTP endpoint
  given as an argument without a path (``http://host:4318``) gets ``/v1/traces`` too; one with a path is used
  as is. An endpoint without a scheme (``host:4317``) means ``http://`` (plaintext); use ``https://`` for TLS.
- headers: ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` (else ``OTEL_EXPORTER_OTLP_HEADERS``), with the argument's
  headers replacing those of the same name. Names are lower-cased (gRPC metadata requires it).
- service name: argument > ``OTEL_SERVICE_NAME`` > none (the SDK resource default,
  ``OTEL_RESOURCE_ATTRIBUTES``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from opentelemetry.util.re import parse_env_headers

GRPC = "grpc"
HTTP_PROTOBUF = "http/protobuf"
PROTOCOLS = (GRPC, HTTP_PROTOBUF)
DEFAULT_GRPC_ENDPOINT = "http://127.0.0.1:4317"
DEFAULT_HTTP_ENDPOINT = "http://127.0.0.1:4318/v1/traces"
TRACES_PATH = "/v1/traces"

ENV_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
ENV_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
ENV_PROTOCOL = "OTEL_EXPORTER_OTLP_PROTOCOL"
ENV_TRACES_PROTOCOL = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
ENV_HEADERS = "OTEL_EXPORTER_OTLP_HEADERS"
ENV_TRACES_HEADERS = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
ENV_SERVICE_NAME = "OTEL_SERVICE_NAME"


class ConfigurationError(ValueError):
    """An argument or environment variable of ``configure()`` cannot be used; the message says which."""


@dataclass(frozen=True, slots=True)
class ExportSettings:
    """Resolved export settings; equal settings mean a repeated ``configure()`` has nothing to do."""

    endpoint: str
    protocol: str
    headers: tuple[tuple[str, str], ...] = ()
    service_name: str | None = None

    @property
    def headers_dict(self) -> dict[str, str]:
        return dict(self.headers)


def _protocol(value: str, source: str) -> str:
    normalised = value.strip().lower()
    if normalised == "http":
        normalised = HTTP_PROTOBUF
    if normalised not in PROTOCOLS:
        hint = " (the Python OTLP exporters cannot send OTLP/JSON)" if normalised == "http/json" else ""
        raise ConfigurationError(
            f"{source}: unsupported OTLP protocol {value!r}{hint}; use 'grpc' or 'http/protobuf'"
        )
    return normalised


def _with_scheme(url: str, source: str) -> str:
    url = url.strip()
    if "://" not in url:
        url = f"http://{url}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"{source}: not a usable OTLP endpoint URL: {url!r}")
    try:
        parts.port  # noqa: B018 - validates the port number
    except ValueError as exc:
        raise ConfigurationError(f"{source}: bad port in OTLP endpoint {url!r}: {exc}") from None
    return url


def _append_traces_path(url: str) -> str:
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return f"{url.rstrip('/')}{TRACES_PATH}"
    return url


def _headers(raw: str, source: str) -> dict[str, str]:
    try:
        return {k.strip().lower(): v.strip() for k, v in parse_env_headers(raw, liberal=True).items()}
    except Exception as exc:  # parse_env_headers is liberal, but be safe about odd input
        raise ConfigurationError(f"{source}: cannot parse headers: {exc}") from None


def resolve_settings(
    endpoint: str | None = None,
    *,
    protocol: str | None = None,
    service_name: str | None = None,
    headers: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ExportSettings:
    """The effective export settings for these ``configure()`` arguments and this environment."""
    env = os.environ if environ is None else environ

    if protocol is not None:
        resolved_protocol = _protocol(protocol, "protocol argument")
    elif env.get(ENV_TRACES_PROTOCOL):
        resolved_protocol = _protocol(env[ENV_TRACES_PROTOCOL], ENV_TRACES_PROTOCOL)
    elif env.get(ENV_PROTOCOL):
        resolved_protocol = _protocol(env[ENV_PROTOCOL], ENV_PROTOCOL)
    else:
        resolved_protocol = GRPC
    http = resolved_protocol == HTTP_PROTOBUF

    if endpoint is not None:
        if not isinstance(endpoint, str) or not endpoint.strip():
            raise ConfigurationError(f"endpoint argument: expected a URL string, got {endpoint!r}")
        url = _with_scheme(endpoint, "endpoint argument")
        resolved_endpoint = _append_traces_path(url) if http else url
    elif env.get(ENV_TRACES_ENDPOINT):
        resolved_endpoint = _with_scheme(env[ENV_TRACES_ENDPOINT], ENV_TRACES_ENDPOINT)
    elif env.get(ENV_ENDPOINT):
        url = _with_scheme(env[ENV_ENDPOINT], ENV_ENDPOINT)
        resolved_endpoint = f"{url.rstrip('/')}{TRACES_PATH}" if http else url
    else:
        resolved_endpoint = DEFAULT_HTTP_ENDPOINT if http else DEFAULT_GRPC_ENDPOINT

    merged: dict[str, str] = {}
    if env.get(ENV_TRACES_HEADERS):
        merged.update(_headers(env[ENV_TRACES_HEADERS], ENV_TRACES_HEADERS))
    elif env.get(ENV_HEADERS):
        merged.update(_headers(env[ENV_HEADERS], ENV_HEADERS))
    if headers is not None:
        if not isinstance(headers, Mapping):
            raise ConfigurationError(
                f"headers argument: expected a mapping of header names to values, got {headers!r}"
            )
        for key, value in headers.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ConfigurationError(
                    f"headers argument: names and values must be strings, got {key!r}: {value!r}"
                )
            merged[key.strip().lower()] = value

    if service_name is not None and (not isinstance(service_name, str) or not service_name.strip()):
        raise ConfigurationError(f"service_name argument: expected a non-empty string, got {service_name!r}")
    resolved_service = service_name or env.get(ENV_SERVICE_NAME) or None

    return ExportSettings(
        endpoint=resolved_endpoint,
        protocol=resolved_protocol,
        headers=tuple(sorted(merged.items())),
        service_name=resolved_service,
    )
