"""``--source DIR`` for the benchmarks: import another checkout's ``agentotel_eval`` while the load (this
checkout's ``tests`` fixtures and ``bench`` modules) stays the same, to compare two versions under one load.

Only the package is put first on the path (through a link in a temporary directory), so ``tests`` still comes
from this checkout; processes started with ``spawn`` inherit the parent's path, and ``inherited_source`` puts
the link first again after their main module put this checkout there (``BENCH_SOURCE_LINK`` names it). The
collector starts its helpers (the assembler, decode workers) as ``python -m``, which imports from the working
directory first: the benchmark runs from the link's directory, so they import the same package.
"""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

_LINK = "BENCH_SOURCE_LINK"


def use_source(source: Path) -> Path:
    """Put ``source``'s ``agentotel_eval`` first on ``sys.path``; return the package directory imported."""
    package = source.resolve() / "agentotel_eval"
    if not (package / "__init__.py").is_file():
        raise SystemExit(f"{source} holds no agentotel_eval package")
    if "agentotel_eval" in sys.modules:
        raise SystemExit("agentotel_eval was imported before --source was applied")
    links = Path(tempfile.mkdtemp(prefix="bench-source-"))
    atexit.register(shutil.rmtree, links, True)
    (links / "agentotel_eval").symlink_to(package, target_is_directory=True)
    sys.path.insert(0, str(links))
    os.environ[_LINK] = str(links)
    os.chdir(
        links
    )  # ``python -m`` helpers import from here first (a checkout as working directory would win)
    return imported_from(package)


def inherited_source() -> None:
    """In a process a ``--source`` run started: its ``agentotel_eval`` first on the path, as in the parent."""
    links = os.environ.get(_LINK)
    if links and sys.path[:1] != [links]:
        sys.path.insert(0, links)


def imported_from(expected: Path | None = None) -> Path:
    """The directory ``agentotel_eval`` is imported from (links resolved); exits if it is not ``expected``."""
    import agentotel_eval

    where = Path(agentotel_eval.__file__).resolve().parent
    if expected is not None and where != expected:
        raise SystemExit(f"agentotel_eval was imported from {where}, not from {expected}")
    return where


def first_module(*names: str) -> ModuleType:
    """The first of ``names`` that imports: a module a ``--source`` checkout may hold under an older path (the
    newest path first)."""
    for name in names[:-1]:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise  # the module exists but something it imports does not
    return importlib.import_module(names[-1])
