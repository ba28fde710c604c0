"""A decode worker process: turns export request bodies into rows for the collector (``collector.decode.pool``).

Decoding is the collector's heaviest per-span work in Python (the OTLP decoder, the JSON of every attribute map,
the Arrow columns). In the collector's own process it would hold the interpreter lock against the DuckDB writer,
whose appends take that lock many times while they scan an Arrow batch: measured, two threads decoding beside
the writer made each append six times slower. Here it runs in a process of its own and sends back what the
writer appends (an Arrow IPC stream) and the marks for the assembler.

Messages on the socket pair (``multiprocessing.connection`` framing, ``marshal`` of plain tuples):

    collector -> here:  (log_level, tuning, nice) first, then for each request
                        (request_id, signal, encoding, keep_spans) and the body as a raw frame; b"stop" at the end
    here -> collector:  b"ready" once, then for each request in order
                        (request_id, "ok", head) and the rows frame (``decoding.to_frames``)
                        | (request_id, "bad_request", message) | (request_id, "error", message)

It exits on b"stop", or when the collector's end closes (the collector is gone). Run as ``python -m collector.decode.worker FD``; not a user command.
"""

from __future__ import annotations

import logging
import marshal
import os
import signal
import sys
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection

from agentotel_eval.otlp import DecodeError
from collector.decode.batch import STOP, decode_request, to_frames
from collector.process.child import apply_helper_settings, helper_main
from collector.process.tuning import TRIM_INTERVAL, release_free_memory

log = logging.getLogger("agentotel.decode")


def serve(conn: Connection) -> None:
    # The collector decides when this process stops (it closes the socket): a Ctrl-C in the terminal or a service
    # manager's SIGTERM to the whole group must not cut requests in flight short.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    log_level, tuning, nice = marshal.loads(conn.recv_bytes())
    apply_helper_settings("decode", log_level, tuning)
    malloc = tuning[3]
    if nice:
        # Under a CPU shortage assembly goes first: requests then wait here a little longer, which slows the
        # exporters down, instead of completed traces waiting ever longer for their runs.
        os.nice(nice)
    conn.send_bytes(b"ready")
    trimmed = time.monotonic()
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):  # the collector is gone
            return
        if request == STOP:
            return
        request_id, signal_name, encoding, keep_spans = marshal.loads(request)
        try:
            body = conn.recv_bytes()
        except (EOFError, OSError):
            return
        rows: object = None
        try:
            head, rows = to_frames(decode_request(signal_name, encoding, body, keep_spans=keep_spans))
            reply: tuple[object, ...] = (request_id, "ok", head)
        except DecodeError as exc:
            reply = (request_id, "bad_request", str(exc))
        except MemoryError:  # the body is fine: a retry, once memory is free again, decodes it
            rows = None
            reply = (request_id, "unavailable", "out of memory while decoding; try again")
        except Exception as exc:  # a bug: this request fails, the worker goes on
            log.exception("decoding a %s request failed", signal_name)
            reply = (request_id, "error", f"{type(exc).__name__}: {exc}")
        del body
        try:
            conn.send_bytes(marshal.dumps(reply))
            if rows is not None:
                conn.send_bytes(rows)  # type: ignore[arg-type]
        except (OSError, ValueError):
            return
        del reply, rows
        if malloc and time.monotonic() - trimmed > TRIM_INTERVAL:
            release_free_memory()
            trimmed = time.monotonic()


def main(argv: Sequence[str] | None = None) -> int:
    return helper_main(serve, argv)


if __name__ == "__main__":
    sys.exit(main())
