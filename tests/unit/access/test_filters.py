"""The pages' query strings: validated, and written back without the defaults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl

import pytest

from agentotel_eval.access.filters import FilterError, Filters, parse_filters


def test_defaults() -> None:
    f = parse_filters({})
    assert f == Filters()
    now = datetime(2026, 12, 2, tzinfo=UTC)
    assert f.cutoff(now) == now - timedelta(days=7)
    assert parse_filters({"since": "all"}).cutoff(now) is None
    assert parse_filters({"since": "90m"}).cutoff(now) == now - timedelta(minutes=90)


@pytest.mark.parametrize(
    ("since", "seconds"),
    [
        ("1.5h", 5400),
        ("90", 90),
        ("2w", 1209600),
        (" 12 H ", 43200),
        ("500ms", 0.5),
    ],
)
def test_a_time_range_is_any_duration_of_the_one_grammar(since: str, seconds: float) -> None:
    now = datetime(2026, 12, 2, tzinfo=UTC)
    assert parse_filters({"since": since}).cutoff(now) == now - timedelta(seconds=seconds)


@pytest.mark.parametrize("since", ["1h30m", "-1h", "5y", "99999999w"])
def test_what_is_not_a_time_range_is_refused_with_examples(since: str) -> None:
    with pytest.raises(
        FilterError, match=r"unknown time range .*: expected all or a duration such as 90m, 1\.5h"
    ):
        parse_filters({"since": since})


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"since": "yesterday"}, "unknown time range"),
        ({"result": "maybe"}, "unknown result"),
        ({"page": "0"}, "page must be"),
        ({"page": "-1"}, "page must be"),
        ({"page": "x"}, "page must be"),
        ({"agent": "a" * 501}, "agent is longer"),
    ],
)
def test_bad_values_are_named(params: dict[str, str], message: str) -> None:
    with pytest.raises(FilterError, match=message):
        parse_filters(params)


def test_query_string_round_trips_and_drops_defaults() -> None:
    f = parse_filters(
        {"agent": "trip planner", "result": "fail", "since": "30d", "q": "Rome & Oslo", "page": "3"}
    )
    assert parse_filters(dict(parse_qsl(f.query_string().lstrip("?")))) == f
    assert Filters().query_string() == ""
    assert Filters(since="7d", page=1).query_string(page=2) == "?page=2"
