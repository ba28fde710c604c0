"""Bearer token authentication against a real collector: OTLP over HTTP and gRPC (raw and through the real
OpenTelemetry SDK exporters), the JSON APIs, /metrics, /healthz, the web UI's sign-in and cookie, the commands
that talk to a running collector, and the warning about a listener open to the network without a token."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import grpc
import pytest
from google.rpc import code_pb2, status_pb2

from agentotel_eval.collector.receive.auth import Authenticator
from agentotel_eval.otlp.encode import encode_traces, traces_to_json
from tests.support.collector_harness import (
    fresh_span,
    grpc_export,
    http_request,
    metric_samples,
    post_otlp,
    running_collector,
    spans_stored,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[4]
TOKEN = "s3cret-Token_for-tests"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
CHALLENGE = 'Bearer realm="agentotel-eval"'


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return tmp_path_factory.mktemp("auth") / "auth.duckdb"


@pytest.fixture(scope="module")
def collector(db):
    with running_collector(db, auth={"token": TOKEN}) as c:
        yield c


# ---- OTLP/HTTP ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Authorization": f"Bearer {TOKEN}x"},
    ],
    ids=["none", "wrong", "basic", "no-scheme", "longer"],
)
@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_otlp_http_without_the_token_is_401_and_nothing_is_stored(collector, headers, encoding):
    span = fresh_span()
    body = (
        encode_traces([span]).SerializeToString()
        if encoding == "protobuf"
        else json.dumps(traces_to_json([span])).encode()
    )
    answer = post_otlp(collector.http_endpoint, "traces", body, encoding, headers=headers)
    assert answer.status == 401
    assert answer.headers["www-authenticate"] == CHALLENGE
    assert answer.headers["connection"] == "close"  # the body was not read: the connection cannot be reused
    if encoding == "protobuf":
        assert answer.headers["content-type"] == "application/x-protobuf"
        status = status_pb2.Status.FromString(answer.body)
        assert status.code == code_pb2.UNAUTHENTICATED
    else:
        assert answer.headers["content-type"] == "application/json"
        assert json.loads(answer.body)["code"] == code_pb2.UNAUTHENTICATED
    assert spans_stored(collector, span.trace_id) == 0


def test_otlp_http_with_the_token_is_stored(collector):
    span = fresh_span()
    answer = post_otlp(
        collector.http_endpoint,
        "traces",
        encode_traces([span]).SerializeToString(),
        headers={"Authorization": f"bearer  {TOKEN}"},
    )  # the scheme is case-insensitive
    assert answer.status == 200
    assert spans_stored(collector, span.trace_id) == 1


def test_a_refused_request_is_answered_before_its_body_is_read(collector):
    """Headers announcing 10 MB and no body: the 401 comes at once (a read would wait for the read timeout)
    and the connection is closed; a client that asks to continue is never told to."""
    host, port = collector.http.address
    for expect in ("", "Expect: 100-continue\r\n"):
        with socket.create_connection((host, port), timeout=5) as sock:
            started = time.monotonic()
            sock.sendall(
                f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                f"Content-Length: 10000000\r\n{expect}\r\n".encode()
            )
            data = b""
            while chunk := sock.recv(65536):  # until the server closes
                data += chunk
            assert time.monotonic() - started < 3
        assert data.startswith(b"HTTP/1.1 401 "), data[:100]
        assert b"100 Continue" not in data
        assert (
            f"www-authenticate: {CHALLENGE}".encode() in data
        )  # names are case-insensitive, the value is not


# ---- gRPC --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "metadata",
    [None, (("authorization", "Bearer nope"),), (("authorization", TOKEN),), (("x-token", TOKEN),)],
    ids=["none", "wrong", "no-scheme", "other-key"],
)
def test_grpc_without_the_token_is_unauthenticated_and_nothing_is_stored(collector, metadata):
    span = fresh_span()
    before = collector.auth.failures().get("grpc", 0)
    with pytest.raises(grpc.RpcError) as refused:
        grpc_export(
            collector.grpc_endpoint,
            "traces",
            encode_traces([span]).SerializeToString(),
            metadata=metadata,
            timeout=10,
        )
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert collector.auth.failures()["grpc"] == before + 1
    assert spans_stored(collector, span.trace_id) == 0


def test_grpc_with_the_token_is_stored(collector):
    span = fresh_span()
    grpc_export(
        collector.grpc_endpoint,
        "traces",
        encode_traces([span]).SerializeToString(),
        metadata=(("authorization", f"Bearer {TOKEN}"),),
    )
    assert spans_stored(collector, span.trace_id) == 1


# ---- the real OpenTelemetry SDK exporters, configured by OTEL_EXPORTER_OTLP_HEADERS ------------------------


def sdk_spans(name: str) -> list:
    """Finished SDK spans (ReadableSpan), captured in memory, to hand to an exporter."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("auth-test").start_as_current_span(name):
        pass
    spans = memory.get_finished_spans()
    provider.shutdown()
    return list(spans)


