"""The pieces every page shares: number and time formats, values as readable text, links, and the assets."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any, NamedTuple
from urllib.parse import quote

__all__ = ["Links", "Readable", "asset", "fmt_duration_ns", "fmt_pct", "fmt_percent", "fmt_score", "fmt_time",
           "or_blank", "readable", "server_links"]


def or_blank(value: Any) -> Any:
    """A value to print: None prints as nothing (the templates print every value as it is, "None" included)."""
    return "" if value is None else value


def fmt_time(value: Any) -> str:
    if not value:
        return "-"
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return str(moment)


def fmt_pct(passed: int, total: int) -> str:
    return f"{passed / total:.0%}" if total else "-"


def fmt_percent(share: float, digits: int = 0) -> str:
    return f"{share:.{digits}%}"


def fmt_score(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}"


def fmt_duration_ns(start: Any, end: Any) -> str:
    if not start or not end:
        return "-"
    ms = (int(end) - int(start)) / 1e6
    if ms < 1:
        return f"{ms:.2f} ms"
    if ms < 10:
        return f"{ms:.1f} ms"
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


class Readable(NamedTuple):
    """A value as text to show in a <pre>, and how many characters were cut from its end."""

    text: str
    more: int = 0


def readable(value: Any, limit: int = 20_000) -> Readable | None:
    """JSON pretty-printed, other text as it is, cut after ``limit`` characters; None when there is no value."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
            text = json.dumps(parsed, indent=2, ensure_ascii=False) if isinstance(parsed, dict | list) else value
        except ValueError:
            text = value
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) > limit:
        return Readable(text[:limit], len(text) - limit)
    return Readable(text)


@dataclass(frozen=True, slots=True)
class Links:
    """Where a page's links go: the collector's routes, or anchors inside the report file."""

    overview: Callable[[str], str]  # query string -> href
    runs: Callable[[str], str]
    run: Callable[[str, str], str] | None  # (trace id, span id) -> href; None: the run is not in this document
    static: bool = False  # a file: no polling, no server routes


def server_links() -> Links:
    return Links(overview=lambda q: "/" + q, runs=lambda q: "/runs" + q,
                 run=lambda t, s: f"/runs/{quote(t, safe='')}/{quote(s, safe='')}")


def asset(name: str) -> str:
    """A file shipped in ``agentotel_eval/pages/assets``."""
    return resources.files("agentotel_eval.pages").joinpath("assets", name).read_text(encoding="utf-8")
