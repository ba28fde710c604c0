"""A small fake OpenAI-compatible chat-completions server, so examples/openai_tool_loop.py runs offline.

    python examples/fake_openai_server.py --port 8000     # serves http://127.0.0.1:8000/v1 until Ctrl+C

It answers ``POST /v1/chat/completions`` like a model that plans a trip: it asks for ``search_flights``, then
``get_weather``, then ``book_hotel`` (one tool call per turn, each once the previous result is in the
messages), and writes the final answer from the tool results. Each reply is decided from the request's
messages alone, never from a counter kept between requests, so concurrent conversations do not disturb each
other. Standard library only; it listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMPLETIONS_PATHS = ("/v1/chat/completions", "/chat/completions")


def _trip(question: str) -> dict[str, Any] | None:
    """The trip a question asks for: "from Berlin to Rome on 2025-07-01 for 3 nights"."""
    route = re.search(r"\bfrom\s+([A-Z][\w-]*)\s+to\s+([A-Z][\w-]*)", question)
    if route is None:
        return None
    date = re.search(r"\b\d{4}-\d{2}-\d{2}\b", question)
    nights = re.search(r"\b(\d+)\s+nights?\b", question)
    return {
        "origin": route.group(1),
        "destination": route.group(2),
        "date": date.group(0) if date else "2025-07-01",
        "nights": int(nights.group(1)) if nights else 2,
    }


def _plan(trip: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    flight = {"origin": trip["origin"], "destination": trip["destination"], "date": trip["date"]}
    return [
        ("search_flights", flight),
        ("get_weather", {"city": trip["destination"]}),
        ("book_hotel", {"city": trip["destination"], "nights": trip["nights"]}),
    ]


def _results_by_tool(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Tool name -> result text, pairing each tool message with the assistant call it answers."""
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            names[call.get("id", "")] = call.get("function", {}).get("name", "")
    return {
        names[m["tool_call_id"]]: str(m.get("content", ""))
        for m in messages
        if m.get("role") == "tool" and m.get("tool_call_id") in names
    }


def _final_answer(results: Mapping[str, str]) -> str:
    def parsed(name: str) -> dict[str, Any]:
        try:
            value = json.loads(results.get(name, "{}"))
        except json.JSONDecodeError:
            return {"error": results.get(name)}
        return value if isinstance(value, dict) else {"result": value}

    flight, weather, hotel = parsed("search_flights"), parsed("get_weather"), parsed("book_hotel")
    errors = [str(r["error"]) for r in (flight, weather, hotel) if "error" in r]  # fed back as "Error: ..."
    if errors:
        return "I could not complete the booking: " + "; ".join(errors)
    return (
        f"You fly {flight['flight']} on {flight['date']} ({flight['price_eur']} EUR). "
        f"{weather['city']} will be {weather['condition']} at {weather['temperature_c']}C. "
        f"Hotel booked: {hotel['hotel']} for {hotel['nights']} nights, confirmation {hotel['confirmation']}."
    )


def reply_to(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat.completion object answering one request."""
    messages: list[Mapping[str, Any]] = list(body.get("messages") or [])
    question = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    offered = {t.get("function", {}).get("name") for t in body.get("tools") or ()}
    results = _results_by_tool(messages)
    trip = _trip(question)

    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish_reason = "stop"
    if trip is None:
        message["content"] = "Where do you want to go? Tell me like this: from Berlin to Rome on 2025-07-01."
    elif missing := [name for name, _ in _plan(trip) if name not in offered]:
        message["content"] = f"I cannot plan this trip without the tools {', '.join(missing)}."
    else:
        pending = [(name, args) for name, args in _plan(trip) if name not in results]
        if pending:
            name, args = pending[0]
            function = {"name": name, "arguments": json.dumps(args)}
            message["tool_calls"] = [{"id": f"call_{name}", "type": "function", "function": function}]
            finish_reason = "tool_calls"
        else:
            message["content"] = _final_answer(results)
    prompt_tokens = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 10
    completion_tokens = len(json.dumps(message)) // 4
    return {
        "id": f"chatcmpl-fake-{len(messages)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the OpenAI client expects

    def log_message(self, format: str, *args: Any) -> None:  # no line per request on stderr
        pass

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

    def _send(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.split("?")[0] not in COMPLETIONS_PATHS:
            self._error(404, f"no route {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._error(400, "the body is not JSON")
            return
        if body.get("stream"):
            self._error(400, "streaming is not supported")
            return
        self._send(200, reply_to(body))


class FakeOpenAIServer:
    """The fake server on 127.0.0.1 (port 0: an ephemeral one) in a background thread; a context manager."""

    def __init__(self, port: int = 0) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (for running the server on its own)."""
        try:
            self._server.serve_forever()
        finally:
            self._server.server_close()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    server = FakeOpenAIServer(args.port)
    print(f"fake OpenAI server on {server.base_url} (OPENAI_BASE_URL={server.base_url})", flush=True)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C is how it is stopped
        server.serve_forever()


if __name__ == "__main__":
    main()