def sdk_exporter(protocol: str, collector):
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=collector.grpc_endpoint, insecure=True, timeout=5)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=f"{collector.http_endpoint}/v1/traces", timeout=5)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_sdk_exporters_send_the_token_from_otel_exporter_otlp_headers(collector, monkeypatch, protocol):
    from opentelemetry.sdk.trace.export import SpanExportResult

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{TOKEN}")
    exporter = sdk_exporter(protocol, collector)
    spans = sdk_spans(f"with-token-{protocol}")
    try:
        assert exporter.export(spans) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    trace_id = f"{spans[0].context.trace_id:032x}"
    assert spans_stored(collector, trace_id) == 1

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_HEADERS")
    exporter = sdk_exporter(protocol, collector)
    spans = sdk_spans(f"without-token-{protocol}")
    try:
        assert exporter.export(spans) == SpanExportResult.FAILURE
    finally:
        exporter.shutdown()
    assert spans_stored(collector, f"{spans[0].context.trace_id:032x}") == 0


# ---- the JSON APIs, /metrics, /healthz and the web UI ------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/query", json.dumps({"sql": "SELECT 1"}).encode()),
        ("POST", "/v1/rescore", json.dumps({"dry_run": True}).encode()),
        ("GET", "/metrics", None),
    ],
)
def test_query_rescore_and_metrics_need_the_header(collector, method, path, body):
    refused = http_request(collector.http_endpoint, method, path, body, {"Content-Type": "application/json"})
    assert refused.status == 401
    assert refused.headers["www-authenticate"] == CHALLENGE
    assert "requires a token" in json.loads(refused.body)["error"]
    answer = http_request(
        collector.http_endpoint, method, path, body, {"Content-Type": "application/json", **BEARER}
    )
    assert answer.status == 200, answer.body


def test_a_refused_query_is_not_run(collector):
    before = dict(collector.query_counts)
    http_request(collector.http_endpoint, "POST", "/v1/query", json.dumps({"sql": "SELECT 1"}).encode())
    assert collector.query_counts == before


def test_metrics_count_the_refusals_per_transport(collector):
    before = collector.auth.failures().get("http", 0)
    assert http_request(collector.http_endpoint, "GET", "/metrics").status == 401
    text = http_request(collector.http_endpoint, "GET", "/metrics", headers=BEARER).body.decode()
    samples = metric_samples(text)
    assert samples['agentotel_auth_failures_total{transport="http"}'] == before + 1
    assert 'agentotel_auth_failures_total{transport="grpc"}' in samples


def test_healthz_stays_open_but_tells_nothing_without_the_token(collector):
    bare = http_request(collector.http_endpoint, "GET", "/healthz")
    assert bare.status == 200
    assert json.loads(bare.body) == {
        "status": "ok",
        "token": collector._token,
    }  # what discovery checks, no more
    full = json.loads(http_request(collector.http_endpoint, "GET", "/healthz", headers=BEARER).body)
    assert full["db"] == str(collector.db_path) and full["pid"] == os.getpid()
    assert str(collector.db_path) not in bare.body.decode()


@pytest.mark.parametrize("path", ["/static/style.css", "/static/app.js", "/api/runs/latest", "/favicon.ico"])
def test_assets_and_the_polled_api_need_credentials(collector, path):
    refused = http_request(collector.http_endpoint, "GET", path)
    assert refused.status == 401 and refused.headers["www-authenticate"] == CHALLENGE
    assert http_request(collector.http_endpoint, "GET", path, headers=BEARER).status in (200, 204)


def test_the_bearer_header_opens_the_pages(collector):
    answer = http_request(collector.http_endpoint, "GET", "/?since=all", headers=BEARER)
    assert answer.status == 200 and b'href="/static/style.css"' in answer.body


