"""The HTTP listener's own cost: instructions the server process spends a request, counted by callgrind, so
the figure does not move with the load of a shared machine.

    python bench/bench_http_listener.py [--requests 60] [--spans-per-request 512]

The server (``--serve``, run under ``valgrind --tool=callgrind``) is ``HttpServer`` with one route that reads
the body as the collector's routes do and answers from the blocking pool, with no decoding: what is counted is
uvicorn, the guards and Starlette. One client sends bench_ingest's OTLP requests (the recorded fixtures, fresh
ids) one after the other on one keep-alive connection. The server runs twice, for 10 requests and for
``--requests``; the difference of the two totals over the difference of the counts is a request's cost,
start-up and imports left out. Run it in each checkout to compare (``PYTHONPATH`` pointing at the checkout).
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

FEW = 10


def serve(port_file: str) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from agentotel_eval.collector.receive.http.answers import Blocking
    from agentotel_eval.collector.receive.http.bodies import read_body
    from agentotel_eval.collector.receive.http.server import HttpServer

    blocking = Blocking(64)
    done = threading.Event()

    async def export(request: Request) -> Response:
        await blocking.run(len, await read_body(request, 64 << 20))
        return Response(b"", media_type="application/x-protobuf")

    async def stop(_request: Request) -> Response:
        done.set()
        return Response(b"")

    server = HttpServer(
        "127.0.0.1",
        0,
        Starlette(
            routes=[Route("/v1/traces", export, methods=["POST"]), Route("/stop", stop, methods=["POST"])]
        ),
    )
    server.start()
    Path(port_file + ".tmp").write_text(str(server.address[1]))
    os.replace(port_file + ".tmp", port_file)
    done.wait()
    server.shutdown(grace=1.0)
    blocking.close()


def instructions(requests: int, bodies: list[bytes], tmp: str) -> int:
    """The server process's instructions in all, serving ``requests`` requests."""
    port_file, out = os.path.join(tmp, f"port{requests}"), os.path.join(tmp, f"callgrind{requests}")
    server = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--serve",
            port_file,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    while not os.path.exists(port_file):
        if server.poll() is not None:
            raise SystemExit(f"the server did not start: {server.stderr.read() if server.stderr else ''}")
        time.sleep(0.05)
    connection = http.client.HTTPConnection("127.0.0.1", int(Path(port_file).read_text()), timeout=600)
    for i in range(requests):
        connection.request(
            "POST", "/v1/traces", bodies[i % len(bodies)], {"Content-Type": "application/x-protobuf"}
        )
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 200, answer.status
    connection.request("POST", "/stop", b"")
    connection.getresponse().read()
    _, errors = server.communicate(timeout=600)
    found = re.search(r"Collected : (\d+)", errors)
    if found is None:
        raise SystemExit(f"no callgrind total in: {errors[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--spans-per-request", type=int, default=512)
    parser.add_argument("--serve", metavar="PORT_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_ingest import RequestFactory

    factory = RequestFactory(0, args.spans_per_request, 0, 0.0, 1.0)
    bodies = [factory.next()[0] for _ in range(4)]
    with tempfile.TemporaryDirectory() as tmp:
        few, many = instructions(FEW, bodies, tmp), instructions(args.requests, bodies, tmp)
    per_request = (many - few) / (args.requests - FEW)
    size = sum(map(len, bodies)) / len(bodies)
    print(
        f"{per_request / 1e6:.3f} M instructions a request of {args.spans_per_request} spans "
        f"({size / 1e6:.2f} MB), {per_request / args.spans_per_request / 1e3:.2f} k a span (server totals "
        f"{few:,} for {FEW} requests, {many:,} for {args.requests})"
    )


if __name__ == "__main__":
    main()
