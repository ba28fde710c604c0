"""Not built yet: scaffolding replaced by its issue's work."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs="*")


def run(args: argparse.Namespace) -> int:
    print("this command is not built yet", file=sys.stderr)
    return 2
