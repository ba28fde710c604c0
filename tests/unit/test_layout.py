"""The collector is the package ``agentotel_eval.collector``, a real directory: tools that walk the package
(grep, import-linter, the duplicates finder) see its files under one path, and no top-level
``collector`` exists."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_collector_is_a_real_directory_of_the_package() -> None:
    package = ROOT / "agentotel_eval" / "collector"
    assert package.is_dir() and not package.is_symlink()
    assert not any(p.is_symlink() for p in (ROOT / "agentotel_eval").rglob("*"))
    spec = importlib.util.find_spec("agentotel_eval.collector.service")
    assert spec is not None and Path(str(spec.origin)).resolve().is_relative_to(package)


def test_import_collector_is_impossible() -> None:
    found = subprocess.run(
        [sys.executable, "-c", "import collector"], cwd=ROOT, capture_output=True, text=True
    )
    assert found.returncode != 0 and "No module named 'collector'" in found.stderr
