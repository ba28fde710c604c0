"""Every argument matcher, holding and failing with a reason a person can read, and the specs they refuse."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import SpecError, parse_spec, score_trajectory
from agentotel_eval.trajectory.matchers import MAX_PATTERN_CHARS, OPERATORS, compile_matcher, missing


def check(spec: Any, value: Any) -> tuple[bool | None, str]:
    return compile_matcher(spec, "args.k").test(value)


HOLDS = [
    # literals: JSON equality
    (100, 100.0),
    ("Paris", "Paris"),
    ({"a": [1, {"b": 2}]}, {"a": [1.0, {"b": 2}]}),
    (None, None),
    ([1, 2], [1, 2]),
    ({"$eq": "New  York"}, "New  York"),
    ({"$eq": "new york", "$norm": ["case", "space"]}, "  New   YORK "),
    ({"$eq": "st louis", "$norm": ["case", "punct"]}, "St. Louis"),
    ({"$in": ["paypal", "card"]}, "card"),
    ({"$in": [1, 2]}, 2.0),
    ({"$in": ["paypal"], "$norm": ["case"]}, "PayPal"),
    ({"$any": True}, 0),
    ({"$any": True}, None),
    ({"$absent": True}, missing()),
    ({"$optional": True}, missing()),
    ({"$optional": True, "$gt": 3}, 4),
    ({"$type": "string"}, "x"),
    ({"$type": "integer"}, 3),
    ({"$type": "integer"}, 3.0),
    ({"$type": "number"}, 3.5),
    ({"$type": "boolean"}, False),
    ({"$type": "object"}, {}),
    ({"$type": "array"}, []),
    ({"$type": "null"}, None),
    ({"$type": ["string", "null"]}, None),
    (
        {"$schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}}},
        {"id": 7},
    ),
    ({"$regex": r"\d{5}"}, "94110"),
    ({"$regex": r"(?i)[a-z]+"}, "Paris"),
    ({"$gt": 0}, 0.5),
    ({"$gte": 1}, 1),
    ({"$lt": 500}, 499.99),
    ({"$lte": 2}, 2.0),
    ({"$gt": 0, "$lt": 10}, 5),
    ({"$approx": 120.0, "rel": 0.01}, 121.1),
    ({"$approx": 1.0, "abs": 0.1}, 0.95),
    ({"$approx": 100, "rel": 0.001, "abs": 5}, 104),  # either tolerance is enough
    ({"$contains": "York"}, "New York"),
    ({"$contains": 2}, [1, 2.0, 3]),
    ({"$contains": "id"}, {"id": 1}),
    ({"$contains": {"a": 1}}, [{"a": 1}, {"b": 2}]),
    ({"$len": 3}, "abc"),
    ({"$len": {"$gte": 2}}, [1, 2, 3]),
    ({"$len": 0}, {}),
    ({"city": {"$regex": "[A-Z].*"}}, {"city": "Rome", "country": "IT"}),  # a nested map: other keys free
]

FAILS = [
    (100, 101, "expected 100, got 101"),
    (1, True, "expected 1, got True"),
    (True, 1, "expected True, got 1"),
    ("Paris", missing(), "missing"),
    ({"$eq": "new york"}, "New York", "New York"),
    ({"$in": ["paypal", "card"]}, "cash", "'cash' is not one of ['paypal', 'card']"),
    ({"$in": [1, 2]}, True, "is not one of"),
    ({"$any": True}, missing(), "missing"),
    ({"$absent": True}, "here", "present"),
    ({"$optional": True, "$gt": 3}, 2, "2 is not > 3"),
    ({"$type": "integer"}, 3.5, "expected integer, got number"),
    ({"$type": "integer"}, True, "got boolean"),
    ({"$type": "number"}, "3", "got string"),
    ({"$type": ["string", "null"]}, 1, "expected string or null"),
    ({"$schema": {"type": "object", "required": ["id"]}}, {"name": "x"}, "'id' is a required property"),
    ({"$regex": r"\d{5}"}, "9411", "does not match"),
    ({"$regex": r"\d{5}"}, "941100", "does not match"),
    ({"$regex": r"\d+"}, 94110, "is not a string"),
    ({"$gt": 0}, 0, "0 is not > 0"),
    ({"$lt": 500}, 500, "500 is not < 500"),
    ({"$gte": 1}, "2", "is not a number"),
    ({"$lte": 2}, 2.5, "2.5 is not <= 2"),
    ({"$gt": 0}, True, "is not a number"),
    ({"$approx": 120.0, "rel": 0.01}, 125, "125"),
    ({"$approx": 1.0, "abs": 0.1}, "1.0", "is not a number"),
    ({"$contains": "Boston"}, "New York", "Boston"),
    ({"$contains": 4}, [1, 2, 3], "4"),
    ({"$contains": "id"}, {"name": 1}, "id"),
    ({"$contains": "x"}, 7, "cannot contain anything"),
    ({"$len": 3}, "ab", "length 2"),
    ({"$len": 1}, 5, "has no length"),
    ({"city": {"$regex": "[A-Z].*"}}, {"city": "rome"}, "city:"),
    ({"city": {"$eq": "Rome"}}, "Rome", "expected an object"),
    ({"$eq": "new york", "$norm": ["case"]}, "New  York", "expected 'new york'"),
    ({"$ref": "search.result.city"}, "Paris", "search has no earlier call"),
]


@pytest.mark.parametrize(("spec", "value"), HOLDS, ids=[str(i) for i in range(len(HOLDS))])
def test_a_matcher_holds(spec: Any, value: Any) -> None:
    assert check(spec, value) == (True, "")


@pytest.mark.parametrize(("spec", "value", "reason"), FAILS, ids=[str(i) for i in range(len(FAILS))])
def test_a_matcher_fails_and_says_why(spec: Any, value: Any, reason: str) -> None:
    verdict, said = check(spec, value)
    assert verdict is False
    assert reason in said, said


def test_every_operator_is_shown_failing() -> None:
    """An operator the spec accepts but that tests nothing would match any value: each one (a modifier with
    the operator it changes) is in a case above where the value fails."""
    shown = {op for spec, _value, _reason in FAILS if isinstance(spec, dict) for op in spec}
    assert set(OPERATORS) - shown == set()


def test_a_catastrophic_pattern_fails_within_its_time_limit() -> None:
    started = time.monotonic()
    verdict, reason = check({"$regex": r"(a|aa)+$"}, "a" * 60 + "b")
    assert verdict is False and "took too long" in reason
    assert time.monotonic() - started < 2  # bounded by the limit, not by the backtracking (which takes hours)


def test_a_long_value_is_not_matched_against_a_pattern() -> None:
    verdict, reason = check({"$regex": ".*"}, "x" * 100_000)
    assert verdict is False and "limit" in reason


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"$regex": "x" * (MAX_PATTERN_CHARS + 1)}, f"the limit is {MAX_PATTERN_CHARS}"),
        ({"$regex": "(unclosed"}, "not a valid pattern"),
        ({"$gt": "five"}, "$gt needs a number"),
        ({"$gt": 1, "rel": 0.1}, "rel/abs go with $approx"),
        ({"$approx": 10, "rel": -1}, "rel"),
        ({"$type": "float"}, "float"),
        ({"$norm": ["case"]}, "$norm"),
        ({"$norm": ["capital"], "$eq": "x"}, "capital"),
        ({"$in": "paypal"}, "$in"),
        ({"$schema": {"type": "nonsense"}}, "$schema"),
        ({"$ref": "who"}, "$ref"),
        ({"$ref": "who.params.id"}, "args"),
        ({"$regexp": "x"}, "$regex"),  # a misspelt operator: did you mean
        ({"$len": "three"}, "$len"),
    ],
)
def test_a_bad_matcher_is_refused_naming_where(spec: Any, message: str) -> None:
    with pytest.raises(SpecError) as raised:
        compile_matcher(spec, "args.k")
    assert "args.k" in str(raised.value) and message in str(raised.value), str(raised.value)


def _step_checks(args_spec: dict[str, Any], call: ToolCall, strict: bool = False) -> tuple[str, list[dict]]:
    step: dict[str, Any] = {"tool": "t", "args": args_spec}
    if strict:
        step["strict_args"] = True
    details = score_trajectory(parse_spec([step]), [call]).details
    (row,) = details["steps"]
    if row["status"] == "matched":
        return "matched", row["checks"]["0"]
    return row["status"], (row.get("near_misses") or [{}])[0].get("checks", [])


def test_keys_the_spec_does_not_name_are_free_unless_strict() -> None:
    call = ToolCall("t", {"city": "Rome", "units": "metric"})
    assert _step_checks({"city": "Rome"}, call)[0] == "matched"
    status, checks = _step_checks({"city": "Rome"}, call, strict=True)
    assert status == "missing"
    assert [(c["key"], c["ok"]) for c in checks] == [("units", False)]
    assert _step_checks({}, ToolCall("t", {}), strict=True)[0] == "matched"


def test_arguments_not_recorded_are_not_decided_and_do_not_fail() -> None:
    status, checks = _step_checks({"city": {"$regex": "R.*"}, "n": 2}, ToolCall("t", None))
    assert status == "matched"
    assert [(c["key"], c["ok"], c["reason"]) for c in checks] == [
        ("city", None, "arguments not recorded"),
        ("n", None, "arguments not recorded"),
    ]
