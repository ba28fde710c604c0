"""A real OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks that must not reach
a real LLM provider. It also answers the native chat APIs of Anthropic, Gemini and Ollama in their own shapes.

It is an actual HTTP server (``http.server`` in a background thread, one thread per connection), so litellm,
the OpenAI SDK and httpx run their real code paths: connection handling, status codes, ``Retry-After``
headers, timeouts. Replies are scripted::

    with LLMStub() as stub:
        stub.push(Reply.rate_limited(retry_after=0.2), Reply.json({"detected": False, "confidence": 0.0}))
        ...  # call litellm with model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="sk-test"
        assert len(stub.requests) == 2
        stub.requests[-1].body["messages"]  # what the client sent

Queued replies (``push``) are consumed in order; when the queue is empty the ``default`` reply (or the
``responder`` callable, given the request body) answers. Every request is recorded, including those answered
with an error status. Successful replies carry ``usage`` token counts, so litellm prices a known model name
such as ``openai/gpt-4o-mini`` from its local cost map.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


def protocol_of(path: str) -> str | None:
    """Which API a request path belongs to: OpenAI chat completions, and the native APIs of Anthropic, Gemini
    and Ollama (so the ``anthropic:``, ``google:`` and ``ollama:`` model strings reach the stub through
    litellm's real provider code); None for an unknown path."""
    if path in CHAT_PATHS:
        return "openai"
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith(":generateContent"):
        return "gemini"
    if path.endswith("/api/chat"):
        return "ollama_chat"
    if path.endswith("/api/generate"):
        return "ollama_generate"
    return None


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer.

    ``content`` is the assistant message text of a 200 reply. ``raw_body`` replaces the whole HTTP body (for
    error statuses or a body that is not JSON at all). ``delay`` seconds pass before anything is sent.
    """

    status: int = 200
    content: str | None = None
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None
    prompt_tokens: int = 120
    completion_tokens: int = 40
    finish_reason: str = "stop"

    # -- well-formed and malformed assistant answers --------------------------------------------------------
    @classmethod
    def json(cls, obj: Any, **kw: Any) -> Reply:
        """The answer is exactly the JSON object."""
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def fenced(cls, obj: Any, lang: str = "json", **kw: Any) -> Reply:
        """The JSON object inside a Markdown code fence."""
        return cls(content=f"```{lang}\n{json.dumps(obj, indent=2)}\n```", **kw)

    @classmethod
    def prose(cls, obj: Any, **kw: Any) -> Reply:
        """The JSON object with sentences before and after it."""
        return cls(
            content=f"Here is my assessment of the run.\n{json.dumps(obj)}\nLet me know if you need more.",
            **kw,
        )

    @classmethod
    def truncated(cls, obj: Any, keep: float = 0.6, **kw: Any) -> Reply:
        """The JSON text cut short, as when the model hits its token limit (``finish_reason: length``)."""
        text = json.dumps(obj)
        return cls(content=text[: max(1, int(len(text) * keep))], finish_reason="length", **kw)

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        """Any assistant text, e.g. an answer that holds no JSON at all."""
        return cls(content=content, **kw)

    @classmethod
    def slow(cls, obj: Any, delay: float, **kw: Any) -> Reply:
        return cls.json(obj, delay=delay, **kw)

    # -- HTTP-level failures --------------------------------------------------------------------------------
    @classmethod
    def rate_limited(cls, retry_after: float | str | None = None, **kw: Any) -> Reply:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        return cls.error(429, "Rate limit reached for requests", headers=headers, **kw)

    @classmethod
    def server_error(cls, status: int = 500, **kw: Any) -> Reply:
        return cls.error(status, "The server had an error while processing your request.", **kw)

    @classmethod
    def error(cls, status: int, message: str, headers: Mapping[str, str] | None = None, **kw: Any) -> Reply:
        try:
            kind = HTTPStatus(status).phrase.lower().replace(" ", "_")
        except ValueError:  # 529 and other non-standard statuses
            kind = "error"
        body = {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}
        return cls(status=status, raw_body=json.dumps(body).encode(), headers=dict(headers or {}), **kw)

    def body_for(self, request_body: Mapping[str, Any], seq: int, protocol: str = "openai") -> bytes:
        if self.raw_body is not None:
            return self.raw_body
        model = str(request_body.get("model", "stub-model"))
        if protocol == "anthropic":
            payload: dict[str, Any] = {
                "id": f"msg_stub_{seq}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": self.content or ""}],
                "stop_reason": "max_tokens" if self.finish_reason == "length" else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": self.prompt_tokens, "output_tokens": self.completion_tokens},
            }
            return json.dumps(payload).encode()
        if protocol == "gemini":
            payload = {
                "candidates": [
                    {
                        "content": {"parts": [{"text": self.content or ""}], "role": "model"},
                        "finishReason": "MAX_TOKENS" if self.finish_reason == "length" else "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": self.prompt_tokens,
                    "candidatesTokenCount": self.completion_tokens,
                    "totalTokenCount": self.prompt_tokens + self.completion_tokens,
                },
                "modelVersion": model,
            }
            return json.dumps(payload).encode()
        if protocol in ("ollama_chat", "ollama_generate"):
            payload = {
                "model": model,
                "created_at": "2026-01-01T00:00:00Z",
                "done": True,
                "done_reason": "length" if self.finish_reason == "length" else "stop",
                "prompt_eval_count": self.prompt_tokens,
                "eval_count": self.completion_tokens,
            }
            if protocol == "ollama_chat":
                payload["message"] = {"role": "assistant", "content": self.content or ""}
            else:
                payload["response"] = self.content or ""
            return json.dumps(payload).encode()
        payload = {
            "id": f"chatcmpl-stub-{seq}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_stub",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.content},
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
            },
        }
        return json.dumps(payload).encode()


@dataclass(frozen=True)
class RecordedRequest:
    """A request the stub received: its path, headers, parsed JSON body (None if not
    JSON) and arrival time."""

    path: str
    headers: Mapping[str, str]
    body: Any
    received_at: float  # time.monotonic()
    status: int  # what the stub answered

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    def prompt_text(self) -> str:
        """All message contents joined, to assert on what the judge was shown."""
        parts = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):  # content parts
                content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            parts.append(str(content))
        return "\n".join(parts)


class _StubServer(ThreadingHTTPServer):
    # The stdlib's listen backlog is 5: when 32 judge calls connect at once the kernel drops the extra
    # handshakes and the client retransmits after ~1 s, a stall no real provider has and one that would
    # swamp what we measure.
    request_queue_size = 256
    daemon_threads = True


class LLMStub:
    """The server. Use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        default: Reply | None = None,
        responder: Callable[[Any], Reply] | None = None,
    ) -> None:
        self._queue: deque[Reply] = deque(replies)
        self.default = default
        self.responder = responder
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self.max_in_flight = 0  # the most requests the stub was answering at one time
        self._server: _StubServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------------------
    def start(self) -> LLMStub:
        if self._server is not None:
            return self
        stub = self

        class Handler(_Handler):
            owner = stub

        server = _StubServer(("127.0.0.1", 0), Handler)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LLMStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stub is not running")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (with ``/v1``), for litellm's ``api_base``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script ---------------------------------------------------------------------------------------------
    def push(self, *replies: Reply) -> LLMStub:
        with self._lock:
            self._queue.extend(replies)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def _next_reply(self, body: Any) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(body)
        if self.default is not None:
            return self.default
        return Reply.error(500, "llm_stub: no reply scripted for this request")

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return len(self._requests)

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1


