"""A decode worker process: turns export request bodies into what the collector appends
(``collector.decode.pool``).

Decoding is the collector's heaviest per-span work in Python (the OTLP decoder, the JSON of every attribute
map, the Arrow columns). In the collector's own process it would hold the interpreter lock against the DuckDB
writer, whose appends take that lock many times while they scan an Arrow batch (docs/benchmarks.md). Here it
runs in a process of its own: for each ``Decode`` (the body as its frame) it answers, in order, ``Decoded``
(the rows as its frame) or ``DecodeFailed``. It exits on ``Stop``, or when the collector's end of
the channel closes.

Run as ``python -m agentotel_eval.collector.decode.worker FD`` by the pool's supervisors; not a user command.
"""

from __future__ import annotations

import logging
import os
import pickle
import sys
import time
from collections.abc import Sequence

from agentotel_eval.collector.decode.batch import decode_request, to_message
from agentotel_eval.collector.process.channel import Channel, ChannelClosed
from agentotel_eval.collector.process.child import helper_main
from agentotel_eval.collector.process.messages import (
    BAD_REQUEST,
    ERROR,
    OVER_LIMIT,
    UNAVAILABLE,
    Decode,
    DecodeFailed,
    Ready,
    Setup,
    Stop,
    Stopped,
)
from agentotel_eval.collector.process.tuning import TRIM_INTERVAL, Tuning, release_free_memory
from agentotel_eval.otlp import DecodeError, LimitExceeded
from agentotel_eval.otlp.limits import DEFAULT_LIMITS
from agentotel_eval.reconstruct.declared import BUILTIN
from agentotel_eval.redaction import Redactor

log = logging.getLogger("agentotel.decode")


def serve(channel: Channel, setup: Setup) -> None:
    trim = Tuning(*setup.tuning).malloc
    declared, limits, redaction = (
        pickle.loads(setup.settings) if setup.settings else ((), DEFAULT_LIMITS, None)
    )
    conventions = BUILTIN.plus(declared)
    redactor = Redactor(redaction) if redaction is not None else None
    channel.send(Ready(os.getpid()))
    trimmed = time.monotonic()
    while True:
        try:
            message, frames = channel.receive()
        except ChannelClosed:  # the collector is gone
            return
        if isinstance(message, Stop):
            channel.send(Stopped())
            return
        if not isinstance(message, Decode) or len(frames) != 1:
            log.error("unexpected %s from the collector; ignored", type(message).__name__)
            continue
        reply: object
        out: list[object] = []
        try:
            reply, out = to_message(
                message.request_id,
                decode_request(
                    message.signal,
                    message.encoding,
                    frames[0],
                    keep_spans=message.keep_records,
                    conventions=conventions,
                    limits=limits,
                    redactor=redactor,
                ),
            )
        except DecodeError as exc:
            reply = DecodeFailed(
                message.request_id, OVER_LIMIT if isinstance(exc, LimitExceeded) else BAD_REQUEST, str(exc)
            )
        except MemoryError:  # the body is fine: a retry, once memory is free again, decodes it
            reply = DecodeFailed(message.request_id, UNAVAILABLE, "out of memory while decoding; try again")
        except Exception as exc:  # a bug: this request fails, the worker goes on
            log.exception("decoding a %s request failed", message.signal)
            reply = DecodeFailed(message.request_id, ERROR, f"{type(exc).__name__}: {exc}")
        del frames
        try:
            channel.send(reply, out)
        except ChannelClosed:
            return
        del reply, out
        if trim and time.monotonic() - trimmed > TRIM_INTERVAL:
            release_free_memory()
            trimmed = time.monotonic()


def main(argv: Sequence[str] | None = None) -> int:
    return helper_main("decode", serve, argv)


if __name__ == "__main__":
    sys.exit(main())
