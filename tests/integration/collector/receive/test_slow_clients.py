"""Slow, lying and idle HTTP clients against a real collector on 127.0.0.1, with real sockets: each is cut at
the read timeout or refused over the connection cap while a normal exporter keeps exporting, and nothing
accepted is lost. And a silent TCP connection to the gRPC port stops no gRPC export."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from agentotel_eval.otlp.encode import encode_traces
from tests.support.collector_harness import (
    HeldCommits,
    fresh_span,
    grpc_export,
    http_request,
    post_otlp,
    running_collector,
    spans_stored,
    wait_until,
)

READ_TIMEOUT = 1.0
CAP = 6


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    with running_collector(
        tmp_path_factory.mktemp("slow") / "slow.duckdb",
        receiver={"http_read_timeout": READ_TIMEOUT, "http_idle_timeout": 30.0, "http_max_connections": CAP},
    ) as c:
        yield c


def request_bytes(body: bytes, content_length: int | None = None) -> tuple[bytes, bytes]:
    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
        f"Content-Length: {len(body) if content_length is None else content_length}\r\n\r\n"
    ).encode()
    return head, body


def read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


class Exporter(threading.Thread):
    """A normal client exporting one span at a time, on a fresh connection each, until stopped."""

    def __init__(self, collector) -> None:
        super().__init__(daemon=True)
        self.collector = collector
        self.stop = threading.Event()
        self.sent: list[str] = []
        self.statuses: list[int] = []
        self.slowest = 0.0

    def run(self) -> None:
        while not self.stop.is_set():
            span = fresh_span()
            started = time.monotonic()
            answer = post_otlp(
                self.collector.http_endpoint, "traces", encode_traces([span]).SerializeToString()
            )
            self.slowest = max(self.slowest, time.monotonic() - started)
            self.statuses.append(answer.status)
            if answer.status == 200:
                self.sent.append(span.trace_id)
            time.sleep(0.05)


def no_open_connections(collector) -> None:
    wait_until(lambda: collector.http.stats.open == 0, what="the collector's connections to close")


def drip(sock: socket.socket, data: bytes, interval: float) -> float | None:
    """Send ``data`` a byte at a time; the time of the first byte, and when the server cut us
    off, how long after."""
    started = time.monotonic()
    for i in range(len(data)):
        try:
            sock.sendall(data[i : i + 1])
        except OSError:
            return time.monotonic() - started
        time.sleep(interval)
    return None


@pytest.mark.parametrize("part", ["headers", "body"])
def test_a_byte_a_second_client_is_cut_at_the_read_timeout_while_others_export(collector, part):
    no_open_connections(collector)
    timed_out = collector.http.stats.timed_out
    span = fresh_span()
    head, body = request_bytes(encode_traces([span]).SerializeToString())
    exporter = Exporter(collector)
    exporter.start()
    try:
        with socket.create_connection(collector.http.address, timeout=10) as sock:
            if part == "body":
                sock.sendall(head)
                slow = body
            else:
                slow = head + body
            started = time.monotonic()
            cut_after = drip(sock, slow, 0.25)  # 4 bytes a second: the request would take far longer than 1 s
            answer = read_until_closed(sock)
            elapsed = time.monotonic() - started
    finally:
        exporter.stop.set()
        exporter.join(30)
    assert elapsed < READ_TIMEOUT + 2.5, (elapsed, cut_after)
    if part == "body":
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]
    assert collector.http.stats.timed_out == timed_out + 1
    assert spans_stored(collector, span.trace_id) == 0
    # the normal client was served all along, and everything it was told was stored is stored
    assert exporter.statuses and set(exporter.statuses) == {200}
    assert len(exporter.sent) >= 5 and exporter.slowest < READ_TIMEOUT
    assert spans_stored(collector, *exporter.sent) == len(exporter.sent)


def test_a_lying_content_length_is_cut_at_the_read_timeout(collector):
    no_open_connections(collector)
    span = fresh_span()
    head, body = request_bytes(encode_traces([span]).SerializeToString(), content_length=100_000)
    exporter = Exporter(collector)
    exporter.start()
    try:
        with socket.create_connection(collector.http.address, timeout=10) as sock:
            started = time.monotonic()
            sock.sendall(head + body)  # far less than announced, then nothing
            answer = read_until_closed(sock)
            elapsed = time.monotonic() - started
    finally:
        exporter.stop.set()
        exporter.join(30)
    assert READ_TIMEOUT * 0.9 <= elapsed < READ_TIMEOUT + 2, elapsed
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]
    assert b"connection: close" in answer.lower()  # header names are case-insensitive
    assert spans_stored(collector, span.trace_id) == 0
    assert set(exporter.statuses) == {200} and spans_stored(collector, *exporter.sent) == len(exporter.sent)


def test_waiting_for_the_commit_is_not_the_clients_time(collector):
    """The body arrives at once; the commit is held for twice the read timeout: the export still succeeds."""
    no_open_connections(collector)
    held = HeldCommits(collector.writer)
    span = fresh_span()
    result: list[int] = []
    sender = threading.Thread(
        target=lambda: result.append(
            post_otlp(collector.http_endpoint, "traces", encode_traces([span]).SerializeToString()).status
        )
    )
    sender.start()
    try:
        assert held.entered.wait(10)
        time.sleep(READ_TIMEOUT * 2)
    finally:
        held.release.set()
    sender.join(30)
    assert result == [200]
    assert spans_stored(collector, span.trace_id) == 1


def test_connections_over_the_cap_are_refused_with_503_without_a_thread(collector):
    no_open_connections(collector)
    refused_before = collector.http.stats.refused
    sent: list[str] = []
    span = fresh_span()
    assert (
        post_otlp(collector.http_endpoint, "traces", encode_traces([span]).SerializeToString()).status == 200
    )
    sent.append(span.trace_id)
    idle = [socket.create_connection(collector.http.address, timeout=10) for _ in range(CAP)]
    try:
        wait_until(lambda: collector.http.stats.open == CAP, what="the idle connections to be taken")
        threads = threading.active_count()
        with socket.create_connection(collector.http.address, timeout=10) as extra:
            answer = read_until_closed(extra)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:80]
        assert b"retry-after: 1\r\n" in answer.lower() and b"connection: close\r\n" in answer.lower()
        assert threading.active_count() == threads  # refused by the accepting thread itself
        # a client sending its request at once gets the same answer (not a reset)
        refused = post_otlp(
            collector.http_endpoint, "traces", encode_traces([fresh_span()]).SerializeToString()
        )
        assert refused.status == 503 and refused.headers["retry-after"] == "1"
        assert collector.http.stats.refused == refused_before + 2
        assert collector.http.stats.open == CAP
    finally:
        for sock in idle:
            sock.close()
    no_open_connections(collector)
    span = fresh_span()
    assert (
        post_otlp(collector.http_endpoint, "traces", encode_traces([span]).SerializeToString()).status == 200
    )
    sent.append(span.trace_id)
    assert spans_stored(collector, *sent) == len(sent)


def test_metrics_show_the_connections(collector):
    text = http_request(collector.http_endpoint, "GET", "/metrics").body.decode()
    values = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in text.splitlines()
        if line.startswith("agentotel_http_")
    }
    assert values["agentotel_http_connections_open"] >= 1  # this one
    assert values["agentotel_http_connections_refused_total"] == collector.http.stats.refused
    assert values["agentotel_http_requests_timed_out_total"] == collector.http.stats.timed_out


def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(tmp_path):
    with running_collector(
        tmp_path / "idle.duckdb",
        receiver={"http_idle_timeout": 1.0, "decode_workers": 0},
        assembler={"process": False},
    ) as collector:
        with socket.create_connection(collector.http.address, timeout=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            first = sock.recv(65536)
            while b"\r\n\r\n" not in first:
                first += sock.recv(65536)
            head, _, body = first.partition(b"\r\n\r\n")
            assert (
                head.startswith(b"HTTP/1.1 200 ") and b"connection: close" not in head.lower()
            )  # kept alive
            length = int(
                next(
                    line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
                ).split()[1]
            )
            while len(body) < length:
                body += sock.recv(65536)
            started = time.monotonic()
            assert read_until_closed(sock) == b""
            assert 0.8 <= time.monotonic() - started < 3
        with socket.create_connection(collector.http.address, timeout=10) as silent:  # never sends a byte
            started = time.monotonic()
            assert read_until_closed(silent) == b""
            assert 0.8 <= time.monotonic() - started < 3
        wait_until(lambda: collector.http.stats.open == 0, what="the connections to be released")
        assert collector.http.stats.timed_out == 0  # idle is not a request cut short


def test_a_silent_tcp_connection_to_the_grpc_port_does_not_stop_grpc_exports(collector):
    host, port = collector.grpc_endpoint.rsplit(":", 1)
    silent = [socket.create_connection((host, int(port)), timeout=10) for _ in range(20)]
    silent[0].sendall(b"PRI * HTTP/2.0\r\n")  # half a connection preface, then nothing
    try:
        sent = []
        for _ in range(3):
            span = fresh_span()
            started = time.monotonic()
            grpc_export(
                collector.grpc_endpoint, "traces", encode_traces([span]).SerializeToString(), timeout=5
            )
            assert time.monotonic() - started < 2
            sent.append(span.trace_id)
        assert spans_stored(collector, *sent) == 3
    finally:
        for sock in silent:
            sock.close()


def test_headers_past_the_budget_are_refused_with_431(collector):
    no_open_connections(collector)
    with socket.create_connection(collector.http.address, timeout=10) as sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
        try:
            for i in range(200):  # 200 headers of 1 KiB: far past the 64 KiB budget
                sock.sendall(f"X-Filler-{i}: {'y' * 1024}\r\n".encode())
        except OSError:
            pass  # cut off once refused
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
    assert b"exceed 65536 bytes" in answer
    span = fresh_span()
    assert (
        post_otlp(collector.http_endpoint, "traces", encode_traces([span]).SerializeToString()).status == 200
    )


def test_a_client_that_closes_its_sending_side_still_gets_its_answer(collector):
    """A whole request, then a half-close (as `nc -N` does): the answer still comes, then
    the connection closes."""
    span = fresh_span()
    head, body = request_bytes(encode_traces([span]).SerializeToString())
    with socket.create_connection(collector.http.address, timeout=10) as sock:
        sock.sendall(head + body)
        sock.shutdown(socket.SHUT_WR)
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:80]
    assert spans_stored(collector, span.trace_id) == 1


def test_the_listener_turns_nagles_algorithm_off(collector):
    """With Nagle on, an answer's body waits behind its headers for the client's delayed ACK (40 ms a request
    on a keep-alive connection); asyncio turns it off only on sockets that name TCP as their protocol, and
    accepted connections inherit the listener's setting."""
    sock = collector.http._server._sock
    assert sock.proto == socket.IPPROTO_TCP
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
