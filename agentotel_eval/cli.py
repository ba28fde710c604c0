"""The ``agentotel-eval`` command and its subcommands (``COMMANDS``).

Each subcommand lives in its own module with ``add_arguments(parser)`` and ``run(args) -> int``; heavy imports
happen inside ``run`` so ``agentotel-eval --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("agentotel_eval.collector.cli", "run the OTLP collector (gRPC :4317, HTTP :4318) into DuckDB"),
    "query": ("agentotel_eval.store.query_cmd", "run a read-only SQL query on the collector's database"),
    "eval": ("agentotel_eval.eval_cmd", "score a JSONL file of test cases offline"),
    "explain": ("agentotel_eval.explain_cmd", "show how a trace's runs and tool calls were rebuilt, and why"),
    "report": ("agentotel_eval.report_cmd", "write the overview and the worst runs as one self-contained HTML file"),
    "demo": ("agentotel_eval.collector.demo.cli", "run example agents against a collector, print their scores, serve the UI"),
    "export-cases": ("agentotel_eval.export_cmd", "write stored runs as test cases (JSONL) for eval and evaluate()"),
    "rescore": ("agentotel_eval.collector.score.rescore_cmd", "re-score stored runs with the current expectations and code"),
    "compare": ("agentotel_eval.compare_cmd", "compare the scores of two versions; exit 1 on a regression"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentotel-eval",
        description="Score AI agents' tool use from their OpenTelemetry traces.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        command_parser = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text).strip())
        module.add_arguments(command_parser)
        command_parser.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
