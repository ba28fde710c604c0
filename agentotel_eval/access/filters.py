"""The selection a page or the report reads: a time range and the runs table's filters, from a query string
(or the report's flags), validated. A time range is "all" or a duration in the one grammar of
``agentotel_eval.durations`` ("7d", "1.5h", "90m"), as every command's ``--since`` and ``compare``'s SPEC."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from urllib.parse import urlencode

from agentotel_eval.durations import DurationError, parse_duration

PAGE_SIZE = 50
#: the ranges the picker offers; any other duration is accepted too
RANGES = ("1h", "24h", "7d", "30d", "all")
DEFAULT_RANGE = "7d"
#: the longest range that is not "all": a cutoff further back would not be a date any more
LONGEST_RANGE = 1000 * 365 * 86400
RESULTS = ("pass", "fail")


class FilterError(ValueError):
    """A query-string value the page cannot use (the page answers 400 with the message)."""


def range_seconds(since: str, *, allow_all: bool = True) -> float | None:
    """Seconds covered by a time range such as "7d" or "1.5h"; None for "all" (unless ``allow_all`` is False,
    where no range means all)."""
    if allow_all and since == "all":
        return None
    try:
        seconds = parse_duration(since)
    except DurationError:
        seconds = None
    if seconds is None or seconds > LONGEST_RANGE:
        raise FilterError(
            f"unknown time range {since!r}: expected {'all or ' if allow_all else ''}a duration such "
            "as 90m, 1.5h, 7d or 2w (at most 1000 years)"
        )
    return seconds


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
        pairs = [
            (key, str(getattr(chosen, key))) for key in ("since", "agent", "service", "metric", "result", "q")
        ]
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
