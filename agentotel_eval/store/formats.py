"""Render a ``QueryResult`` as an aligned table, one JSON array of row objects, or CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from agentotel_eval.store.query import QueryResult

FORMATS = ("table", "json", "csv")
_MAX_CELL = 80


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def to_json(result: QueryResult) -> str:
    return json.dumps(result.records(), ensure_ascii=False)


def to_csv(result: QueryResult) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    for row in result.rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue().rstrip("\n")


def to_table(result: QueryResult) -> str:
    def shown(value: Any) -> str:
        text = "NULL" if value is None else _cell(value).replace("\n", "\\n")
        return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"

    cells = [[shown(v) for v in row] for row in result.rows]
    widths = [len(c) for c in result.columns]
    for row in cells:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(result.columns, widths, strict=True)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(t.ljust(w) for t, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    n = len(result.rows)
    lines.append(f"({n} row{'' if n == 1 else 's'}{', truncated' if result.truncated else ''})")
    return "\n".join(lines)


def render(result: QueryResult, fmt: str) -> str:
    if fmt == "json":
        return to_json(result)
    if fmt == "csv":
        return to_csv(result)
    if fmt == "table":
        return to_table(result)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
