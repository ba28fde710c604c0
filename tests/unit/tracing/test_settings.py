"""configure()'s settings: argument > OTEL_* environment > default, validated with clear errors."""

from __future__ import annotations

import pytest

from agentotel_eval.tracing.settings import ConfigurationError, ExportSettings, resolve_settings


def test_defaults():
    assert resolve_settings(environ={}) == ExportSettings("http://127.0.0.1:4317", "grpc")
    assert resolve_settings(protocol="http/protobuf", environ={}) == ExportSettings(
        "http://127.0.0.1:4318/v1/traces", "http/protobuf"
    )


def test_argument_beats_environment_beats_default():
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://generic:4317",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4317",
        "OTEL_SERVICE_NAME": "env-service",
    }
    assert resolve_settings(environ=env).endpoint == "http://traces:4317"
    assert resolve_settings(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://generic:4317"}).endpoint == (
        "http://generic:4317"
    )
    chosen = resolve_settings("http://arg:4317", service_name="arg-service", environ=env)
    assert chosen.endpoint == "http://arg:4317"
    assert chosen.service_name == "arg-service"
    assert resolve_settings(environ=env).service_name == "env-service"
    assert resolve_settings(environ={}).service_name is None


def test_http_endpoints_follow_the_otlp_exporter_rules():
    http = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    # the generic endpoint is a base: the signal path is appended
    assert resolve_settings(environ={**http, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}).endpoint == (
        "http://c:4318/v1/traces"
    )
    assert resolve_settings(
        environ={**http, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/base"}
    ).endpoint == ("http://c:4318/base/v1/traces")
    # the traces endpoint is used as is
    assert resolve_settings(
        environ={**http, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:9/custom"}
    ).endpoint == ("http://c:9/custom")
    # an argument without a path gets the traces path, one with a path is kept
    assert resolve_settings("http://c:4318", environ=http).endpoint == "http://c:4318/v1/traces"
    assert resolve_settings("https://c/otlp/v1/traces", environ=http).endpoint == "https://c/otlp/v1/traces"
    assert resolve_settings("c:4318", protocol="http", environ={}).endpoint == "http://c:4318/v1/traces"


def test_protocol_precedence_and_validation():
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}
    assert resolve_settings(environ=env).protocol == "grpc"
    assert (
        resolve_settings(environ={"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}).protocol == "http/protobuf"
    )
    assert (
        resolve_settings(protocol="grpc", environ={"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}).protocol
        == "grpc"
    )
    with pytest.raises(ConfigurationError, match="OTLP/JSON"):
        resolve_settings(protocol="http/json", environ={})
    with pytest.raises(ConfigurationError, match="OTEL_EXPORTER_OTLP_PROTOCOL"):
        resolve_settings(environ={"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"})


def test_grpc_endpoint_without_scheme_is_plaintext():
    assert resolve_settings("collector:4317", environ={}).endpoint == "http://collector:4317"


@pytest.mark.parametrize("bad", ["ftp://x:1", "http://", "http://x:notaport", "   "])
def test_bad_endpoints_are_refused(bad):
    with pytest.raises(ConfigurationError):
        resolve_settings(bad, environ={})


def test_bad_endpoint_in_environment_names_the_variable():
    with pytest.raises(ConfigurationError, match="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        resolve_settings(environ={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://nope"})


def test_headers_from_environment_merged_with_arguments():
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20env,X-Tenant=a"}
    settings = resolve_settings(headers={"x-tenant": "b", "X-Extra": "1"}, environ=env)
    assert settings.headers_dict == {"authorization": "Bearer env", "x-tenant": "b", "x-extra": "1"}
    traces_env = {**env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "k=v"}
    assert resolve_settings(environ=traces_env).headers_dict == {"k": "v"}
    with pytest.raises(ConfigurationError, match="headers"):
        resolve_settings(headers={"k": 1}, environ={})  # type: ignore[dict-item]


def test_settings_equality_drives_idempotency():
    a = resolve_settings("http://x:1", headers={"a": "1", "b": "2"}, environ={})
    b = resolve_settings("http://x:1", headers={"b": "2", "a": "1"}, environ={})
    assert a == b
    assert a != resolve_settings("http://x:2", headers={"a": "1", "b": "2"}, environ={})


def test_service_name_must_be_a_non_empty_string():
    with pytest.raises(ConfigurationError, match="service_name"):
        resolve_settings(service_name="  ", environ={})
