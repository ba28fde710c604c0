"""TLS on both ports of a real collector, with a self-signed certificate made at test time: the real SDK
exporters export over it, plain clients are refused, a handshake that never completes stalls no one, and the
commands reach the collector through discovery with https, trusting its certificate alone."""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import grpc
import pytest

from agentotel_eval.access import discovery
from agentotel_eval.otlp.encode import encode_traces
from tests.support.collector_harness import (
    fresh_span,
    grpc_export,
    http_request,
    post_otlp,
    running_collector,
    self_signed_certificate,
    spans_stored,
)

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="no openssl command to make a certificate"
)

ROOT = Path(__file__).resolve().parents[4]
TOKEN = "tls-test-token"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return self_signed_certificate(tmp_path_factory.mktemp("cert"))


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return tmp_path_factory.mktemp("tls") / "tls.duckdb"


@pytest.fixture(scope="module")
def collector(db, certificate):
    cert, key = certificate
    with running_collector(
        db, tls={"cert": str(cert), "key": str(key)}, receiver={"http_read_timeout": 2.0}
    ) as c:
        yield c


@pytest.fixture(scope="module")
def pinned(certificate):
    return discovery.client_ssl_context(str(certificate[0]))


def sdk_spans(name: str) -> list:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("tls-test").start_as_current_span(name):
        pass
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans


def test_the_endpoints_say_https(collector):
    assert collector.http_endpoint.startswith("https://127.0.0.1:")


def test_sdk_http_exporter_with_certificate_file_stores_spans(collector, certificate, monkeypatch):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    # requests lets these variables override a session's own CA file (certificate_file); a
    # machine may set them
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    exporter = OTLPSpanExporter(
        endpoint=f"{collector.http_endpoint}/v1/traces", certificate_file=str(certificate[0]), timeout=10
    )
    spans = sdk_spans("https-export")
    try:
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert spans_stored(collector, f"{spans[0].context.trace_id:032x}") == 1


def test_sdk_grpc_exporter_with_otel_exporter_otlp_certificate_stores_spans(
    collector, certificate, monkeypatch
):
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", str(certificate[0]))
    exporter = OTLPSpanExporter(endpoint=f"https://{collector.grpc_endpoint}", timeout=10)
    spans = sdk_spans("grpc-tls-export")
    try:
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert spans_stored(collector, f"{spans[0].context.trace_id:032x}") == 1


def test_sdk_grpc_exporter_with_credentials_stores_spans(collector, certificate):
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    credentials = grpc.ssl_channel_credentials(root_certificates=certificate[0].read_bytes())
    exporter = OTLPSpanExporter(
        endpoint=collector.grpc_endpoint, insecure=False, credentials=credentials, timeout=10
    )
    spans = sdk_spans("grpc-credentials-export")
    try:
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert spans_stored(collector, f"{spans[0].context.trace_id:032x}") == 1


def test_plain_http_to_the_tls_port_fails_and_stores_nothing(collector, pinned):
    span = fresh_span()
    host_port = collector.http_endpoint.removeprefix("https://")
    with pytest.raises((http.client.HTTPException, OSError)):
        plain = http.client.HTTPConnection(host_port, timeout=5)
        try:
            plain.request(
                "POST",
                "/v1/traces",
                body=encode_traces([span]).SerializeToString(),
                headers={"Content-Type": "application/x-protobuf"},
            )
            plain.getresponse()
        finally:
            plain.close()
    assert spans_stored(collector, span.trace_id) == 0
    # and the port still serves TLS clients
    assert http_request(collector.http_endpoint, "GET", "/healthz", context=pinned).status == 200


def test_a_plain_grpc_channel_to_the_tls_port_fails(collector):
    span = fresh_span()
    with pytest.raises(grpc.RpcError) as failed:
        grpc_export(collector.grpc_endpoint, "traces", encode_traces([span]).SerializeToString(), timeout=5)
    assert failed.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    assert spans_stored(collector, span.trace_id) == 0


def test_raw_exports_over_tls(collector, certificate, pinned):
    span, other = fresh_span(), fresh_span()
    assert (
        post_otlp(
            collector.http_endpoint, "traces", encode_traces([span]).SerializeToString(), context=pinned
        ).status
        == 200
    )
    grpc_export(
        collector.grpc_endpoint,
        "traces",
        encode_traces([other]).SerializeToString(),
        root_certificate=certificate[0].read_bytes(),
    )
    assert spans_stored(collector, span.trace_id) == 1 and spans_stored(collector, other.trace_id) == 1


def test_a_client_that_does_not_trust_the_certificate_is_refused(collector):
    with pytest.raises(ssl.SSLCertVerificationError):
        http_request(collector.http_endpoint, "GET", "/healthz", context=ssl.create_default_context())


def test_a_handshake_that_never_completes_stalls_no_one(collector, pinned):
    """Silent connections and a half-sent ClientHello hold only their own threads, and are closed after the
    read timeout (2 s here); TLS clients meanwhile are served at once."""
    host, port = collector.http.address
    stalled = [socket.create_connection((host, port), timeout=10) for _ in range(4)]
    stalled[0].sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # the start of a ClientHello, no more
    try:
        for _ in range(3):
            started = time.monotonic()
            span = fresh_span()
            assert (
                post_otlp(
                    collector.http_endpoint,
                    "traces",
                    encode_traces([span]).SerializeToString(),
                    context=pinned,
                ).status
                == 200
            )
            assert time.monotonic() - started < 1.5
            assert spans_stored(collector, span.trace_id) == 1
        started = time.monotonic()
        for sock in stalled:
            assert sock.recv(1024) == b""  # closed by the collector
        assert time.monotonic() - started < 6
    finally:
        for sock in stalled:
            sock.close()


