"""Process-wide settings of the collector's own processes, each applied once, at start, by the process itself.

``agentotel-eval serve`` tunes its own process before it starts the collector; every helper process (decode
workers, the assembler) tunes itself when it starts, as its ``Setup`` says. Nothing here runs on import, and a
collector embedded in another program (tests, a user's process) leaves that program's process as it is. The
measurements behind each choice are in docs/benchmarks.md.

* ``gc_threshold``: the young generation of the garbage collector is collected every 50,000 allocations
  instead of 700. The assembler and the writer hold many long-lived objects beside many short-lived ones.
* ``malloc``: glibc's allocator sends every block over 1 MiB to mmap (returned to the system when freed; glibc
  otherwise raises its threshold to the largest block it saw freed and keeps the freed pages) and keeps two
  arenas instead of eight a core, and pyarrow allocates through it instead of mimalloc, which keeps freed
  pages too. Free heap pages are handed back every ``TRIM_INTERVAL`` seconds (``release_free_memory``). A
  no-op where the C library is not glibc, and pyarrow's pool is left alone when
  ``ARROW_DEFAULT_MEMORY_POOL`` is set.
"""

from __future__ import annotations

import ctypes
import gc
import os
from dataclasses import dataclass

_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
MMAP_THRESHOLD = 1024 * 1024
ARENA_MAX = 2
#: how often a collector process hands free heap pages back to the system, in seconds
TRIM_INTERVAL = 5.0
#: pyarrow's own choice of allocator; when it is set, the user chose, and pyarrow's pool is left as it is
_ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


@dataclass(frozen=True, slots=True)
class Tuning:
    """How a collector process tunes itself (see the module docstring); ``UNTUNED`` leaves it as it is."""

    gc_threshold: int = 50_000
    malloc: bool = True

    def as_tuple(self) -> tuple[int, bool]:
        """Plain values for a helper's ``Setup``."""
        return (self.gc_threshold, self.malloc)


#: the collector's choices
TUNED = Tuning()
#: nothing changed
UNTUNED = Tuning(gc_threshold=0, malloc=False)


def tune_process(tuning: Tuning) -> None:
    """Apply ``tuning`` to this process (0 or False leaves that setting alone)."""
    if tuning.gc_threshold:
        gc.set_threshold(tuning.gc_threshold, *gc.get_threshold()[1:])
    if tuning.malloc and _tune_malloc():
        _arrow_through_malloc()


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt  # noqa: B018 - glibc has it; musl and others may not
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def _tune_malloc() -> bool:
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        libc.mallopt(_M_ARENA_MAX, ARENA_MAX)
    )


def _arrow_through_malloc() -> None:
    """Make the C library's allocator pyarrow's default pool (buffers allocated before keep theirs)."""
    if os.environ.get(_ARROW_POOL_VARIABLE):
        return
    import pyarrow as pa

    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())


def release_free_memory() -> None:
    """Hand free heap pages back to the system (``malloc_trim``); a no-op where the C library is not glibc."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
