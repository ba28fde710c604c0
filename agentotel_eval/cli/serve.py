"""Run the OTLP collector: receive agent traces over gRPC and HTTP and store them in DuckDB.

Point any OpenTelemetry exporter at it with OTEL_EXPORTER_OTLP_ENDPOINT. Spans and log records are committed
before the export call is answered; agent runs and tool calls are written as each run completes. Stop with
Ctrl+C or SIGTERM (a second signal exits at once).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

from agentotel_eval.access.discovery import AUTH_TOKEN_ENV
from agentotel_eval.cli import options
from agentotel_eval.store import DEFAULT_DB_PATH

EXIT_CONFIG = 2
EXIT_START = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # no default here: the config file's db applies when no flag is given
    options.add_db(
        parser,
        default=None,
        help=f"the database file (default: the config file's db, else ./{DEFAULT_DB_PATH})",
    )
    parser.add_argument(
        "--grpc", metavar="HOST:PORT", help="OTLP/gRPC listen address (default: 127.0.0.1:4317)"
    )
    parser.add_argument(
        "--http", metavar="HOST:PORT", help="OTLP/HTTP and API listen address (default: 127.0.0.1:4318)"
    )
    parser.add_argument(
        "--config", metavar="FILE", help="TOML file with any of the settings (flags win over it)"
    )
    parser.add_argument(
        "--forward",
        metavar="URL",
        help="send every span on to this OTLP endpoint with scores attached (grpc://host:4317 or http://host:4318)",
    )
    parser.add_argument("--retention", metavar="DURATION", help='delete data older than this, e.g. "30d"')
    parser.add_argument(
        "--grace-period",
        metavar="DURATION",
        help='quiet time before a trace is complete, e.g. "500ms" or "5s" (default 2s)',
    )
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"), help="default: info")
    options.add_server_security(parser)


def build_config(args: argparse.Namespace) -> Any:
    """Defaults, then the --config file, then the flags; validated."""
    import dataclasses

    from agentotel_eval.collector.config import default_config, load_config, parse_duration

    config = default_config()
    if args.config:
        config = load_config(args.config, config)
    flags = {
        key: value
        for key, value in (
            ("db", args.db),
            ("grpc", args.grpc),
            ("http", args.http),
            ("retention", args.retention),
            ("log_level", args.log_level),
        )
        if value is not None
    }
    config = dataclasses.replace(config, **flags)
    if args.forward is not None:  # the URL from the flag; headers and the rest from the config file, if any
        from agentotel_eval.collector.config import ConfigError
        from agentotel_eval.collector.config_forward import ForwardConfig, ForwardConfigError

        base = config.forward or ForwardConfig(url=args.forward)
        try:
            forward = dataclasses.replace(base, url=args.forward).validate()
        except ForwardConfigError as exc:
            raise ConfigError("--forward", str(exc)) from None
        config = dataclasses.replace(config, forward=forward)
    token = args.auth_token if args.auth_token is not None else os.environ.get(AUTH_TOKEN_ENV)
    if token is not None:
        config = dataclasses.replace(config, auth=dataclasses.replace(config.auth, token=token))
    if args.tls_cert is not None or args.tls_key is not None:
        tls = dataclasses.replace(
            config.tls, **{k: v for k, v in (("cert", args.tls_cert), ("key", args.tls_key)) if v is not None}
        )
        config = dataclasses.replace(config, tls=tls)
    if args.grace_period is not None:
        grace = parse_duration(args.grace_period, "--grace-period")
        config = dataclasses.replace(
            config, assembler=dataclasses.replace(config.assembler, grace_period=grace)
        )
    return config.validate()


def banner(collector: Any) -> str:
    tls = bool(collector.config.tls.cert)
    grpc_endpoint = f"{'https' if tls else 'http'}://{collector.grpc_endpoint}"
    http_endpoint = collector.http_endpoint
    db = collector.db_path
    relative = os.path.relpath(db) if not os.path.relpath(db).startswith("..") else str(db)
    db_flag = "" if relative == DEFAULT_DB_PATH else f" --db {relative}"
    lines = [
        "agentotel-eval collector" + (" (TLS)" if tls else ""),
        f"  OTLP/gRPC  {collector.grpc_endpoint:<22} OTEL_EXPORTER_OTLP_ENDPOINT={grpc_endpoint} "
        "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
        f"  OTLP/HTTP  {http_endpoint:<22} OTEL_EXPORTER_OTLP_ENDPOINT={http_endpoint} "
        "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
    ]
    if tls:
        lines.append(
            f"  certificate {collector.config.tls.cert}  (exporters: OTEL_EXPORTER_OTLP_CERTIFICATE for a "
            "private CA)"
        )
    if collector.config.auth.token:
        lines.append(
            "  token      required: OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20$AGENTOTEL_AUTH_TOKEN"
        )
    lines += [
        f"  web UI     {http_endpoint}/"
        + ("  (sign in with the token)" if collector.config.auth.token else ""),
        f"  database   {db}",
        f"  metrics    {http_endpoint}/metrics",
        "  try        agentotel-eval query "
        '"SELECT agent_name, tools_called, status FROM agent_runs ORDER BY start_time DESC LIMIT 10"'
        f"{db_flag}",
        "Stop with Ctrl+C (a second Ctrl+C exits at once).",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.collector.config import ConfigError

    try:
        config = build_config(args)
    except ConfigError as exc:
        print(f"error: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_CONFIG

    options.quiet_grpc(debug=config.log_level == "debug")
    logging.basicConfig(
        level=getattr(logging, config.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from agentotel_eval.collector.pipeline.helper_proxy import AssemblerUnavailable
    from agentotel_eval.collector.process.ingest_batch import DecodeUnavailable
    from agentotel_eval.collector.process.tuning import (
        TRIM_INTERVAL,
        TUNED,
        release_free_memory,
        tune_process,
    )
    from agentotel_eval.collector.service import Collector
    from agentotel_eval.store.lake import LakeError
    from agentotel_eval.store.schema import SchemaError

    stop = threading.Event()
    previous = options.on_stop_signals(lambda _signum: stop.set())
    # This process is the collector's own: it is tuned as its helper processes are
    # (agentotel_eval.collector.process.tuning).
    tune_process(TUNED)
    collector = Collector(config, tuning=TUNED)
    try:
        try:
            collector.start()
        except (OSError, SchemaError, DecodeUnavailable, AssemblerUnavailable, LakeError) as exc:
            print(f"error: cannot start the collector: {exc}", file=sys.stderr)
            return EXIT_START
        print(banner(collector), flush=True)
        trimmed = time.monotonic()
        while not stop.wait(0.5):
            if TUNED.malloc and time.monotonic() - trimmed > TRIM_INTERVAL:
                release_free_memory()
                trimmed = time.monotonic()
        print(
            "stopping: finishing requests in flight and writing open traces...", file=sys.stderr, flush=True
        )
        collector.shutdown()
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
