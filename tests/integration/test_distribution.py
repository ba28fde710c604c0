"""What ``pip install`` puts on a user's machine: the wheel built from this checkout holds one top-level
package, ``agentotel_eval`` (the collector inside it as ``agentotel_eval.collector``, never a top-level
``collector`` that could collide with another distribution), with every file the package reads at run time."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    # Built from a clean copy: pip builds in the source tree, whose build/ directory (left by an earlier
    # build) could carry modules that no longer exist into the wheel, and the checkout is left as it was.
    source = tmp_path_factory.mktemp("source") / "tree"
    shutil.copytree(
        ROOT,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "build",
            "dist",
            "*.egg-info",
            "__pycache__",
            ".*_cache",
            ".hypothesis",
            "*.duckdb*",
        ),
    )
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = out.glob("agentotel_eval-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_installs_one_top_level_package(wheel_names: list[str]) -> None:
    tops = {name.split("/", 1)[0] for name in wheel_names if not name.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {"agentotel_eval"}
    assert "agentotel_eval/collector/service.py" in wheel_names
    assert "agentotel_eval/collector/receive/http/server.py" in wheel_names


def test_the_wheel_holds_the_modules_of_the_checkout_and_no_others(wheel_names: list[str]) -> None:
    checkout = {
        f"agentotel_eval/{p.relative_to(ROOT / 'agentotel_eval')}"
        for p in (ROOT / "agentotel_eval").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    checkout |= {
        f"agentotel_eval/collector/{p.relative_to(ROOT / 'collector')}"
        for p in (ROOT / "collector").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert {name for name in wheel_names if name.endswith(".py")} == checkout


def test_the_wheel_carries_what_the_package_reads_at_run_time(wheel_names: list[str]) -> None:
    sources = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "agentotel_eval").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    }
    sources |= {
        f"agentotel_eval/collector/{p.relative_to(ROOT / 'collector')}"
        for p in (ROOT / "collector").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    }
    assert sources, "no data files found in the checkout"
    assert sources <= set(wheel_names), sorted(sources - set(wheel_names))


def test_no_module_imports_a_top_level_collector() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("agentotel_eval", "collector", "tests", "bench", "examples")
        for p in (ROOT / folder).rglob("*.py")
        if any(
            line.startswith(("import collector", "from collector ", "from collector."))
            for line in (raw.strip() for raw in p.read_text(encoding="utf-8").splitlines())
        )
    ]
    assert offenders == []