# ---- discovery ---------------------------------------------------------------------------------------------


def test_the_sidecar_records_tls_and_the_certificate(collector, db, certificate):
    info = discovery.read_sidecar(db)
    assert info is not None
    assert info.scheme == "https" and info.cert == str(certificate[0].resolve())
    assert info.base_url == collector.http_endpoint
    assert discovery.find_collector(db) == info


def test_discovery_trusts_only_the_recorded_certificate(collector, db, tmp_path):
    """The certificate is pinned: a sidecar naming another certificate does not reach this collector."""
    info = discovery.read_sidecar(db)
    assert info is not None
    other_cert, _ = self_signed_certificate(tmp_path, "other")
    elsewhere = tmp_path / "copy.duckdb"
    discovery.write_sidecar(elsewhere, dataclasses.replace(info, cert=str(other_cert)))
    assert discovery.find_collector(elsewhere) is None
    discovery.write_sidecar(elsewhere, info)
    assert discovery.find_collector(elsewhere) == info


def test_an_old_sidecar_without_the_tls_fields_is_read_as_http(tmp_path):
    db = tmp_path / "old.duckdb"
    discovery.sidecar_path(db).write_text(
        json.dumps(
            {
                "pid": os.getpid(),
                "http": "127.0.0.1:1",
                "db": str(db),
                "token": "t",
                "grpc": "",
                "started_at": "",
            }
        )
    )
    info = discovery.read_sidecar(db)
    assert info is not None and info.scheme == "http" and info.cert == ""
    assert info.base_url == "http://127.0.0.1:1"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory, certificate):
    """TLS and a token."""
    cert, key = certificate
    db = tmp_path_factory.mktemp("guarded") / "guarded.duckdb"
    with running_collector(
        db,
        tls={"cert": str(cert), "key": str(key)},
        auth={"token": TOKEN},
        receiver={"decode_workers": 0},
        assembler={"process": False},
    ) as c:
        yield c


def test_tls_with_a_token(guarded, certificate, pinned):
    cert, _ = certificate
    span = fresh_span()
    body = encode_traces([span]).SerializeToString()
    assert post_otlp(guarded.http_endpoint, "traces", body, context=pinned).status == 401
    with pytest.raises(grpc.RpcError) as refused:
        grpc_export(guarded.grpc_endpoint, "traces", body, root_certificate=cert.read_bytes())
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert spans_stored(guarded, span.trace_id) == 0
    grpc_export(
        guarded.grpc_endpoint,
        "traces",
        body,
        root_certificate=cert.read_bytes(),
        metadata=(("authorization", f"Bearer {TOKEN}"),),
    )
    assert spans_stored(guarded, span.trace_id) == 1
    other = fresh_span()
    assert (
        post_otlp(
            guarded.http_endpoint,
            "traces",
            encode_traces([other]).SerializeToString(),
            context=pinned,
            headers={"Authorization": f"Bearer {TOKEN}"},
        ).status
        == 200
    )
    assert spans_stored(guarded, other.trace_id) == 1


# ---- the commands, through discovery -----------------------------------------------------------------------


def query_cli(db: Path, sql: str, token: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "AGENTOTEL_AUTH_TOKEN"}
    env["PYTHONPATH"] = str(ROOT)
    if token is not None:
        env["AGENTOTEL_AUTH_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", "query", sql, "--db", str(db), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )


def test_query_reaches_the_tls_collector_through_discovery(collector, db):
    before = collector.query_counts.get("ok", 0)
    done = query_cli(db, "SELECT 7 AS n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"n": 7}]
    assert collector.query_counts["ok"] == before + 1


def test_query_sends_the_token_over_tls(guarded):
    done = query_cli(guarded.db_path, "SELECT 5 AS n", token=TOKEN)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"n": 5}]
    refused = query_cli(guarded.db_path, "SELECT 1")
    assert refused.returncode == 1 and "requires a token: set AGENTOTEL_AUTH_TOKEN" in refused.stderr


# ---- the web UI's cookie -----------------------------------------------------------------------------------


def test_the_ui_cookie_is_secure_over_https(guarded, pinned):
    login = http_request(
        guarded.http_endpoint,
        "POST",
        "/login",
        urlencode({"token": TOKEN, "next": "/"}).encode(),
        {"Content-Type": "application/x-www-form-urlencoded"},
        context=pinned,
    )
    assert login.status == 303
    assert "Secure" in [part.strip() for part in login.headers["set-cookie"].split(";")]


def test_a_connection_over_the_cap_is_told_so_over_tls(tmp_path, certificate, pinned):
    """The handshake is made before the cap is looked at, so even a TLS client reads why it was refused."""
    cert, key = certificate
    with running_collector(
        tmp_path / "cap.duckdb",
        tls={"cert": str(cert), "key": str(key)},
        receiver={"http_max_connections": 2},
    ) as capped:
        host, port = capped.http.address
        held = [pinned.wrap_socket(socket.create_connection((host, port), timeout=10)) for _ in range(2)]
        try:
            with pinned.wrap_socket(socket.create_connection((host, port), timeout=10)) as extra:
                answer = b""
                try:
                    while chunk := extra.recv(65536):
                        answer += chunk
                except (ssl.SSLError, OSError):
                    pass
            assert answer.startswith(b"HTTP/1.1 503 "), answer[:80]
            assert b"http_max_connections = 2" in answer
            assert capped.http.stats.refused == 1
        finally:
            for sock in held:
                sock.close()
