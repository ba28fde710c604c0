"""``compare``'s SPEC terms compiled to SQL conditions: durations of the one grammar, times,
attributes, ``where``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentotel_eval.access.specs import SpecError, parse_spec

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_terms_become_conditions_and_parameters() -> None:
    selection = parse_spec("planner,service=api,since=1.5h,until=90,service.version=1.2,where=a = 1, b", NOW)
    assert selection.conditions == [
        "coalesce(r.agent_name, '(unnamed)') = ?",
        "r.service_name = ?",
        "r.start_time >= CAST(? AS TIMESTAMPTZ)",
        "r.start_time < CAST(? AS TIMESTAMPTZ)",
        "json_extract_string(s.resource_attributes, ?) = ?",
        "(a = 1, b)",
    ]
    assert selection.params == [
        "planner",
        "api",
        (NOW - timedelta(minutes=90)).isoformat(),
        (NOW - timedelta(seconds=90)).isoformat(),
        '$."service.version"',
        "1.2",
    ]
    assert selection.needs_span


def test_from_and_to_are_iso_times_in_utc_unless_they_say() -> None:
    selection = parse_spec("from=2026-12-01T09:00,to=2026-12-02T09:00+01:00", NOW)
    assert selection.params == ["2026-12-01T09:00:00+00:00", "2026-12-02T09:00:00+01:00"]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (
            "since=yesterday",
            r"since=yesterday: unknown time range 'yesterday': expected a duration such as 90m",
        ),
        ("until=all", r"until=all: unknown time range 'all': expected a duration"),
        ("from=noon", r"from=noon: expected an ISO time"),
        ("", r"empty SPEC"),
        ("agent=a,where=", r"where=: give a condition"),
        ("a b=c", r"expected key=value"),
    ],
)
def test_bad_terms_are_named(spec: str, says: str) -> None:
    with pytest.raises(SpecError, match=says):
        parse_spec(spec, NOW)


@pytest.mark.parametrize(
    ("spec", "meant"),
    [
        ("agnt=planner", "agent"),
        ("servce=shop", "service"),
        ("sinse=7d", "since"),
        ("agent=a,untl=1d", "until"),
    ],
)
def test_a_slip_in_a_key_is_refused_with_the_key_meant(spec: str, meant: str) -> None:
    with pytest.raises(SpecError, match=rf"did you mean {meant}=\?"):
        parse_spec(spec)


@pytest.mark.parametrize(
    "spec", ["team=core", "env=prod", "service.version=1.2", "deployment.environment=dev"]
)
def test_other_keys_are_still_resource_attributes(spec: str) -> None:
    assert parse_spec(spec).needs_span
