"""The shared lake: ``agentotel-eval lake maintain --config FILE`` and ``agentotel-eval lake
ui --config FILE``.

``ui`` serves the web UI's pages over every node's rows in the lake, read-only, on an address of its own
(default 127.0.0.1:4320); with ``--auth-token`` (or ``$AGENTOTEL_AUTH_TOKEN``) every page asks for the token.

``maintain``: run it from one scheduler (a cron job, the Kubernetes CronJob in deploy/), not from every node:
it deletes rows older than the config's ``retention`` from the lake, merges the small Parquet files the nodes'
flushes leave, expires snapshots older than ``--keep-snapshots`` and deletes the files no snapshot needs.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentotel_eval.collector.config import CollectorConfig

EXIT_FAILED = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    maintain = sub.add_parser(
        "maintain", help="retention, file merging and snapshot expiry on the shared lake"
    )
    maintain.add_argument(
        "--config", metavar="FILE", required=True, help="a node config with [lake] (and retention)"
    )
    maintain.add_argument(
        "--keep-snapshots",
        metavar="DURATION",
        default="1d",
        help="keep the lake's snapshots of this long ago, for time travel (default 1d)",
    )
    ui = sub.add_parser("ui", help="the web UI over every node's rows in the shared lake (read-only)")
    ui.add_argument(
        "--config", metavar="FILE", required=True, help="a config with [lake] (and [query] limits)"
    )
    ui.add_argument(
        "--http",
        metavar="HOST:PORT",
        default="127.0.0.1:4320",
        help="the address to serve the pages on (default 127.0.0.1:4320)",
    )
    ui.add_argument(
        "--auth-token",
        metavar="TOKEN",
        help="require this token on every page (default: $AGENTOTEL_AUTH_TOKEN, else [auth] token)",
    )


def _lake_config(path: str) -> CollectorConfig:
    """The config file, validated; ``ConfigError`` when it is invalid or has no ``[lake]`` table."""
    from agentotel_eval.collector.config import ConfigError, load_config

    config = load_config(path).validate()
    if config.lake is None:
        raise ConfigError("", f"{path} has no [lake] table")
    return config


def run(args: argparse.Namespace) -> int:
    return _ui(args) if args.action == "ui" else _maintain(args)


def _ui(args: argparse.Namespace) -> int:
    import os
    import threading

    from agentotel_eval.access.discovery import AUTH_TOKEN_ENV
    from agentotel_eval.cli import options
    from agentotel_eval.collector.config import ConfigError, parse_address
    from agentotel_eval.collector.lake.ui import LakeUi
    from agentotel_eval.store import lake

    try:
        config = _lake_config(args.config)
        host, port = parse_address(args.http, "--http")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    assert config.lake is not None
    token = (
        args.auth_token
        if args.auth_token is not None
        else os.environ.get(AUTH_TOKEN_ENV) or config.auth.token
    )
    try:
        ui = LakeUi(
            config.lake.settings(),
            host,
            port,
            token=token or None,
            row_limit=config.query.row_limit,
            timeout=config.query.timeout,
        )
    except lake.LakeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        ui.start()
    except OSError as exc:
        ui.shutdown()
        print(f"error: cannot serve the pages on {args.http}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    stop = threading.Event()
    previous = options.on_stop_signals(lambda _signum: stop.set())
    bound = ui.address
    print(
        f"web UI over the lake http://{bound[0]}:{bound[1]}/"
        + (" (sign in with the token)" if token else ""),
        flush=True,
    )
    try:
        while not stop.wait(0.5):
            pass
    finally:
        import signal

        for sig, handler in previous.items():
            signal.signal(sig, handler)
        print("stopping", file=sys.stderr, flush=True)
        ui.shutdown()
    return 0


def _maintain(args: argparse.Namespace) -> int:
    import duckdb

    from agentotel_eval.collector.config import ConfigError, parse_duration
    from agentotel_eval.store import lake

    try:
        config = _lake_config(args.config)
        keep = parse_duration(args.keep_snapshots, "--keep-snapshots")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    assert config.lake is not None
    con = lake.instance()
    try:
        lake.attach(con, config.lake.settings())
        deleted = lake.maintain(con, config.retention_seconds, keep)
    except (lake.LakeError, duckdb.Error) as exc:
        print(
            f"error: lake maintenance failed: {config.lake.settings().scrub(lake.explain(exc))}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    finally:
        con.close()
    kept = f"retention {config.retention}" if config.retention else "no retention set: nothing deleted"
    print(
        f"lake maintained ({kept}): " + ", ".join(f"{t} -{n}" for t, n in deleted.items())
        if deleted
        else f"lake maintained ({kept}); files merged, snapshots older than {args.keep_snapshots} expired"
    )
    return 0
