"""The options several commands share, each defined once: ``--db``, ``--since``, ``--format``, and the
server's ``--auth-token`` / ``--tls-cert`` / ``--tls-key``.

``--since`` reads a duration in the one grammar of ``agentotel_eval.durations`` (``90m``, ``1.5h``, ``7d``,
``2w``), as the pages' time range and ``compare``'s ``since=`` / ``until=`` do; a command that also takes
``all`` says so.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from agentotel_eval.access.discovery import AUTH_TOKEN_ENV, DB_ENV, LAKE_ENV, URL_ENV
from agentotel_eval.access.filters import FilterError, range_seconds
from agentotel_eval.store import DEFAULT_DB_PATH

DB_HELP = (
    f"the database file (default: ${DB_ENV}, else ./{DEFAULT_DB_PATH}, else the one collector running on "
    "this machine)"
)


def add_db(parser: argparse.ArgumentParser, *, default: str | None = None, help: str = DB_HELP) -> None:
    """``--db PATH``; None when not given, for ``agentotel_eval.access.client.locate`` to resolve. ``serve``
    (whose config file may name the database) and ``demo`` (a temporary one) give their own help."""
    parser.add_argument("--db", metavar="PATH", default=default, help=help)


def add_lake(parser: argparse.ArgumentParser) -> None:
    """``--lake FILE``: read every node's rows from the shared lake a config file's ``[lake]`` names."""
    parser.add_argument(
        "--lake",
        metavar="FILE",
        default=None,
        help=f"read every node's rows from the shared lake of this config file's [lake] "
        f"(default: ${LAKE_ENV})",
    )


def lake_of(args: argparse.Namespace) -> str | None:
    """The lake a reading command reads: ``--lake``, else ``$AGENTOTEL_LAKE``, else None (a node's file)."""
    import os

    return getattr(args, "lake", None) or os.environ.get(LAKE_ENV, "").strip() or None


def add_url(parser: argparse.ArgumentParser) -> None:
    """``--url URL``: read through the collector answering there instead of a database file."""
    parser.add_argument(
        "--url",
        metavar="URL",
        default=None,
        help=f"read through the collector at this address, e.g. http://127.0.0.1:4318 (default: ${URL_ENV})",
    )


def time_range(*, allow_all: bool) -> Callable[[str], str]:
    """An argparse ``type`` for a time range: a duration, or also ``all`` with ``allow_all``. The text is kept
    as given (stripped): a page's query string and the report carry it as it is."""

    def parse(text: str) -> str:
        value = text.strip()
        try:
            range_seconds(value, allow_all=allow_all)
        except FilterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value

    return parse


def add_since(
    parser: argparse.ArgumentParser, *, default: str | None = None, allow_all: bool = False
) -> None:
    """``--since DURATION``: only runs started within this time."""
    choices = "a duration such as 90m, 1.5h, 7d or 2w" + (', or "all"' if allow_all else "")
    default_text = f" (default {default})" if default else " (default: all of them)"
    parser.add_argument(
        "--since",
        metavar="DURATION",
        default=default,
        type=time_range(allow_all=allow_all),
        help=f"only runs started within this time: {choices}{default_text}",
    )


def add_format(parser: argparse.ArgumentParser, choices: Sequence[str], default: str = "table") -> None:
    """``--format``, with the command's own choices."""
    parser.add_argument(
        "--format",
        choices=tuple(choices),
        default=default,
        help=f"output format: {', '.join(choices)} (default {default})",
    )


def add_server_security(parser: argparse.ArgumentParser) -> None:
    """The collector's bearer token and TLS certificate (clients read the token from
    ``AGENTOTEL_AUTH_TOKEN``)."""
    parser.add_argument(
        "--auth-token",
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on every request but /healthz "
        f"(default: ${AUTH_TOKEN_ENV}, else [auth] token)",
    )
    parser.add_argument(
        "--tls-cert", metavar="FILE", help="serve both ports over TLS with this PEM certificate"
    )
    parser.add_argument("--tls-key", metavar="FILE", help="the certificate's PEM private key")


def quiet_grpc(debug: bool = False) -> None:
    """Keep gRPC's C-core log lines (``add_port.cc ... Failed to add port``, ``chttp2_transport.cc ... Got
    goaway``) out of a command's output: they repeat what the command says in its own words. Read when gRPC is
    first imported, so this comes before; a ``GRPC_VERBOSITY`` the user set wins, and ``--log-level debug``
    keeps gRPC's errors."""
    import os

    os.environ.setdefault("GRPC_VERBOSITY", "ERROR" if debug else "NONE")


def on_stop_signals(
    first: Callable[[int], None], before_exit: Callable[[], None] | None = None
) -> dict[int, Any]:
    """SIGINT and SIGTERM call ``first(signum)`` (installed explicitly, so also when a shell started the
    command in the background with SIGINT ignored); a second signal exits at once (after ``before_exit``).
    Returns the handlers replaced, for the caller to put back."""
    import os
    import signal
    import sys

    seen = 0

    def on_signal(signum: int, _frame: Any) -> None:
        nonlocal seen
        seen += 1
        if seen > 1:
            print("second signal: exiting now", file=sys.stderr, flush=True)
            if before_exit is not None:
                before_exit()
            os._exit(128 + signum)
        first(signum)

    return {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
