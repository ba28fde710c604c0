"""The layer contract (``.importlinter``, checked by ``lint-imports`` in CI) covers every part of the package:
each top-level module of ``agentotel_eval`` is a layer or one of the cores, so a new module
cannot slip past it."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _contract() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter")
    return parser


def _listed(section: str, key: str) -> set[str]:
    return {line.strip() for line in _contract()[section][key].splitlines() if line.strip()}


def test_every_top_level_module_is_a_layer_or_a_core() -> None:
    package = ROOT / "agentotel_eval"
    modules = {
        f"agentotel_eval.{p.stem}"
        for p in package.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    }
    layers = _listed("importlinter:contract:layers", "layers")
    cores = _listed("importlinter:contract:cores", "source_modules")
    assert layers == _listed("importlinter:contract:cores", "forbidden_modules")
    assert not layers & cores
    assert modules == layers | cores, {
        "not in the contract": modules - layers - cores,
        "no such module": (layers | cores) - modules,
    }


def test_the_contract_holds() -> None:
    linted = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports"))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert linted.returncode == 0, linted.stdout[-3000:]
