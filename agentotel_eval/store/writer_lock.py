"""The writer's lock file: ``<db>.lock``, held (``flock``) by the one collector that has the
database open for writing.

DuckDB's own lock on the file is dropped for the moment of each reopen (``collector.store.database``); this
one is held for the collector's whole life, so another collector, or a read-only open, is refused even then.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentotel_eval.store.schema import SchemaError

try:
    import fcntl  # not on every system
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]


def writer_lock_path(path: str | Path) -> Path:
    """The file a collector holds locked (``flock``) for as long as it has ``path`` open for writing."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


def hold_writer_lock(path: str | Path) -> int | None:
    """Take the writer's lock of ``path`` (an open descriptor, or None where there is no ``flock`` or no
    file): DuckDB's own lock on the file is dropped for the moment of each reopen
    (``collector.store.database``), this one is not. Raises ``SchemaError`` when another process holds it."""
    if fcntl is None or str(path) == ":memory:":  # not a POSIX system: DuckDB's lock alone
        return None
    lock = writer_lock_path(path)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # a directory it may not create files in: DuckDB's lock alone (and its own error, if any)
        return None
    taken = _try_flock(fd, exclusive=True)
    if taken:
        return fd
    os.close(fd)
    if taken is False:
        raise SchemaError(f"cannot open {path} for writing: another collector has it open (it holds {lock})")
    return None


def release_writer_lock(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the descriptor drops its flock


def writer_holds(path: Path) -> bool:
    """Whether a collector holds ``path`` for writing (its lock file is locked), without waiting."""
    if fcntl is None:
        return False
    try:
        fd = os.open(writer_lock_path(path), os.O_RDONLY)
    except OSError:  # no lock file: no collector ever wrote it, or one from before the lock file
        return False
    try:
        return _try_flock(fd, exclusive=False) is False
    finally:
        os.close(fd)


def _try_flock(fd: int, *, exclusive: bool) -> bool | None:
    """Lock ``fd`` without waiting: True when taken, False when another process holds it, None where ``flock``
    does not work (some network mounts: DuckDB's lock decides alone)."""
    assert fcntl is not None
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True
