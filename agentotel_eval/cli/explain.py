"""Explain how a trace's runs were rebuilt: each run, its calls with the evidence behind every field, the
spans ignored and why, requests that never ran, and the spans no convention marked.

``agentotel-eval explain TRACE_ID [--db PATH]`` reads what the collector stored (through the collector when it
holds the database, else the file read-only). ``agentotel-eval explain --file TRACE.pb|TRACE.json [--logs
FILE]`` works offline on an OTLP export (an ExportTraceServiceRequest, protobuf or OTLP/JSON): no
collector, no database.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentotel_eval.cli import options

EXIT_NOT_FOUND = 1
EXIT_BAD_INPUT = 2
#: rows read of a stored trace's spans (the names of those no run read are listed)
_SPANS_READ = 100_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "trace_id",
        nargs="?",
        help="the trace to explain, from the database: 32 hex digits, or a unique prefix of 8 or more",
    )
    options.add_db(parser)
    options.add_url(parser)
    options.add_lake(parser)
    parser.add_argument("--file", type=Path, help="explain the traces of an OTLP file instead (.pb or .json)")
    parser.add_argument("--logs", type=Path, help="with --file: the OTLP log records that go with it")
    parser.add_argument(
        "--conventions",
        type=Path,
        metavar="TOML",
        help="with --file: a config whose [[conventions]] (and [reconstruction]) to read the spans with",
    )


def run(args: argparse.Namespace) -> int:
    from agentotel_eval.trace_ids import TraceIdError, trace_reference

    try:
        reference = trace_reference(args.trace_id) if args.trace_id else None
    except TraceIdError as exc:
        return _fail(str(exc))
    if args.file is not None:
        return _explain_file(args.file, args.logs, reference, args.conventions)
    if args.logs is not None or args.conventions is not None:
        return _fail("--logs and --conventions go with --file")
    if reference is None:
        return _fail("give a TRACE_ID (from the database) or --file TRACE.pb|json")
    return _explain_stored(args.db, args.url, reference, options.lake_of(args))


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _read(path: Path, signal: str) -> list[Any]:
    from agentotel_eval.otlp import decode

    body = path.read_bytes()
    encoding = "json" if path.suffix == ".json" or body.lstrip()[:1] == b"{" else "protobuf"
    return decode(signal, encoding, body).records


def _explain_file(path: Path, logs_path: Path | None, only: str | None, conventions_path: Path | None) -> int:
    from agentotel_eval.otlp import DecodeError
    from agentotel_eval.reconstruct import reconstruct
    from agentotel_eval.reconstruct.declared import ConventionError, conventions_from_config
    from agentotel_eval.reconstruct.explain import explain_lines, run_record

    conventions: tuple[Any, ...] = ()
    text_failures = True
    try:
        spans = _read(path, "traces")
        logs = _read(logs_path, "logs") if logs_path is not None else []
        if conventions_path is not None:
            import tomllib

            config = tomllib.loads(conventions_path.read_text())
            conventions = conventions_from_config(config.get("conventions", []))
            text_failures = bool((config.get("reconstruction") or {}).get("text_failures", True))
    except FileNotFoundError as exc:
        return _fail(f"no such file: {exc.filename}")
    except (DecodeError, ConventionError, ValueError) as exc:
        return _fail(str(exc))
    trace_ids = sorted({s.trace_id for s in spans if only is None or s.trace_id.startswith(only)})
    if only is not None:
        from agentotel_eval.trace_ids import TraceIdError, the_one

        try:
            trace_ids = [the_one(only, trace_ids, str(path))] if trace_ids else []
        except TraceIdError as exc:
            return _fail(str(exc))
    if not trace_ids:
        return _fail(f"no spans of trace {only} in {path}" if only else f"no spans in {path}", EXIT_NOT_FOUND)
    runs = reconstruct(spans, logs, conventions=conventions, text_failures=text_failures)
    for i, trace_id in enumerate(trace_ids):
        names = {
            s.span_id: s.name
            for s in sorted(spans, key=lambda s: (s.start_ns, s.span_id))
            if s.trace_id == trace_id
        }
        records = [run_record(r) for r in runs if r.trace_id == trace_id]
        if i:
            print()
        print("\n".join(explain_lines(trace_id, records, names)))
    return 0


def _explain_stored(named: str | None, url: str | None, trace_id: str, lake: str | None = None) -> int:
    from agentotel_eval.access.client import QueryFailure, locate, reader
    from agentotel_eval.access.queries import read_trace, trace_ids_starting
    from agentotel_eval.reconstruct.explain import explain_lines
    from agentotel_eval.trace_ids import TRACE_ID_DIGITS, TraceIdError, the_one

    try:
        db = f"the lake of {lake}" if lake else str(locate(named, url)[0])
        read = reader(None if lake else db, limit=_SPANS_READ, url=url, lake=lake)
        if len(trace_id) < TRACE_ID_DIGITS:
            trace_id = the_one(trace_id, trace_ids_starting(read, trace_id), db)
        records, span_names = read_trace(read, trace_id)
    except QueryFailure as exc:
        return _fail(str(exc), exc.code)
    except TraceIdError as exc:
        return _fail(str(exc), EXIT_NOT_FOUND)
    if not span_names and not records:
        return _fail(f"trace {trace_id} is not in {db}", EXIT_NOT_FOUND)
    print("\n".join(explain_lines(trace_id, records, span_names)))
    return 0
