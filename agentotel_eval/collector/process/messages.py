"""What the collector and its helper processes say to each other: a kind, typed fields, and raw frames.

A message crosses the socket pair as one header frame, ``marshal`` of ``(kind, frame_count, *fields)``,
followed by ``frame_count`` raw frames (a request body, Arrow IPC buffers, encoded records), which are sent
from their own buffers, never copied into the header. Each kind has a NamedTuple, so both ends read fields by
name; fields are plain values marshal writes (str, int, float, bool, bytes, None, and lists, tuples
and dicts of them).
"""

from __future__ import annotations

import enum
import marshal
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar


class Kind(enum.IntEnum):
    # every helper
    SETUP = 1
    READY = 2
    STOP = 3
    STOPPED = 4
    # decode workers
    DECODE = 10
    DECODED = 11
    DECODE_FAILED = 12
    # the assembler
    MARKS = 20
    READ_TRACES = 21
    LATEST_SPAN_TIME = 22
    RECENT_TRACES = 23
    REPLY = 24
    CALL_FAILED = 25
    ROWS = 26
    FORWARD = 27
    COUNTERS = 28
    PROGRESS = 29


_KIND_OF: dict[type, Kind] = {}
_TYPE_OF: dict[Kind, type] = {}

M = TypeVar("M", bound=type)


def _message(kind: Kind) -> Callable[[M], M]:
    def register(cls: M) -> M:
        _KIND_OF[cls] = kind
        _TYPE_OF[kind] = cls
        return cls

    return register


# ---- every helper ------------------------------------------------------------------------------------------


@_message(Kind.SETUP)
class Setup(NamedTuple):
    """collector -> helper, first: how to run. ``tuning`` is ``process.tuning.Tuning.as_tuple()``;
    ``settings`` the helper's own configuration, pickled (frozen dataclasses of this collector's config, sent
    over a private socket pair by the process that started the helper)."""

    log_level: int
    tuning: tuple[int, bool]
    nice: int = 0
    settings: bytes = b""


@_message(Kind.READY)
class Ready(NamedTuple):
    """helper -> collector, once: set up and taking messages."""

    pid: int


@_message(Kind.STOP)
class Stop(NamedTuple):
    """collector -> helper: finish what you hold, say ``Stopped``, exit."""


@_message(Kind.STOPPED)
class Stopped(NamedTuple):
    """helper -> collector, last."""


# ---- decode workers ----------------------------------------------------------------------------------------


@_message(Kind.DECODE)
class Decode(NamedTuple):
    """A request body to decode (the one frame that follows)."""

    request_id: int
    signal: str
    encoding: str
    keep_records: bool | str  # ``decode.batch.decode_request``'s ``keep_spans``


@_message(Kind.DECODED)
class Decoded(NamedTuple):
    """A decoded request (``decode.batch.IngestBatch``): its rows follow as one Arrow IPC frame, when any
    record was valid; ``records`` are the records themselves where the collector still needs
    them (``wire.dumps``)."""

    request_id: int
    signal: str
    marks: list[Any]
    rejected: int
    message: str
    records: bytes | None
    limited: dict[str, int] | None = None


#: why a decode failed: the body is not a valid request, it is over a hard limit, memory ran out (retry
#: later), or a bug
BAD_REQUEST, OVER_LIMIT, UNAVAILABLE, ERROR = "bad_request", "over_limit", "unavailable", "error"


@_message(Kind.DECODE_FAILED)
class DecodeFailed(NamedTuple):
    request_id: int
    reason: str  # BAD_REQUEST | UNAVAILABLE | ERROR
    message: str


# ---- the assembler -----------------------------------------------------------------------------------------


@_message(Kind.MARKS)
class Marks(NamedTuple):
    """collector -> assembler: the marks of one commit's new records, and the commit's
    ``ingested_at`` (ns)."""

    spans: Sequence[Any]
    logs: Sequence[Any]
    commit: int | None


@_message(Kind.READ_TRACES)
class ReadTraces(NamedTuple):
    """assembler -> collector: read these traces' records back (``TraceReader.load_tables``); answered with a
    ``Reply`` followed by the tables' Arrow IPC frames."""

    call_id: int
    trace_ids: list[str]
    lo_ns: int
    hi_ns: int
    whole: bool
    commits: list[int] | None


@_message(Kind.LATEST_SPAN_TIME)
class LatestSpanTime(NamedTuple):
    call_id: int


@_message(Kind.RECENT_TRACES)
class RecentTraces(NamedTuple):
    call_id: int
    since_ns: int


@_message(Kind.REPLY)
class Reply(NamedTuple):
    """collector -> assembler: the answer to a call (its frames follow, for ``ReadTraces``)."""

    call_id: int
    value: Any


@_message(Kind.CALL_FAILED)
class CallFailed(NamedTuple):
    call_id: int
    message: str


@_message(Kind.ROWS)
class Rows(NamedTuple):
    """assembler -> collector: one batch of run rows (``collector.store.runs.RunRows``); its
    tables follow as frames."""

    replace: list[tuple[Any, ...]]
    span_updates: list[tuple[Any, ...]]
    has_evaluations: bool
    has_span_values: bool


@_message(Kind.FORWARD)
class Forward(NamedTuple):
    """assembler -> collector: held spans to send downstream, with their scores (``wire.dumps``)."""

    records: bytes


@_message(Kind.COUNTERS)
class Counters(NamedTuple):
    """assembler -> collector: its counters (``assemble.assembly.AssemblyStats.to_dict``), cumulative."""

    counters: dict[str, Any]


@_message(Kind.PROGRESS)
class Progress(NamedTuple):
    """assembler -> collector: marks taken so far, and how many wait in its inbox
    (back-pressure reads them)."""

    received: int
    inbox: int


Message = Any  # one of the NamedTuples above


def encode(message: Message, frame_count: int = 0) -> bytes:
    """The header frame of ``message``, announcing ``frame_count`` raw frames after it."""
    return marshal.dumps((int(_KIND_OF[type(message)]), frame_count, *message))


def decode(header: bytes) -> tuple[Message, int]:
    """The message of a header frame, and how many raw frames follow it (``ValueError``
    when it is not one)."""
    try:
        kind, frame_count, *fields = marshal.loads(header)
        return _TYPE_OF[Kind(kind)](*fields), frame_count
    except (EOFError, TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"not a message ({exc})") from None