def test_the_authenticator_reads_headers_and_metadata():
    auth = Authenticator("abc")
    assert auth.bearer("Bearer abc") and auth.bearer("BEARER abc") and auth.bearer("  Bearer   abc ")
    assert not any(
        auth.bearer(v) for v in (None, "", "Bearer", "Bearer ab", "Bearer abcd", "Token abc", "abc")
    )
    assert auth.metadata((("user-agent", "x"), ("authorization", "Bearer abc")))
    assert not auth.metadata((("authorization", "Bearer abd"),)) and not auth.metadata(None)
    with pytest.raises(ValueError):
        Authenticator("")


# ---- the warning about a listener open to the network ------------------------------------------------------


def started_logs(tmp_path: Path, caplog, **sections) -> str:
    caplog.clear()
    with (
        caplog.at_level(logging.WARNING, logger="agentotel.collector"),
        running_collector(
            tmp_path / f"w{time.monotonic_ns()}.duckdb",
            receiver={"decode_workers": 0},
            assembler={"process": False},
            **sections,
        ),
    ):
        pass
    return "\n".join(r.getMessage() for r in caplog.records if r.name == "agentotel.collector")


def test_a_listener_beyond_loopback_without_a_token_is_warned_about(tmp_path, caplog):
    text = started_logs(tmp_path, caplog, http="0.0.0.0:0")
    assert "anyone who can reach 0.0.0.0:" in text
    assert (
        "can write spans and read every stored prompt, tool argument and result through /v1/query and the "
        "web UI; set --auth-token or AGENTOTEL_AUTH_TOKEN" in text
    )
    grpc_text = started_logs(tmp_path, caplog, grpc="0.0.0.0:0")
    assert "anyone who can reach 0.0.0.0:" in grpc_text and "(OTLP/gRPC) can write spans" in grpc_text
    assert "/v1/query" not in grpc_text  # the HTTP port stayed on loopback


def test_no_warning_on_loopback_or_with_a_token(tmp_path, caplog):
    assert "anyone who can reach" not in started_logs(tmp_path, caplog)
    with_token = started_logs(tmp_path, caplog, http="0.0.0.0:0", auth={"token": TOKEN})
    assert "anyone who can reach" not in with_token
    assert "sent in clear text" in with_token  # the token itself is exposed without TLS


