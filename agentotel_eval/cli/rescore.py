"""Re-score stored runs: ``agentotel-eval rescore [--db PATH] [--since 7d] [--config FILE] [--judge]``.

Every selected run's trace is rebuilt from its stored spans with the current code and scored with the current
expectations (the config file's ``[[expectations]]`` and dataset, and the runs' own expected-tools
attributes): the deterministic scores replace the stored ones of the same metric, scores no longer given are
removed, and the run spans' score attributes follow. The judge's verdicts stay unless ``--judge`` queues the
runs for it again. Printed: per metric, the runs scored and passed before and after, and how many changed.

When a collector holds the database the work is done inside it (its writer is the file's only writer), with
its own configuration unless ``--config`` names another; otherwise the file is opened, and scored with
``--config`` (without it, runs are scored only against the expected tools their spans carry). ``--dry-run``
reports what would change and writes nothing.

A re-score that would remove scores (a rule or dataset entry gone from the config, say) first shows what the
dry run shows and asks before it writes; without a terminal to ask on it stops with status 2, and ``--yes``
writes without asking.

``--lake FILE`` re-scores every node's traces in the shared lake that FILE's ``[lake]`` names, with
``--config`` (else FILE's own settings), and appends the new builds to the lake, where its latest views show
them in place of the nodes' (the nodes' files keep theirs). ``--shard k/n`` takes the k-th of n shares of the
traces, by a hash of the trace id: n workers given 1/n .. n/n re-score everything once between them.

Exit status: 0 done; 1 the re-score failed; 2 a usage error, an invalid configuration or condition, or a
database that cannot be opened.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentotel_eval.cli import options
from agentotel_eval.durations import parse_duration

if TYPE_CHECKING:
    from agentotel_eval.access.discovery import CollectorInfo
    from agentotel_eval.collector.pipeline.rescore import RescoreSummary

EXIT_FAILED, EXIT_USAGE = 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "examples:\n"
        "  agentotel-eval rescore --since 7d --config agentotel.toml --dry-run\n"
        "  agentotel-eval rescore --since 30d --config agentotel.toml\n"
        "  agentotel-eval rescore --where \"agent_name = 'planner'\" --judge\n"
        "  agentotel-eval rescore --lake node.toml --since 30d --shard 2/4"
    )
    options.add_db(parser)
    options.add_url(parser)
    parser.add_argument(
        "--lake",
        metavar="FILE",
        default=None,
        help="re-score every node's traces in the shared lake of this config file's [lake], and "
        "append the new builds to it",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        default=None,
        help="only the K-th of N shares of the traces (by trace id): for N workers in parallel",
    )
    options.add_since(parser)
    parser.add_argument(
        "--where", metavar="SQL", help="only runs meeting this condition on agent_runs' columns"
    )
    parser.add_argument("--config", metavar="FILE", help="score with this config's expectations and settings")
    parser.add_argument(
        "--judge", action="store_true", help="queue the re-scored runs for the LLM judge again"
    )
    parser.add_argument("--dry-run", action="store_true", help="report what would change; write nothing")
    parser.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="write without asking when the re-score would remove scores (else it shows what would "
        "change and asks, or stops when there is no terminal to ask on)",
    )
    options.add_format(parser, ("table", "json"))


class _Failure(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _via_collector(collector: CollectorInfo, payload: dict[str, Any]) -> dict[str, Any]:
    from agentotel_eval.access.client import CollectorRefused, post_json

    try:
        answer: dict[str, Any] = post_json(collector, "/v1/rescore", payload, timeout=3600)
        return answer
    except CollectorRefused as exc:
        if exc.status == 401:
            raise _Failure(str(exc), EXIT_FAILED) from None
        raise _Failure(
            f"the collector refused the re-score: {exc}",
            EXIT_USAGE if exc.status in (400, 409) else EXIT_FAILED,
        ) from None
    except OSError as exc:  # urllib.error.URLError among them
        raise _Failure(f"the collector at {collector.base_url} did not answer: {exc}", EXIT_FAILED) from None


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.access.client import QueryFailure, locate
    from agentotel_eval.collector.config import ConfigError, default_config, load_config
    from agentotel_eval.collector.pipeline.rescore import RescoreError, RescoreSummary, rescore_file

    payload: dict[str, Any] = {"judge": args.judge, "dry_run": args.dry_run}
    if args.since:  # read by --since's type, and so a duration
        payload["since_ns"] = time.time_ns() - int(parse_duration(args.since) * 1e9)
    config = default_config()
    try:
        if args.config:
            config = load_config(args.config, config).validate()  # a mistake is told here, not by the server
            payload["config"] = str(Path(args.config).resolve())
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.where:
        payload["where"] = args.where
    if args.shard:
        payload["shard"] = args.shard
    if args.lake:
        return _over_lake(args, payload)
    try:
        db, collector = locate(args.db, args.url)

        def rescore(request: dict[str, Any]) -> RescoreSummary:
            return (
                RescoreSummary.from_dict(_via_collector(collector, request))
                if collector is not None
                else rescore_file(db, request, config)
            )

        if not (args.dry_run or args.yes) and not _confirmed(
            rescore({**payload, "dry_run": True}), args.format
        ):
            return EXIT_USAGE
        summary = rescore(payload)
    except (_Failure, QueryFailure) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except RescoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    _print(summary, args.format)
    return 0


def _confirmed(preview: RescoreSummary, form: str) -> bool:
    """Whether to write: yes when the dry run removes no score; else the user says so on a terminal."""
    removed = sum(m.removed for m in preview.metrics.values())
    if not removed:
        return True
    _print(preview, form, file=sys.stderr)
    what = (
        f"this re-score would remove {removed} score(s) ("
        + ", ".join(
            f"{m.metric}: {m.removed}"
            for m in sorted(preview.metrics.values(), key=lambda m: m.metric)
            if m.removed
        )
        + ")"
    )
    if not sys.stdin.isatty():
        print(
            f"error: {what}; run it again with --yes to write it (--dry-run shows the same)", file=sys.stderr
        )
        return False
    print(f"{what}. Write it? [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer in ("y", "yes"):
        return True
    print("nothing written", file=sys.stderr)
    return False


def _print(summary: RescoreSummary, form: str, file: Any = None) -> None:
    from agentotel_eval.collector.pipeline.rescore import render

    print(
        json.dumps(summary.to_dict(), ensure_ascii=False) if form == "json" else render(summary),
        file=file or sys.stdout,
    )


def _over_lake(args: argparse.Namespace, payload: dict[str, Any]) -> int:
    import duckdb

    from agentotel_eval.collector.config import ConfigError, load_config
    from agentotel_eval.collector.lake.rebuild import rescore_lake
    from agentotel_eval.collector.pipeline.rescore import RescoreError
    from agentotel_eval.store import lake
    from agentotel_eval.store.query import QueryError

    if args.db or args.url:
        print("error: --lake re-scores the shared lake; --db and --url name one node's file", file=sys.stderr)
        return EXIT_USAGE
    try:
        settings = lake.settings_from_file(args.lake)
        config = load_config(args.config or args.lake).validate()
        payload["config"] = str(Path(args.config or args.lake).resolve())
        summary = rescore_lake(settings, payload, config, node="rescore@" + (args.shard or "lake"))
    except (ConfigError, RescoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except lake.LakeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except (
        duckdb.Error,
        QueryError,
    ) as exc:  # the lake refused a read (an outage, a privilege): no traceback
        print(f"error: {settings.scrub(lake.explain(exc))}", file=sys.stderr)
        return EXIT_FAILED
    _print(summary, args.format)
    return 0
