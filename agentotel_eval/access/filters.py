"""The selection a page or the report reads: a time range and the runs table's filters, from a query string (or
the report's flags), validated."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from urllib.parse import urlencode

PAGE_SIZE = 50
#: the ranges the picker offers; any "<n><unit>" (m, h, d, w) is accepted too
RANGES = ("1h", "24h", "7d", "30d", "all")
DEFAULT_RANGE = "7d"
_SPAN = re.compile(r"^(\d{1,5})(m|h|d|w)$")
_UNIT = {"m": 60, "h": 3600, "d": 86400, "w": 604800}
RESULTS = ("pass", "fail")


class FilterError(ValueError):
    """A query-string value the page cannot use (the page answers 400 with the message)."""


def range_seconds(since: str) -> float | None:
    """Seconds covered by a range such as "7d"; None for "all"."""
    if since == "all":
        return None
    match = _SPAN.match(since)
    if not match:
        raise FilterError(f"unknown time range {since!r}: use one of {', '.join(RANGES)} or a span like 12h")
    return int(match.group(1)) * _UNIT[match.group(2)]


@dataclass(frozen=True, slots=True)
class Filters:
    since: str = DEFAULT_RANGE
    agent: str = ""
    service: str = ""
    metric: str = ""
    result: str = ""  # pass | fail | "" (either)
    q: str = ""  # text searched in the run's input
    page: int = 1

    def cutoff(self, now: datetime) -> datetime | None:
        seconds = range_seconds(self.since)
        return None if seconds is None else now - timedelta(seconds=seconds)

    def query_string(self, **changes: str | int) -> str:
        """This selection as a query string, with ``changes`` applied; defaults are left out."""
        chosen = replace(self, **changes)  # type: ignore[arg-type]
        pairs = [(key, str(getattr(chosen, key))) for key in ("since", "agent", "service", "metric", "result", "q")]
        pairs = [(k, v) for k, v in pairs if v and not (k == "since" and v == DEFAULT_RANGE)]
        if chosen.page > 1:
            pairs.append(("page", str(chosen.page)))
        return ("?" + urlencode(pairs)) if pairs else ""


def parse_filters(params: Mapping[str, str]) -> Filters:
    """``Filters`` from query-string values (the first of each key), or ``FilterError`` naming the bad one."""
    since = (params.get("since") or DEFAULT_RANGE).strip()
    range_seconds(since)
    result = (params.get("result") or "").strip()
    if result and result not in RESULTS:
        raise FilterError(f"unknown result {result!r}: use pass or fail")
    raw_page = (params.get("page") or "1").strip()
    if not raw_page.isdigit() or not 1 <= int(raw_page) <= 1_000_000:
        raise FilterError(f"page must be a whole number from 1, got {raw_page!r}")
    texts = {}
    for key in ("agent", "service", "metric", "q"):
        value = (params.get(key) or "").strip()
        if len(value) > 500:
            raise FilterError(f"{key} is longer than 500 characters")
        texts[key] = value
    return Filters(since=since, result=result, page=int(raw_page), **texts)