def test_serve_warns_on_its_stderr(tmp_path):
    """The real command: the warning reaches the operator's terminal."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTOTEL_AUTH_TOKEN"}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentotel_eval.cli",
            "serve",
            "--db",
            str(tmp_path / "serve.duckdb"),
            "--http",
            "0.0.0.0:0",
            "--grpc",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        wait_until(
            lambda: (tmp_path / "serve.duckdb.collector.json").exists(), timeout=60, what="the collector"
        )
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    assert "WARNING" in stderr and "anyone who can reach 0.0.0.0:" in stderr, stderr


# ---- commands that talk to the running collector -----------------------------------------------------------


def agentotel(*args: str, token: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "AGENTOTEL_AUTH_TOKEN"}
    env["PYTHONPATH"] = str(ROOT)
    if token is not None:
        env["AGENTOTEL_AUTH_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )


def test_query_sends_the_token_from_the_environment(collector, db):
    before = collector.query_counts.get("ok", 0)
    done = agentotel("query", "SELECT 42 AS n", "--db", str(db), "--format", "json", token=TOKEN)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"n": 42}]
    assert collector.query_counts["ok"] == before + 1  # served by the collector


def test_query_without_the_token_says_what_to_set(collector, db):
    done = agentotel("query", "SELECT 1", "--db", str(db), token=None)
    assert done.returncode == 1
    assert (
        f"the collector at {collector.http_endpoint} requires a token: set AGENTOTEL_AUTH_TOKEN"
        in done.stderr
    )
    wrong = agentotel("query", "SELECT 1", "--db", str(db), token="wrong")
    assert wrong.returncode == 1 and "refused the token in AGENTOTEL_AUTH_TOKEN" in wrong.stderr


def test_rescore_sends_the_token_from_the_environment(collector, db):
    done = agentotel("rescore", "--db", str(db), "--dry-run", "--format", "json", token=TOKEN)
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), dict)
    refused = agentotel("rescore", "--db", str(db), "--dry-run", token=None)
    assert refused.returncode == 1
    assert "requires a token: set AGENTOTEL_AUTH_TOKEN" in refused.stderr


# ---- the web UI in a browser: sign-in form, cookie, logout -------------------------------------------------


def cookie_of(answer) -> str:
    return answer.headers["set-cookie"].split(";", 1)[0]


def sign_in(collector, token: str, next_path: str = "/"):
    return http_request(
        collector.http_endpoint,
        "POST",
        "/login",
        urlencode({"token": token, "next": next_path}).encode(),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )


def test_a_page_without_credentials_answers_the_sign_in_form(collector):
    answer = http_request(collector.http_endpoint, "GET", "/runs?since=all")
    assert answer.status == 401
    assert answer.headers["www-authenticate"] == CHALLENGE
    assert answer.headers["content-type"].startswith("text/html")
    page = answer.body.decode()
    assert '<form class="sign-in" method="post" action="/login">' in page
    assert 'name="next" value="/runs?since=all"' in page
    assert '<link rel="stylesheet"' not in page and "<script" not in page  # self-contained: nothing to fetch
    assert "style-src 'sha256-" in answer.headers["content-security-policy"]


def test_signing_in_sets_a_cookie_derived_from_the_token_and_leads_to_the_page(collector):
    answer = sign_in(collector, TOKEN, "/runs?since=all")
    assert answer.status == 303
    assert answer.headers["location"] == "/runs?since=all"
    attributes = [part.strip() for part in answer.headers["set-cookie"].split(";")]
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(attributes)
    assert "Secure" not in attributes  # plain HTTP here (see test_tls for https)
    name, value = attributes[0].split("=", 1)
    assert name == "agentotel_session"
    assert TOKEN not in answer.headers["set-cookie"]
    assert value == hmac.new(TOKEN.encode(), b"agentotel-ui", hashlib.sha256).hexdigest()
    cookie = {"Cookie": f"other=1; {attributes[0]}"}
    for path in ("/runs?since=all", "/", "/static/app.js", "/api/runs/latest"):
        assert http_request(collector.http_endpoint, "GET", path, headers=cookie).status == 200, path


def test_the_cookie_does_not_open_otlp_the_query_rescore_or_metrics(collector):
    cookie = {"Cookie": cookie_of(sign_in(collector, TOKEN))}
    span = fresh_span()
    answer = post_otlp(
        collector.http_endpoint, "traces", encode_traces([span]).SerializeToString(), headers=cookie
    )
    assert answer.status == 401
    assert spans_stored(collector, span.trace_id) == 0
    for method, path in (("POST", "/v1/query"), ("POST", "/v1/rescore"), ("GET", "/metrics")):
        body = json.dumps({"sql": "SELECT 1"}).encode() if method == "POST" else None
        assert http_request(collector.http_endpoint, method, path, body, cookie).status == 401, path
    assert set(json.loads(http_request(collector.http_endpoint, "GET", "/healthz", headers=cookie).body)) == {
        "status",
        "token",
    }


def test_a_wrong_cookie_is_refused(collector):
    forged = {"Cookie": f"agentotel_session={TOKEN}"}  # the token itself is not the cookie
    assert http_request(collector.http_endpoint, "GET", "/", headers=forged).status == 401


def test_a_wrong_token_shows_the_form_again_with_an_error(collector):
    answer = sign_in(collector, "not-it", "/runs")
    assert answer.status == 401
    assert "set-cookie" not in answer.headers
    page = answer.body.decode()
    assert "That is not this collector&#39;s token." in page and 'value="/runs"' in page


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example/x",
        "/\\evil.example",
        "javascript:alert(1)",
        "evil",
        "/logout",
        "/x\r\nSet-Cookie: a=b",
    ],
)
def test_signing_in_never_leads_off_the_collector(collector, target):
    answer = sign_in(collector, TOKEN, target)
    assert answer.status == 303 and answer.headers["location"] == "/"


def test_logout_clears_the_cookie(collector):
    answer = http_request(collector.http_endpoint, "GET", "/logout")
    assert answer.status == 303 and answer.headers["location"] == "/"
    attributes = [part.strip() for part in answer.headers["set-cookie"].split(";")]
    assert attributes[0] == "agentotel_session=" and "Max-Age=0" in attributes


def test_the_sign_in_page_can_be_asked_for(collector):
    answer = http_request(collector.http_endpoint, "GET", "/login?next=/runs")
    assert answer.status == 200 and b'name="next" value="/runs"' in answer.body


def test_the_ui_cookie_is_derived_from_the_token():
    auth = Authenticator("abc")
    assert auth.cookie_value == hmac.new(b"abc", b"agentotel-ui", hashlib.sha256).hexdigest()
    assert auth.cookie(f"a=1; agentotel_session={auth.cookie_value}")
    assert not auth.cookie("agentotel_session=abc") and not auth.cookie(None)
    assert Authenticator("abd").cookie_value != auth.cookie_value
