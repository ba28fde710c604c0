"""The ``agentotel-eval`` command and its subcommands (``COMMANDS``).

Each subcommand is a module of this package with ``add_arguments(parser)`` and ``run(args) -> int``; the
options several share are defined once in ``options``. The modules import only the standard library at the
top: duckdb, pyarrow, the collector, litellm and the OpenTelemetry SDK load inside ``run``, so ``--help`` and
``--version`` stay fast.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from agentotel_eval.cli import (
    calibrate,
    compare,
    demo,
    eval_cases,
    explain,
    export_cases,
    import_expectations,
    lake,
    query,
    report,
    rescore,
    serve,
)

DISTRIBUTION = "agentotel-eval"


class Command(Protocol):
    __doc__: str | None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


#: name -> (module, one line for ``agentotel-eval --help``), in the order the help lists them
COMMANDS: dict[str, tuple[Command, str]] = {
    "serve": (serve, "run the OTLP collector (gRPC :4317, HTTP :4318) into DuckDB"),
    "query": (query, "run a read-only SQL query on the collector's database"),
    "eval": (eval_cases, "score a JSONL file of test cases offline"),
    "explain": (explain, "show how a trace's runs and tool calls were rebuilt, and why"),
    "report": (report, "write the overview and the worst runs as one self-contained HTML file"),
    "demo": (demo, "run example agents against a collector, print their scores, serve the UI"),
    "export-cases": (export_cases, "write stored runs as test cases (JSONL) for eval and evaluate()"),
    "import-expectations": (
        import_expectations,
        "turn ADK eval sets, BFCL answers or agentevals trajectories into trajectory specs (a dataset file)",
    ),
    "rescore": (rescore, "re-score stored runs with the current expectations and code"),
    "compare": (compare, "compare the scores of two versions; exit 1 on a regression"),
    "calibrate": (calibrate, "measure the tool-error detectors (and the judge) on labelled suites"),
    "lake": (
        lake,
        "the DuckLake that scale-out nodes share: browse every node's runs (lake ui), retention and "
        "file merging (lake maintain)",
    ),
}


class _Version(argparse.Action):
    """``--version``: the distribution's name and version, read from its metadata only when asked for."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str = argparse.SUPPRESS,
        default: Any = argparse.SUPPRESS,
        help: str | None = None,
    ) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version(DISTRIBUTION)
        except PackageNotFoundError:  # run from a source tree that was never installed
            from agentotel_eval import __version__ as installed
        print(f"{DISTRIBUTION} {installed}")
        parser.exit()


_LITERAL = re.compile(r"``([^`]+)``")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its help shown as plain text: the modules' docstrings, which are the commands'
    descriptions, mark literals as reStructuredText does (two backticks each side), which a
    terminal shows as is."""

    def format_help(self) -> str:
        return _LITERAL.sub(r"\1", super().format_help())

    def format_usage(self) -> str:
        return _LITERAL.sub(r"\1", super().format_usage())


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's layout, without splitting words at hyphens (``self-contained``, ``export-cases``)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; each subcommand's parser is in ``parser.commands`` (by name)."""
    parser = _Parser(
        prog=DISTRIBUTION,
        description="Score AI agents' tool use from their OpenTelemetry traces.",
        formatter_class=_HelpFormatter,
        epilog=f"Run '{DISTRIBUTION} COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action=_Version, help="print the name and version, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    commands: dict[str, argparse.ArgumentParser] = {}
    for name, (command, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(
            name,
            help=help_text,
            description=(command.__doc__ or help_text).strip(),
            formatter_class=_HelpFormatter,
        )
        command.add_arguments(command_parser)
        command_parser.set_defaults(_run=command.run)
        commands[name] = command_parser
    parser.set_defaults(_commands=commands)
    return parser


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments of one command. An unknown flag is reported with that subcommand's usage (not the
    top-level one) and the closest flag it knows (``--dbb``: did you mean ``--db``?)."""
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    if not given:  # a bare ``agentotel-eval``: what it can do, not only that a command is required
        parser.print_help()
        parser.exit(2)
    first = given[0]
    if not first.startswith("-") and first not in COMMANDS:
        parser.error(unknown_command(first))
    args, extra = parser.parse_known_args(given)
    if extra:
        command_parser: argparse.ArgumentParser = args._commands[args.command]
        command_parser.error(unrecognized(command_parser, extra))
    return args


def unknown_command(word: str) -> str:
    """``serv``: did you mean serve? With the list of commands either way."""
    import difflib

    close = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown command {word!r}{hint}; the commands: {', '.join(COMMANDS)}"


def unrecognized(parser: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    import difflib

    known = [flag for action in parser._actions for flag in action.option_strings if flag.startswith("--")]
    message = f"unrecognized arguments: {' '.join(extra)}"
    for word in extra:
        if word.startswith("-"):
            flag = word.split("=", 1)[0]
            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
            if close:
                return f"{message} (did you mean {close[0]}?)"
            named = [
                f"{a.option_strings[-1]} {a.metavar}"
                for a in parser._actions  # --port: the flags taking a PORT
                if isinstance(a.metavar, str) and flag.lstrip("-").upper() in a.metavar.split(":")
            ]
            if named:
                return f"{message} (did you mean {' or '.join(named)}?)"
    if any(word.startswith("-") for word in extra):
        return message
    return f"{message} (a value with spaces needs quotes)"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # here, not at exit: a reader that went away is a closed pipe, handled below
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `agentotel-eval query ... | head -3`: the reader has what it wanted, a success
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        return 0
