"""OTLP/HTTP receiver and the collector's small HTTP API, on the standard library's threading HTTP server.

Routes: ``POST /v1/traces``, ``POST /v1/logs`` (OTLP, protobuf or JSON, gzip/deflate), ``POST /v1/query``
(read-only SQL), ``POST /v1/rescore`` (re-score stored runs), ``GET /healthz``, ``GET /metrics`` (Prometheus
text), and the web UI's pages (``collector.ui``). OTLP answers follow the OTLP/HTTP spec: the response is in the
request's encoding; errors carry a ``google.rpc.Status`` body; 400 undecodable, 413 too large, 415 unknown content
type or encoding, 405 wrong method, 503 + ``Retry-After`` when the write queue is full. Each connection is served
by its own thread, which blocks until its records are committed.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from collector.receive.body import inflate, read_body
from collector.receive.errors import BadRequest, PayloadTooLarge, ReceiverError, UnsupportedMediaType
from collector.receive.ingest import ExportOutcome, Ingestor
from collector.ui.routes import Answer as UiAnswer
from collector.ui.routes import is_ui_path

log = logging.getLogger(__name__)

OTLP_PATHS = {"/v1/traces": "traces", "/v1/logs": "logs"}
CONTENT_TYPES = {
    "application/x-protobuf": "protobuf",
    "application/protobuf": "protobuf",
    "application/json": "json",
}
_POST_ONLY = ("/v1/query", "/v1/rescore")
_MEDIA_TYPE = {"protobuf": "application/x-protobuf", "json": "application/json"}
_GRPC_CODES = {"INVALID_ARGUMENT": code_pb2.INVALID_ARGUMENT, "RESOURCE_EXHAUSTED": code_pb2.RESOURCE_EXHAUSTED,
               "UNAVAILABLE": code_pb2.UNAVAILABLE}
_MAX_QUERY_BODY = 1024 * 1024


@dataclass
class HttpApp:
    """What the HTTP routes need, as plain callables so the receiver knows nothing of the service."""

    ingestor: Ingestor
    max_request_size: int
    query: Callable[[dict[str, Any]], dict[str, Any]]  # raises QueryError
    health: Callable[[], dict[str, Any]]
    metrics: Callable[[], str]
    idle_timeout: float = 60.0
    #: the web UI: (path, query string) -> its answer, or None when the path is not one of its pages
    ui: Callable[[str, str], UiAnswer | None] | None = None
    #: ``POST /v1/rescore``: the JSON body -> (HTTP status, JSON answer)
    rescore: Callable[[Any], tuple[int, dict[str, Any]]] | None = None


def export_response(outcome: ExportOutcome, encoding: str) -> bytes:
    """The Export*ServiceResponse of an outcome, with partial_success when records were rejected."""
    if outcome.signal == "traces":
        response: Any = ExportTraceServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_spans = outcome.rejected
            response.partial_success.error_message = outcome.message
    else:
        response = ExportLogsServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_log_records = outcome.rejected
            response.partial_success.error_message = outcome.message
    if encoding == "json":
        return json.dumps(json_format.MessageToDict(response)).encode()
    return response.SerializeToString()


def status_body(error: ReceiverError, encoding: str) -> bytes:
    status = status_pb2.Status(code=_GRPC_CODES.get(error.grpc_code, code_pb2.UNKNOWN), message=str(error))
    if encoding == "json":
        return json.dumps(json_format.MessageToDict(status)).encode()
    return status.SerializeToString()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are written separately: with Nagle's algorithm on, a keep-alive client's delayed ACK
    # held every body back about 40 ms (docs/benchmarks.md).
    disable_nagle_algorithm = True
    server_version = "agentotel-eval"
    sys_version = ""
    server: OTLPHTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.app.idle_timeout)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    # ---- plumbing ----

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload, ensure_ascii=False).encode(), "application/json", headers)

    def _send_text(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, (text + "\n").encode(), "text/plain; charset=utf-8", headers)

    def _path(self) -> str:
        return self.path.split("?", 1)[0]

    def _read_body(self, limit: int) -> bytes:
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        try:
            return read_body(self.rfile, self.headers.get("Content-Length"), chunked, limit)
        except ReceiverError:
            self.close_connection = True  # the unread body would otherwise be parsed as the next request
            raise

    # ---- methods ----

    def do_POST(self) -> None:
        path = self._path()
        if path in OTLP_PATHS:
            self._otlp(OTLP_PATHS[path])
        elif path == "/v1/query":
            self._query()
        elif path == "/v1/rescore":
            self._rescore()
        elif path in ("/healthz", "/metrics") or is_ui_path(path):
            self._method_not_allowed("GET")
        else:
            self.close_connection = True  # the body is not read
            self._send_text(404, f"no route for POST {path}")

    def do_GET(self) -> None:
        path = self._path()
        app = self.server.app
        if path == "/healthz":
            self._send_json(200, app.health())
        elif path == "/metrics":
            self._send(200, app.metrics().encode(), "text/plain; version=0.0.4; charset=utf-8")
        elif path in OTLP_PATHS or path in _POST_ONLY:
            self._method_not_allowed("POST")
        else:
            self._ui(path)

    def do_HEAD(self) -> None:
        self.do_GET()

    def _other(self) -> None:
        path = self._path()
        if path in OTLP_PATHS or path in _POST_ONLY:
            self._method_not_allowed("POST")
        elif path in ("/healthz", "/metrics") or is_ui_path(path):
            self._method_not_allowed("GET")
        else:
            self._send_text(404, f"no route for {self.command} {path}")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _other

    def _method_not_allowed(self, allowed: str) -> None:
        self.close_connection = True
        self._send_text(405, f"{self.command} is not allowed on {self._path()}; use {allowed}", {"Allow": allowed})

    # ---- routes ----

    def _ui(self, path: str) -> None:
        app = self.server.app
        query = self.path.split("?", 1)[1] if "?" in self.path else ""
        try:
            answer = app.ui(path, query) if app.ui is not None else None
        except Exception as exc:  # a page must never take the connection down
            log.exception("UI page %s failed", path)
            self._send_text(500, f"internal error: {exc}")
            return
        if answer is None:
            self._send_text(404, f"no route for GET {path}")
            return
        self._send(answer.status, answer.body, answer.content_type, answer.headers)

    def _otlp(self, signal: str) -> None:
        app = self.server.app
        media_type = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        encoding = CONTENT_TYPES.get(media_type)
        try:
            if encoding is None:
                self.close_connection = True
                raise UnsupportedMediaType(
                    f"unsupported Content-Type {media_type or '(none)'!r}; "
                    "use application/x-protobuf or application/json"
                )
            body = self._read_body(app.max_request_size)
            body = inflate(body, self.headers.get("Content-Encoding", ""), app.max_request_size)
            outcome = app.ingestor.ingest_body(signal, encoding, body, "http")
        except ReceiverError as exc:
            self._error(exc, encoding or "json", signal)
            return
        except Exception as exc:  # never let a bug take the connection down silently
            log.exception("unexpected error on POST /v1/%s", signal)
            self._error(BadRequest(f"internal error: {exc}"), encoding or "json", signal, status=500)
            return
        self._send(200, export_response(outcome, encoding), _MEDIA_TYPE[encoding])

    def _error(self, exc: ReceiverError, encoding: str, signal: str, status: int | None = None) -> None:
        headers: dict[str, str] = {}
        if exc.retryable:
            headers["Retry-After"] = str(max(1, math.ceil(getattr(exc, "retry_after", 1.0))))
        if isinstance(exc, UnsupportedMediaType | PayloadTooLarge):
            self.server.app.ingestor.stats.count("http", signal, "too_large" if isinstance(exc, PayloadTooLarge)
                                                  else "unsupported")
        self._send(status or exc.http_status, status_body(exc, encoding), _MEDIA_TYPE[encoding], headers)

    def _rescore(self) -> None:
        app = self.server.app
        try:
            payload = json.loads(self._read_body(_MAX_QUERY_BODY) or b"{}")
        except (ReceiverError, ValueError) as exc:
            self._send_json(400, {"error": str(exc)})
            return
        if app.rescore is None:
            self._send_json(404, {"error": "this server does not re-score"})
            return
        try:
            status, answer = app.rescore(payload)
        except Exception as exc:
            log.exception("re-score failed")
            self._send_json(500, {"error": f"internal error: {exc}"})
            return
        self._send_json(status, answer)

    def _query(self) -> None:
        from agentotel_eval.store.query import QueryError

        app = self.server.app
        try:
            body = self._read_body(_MAX_QUERY_BODY)
            payload = json.loads(body or b"{}")
            if not isinstance(payload, dict) or not isinstance(payload.get("sql"), str):
                raise ValueError('expected a JSON object {"sql": "SELECT ..."}')
        except (ReceiverError, ValueError) as exc:
            self._send_json(400, {"error": str(exc), "kind": "invalid"})
            return
        try:
            result = app.query(payload)
        except QueryError as exc:
            if exc.kind == "unavailable":
                self._send_json(503, {"error": str(exc), "kind": exc.kind}, {"Retry-After": "1"})
            else:
                self._send_json(400, {"error": str(exc), "kind": exc.kind})
            return
        except Exception as exc:
            log.exception("query failed")
            self._send_json(500, {"error": f"internal error: {exc}", "kind": "internal"})
            return
        self._send_json(200, result)


class OTLPHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: HttpApp) -> None:
        self.app = app
        super().__init__(address, _Handler)


class HttpReceiver:
    """Owns the server and its accept thread: ``start()`` binds (raising on a taken port), ``shutdown()`` stops."""

    def __init__(self, host: str, port: int, app: HttpApp) -> None:
        self._address = (host, port)
        self._app = app
        self._server: OTLPHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            return self._address
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        if self._server is not None:
            return
        try:
            self._server = OTLPHTTPServer(self._address, self._app)
        except OSError as exc:
            raise OSError(f"cannot listen for HTTP on {self._address[0]}:{self._address[1]}: {exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="agentotel-http", daemon=True)
        self._thread.start()

    def stop_accepting(self) -> None:
        """Stop taking connections; requests in flight finish (their threads wait for their commit)."""
        if self._server is not None and not self._stopped:
            self._stopped = True
            self._server.shutdown()
            self._server.server_close()

    def shutdown(self) -> None:
        if self._server is not None:
            self.stop_accepting()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

