"""Explain how a trace's runs were rebuilt: each run, its calls with the evidence behind every field, the spans
ignored and why, requests that never ran, and the spans no convention marked.

``agentotel-eval explain TRACE_ID [--db PATH]`` reads what the collector stored (through the collector when it
holds the database, else the file read-only). ``agentotel-eval explain --file TRACE.pb|TRACE.json [--logs FILE]``
works offline on an OTLP export (an ExportTraceServiceRequest, protobuf or OTLP/JSON): no collector, no database.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from agentotel_eval.store import DEFAULT_DB_PATH

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
EXIT_NOT_FOUND = 1
EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace_id", nargs="?", help="the trace to explain (32 hex digits), from the database")
    parser.add_argument("--db", default=DEFAULT_DB_PATH, help=f"the database file (default: ./{DEFAULT_DB_PATH})")
    parser.add_argument("--file", type=Path, help="explain the traces of an OTLP file instead (.pb or .json)")
    parser.add_argument("--logs", type=Path, help="with --file: the OTLP log records that go with it")
    parser.add_argument("--conventions", type=Path, metavar="TOML",
                        help="with --file: a config whose [[conventions]] to read the spans with")


def run(args: argparse.Namespace) -> int:
    if args.file is not None:
        if args.trace_id and not _TRACE_ID.match(args.trace_id.lower()):
            return _fail(f"not a trace id: {args.trace_id!r} (32 hex digits)")
        return _explain_file(args.file, args.logs, args.trace_id, args.conventions)
    if args.logs is not None or args.conventions is not None:
        return _fail("--logs and --conventions go with --file")
    if not args.trace_id:
        return _fail("give a TRACE_ID (from the database) or --file TRACE.pb|json")
    trace_id = args.trace_id.lower()
    if not _TRACE_ID.match(trace_id):
        return _fail(f"not a trace id: {args.trace_id!r} (32 hex digits)")
    return _explain_stored(args.db, trace_id)


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
    try:
        spans = _read(path, "traces")
        logs = _read(logs_path, "logs") if logs_path is not None else []
        if conventions_path is not None:
            import tomllib

            conventions = conventions_from_config(tomllib.loads(conventions_path.read_text()).get("conventions", []))
    except FileNotFoundError as exc:
        return _fail(f"no such file: {exc.filename}")
    except (DecodeError, ConventionError, ValueError) as exc:
        return _fail(str(exc))
    runs = reconstruct(spans, logs, conventions=conventions)
    trace_ids = sorted({s.trace_id for s in spans if only is None or s.trace_id == only})
    if not trace_ids:
        return _fail(f"no spans of trace {only} in {path}" if only else f"no spans in {path}", EXIT_NOT_FOUND)
    for i, trace_id in enumerate(trace_ids):
        names = {s.span_id: s.name for s in sorted(spans, key=lambda s: (s.start_ns, s.span_id))
                 if s.trace_id == trace_id}
        records = [run_record(r) for r in runs if r.trace_id == trace_id]
        if i:
            print()
        print("\n".join(explain_lines(trace_id, records, names)))
    return 0


def _explain_stored(db: str, trace_id: str) -> int:
    from agentotel_eval.access.client import QueryFailure, execute
    from agentotel_eval.reconstruct.explain import explain_lines

    try:
        runs = _rows(execute(db, f"SELECT span_id, agent_name, span_name, convention, status, error, input, output, "
                                 f"parent_run_span_id, handoffs, diagnostics FROM agent_runs WHERE trace_id = "
                                 f"'{trace_id}' ORDER BY start_time, span_id"))
        calls = _rows(execute(db, f"SELECT run_span_id, seq, tool_name, arguments, result, status, error, span_id, "
                                  f"sources FROM tool_calls WHERE trace_id = '{trace_id}' ORDER BY run_span_id, seq"))
        spans = _rows(execute(db, f"SELECT span_id, name FROM spans WHERE trace_id = '{trace_id}' "
                                  f"ORDER BY start_time, span_id", limit=100_000))
    except QueryFailure as exc:
        return _fail(str(exc), exc.code)
    if not spans and not runs:
        return _fail(f"trace {trace_id} is not in {db}", EXIT_NOT_FOUND)
    by_run: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        by_run.setdefault(call["run_span_id"], []).append({
            "name": call["tool_name"], "arguments": _json(call["arguments"]), "result": call["result"],
            "status": call["status"], "error": call["error"], "span_id": call["span_id"],
            "sources": _json(call["sources"]) or {},
        })
    records = []
    for row in runs:
        records.append({**row, "trace_id": trace_id, "handoffs": _json(row["handoffs"]) or [],
                        "diagnostics": _json(row["diagnostics"]) or {}, "calls": by_run.get(row["span_id"], [])})
    print("\n".join(explain_lines(trace_id, records, {s["span_id"]: s["name"] for s in spans})))
    return 0


def _rows(result: Any) -> list[dict[str, Any]]:
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
