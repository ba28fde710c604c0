"""The tools the score sinks write to, run for real on 127.0.0.1 by the tests (``pytest -m sinks``, in the
``[sinks-test]`` environment that ``.ci/run`` builds): Arize Phoenix (``phoenix serve`` on a SQLite file) and
MLflow (``mlflow server`` on a SQLite backend), each started in a working directory of its own on free ports,
with its telemetry off, and stopped at the end. Langfuse needs ClickHouse, Redis and object storage, so it
cannot run here: ``LangfuseCheck`` is a local server that takes Langfuse's two endpoints the sink uses and
checks every request body with the request models of Langfuse's own Python SDK (``CreateScoresRequest``) and
the OTLP protobuf schema, answering as Langfuse documents (202, or 400 with the validation error).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.lake_servers import free_port

STARTUP_S = 180.0  # Phoenix and MLflow import a lot; on a loaded 2-core machine they take a minute or more
#: a round trip's own limit, over the suite's 120 s: the server's start (counted in its first test), the
#: judge's answers (60 s), the delivery and the re-score's (120 s each) may each take their whole wait
#: on a loaded machine
ROUND_TRIP_S = 600


def _tool(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)


def sink_marks(*modules: str) -> list[Any]:
    """``sinks``, skipped with the reason when the environment lacks the tools (``.ci/run``
    builds one with them)."""
    import importlib.util

    def absent(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is None
        except ModuleNotFoundError:  # its parent package is missing
            return True

    missing = [m for m in modules if absent(m)]
    return [
        pytest.mark.sinks,
        pytest.mark.timeout(ROUND_TRIP_S),
        pytest.mark.skipif(
            bool(missing),
            reason=f"needs the [sinks-test] extra ({', '.join(missing)} missing); "
            ".ci/run runs these in .venv-sinks",
        ),
    ]


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, what: str) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.skip(f"{what} exited at start (status {process.returncode}): {log.read_text()[-800:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.skip(f"{what} did not answer {url} within {STARTUP_S:g}s: {log.read_text()[-800:]}")


@contextlib.contextmanager
def _running(
    command: list[str], env: dict[str, str], url: str, health: str, workdir: Path, what: str
) -> Iterator[Server]:
    log = workdir / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_healthy(url + health, process, log, what)
        yield Server(url, process, log)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@contextlib.contextmanager
def running_phoenix(workdir: Path) -> Iterator[Server]:
    """``phoenix serve`` on free ports (HTTP, and gRPC so it does not take 4317), its SQLite
    file in ``workdir``."""
    phoenix = _tool("phoenix")
    if phoenix is None:
        pytest.skip("the phoenix command is not installed")
    port = free_port()
    env = {
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    with _running(
        [phoenix, "serve"], env, f"http://127.0.0.1:{port}", "/healthz", workdir, "phoenix serve"
    ) as s:
        yield s


@contextlib.contextmanager
def running_mlflow(workdir: Path) -> Iterator[Server]:
    """``mlflow server`` on a SQLite backend in ``workdir``, one worker."""
    mlflow = _tool("mlflow")
    if mlflow is None:
        pytest.skip("the mlflow command is not installed")
    port = free_port()
    command = [
        mlflow,
        "server",
        "--backend-store-uri",
        f"sqlite:///{workdir / 'mlflow.db'}",
        "--artifacts-destination",
        str(workdir / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    env = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    with _running(command, env, f"http://127.0.0.1:{port}", "/health", workdir, "mlflow server") as s:
        yield s


@dataclass
class LangfuseCheck:
    """What the Langfuse stand-in took: the scores by id (the last one sent wins, as Langfuse's upsert does),
    the spans' trace ids, and every refused request with why."""

    public_key: str
    secret_key: str
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    score_requests: int = 0
    traces: set[str] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)
    url: str = ""


def _langfuse_handler(state: LangfuseCheck) -> type[BaseHTTPRequestHandler]:
    from google.protobuf.message import DecodeError
    from langfuse.api.core.serialization import convert_and_respect_annotation_metadata
    from langfuse.api.scores.types.create_scores_request import CreateScoresRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from pydantic import TypeAdapter, ValidationError

    scores_model: TypeAdapter[Any] = TypeAdapter(CreateScoresRequest)
    expected = "Basic " + base64.b64encode(f"{state.public_key}:{state.secret_key}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _refuse(self, status: int, why: str) -> None:
            state.refused.append(f"{self.path}: {why}")
            self._answer(status, {"message": why})

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Authorization") != expected:
                return self._refuse(401, "bad credentials")
            if self.path == "/api/public/scores":
                try:
                    sent = json.loads(body)
                    # the SDK's models name fields in Python; its own reader maps the wire's camelCase to them
                    parsed = scores_model.validate_python(
                        convert_and_respect_annotation_metadata(
                            object_=sent, annotation=CreateScoresRequest, direction="read"
                        )
                    )
                except (ValueError, ValidationError) as exc:
                    return self._refuse(400, str(exc))
                unknown = [sorted(m.model_extra) for m in parsed if m.model_extra]
                if unknown:  # the models allow extra keys; Langfuse's API does not know them
                    return self._refuse(400, f"unknown fields {unknown}")
                if any(not m.trace_id or m.timestamp is None or m.timestamp.tzinfo is None for m in parsed):
                    return self._refuse(400, "a score without its trace or a timestamp with a UTC offset")
                # as the model's documentation says: a string for categorical and text scores, else a number
                if any(isinstance(m.value, str) != (m.data_type in ("CATEGORICAL", "TEXT")) for m in parsed):
                    return self._refuse(400, "a score's value does not fit its data type")
                state.score_requests += 1
                for raw, model in zip(sent, parsed, strict=True):
                    state.scores[model.id] = raw
                return self._answer(202, {})
            if self.path == "/api/public/otel/v1/traces":
                if self.headers.get("Content-Type") != "application/x-protobuf":
                    return self._refuse(415, f"content type {self.headers.get('Content-Type')}")
                request = ExportTraceServiceRequest()
                try:
                    request.ParseFromString(body)
                except DecodeError as exc:
                    return self._refuse(400, str(exc))
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        state.traces.update(span.trace_id.hex() for span in scope.spans)
                data = b""
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.wfile.write(data)
                return None
            return self._refuse(404, "no such endpoint")

    return Handler


@contextlib.contextmanager
def running_langfuse_check(public_key: str, secret_key: str) -> Iterator[LangfuseCheck]:
    state = LangfuseCheck(public_key, secret_key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _langfuse_handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
