"""Peers' expectation files as a dataset of trajectory specs:
``agentotel-eval import-expectations --from adk|bfcl|langchain FILE... [-o dataset.jsonl]``.

Each output line is ``{"name", "input", "expected_trajectory"}``: the collector's ``dataset`` file (a run
whose input matches a line is scored against its spec), and a case file's expectation. ``--from adk`` reads
ADK eval sets (one line per invocation; ``--mode EXACT|IN_ORDER|ANY_ORDER``), ``--from bfcl`` BFCL
``possible_answer`` files (``--questions`` its data file, for the inputs), ``--from langchain`` agentevals
reference trajectories (``--mode strict|unordered|subset|superset``, ``--ignore-args`` to
compare tool names only).

Exit status: 0 written; 2 a usage error or a file that cannot be read as the format named
(nothing is written).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        "  agentotel-eval import-expectations --from adk tests/refunds.evalset.json -o expected.jsonl\n"
        "  agentotel-eval import-expectations --from bfcl possible_answer/BFCL_v4_parallel.json "
        "--questions BFCL_v4_parallel.json -o bfcl.jsonl\n"
        "  agentotel-eval import-expectations --from langchain --mode unordered reference.json"
    )
    parser.add_argument(
        "--from",
        dest="source",
        required=True,
        choices=("adk", "bfcl", "langchain"),
        help="the format of the files",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="files to read")
    parser.add_argument(
        "-o", "--output", default="-", metavar="FILE", help="where to write the JSONL (default: stdout)"
    )
    parser.add_argument(
        "--mode",
        help="adk: EXACT (default), IN_ORDER, ANY_ORDER; langchain: strict (default), "
        "unordered, subset, superset",
    )
    parser.add_argument("--questions", metavar="FILE", help="bfcl: the data file with each id's question")
    parser.add_argument("--ignore-args", action="store_true", help="langchain: compare tool names only")


def _json_lines(path: Path) -> list[Any]:
    """A JSONL file's values (BFCL's files are JSON lines under a .json name)."""
    text = path.read_text(encoding="utf-8")
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON lines ({exc})") from None


def _read(args: argparse.Namespace, path: Path) -> list[dict[str, Any]]:
    from agentotel_eval.trajectory import importers

    if args.source == "bfcl":
        questions = importers.bfcl_questions(_json_lines(Path(args.questions))) if args.questions else None
        return importers.from_bfcl(_json_lines(path), questions, where=str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if args.source == "adk":
        return importers.from_adk(data, args.mode or "EXACT", where=str(path))
    return importers.from_langchain(data, args.mode or "strict", args.ignore_args, where=str(path))


def run(args: argparse.Namespace) -> int:
    entries: list[dict[str, Any]] = []
    try:
        for name in args.files:
            entries.extend(_read(args, Path(name)))
    except OSError as exc:
        print(f"error: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as exc:  # ImportFailure and files that are not JSON: nothing is written
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    text = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        target = Path(args.output)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    print(f"wrote {len(entries)} expectation(s) from {len(args.files)} file(s)", file=sys.stderr)
    specs: dict[str, set[str]] = {}
    for entry in entries:
        specs.setdefault(" ".join(entry["input"].split()), set()).add(
            json.dumps(entry["expected_trajectory"])
        )
    clashes = sorted(text for text, found in specs.items() if len(found) > 1)
    if clashes:  # the collector's dataset matches a run by its input, so one input must mean one spec
        print(
            f"warning: {len(clashes)} input(s) have different specs (for example {clashes[0][:60]!r}); a "
            "collector's dataset refuses that: keep one line of each",
            file=sys.stderr,
        )
    return 0
