"""``[[tools]]`` declarations: argument matchers as parameter errors, required earlier tools
as sequence errors."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from agentotel_eval import ToolCall
from agentotel_eval.detectors import detect
from agentotel_eval.detectors.declarations import parse_tool_rules
from agentotel_eval.detectors.types import PARAMETER_ERROR, SEQUENCE_ERROR
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.test_case import EvalTestCase
from agentotel_eval.trajectory import SpecError

RULES = parse_tool_rules(
    [
        {
            "name": "book_hotel",
            "requires": ["search_hotels"],
            "args": {"nights": {"$gte": 1, "$lte": 30}, "hotel_id": {"$ref": "search_hotels.result.0.id"}},
        },
        {
            "name": "pay",
            "requires": ["book_hotel", "get_quote"],
            "args": {"currency": {"$in": ["EUR", "USD"]}},
        },
    ]
)


def fail(name: str, **args: Any) -> ToolCall:
    return ToolCall(name, args, status="error", error="boom")


def test_an_argument_failing_its_declared_matcher_is_a_parameter_error() -> None:
    calls = [
        ToolCall("search_hotels", {"city": "Rome"}, output=[{"id": "H-1"}]),
        ToolCall("book_hotel", {"nights": 45, "hotel_id": "H-9"}),
    ]
    found = detect(calls, None, rules=RULES)
    assert [(f.type, f.subtype, f.argument, f.rule) for f in found] == [
        (PARAMETER_ERROR, "rule_violation", "nights", "tools.book_hotel.args.nights"),
        (PARAMETER_ERROR, "rule_violation", "hotel_id", "tools.book_hotel.args.hotel_id"),
    ]
    assert found[0].to_dict()["evidence"] == {
        "value": "45",
        "expected": "$gte 1, $lte 30",
        "reason": "45 is not <= 30",
    }
    assert "expected 'H-1'" in found[1].description
    good = [calls[0], ToolCall("book_hotel", {"nights": 3, "hotel_id": "H-1"})]
    assert detect(good, None, rules=RULES) == []
    # arguments not recorded, or a result a $ref reads not recorded: nothing is claimed
    assert detect([ToolCall("search_hotels", {}), ToolCall("book_hotel", None)], None, rules=RULES) == []
    assert (
        detect(
            [ToolCall("search_hotels", {}), ToolCall("book_hotel", {"nights": 2, "hotel_id": "H-1"})],
            None,
            rules=RULES,
        )
        == []
    )


def test_a_call_before_its_required_tools_succeeded_is_a_sequence_error() -> None:
    before = detect(
        [ToolCall("book_hotel", {"nights": 2}), ToolCall("search_hotels", {})],
        None,
        types=[SEQUENCE_ERROR],
        rules=RULES,
    )
    assert [(f.subtype, f.call_indices, f.rule) for f in before] == [
        ("precondition", (0,), "tools.book_hotel.requires")
    ]
    assert "'search_hotels' was not called before" in before[0].description
    failed_first = detect(
        [fail("search_hotels"), ToolCall("book_hotel", {})], None, types=[SEQUENCE_ERROR], rules=RULES
    )
    assert [f.call_indices for f in failed_first] == [(1, 0)] and "#1 failed" in failed_first[0].description
    ok = [ToolCall("search_hotels", {}), ToolCall("book_hotel", {}), ToolCall("book_hotel", {})]
    assert detect(ok, None, types=[SEQUENCE_ERROR], rules=RULES) == []
    # once per tool and requirement, each missing requirement named
    twice = detect(
        [ToolCall("pay", {"currency": "EUR"}), ToolCall("pay", {"currency": "EUR"})],
        None,
        types=[SEQUENCE_ERROR],
        rules=RULES,
    )
    assert [f.to_dict()["evidence"]["requires"] for f in twice] == ["book_hotel", "get_quote"]


def test_the_metric_runs_the_rules_and_says_which_checks_ran() -> None:
    case = EvalTestCase(input="book", tools_called=[ToolCall("pay", {"currency": "JPY"})])
    with_rules = ToolsErrorMetric(
        judge=False,
        tool_rules=[{"name": "pay", "requires": ["get_quote"], "args": {"currency": {"$in": ["EUR"]}}}],
    )
    result = with_rules.measure(case)
    assert result.success is False
    assert {f["type"] for f in result.evaluation_log["detectors"]} == {PARAMETER_ERROR, SEQUENCE_ERROR}
    assert result.evaluation_log["error_types"] == [PARAMETER_ERROR, SEQUENCE_ERROR]
    assert "needs a successful 'get_quote' first" in result.reason
    plain = ToolsErrorMetric(judge=False).measure(case)
    assert plain.success is True


def test_rules_cross_to_another_process_as_written() -> None:
    copy = pickle.loads(pickle.dumps(RULES))
    assert [r.written for r in copy] == [r.written for r in RULES]
    calls = [
        ToolCall("search_hotels", {}, output=[{"id": "H-1"}]),
        ToolCall("book_hotel", {"nights": 0, "hotel_id": "H-1"}),
    ]
    assert [f.rule for f in detect(calls, None, rules=copy)] == ["tools.book_hotel.args.nights"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"name": "x"}, "must be a list"),
        ([{"nam": "x"}], r"tools\[0\]: unknown key 'nam'"),
        ([{"name": ""}], r"tools\[0\]\.name must be a tool name"),
        ([{"name": "x", "requires": "y"}], r"tools\[0\]\.requires must be a list"),
        ([{"name": "x", "args": {"n": {"$gtt": 1}}}], r"tools\[0\]\.args\.n"),
        ([{"name": "x", "claims": "(unclosed"}], r"tools\[0\]\.claims is not a valid pattern"),
        ([{"name": "x"}, {"name": "x"}], r"tools\[1\]: tool 'x' is declared twice"),
    ],
)
def test_a_bad_declaration_is_refused_naming_where(value: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_tool_rules(value)
