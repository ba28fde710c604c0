"""The pieces every page shares: escaping, number and time formats, links, and the page frame."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from importlib import resources
from typing import Any
from urllib.parse import quote

__all__ = ["Links", "Page", "asset", "esc", "fmt_duration_ns", "fmt_pct", "fmt_score", "fmt_time", "frame",
           "json_block", "server_links"]


def esc(value: Any) -> str:
    """Text for HTML, attribute-safe (quotes escaped too)."""
    return escape("" if value is None else str(value), quote=True)


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


def json_block(value: Any, limit: int = 20_000) -> str:
    """A value as readable text in a <pre>: JSON pretty-printed, long text cut with a note."""
    if value is None:
        return '<pre class="value empty">-</pre>'
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
            text = json.dumps(parsed, indent=2, ensure_ascii=False) if isinstance(parsed, dict | list) else value
        except ValueError:
            text = value
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    cut = ""
    if len(text) > limit:
        cut = f'<span class="note">… {len(text) - limit:,} more characters</span>'
        text = text[:limit]
    return f'<pre class="value">{esc(text)}{cut}</pre>'


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


@dataclass(frozen=True, slots=True)
class Page:
    title: str
    body: str
    active: str = ""  # overview | runs | run
    version: str = ""  # what the poller compares (``latest_version``)


def frame(page: Page, links: Links, *, nav_query: str = "", generated: str = "") -> str:
    """The whole document. Served pages link the stylesheet and script; a static file inlines them."""
    if links.static:
        head_assets = f"<style>{asset('style.css')}</style>"
        script = f"<script>{asset('app.js')}</script>"
        poll = ""
    else:
        head_assets = '<link rel="stylesheet" href="/static/style.css">'
        script = '<script src="/static/app.js" defer></script>'
        poll = ' data-poll="/api/runs/latest"'
    nav: Sequence[tuple[str, str, str]] = (
        ("overview", "Overview", links.overview(nav_query)),
        ("runs", "Runs", links.runs(nav_query)),
    )
    items = "".join(
        f'<a href="{esc(href)}"{" aria-current=page" if key == page.active else ""}>{label}</a>'
        for key, label, href in nav)
    note = f'<span class="generated">{esc(generated)}</span>' if generated else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(page.title)} · agentotel-eval</title>{head_assets}</head>"
        f'<body data-version="{esc(page.version)}"{poll}>'
        f'<header><span class="brand">agentotel-eval</span><nav>{items}</nav>{note}</header>'
        f"<main>{page.body}</main>{script}</body></html>"
    )
