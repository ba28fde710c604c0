"""One end of a helper's socket pair: whole messages (``messages``) in and out.

Any number of threads may send (a message and its frames go out together, under a lock); one thread receives.
``hang_up`` wakes a thread blocked on the socket in either direction, which closing the
descriptor would not do.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from agentotel_eval.collector.process.messages import Message, decode, encode

#: hang-ups and closes of channels, one at a time: a hang-up between another thread's close and the reuse of
#: the descriptor's number would shut down whatever file got the number
_FD_LOCK = threading.Lock()


class ChannelClosed(ConnectionError):
    """The other end is gone (or this end was closed)."""


class ChannelBusy(TimeoutError):
    """Other threads' messages held the channel for longer than this send could wait."""


class Channel:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._send_lock = threading.Lock()
        #: when the send under way must be done by (monotonic), 0 when none is under way or it may take its
        #: time: a peer that stopped reading holds its sender forever, and a watchdog tells it by this
        self.send_deadline = 0.0

    @property
    def closed(self) -> bool:
        return self._conn.closed

    def send(
        self,
        message: Message,
        frames: Sequence[Any] = (),
        *,
        timeout: float | None = None,
        stuck_after: float | None = None,
    ) -> None:
        """Send a message and its frames; ``ChannelBusy`` if the channel is not free within ``timeout``,
        ``ChannelClosed`` if the other end is gone. ``stuck_after``: the send itself
        should be done by then."""
        header = encode(
            message, len(frames)
        )  # a value marshal refuses raises ValueError here, not as a closed channel
        if not self._send_lock.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
            raise ChannelBusy(f"the channel was busy for {timeout:g}s")
        try:
            if stuck_after is not None:
                self.send_deadline = time.monotonic() + stuck_after
            self._conn.send_bytes(header)
            for frame in frames:
                self._conn.send_bytes(frame)  # a buffer goes as it is: no copy into a bytes object
        except (
            OSError,
            ValueError,
            TypeError,
        ) as exc:  # closed (here, meanwhile: TypeError), hung up, peer gone
            raise ChannelClosed(str(exc) or "the channel is closed") from None
        finally:
            self.send_deadline = 0.0
            self._send_lock.release()

    def receive(self) -> tuple[Message, list[bytes]]:
        """The next message and its frames; ``ChannelClosed`` once the other end is gone.
        One receiving thread."""
        try:
            message, count = decode(self._conn.recv_bytes())
            return message, [self._conn.recv_bytes() for _ in range(count)]
        except (EOFError, OSError) as exc:
            raise ChannelClosed(str(exc) or "the other end closed the channel") from None

    def hang_up(self) -> None:
        """Shut both directions of the socket: threads blocked reading or writing it return at once."""
        with _FD_LOCK:
            if self._conn.closed:
                return
            try:
                sock = socket.socket(fileno=os.dup(self._conn.fileno()))
            except (OSError, ValueError):
                return
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            finally:
                sock.close()

    def close(self) -> None:
        """Close this end (idempotent). A send under way is woken first and its end awaited: closing under it
        could hand its descriptor's number to another file while it still writes to that number."""
        self.hang_up()
        locked = self._send_lock.acquire(timeout=5.0)
        try:
            with _FD_LOCK, contextlib.suppress(OSError):
                self._conn.close()
        finally:
            if locked:
                self._send_lock.release()
