"""``$ref``: a later call must use a value an earlier call produced, by step id or by tool name, from its
arguments or its result; the alignment picks the binding that makes data flow hold."""

from __future__ import annotations

from typing import Any

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import TrajectoryOutcome, parse_spec, score_trajectory


def run(spec: Any, *calls: ToolCall) -> TrajectoryOutcome:
    return score_trajectory(parse_spec(spec), list(calls))


def checks_of(outcome: TrajectoryOutcome, path: str) -> list[dict[str, Any]]:
    (row,) = [r for r in outcome.details["steps"] if r["path"] == path]
    if row["calls"]:
        return row["checks"][str(row["calls"][0])]
    return row["near_misses"][0]["checks"]


FLOW = [
    {"id": "who", "tool": "find_user"},
    {"tool": "get_orders", "args": {"user_id": {"$ref": "who.result.user.id"}}},
]


def test_a_result_path_into_nested_json() -> None:
    found = ToolCall("find_user", {"zip": "94110"}, output={"user": {"id": "u-1", "name": "Ana"}})
    assert run(FLOW, found, ToolCall("get_orders", {"user_id": "u-1"})).score == 1.0
    wrong = run(FLOW, found, ToolCall("get_orders", {"user_id": "u-2"}))
    assert wrong.score == 0.5
    (check,) = checks_of(wrong, "steps[1]")
    assert check["ok"] is False and "who.result.user.id" in check["reason"] and "u-1" in check["reason"]


def test_a_result_recorded_as_json_text_and_array_indices() -> None:
    spec = [
        {"id": "s", "tool": "search"},
        {"tool": "book", "args": {"hotel": {"$ref": "s.result.hits.1.name"}}},
    ]
    search = ToolCall("search", {}, output='{"hits": [{"name": "Ritz"}, {"name": "Casa"}]}')
    assert run(spec, search, ToolCall("book", {"hotel": "Casa"})).score == 1.0
    assert run(spec, search, ToolCall("book", {"hotel": "Ritz"})).score == 0.5


def test_an_argument_of_an_earlier_call() -> None:
    spec = [
        {"id": "order", "tool": "get_order"},
        {"tool": "refund", "args": {"order_id": {"$ref": "order.args.order_id"}}},
    ]
    assert (
        run(spec, ToolCall("get_order", {"order_id": "A-1"}), ToolCall("refund", {"order_id": "A-1"})).score
        == 1.0
    )
    assert (
        run(spec, ToolCall("get_order", {"order_id": "A-1"}), ToolCall("refund", {"order_id": "B-2"})).score
        == 0.5
    )


def test_a_tool_name_means_its_latest_earlier_call() -> None:
    spec = [
        {"tool": "get_order", "count": {"min": 1, "max": 3}},
        {"tool": "refund", "args": {"order_id": {"$ref": "get_order.args.order_id"}}},
    ]
    calls = [ToolCall("get_order", {"order_id": "A-1"}), ToolCall("get_order", {"order_id": "B-2"})]
    assert run(spec, *calls, ToolCall("refund", {"order_id": "B-2"})).score == 1.0
    stale = run(spec, *calls, ToolCall("refund", {"order_id": "A-1"}))  # not the latest get_order
    assert stale.score == 0.5


def test_a_ref_to_a_call_that_has_not_happened_yet_does_not_hold() -> None:
    spec = [
        {
            "unordered": [
                {"id": "who", "tool": "find_user"},
                {"tool": "notify", "args": {"user_id": {"$ref": "who.result.id"}}},
            ]
        }
    ]
    notify_first = run(
        spec, ToolCall("notify", {"user_id": "u-1"}), ToolCall("find_user", {}, output={"id": "u-1"})
    )
    assert notify_first.score == 0.5
    (check,) = checks_of(notify_first, "steps[0].unordered[1]")
    assert check["ok"] is False and "took no call before this one" in check["reason"]
    in_order = run(
        spec, ToolCall("find_user", {}, output={"id": "u-1"}), ToolCall("notify", {"user_id": "u-1"})
    )
    assert in_order.score == 1.0


def test_an_unrecorded_source_is_not_decided() -> None:
    outcome = run(FLOW, ToolCall("find_user", {"zip": "1"}), ToolCall("get_orders", {"user_id": "u-1"}))
    assert outcome.score == 1.0  # the result was not captured: cannot fail the data flow
    (check,) = checks_of(outcome, "steps[1]")
    assert check["ok"] is None and "not recorded" in check["reason"]


