"""Helpers to run a real collector in tests and talk OTLP to it (in the spirit of logfire's ``testing``).

``running_collector`` starts an in-process collector on ephemeral ports with a fast grace period;
``post_otlp`` and ``grpc_export`` send raw OTLP bodies (over TLS too, with a token); ``wait_until`` polls with
a deadline instead of sleeping; ``self_signed_certificate`` makes a certificate for 127.0.0.1 and localhost
with the openssl tool.
"""

from __future__ import annotations

import dataclasses
import gzip as gzip_module
import http.client
import re
import shutil
import ssl
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentotel_eval.collector.config import CollectorConfig, default_config
from agentotel_eval.collector.store.operations import BaseOperation

TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"


def fast_config(db: str | Path, **sections: Any) -> CollectorConfig:
    """Ephemeral ports, a short grace period; ``sections`` override fields
    (``assembler={"grace_period": 1}``)."""
    config = default_config()
    config = dataclasses.replace(
        config,
        db=str(db),
        grpc="127.0.0.1:0",
        http="127.0.0.1:0",
        assembler=dataclasses.replace(config.assembler, grace_period=0.2, max_wait=5.0),
    )
    top = {k: v for k, v in sections.items() if not isinstance(v, dict)}
    nested = {
        k: dataclasses.replace(getattr(config, k), **v) for k, v in sections.items() if isinstance(v, dict)
    }
    return dataclasses.replace(config, **top, **nested)


@contextmanager
def running_collector(db: str | Path, **sections: Any) -> Iterator[Any]:
    from agentotel_eval.collector.service import Collector

    collector = Collector(fast_config(db, **sections), summary_interval=3600)
    collector.start()
    try:
        yield collector
    finally:
        collector.shutdown()


class Blocker(BaseOperation):
    """A writer operation that holds the operations thread until released: makes queue
    states deterministic."""

    name = "blocker"

    def __init__(self, hold: float = 20.0) -> None:
        import threading

        self.entered = threading.Event()
        self.release = threading.Event()
        self._hold = hold

    def apply(self, con: Any) -> None:
        self.entered.set()
        self.release.wait(self._hold)


class HeldCommits:
    """Holds a writer's ingest thread at its next commit until ``release`` is set; the records it holds stay
    queued meanwhile (what tests use to fill the write queue, or to make requests share one commit)."""

    def __init__(self, writer: Any, hold: float = 20.0) -> None:
        import threading

        self.entered = threading.Event()
        self.release = threading.Event()
        commit = writer._commit_items

        def held(items: Any) -> None:
            if not self.release.is_set():
                self.entered.set()
                self.release.wait(hold)
            commit(items)

        writer._commit_items = held


def wait_until(
    predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02, what: str = ""
) -> Any:
    """Poll ``predicate`` until it returns something truthy; raise AssertionError at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


@dataclasses.dataclass
class HttpAnswer:
    status: int
    headers: dict[str, str]
    body: bytes


def http_request(
    endpoint: str,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
    *,
    context: ssl.SSLContext | None = None,
) -> HttpAnswer:
    """One request on a fresh connection; an ``https://`` endpoint is reached with ``context``."""
    conn: http.client.HTTPConnection
    if endpoint.startswith("https://"):
        conn = http.client.HTTPSConnection(
            endpoint.removeprefix("https://"), timeout=timeout, context=context
        )
    else:
        conn = http.client.HTTPConnection(endpoint.removeprefix("http://"), timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return HttpAnswer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        conn.close()


def post_otlp(
    endpoint: str,
    signal: str,
    body: bytes,
    encoding: str = "protobuf",
    *,
    gzip: bool = False,
    headers: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> HttpAnswer:
    """POST an OTLP body to /v1/<signal> as an exporter would."""
    all_headers = {"Content-Type": "application/x-protobuf" if encoding == "protobuf" else "application/json"}
    if gzip:
        body = gzip_module.compress(body)
        all_headers["Content-Encoding"] = "gzip"
    all_headers.update(headers or {})
    return http_request(endpoint, "POST", f"/v1/{signal}", body, all_headers, context=context)


def grpc_export(
    target: str,
    signal: str,
    body: bytes,
    *,
    compression: Any = None,
    timeout: float = 30.0,
    metadata: tuple[tuple[str, str], ...] | None = None,
    root_certificate: bytes | None = None,
) -> Any:
    """Call Export with raw protobuf bytes; returns the response bytes (raises grpc.RpcError on failure). With
    ``root_certificate`` the channel is TLS and trusts that certificate."""
    import grpc

    options = [("grpc.max_send_message_length", 256 * 1024 * 1024)]
    if root_certificate is not None:
        channel = grpc.secure_channel(
            target, grpc.ssl_channel_credentials(root_certificates=root_certificate), options=options
        )
    else:
        channel = grpc.insecure_channel(target, options=options)
    with channel:
        method = channel.unary_unary(TRACE_EXPORT if signal == "traces" else LOGS_EXPORT)
        return method(body, timeout=timeout, compression=compression, metadata=metadata)


def self_signed_certificate(directory: Path, name: str = "server") -> tuple[Path, Path]:
    """A self-signed certificate (P-256) for IP 127.0.0.1 and DNS localhost, and its key, made with the
    openssl command-line tool; raises RuntimeError where there is none."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("the openssl command-line tool is not installed")
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


_fresh_traces = iter(range(0x10000, 0x7FFFFFFF))


def fresh_span() -> Any:
    """A one-span trace with an id no other call gives (in this process)."""
    from agentotel_eval.otlp.records import SpanRecord

    trace = next(_fresh_traces)
    return SpanRecord(
        f"{trace:032x}",
        f"{trace:016x}",
        None,
        "op",
        start_ns=1_700_000_000_000_000_000,
        end_ns=1_700_000_000_000_000_100,
    )


def spans_stored(collector: Any, *trace_ids: str) -> int:
    """How many spans of these traces the collector has stored."""
    marks = ", ".join("?" for _ in trace_ids)
    return collector.query(f"SELECT count(*) FROM spans WHERE trace_id IN ({marks})", params=list(trace_ids))[
        "rows"
    ][0][0]


_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _sample_key(name: str) -> str:
    """``name{b="2",a="1"}`` with its labels in one order (the exposition format does not fix theirs)."""
    base, _, labels = name.partition("{")
    pairs = sorted(_LABEL.findall(labels))
    return base + ("{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}" if pairs else "")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class MetricSamples(dict[str, float]):
    """Samples by ``name{label="value",...}``, found whatever the order of the labels asked for."""

    def __getitem__(self, name: str) -> float:
        return super().__getitem__(_sample_key(name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(_sample_key(name))

    def get(self, name: str, default: float = 0.0) -> float:  # type: ignore[override]
        return super().get(_sample_key(name), default)


def metric_samples(text: str) -> MetricSamples:
    """Every sample of a ``/metrics`` answer, read with prometheus_client's own parser (so the text is also
    checked to be valid exposition)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = MetricSamples()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{key}="{_escape(value)}"' for key, value in sample.labels.items())
            out[_sample_key(sample.name + (f"{{{labels}}}" if labels else ""))] = sample.value
    return out
