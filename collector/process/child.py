"""The collector's helper processes (the assembler, the decode workers): starting them on a private socket pair,
and, on their side, the settings the collector sends them and their entry point."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path

from collector.process.tuning import Tuning, tune_process


class ChildUnavailable(RuntimeError):
    """A helper process could not be started."""


def start_child(module: str) -> tuple[subprocess.Popen[bytes], Connection]:
    """``python -m MODULE FD`` with FD its end of a new socket pair; returns the process and our end.

    The child gets no stdin and inherits stderr (its log lines go where the collector's go). ``PYTHONPATH`` names
    the directory ``collector`` is imported from, so an uninstalled checkout starts the same code."""
    try:
        ours, theirs = socket.socketpair()
    except OSError as exc:  # out of file descriptors, say
        raise ChildUnavailable(f"could not start {module}: {exc}") from exc
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
        )
    except OSError as exc:
        ours.close()
        raise ChildUnavailable(f"could not start {module}: {exc}") from exc
    finally:
        theirs.close()
    return proc, Connection(ours.detach())


#: hang-ups and closes of helper connections, one at a time: a hang-up between another thread's close and the
#: reuse of the descriptor's number would shut down whatever file got the number
_FD_LOCK = threading.Lock()


def hang_up(conn: Connection) -> None:
    """Shut both directions of the connection's socket: a thread blocked reading or writing it returns at once
    (closing the descriptor would not wake it, and could hand its number to another file under its feet)."""
    with _FD_LOCK:
        if conn.closed:
            return
        try:
            sock = socket.socket(fileno=os.dup(conn.fileno()))
        except (OSError, ValueError):
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            sock.close()


def close_connection(conn: Connection) -> None:
    """Close a helper connection (idempotent, safe beside ``hang_up`` from another thread)."""
    with _FD_LOCK, contextlib.suppress(OSError):
        conn.close()


def apply_helper_settings(name: str, log_level: int, tuning: tuple[int, bool, float, bool]) -> None:
    """In a helper: the collector's log level, and the process tuning it runs with (``Tuning.as_tuple``)."""
    logging.basicConfig(level=log_level, stream=sys.stderr,
                        format=f"%(asctime)s %(levelname)s agentotel {name}: %(message)s")
    tune_process(Tuning(*tuning))


def helper_main(serve: Callable[[Connection], None], argv: Sequence[str] | None = None) -> int:
    """``python -m MODULE FD``: serve the connection on descriptor FD (what ``start_child`` passes) until done."""
    args = sys.argv[1:] if argv is None else list(argv)
    conn = Connection(int(args[0]))
    try:
        serve(conn)
    finally:
        conn.close()
    return 0
