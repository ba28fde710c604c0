"""The pieces every page shares: number and time formats, values as readable text, links, and the assets."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any, NamedTuple
from urllib.parse import quote

import orjson

from agentotel_eval import jsontext

__all__ = [
    "Links",
    "Readable",
    "asset",
    "fmt_duration_ns",
    "fmt_pct",
    "fmt_percent",
    "fmt_score",
    "fmt_time",
    "or_blank",
    "pretty_json",
    "readable",
    "server_links",
]


def or_blank(value: Any) -> Any:
    """A value to print: None prints as nothing (the templates print every value as it
    is, "None" included)."""
    return "" if value is None else value


def fmt_time(value: Any) -> str:
    """A moment in UTC, to the second: "2026-12-01 09:30:00"."""
    if not value:
        return "-"
    if type(value) is str and value.endswith("+00:00") and value[10:11] == "T":
        return f"{value[:10]} {value[11:19]}"  # already UTC, as the database gives times: five times faster
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
    """JSON pretty-printed, other text as it is, cut after ``limit`` characters; None
    when there is no value."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = jsontext.loads(value)
        except ValueError:
            parsed = None
        text = pretty_json(parsed) if isinstance(parsed, dict | list) else value
    else:
        text = pretty_json(value)
    if len(text) > limit:
        return Readable(text[:limit], len(text) - limit)
    return Readable(text)


#: datetimes and dataclasses by ``str()``, as the ``json`` module's ``default=str`` writes them
_PRETTY = (
    orjson.OPT_INDENT_2
    | orjson.OPT_NON_STR_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)


def pretty_json(value: Any) -> str:
    """JSON indented by two spaces, non-ASCII kept, other types by ``str``. orjson writes it ten times faster
    than the ``json`` module (whose indenting encoder is pure Python); what orjson refuses (integers beyond 64
    bits, lone surrogates) or would change (NaN and infinities, which it writes as null) goes to
    the ``json`` module."""
    try:
        out = orjson.dumps(value, default=str, option=_PRETTY)
    except TypeError:  # orjson.JSONEncodeError included
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if b"null" in out and jsontext.has_non_finite(value):
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return out.decode()


@dataclass(frozen=True, slots=True)
class Links:
    """Where a page's links go: the collector's routes, or anchors inside the report file."""

    overview: Callable[[str], str]  # query string -> href
    runs: Callable[[str], str]
    run: (
        Callable[[str, str], str] | None
    )  # (trace id, span id) -> href; None: the run is not in this document
    static: bool = False  # a file: no polling, no server routes


def server_links() -> Links:
    return Links(
        overview=lambda q: "/" + q,
        runs=lambda q: "/runs" + q,
        run=lambda t, s: f"/runs/{_path_part(t)}/{_path_part(s)}",
    )


def _path_part(text: str) -> str:
    """Text quoted for a URL path; an id (hex digits, as quoting leaves it) as it is,
    without quoting's cost."""
    return text if text.isascii() and text.isalnum() else quote(text, safe="")


def asset(name: str) -> str:
    """A file shipped in ``agentotel_eval/pages/assets``."""
    return resources.files("agentotel_eval.pages").joinpath("assets", name).read_text(encoding="utf-8")