class _Handler(BaseHTTPRequestHandler):
    owner: LLMStub
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    # Headers and body go out in two writes; with Nagle on, the body waits for the client's
    # delayed ACK (~40 ms).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr logging
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        protocol = protocol_of(path)
        if protocol is None:
            reply = Reply.error(404, f"llm_stub: unknown path {path}")
        elif not isinstance(body, dict):
            reply = Reply.error(400, "llm_stub: the body is not a JSON object")
        else:
            reply = self.owner._next_reply(body)
        seq = self.owner._record(
            RecordedRequest(path, dict(self.headers.items()), body, time.monotonic(), reply.status)
        )
        try:
            if reply.delay:
                time.sleep(reply.delay)
            payload = reply.body_for(body if isinstance(body, dict) else {}, seq, protocol or "openai")
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            self.close_connection = True
        finally:
            self.owner._done()


def main(argv: list[str] | None = None) -> None:
    """Serve from a separate process (benchmarks: a real provider does not share the client's GIL).

    Prints the base URL on the first line of stdout, then serves until stdin closes.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="OpenAI-compatible stub LLM server")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument(
        "--json", default='{"detected": false, "confidence": 1.0}', help="the answer (JSON text)"
    )
    args = parser.parse_args(argv)
    with LLMStub(default=Reply.text(args.json, delay=args.delay)) as stub:
        print(stub.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
