"""The shared lake's maintenance: ``agentotel-eval lake maintain --config FILE``.

Run it from one scheduler (a cron job, the Kubernetes CronJob in deploy/), not from every node: it deletes rows
older than the config's ``retention`` from the lake, merges the small Parquet files the nodes' flushes leave,
expires snapshots older than ``--keep-snapshots`` and deletes the files no snapshot needs.
"""

from __future__ import annotations

import argparse
import sys

EXIT_FAILED = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    maintain = sub.add_parser("maintain", help="retention, file merging and snapshot expiry on the shared lake")
    maintain.add_argument("--config", metavar="FILE", required=True, help="a node config with [lake] (and retention)")
    maintain.add_argument("--keep-snapshots", metavar="DURATION", default="1d",
                          help="keep the lake's snapshots of this long ago, for time travel (default 1d)")


def run(args: argparse.Namespace) -> int:
    import duckdb

    from agentotel_eval.collector.config import ConfigError, load_config, parse_duration
    from agentotel_eval.store import lake

    try:
        config = load_config(args.config).validate()
        keep = parse_duration(args.keep_snapshots, "--keep-snapshots")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if config.lake is None:
        print(f"error: {args.config} has no [lake] table", file=sys.stderr)
        return 2
    con = lake.instance()
    try:
        lake.attach(con, config.lake.settings())
        deleted = lake.maintain(con, config.retention_seconds, keep)
    except (lake.LakeError, duckdb.Error) as exc:
        print(f"error: lake maintenance failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        con.close()
    kept = f"retention {config.retention}" if config.retention else "no retention set: nothing deleted"
    print(f"lake maintained ({kept}): " + ", ".join(f"{t} -{n}" for t, n in deleted.items()) if deleted else
          f"lake maintained ({kept}); files merged, snapshots older than {args.keep_snapshots} expired")
    return 0