def test_the_optimum_binds_the_id_to_the_call_whose_value_flows_on() -> None:
    spec = [
        {"id": "who", "tool": "find_user", "count": {"min": 1, "max": 2}},
        {"tool": "get_orders", "args": {"user_id": {"$ref": "who.result.id"}}},
    ]
    first, second = (
        ToolCall("find_user", {}, output={"id": "u-1"}),
        ToolCall("find_user", {}, output={"id": "u-2"}),
    )
    # the id is bound to the latest call the step took; both are taken, the second flows on
    assert run(spec, first, second, ToolCall("get_orders", {"user_id": "u-2"})).score == 1.0
    # the first result flows on: the alignment leaves the second call out so the ref holds
    outcome = run(spec, first, second, ToolCall("get_orders", {"user_id": "u-1"}))
    assert outcome.score == 1.0 and outcome.details["extra"] == [1]
    spec_one = [{"id": "who", "tool": "find_user"}, *spec[1:]]
    assert run(spec_one, first, second, ToolCall("get_orders", {"user_id": "u-2"})).details["extra"] == [0]


def test_two_steps_of_one_tool_read_different_ids() -> None:
    """Each id stays bound for as long as a later call of a tool whose step reads it may come."""
    spec = [
        {"id": "first", "tool": "a"},
        {"id": "second", "tool": "c"},
        {"tool": "b", "args": {"x": {"$ref": "first.args.x"}}},
        {"tool": "b", "args": {"x": {"$ref": "second.args.x"}}},
    ]
    outcome = run(
        spec,
        ToolCall("a", {"x": 1}),
        ToolCall("c", {"x": 2}),
        ToolCall("b", {"x": 1}),
        ToolCall("b", {"x": 2}),
    )
    assert outcome.score == 1.0 and outcome.details["extra"] == []
    wrong = run(
        spec,
        ToolCall("a", {"x": 1}),
        ToolCall("c", {"x": 2}),
        ToolCall("b", {"x": 2}),
        ToolCall("b", {"x": 1}),
    )
    assert wrong.score == 0.75  # the order of the two b steps is written: one of them misses


def test_a_binding_outlives_the_last_reader_call_while_its_order_free_group_is_open() -> None:
    """An order-free group's calls are matched when the group is left, after the last call of its tool."""
    spec = [{"id": "src", "tool": "a"}, {"unordered": [{"tool": "a", "args": {"x": {"$ref": "src.args.x"}}}]}]
    outcome = run(spec, ToolCall("b", {"x": 2}), ToolCall("a", {"x": 2}), ToolCall("a", {"x": 2}))
    assert outcome.score == 1.0 and outcome.details["extra"] == [0]
    assert run(spec, ToolCall("a", {"x": 2}), ToolCall("a", {"x": 1})).score == 0.5


def test_the_calls_shown_are_those_of_the_best_alignment_when_an_id_is_forgotten() -> None:
    """States alike but for a binding nothing reads any more merge; the merged state keeps its best way."""
    spec = [
        {
            "steps": [
                {
                    "steps": [
                        {"tool": "b", "args": {"x": {"$ref": "src.args.x"}}},
                        {"tool": "b"},
                        {"tool": "a", "id": "src"},
                    ],
                    "optional": True,
                },
                {"tool": "a"},
            ],
            "count": {"min": 1, "max": 2},
        }
    ]
    outcome = run(spec, ToolCall("a", {"x": 1}), ToolCall("b", {"x": 1}))
    # a is the required step of the first round, b the optional group's in the second
    assert outcome.score == 1.0 and outcome.details["extra"] == []
    assert [c.get("step") for c in outcome.details["calls"]] == [
        "steps[0].steps[1]",
        "steps[0].steps[0].steps[1]",
    ]


def test_a_ref_compares_with_json_equality_and_normalisers() -> None:
    spec = [
        {"id": "q", "tool": "quote"},
        {
            "tool": "pay",
            "args": {
                "amount": {"$ref": "q.result.total"},
                "city": {"$ref": "q.args.city", "$norm": ["case"]},
            },
        },
    ]
    quote = ToolCall("quote", {"city": "Paris"}, output={"total": 120})
    assert run(spec, quote, ToolCall("pay", {"amount": 120.0, "city": "PARIS"})).score == 1.0
    assert run(spec, quote, ToolCall("pay", {"amount": True, "city": "paris"})).score == 0.5
