"""Each step modifier and each top-level rule of a spec, and how a spec that cannot be read is refused."""

from __future__ import annotations

from typing import Any

import pytest

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import SpecError, TrajectoryOutcome, parse_spec, score_trajectory


def run(spec: Any, *calls: ToolCall | str) -> TrajectoryOutcome:
    return score_trajectory(parse_spec(spec), [c if isinstance(c, ToolCall) else ToolCall(c) for c in calls])


def statuses(outcome: TrajectoryOutcome) -> dict[str, str]:
    return {row["path"]: row["status"] for row in outcome.details["steps"]}


def test_an_optional_step_earns_and_costs_nothing() -> None:
    spec = [{"tool": "a"}, {"tool": "b", "optional": True}, {"tool": "c"}]
    assert run(spec, "a", "c").score == 1.0
    taken = run(spec, "a", "b", "c")
    assert taken.score == 1.0 and taken.details["extra"] == []  # b is matched, not extra
    assert statuses(run(spec, "a", "c"))["steps[1]"] == "skipped"
    assert run([{"tool": "b", "optional": True}]).score == 1.0  # nothing required: nothing missing


def test_count_gives_partial_credit_up_to_min_and_makes_calls_past_max_extra() -> None:
    spec = [{"tool": "poll", "count": {"min": 2, "max": 3}}, {"tool": "done"}]
    assert run(spec, "poll", "done").score == pytest.approx(0.75)  # half of poll's weight, all of done's
    assert run(spec, "poll", "poll", "poll", "done").score == 1.0
    four = run(spec, "poll", "poll", "poll", "poll", "done")
    assert four.score == 1.0 and len(four.details["extra"]) == 1
    assert run([{"tool": "a", "count": {"min": 0, "max": 1}}]).score == 1.0
    unbounded = run([{"tool": "a", "count": {"min": 1}}], *["a"] * 6)
    assert unbounded.details["extra"] == []


def test_weight_sets_a_steps_share_of_the_score() -> None:
    spec = [{"tool": "a", "weight": 3}, {"tool": "b"}]
    assert run(spec, "b").score == pytest.approx(0.25)
    assert run(spec, "a").score == pytest.approx(0.75)
    half = [{"tool": "a"}, {"tool": "check_policy", "weight": 0.5}]
    assert run(half, "a").score == pytest.approx(1 / 1.5)
    assert run([{"tool": "a"}, {"tool": "b", "weight": 0}], "a").score == 1.0  # weight 0: informational
    # a group weighs the sum of its members, unless its own weight says otherwise
    grouped = [{"unordered": [{"tool": "a"}, {"tool": "b"}], "weight": 1}, {"tool": "c"}]
    assert run(grouped, "a", "c").score == pytest.approx(0.75)


def test_groups_order_and_interleaving() -> None:
    ordered = [{"steps": [{"tool": "a"}, {"tool": "b"}]}]
    assert run(ordered, "b", "a").score == 0.5
    unordered = [{"unordered": [{"tool": "a"}, {"tool": "b"}, {"tool": "c"}]}]
    assert run(unordered, "c", "x", "a", "b").score == 1.0  # other calls may interleave
    nested = [
        {"tool": "start"},
        {"unordered": [{"steps": [{"tool": "a"}, {"tool": "b"}]}, {"tool": "c"}]},
        {"tool": "end"},
    ]
    assert run(nested, "start", "a", "c", "b", "end").score == 1.0
    assert run(nested, "start", "b", "c", "a", "end").score == pytest.approx(4 / 5)
    assert run(nested, "a", "start", "b", "c", "end").score == pytest.approx(4 / 5)  # a before start


def test_any_of_takes_one_alternative_with_partial_credit() -> None:
    spec = [
        {"any_of": [{"tool": "get_user_details"}, {"steps": [{"tool": "search"}, {"tool": "pick"}]}]},
        {"tool": "refund"},
    ]
    assert run(spec, "get_user_details", "refund").score == 1.0
    assert run(spec, "search", "pick", "refund").score == 1.0
    partial = run(spec, "search", "refund")
    # the group weighs as its heaviest alternative (2); half of the chosen one earns half of that: (1 + 1) / 3
    assert partial.score == pytest.approx(2 / 3)
    assert partial.details["steps"][0]["chosen"] == 1
    assert statuses(partial)["steps[0].any_of[0]"] == "not_taken"
    both = run(spec, "get_user_details", "search", "pick", "refund")
    assert (
        both.score == 1.0 and len(both.details["extra"]) == 1
    )  # one alternative only; the other's calls extra


def test_extra_calls_ignored_penalized_or_forbidden() -> None:
    steps = [{"tool": "a"}, {"tool": "b"}]
    ignored = run({"steps": steps}, "a", "x", "b")
    assert (ignored.score, ignored.violations) == (1.0, ())
    penalized = run({"steps": steps, "extra": "penalize"}, "a", "x", "b", "y")
    assert (penalized.recall, penalized.precision) == (1.0, 0.5)
    assert penalized.score == pytest.approx(2 / 3)  # F1
    forbidden = run({"steps": steps, "extra": "forbid"}, "a", "x", "b")
    assert forbidden.score == 1.0
    assert [v["type"] for v in forbidden.violations] == ["extra_forbidden"]


def test_forbidden_calls_and_max_calls_are_violations_whatever_the_score() -> None:
    spec = {
        "steps": [{"tool": "refund"}],
        "max_calls": 3,
        "forbid": [{"tool": "delete_account"}, {"tool": "refund", "args": {"amount": {"$gt": 500}}}],
    }
    assert run(spec, ToolCall("refund", {"amount": 20})).violations == ()
    big = run(spec, ToolCall("refund", {"amount": 900}))
    assert big.score == 1.0 and [v["type"] for v in big.violations] == ["forbidden"]
    assert "forbid[1]" in big.violations[0]["message"]
    deleted = run(spec, ToolCall("refund", {"amount": 20}), "delete_account")
    assert [v["type"] for v in deleted.violations] == ["forbidden"]
    many = run(spec, *["lookup"] * 3, ToolCall("refund", {"amount": 1}))
    assert [v["type"] for v in many.violations] == ["max_calls"]
    assert "4" in many.violations[0]["message"] and "3" in many.violations[0]["message"]


def test_a_parallel_group_must_come_from_one_llm_turn() -> None:
    spec = [{"parallel": [{"tool": "get_order"}, {"tool": "get_product"}]}]
    same = run(spec, ToolCall("get_order", llm_turn="t1"), ToolCall("get_product", llm_turn="t1"))
    assert (same.score, same.violations) == (1.0, ())
    split = run(spec, ToolCall("get_order", llm_turn="t1"), ToolCall("get_product", llm_turn="t2"))
    assert split.score == 1.0 and [v["type"] for v in split.violations] == ["parallel_split"]
    unknown = run(spec, "get_order", "get_product")
    assert unknown.violations == () and unknown.details["turns_not_recorded"] is True
    # with a same-turn call available, the optimum avoids the split
    choice = run(
        spec,
        ToolCall("get_order", llm_turn="t1"),
        ToolCall("get_order", llm_turn="t2"),
        ToolCall("get_product", llm_turn="t2"),
    )
    assert choice.violations == () and choice.details["extra"] == [0]


def test_an_empty_spec_is_a_rule_set_of_its_own() -> None:
    assert run({"steps": []}, "a").score == 1.0
    assert run({"extra": "forbid"}).violations == ()
    assert [v["type"] for v in run({"extra": "forbid"}, "a").violations] == ["extra_forbidden"]


def test_a_threshold_and_a_bare_list_of_steps() -> None:
    spec = parse_spec({"steps": ["a", "b"], "threshold": 0.5})
    assert spec.threshold == 0.5
    assert parse_spec(["a", {"tool": "b"}]).written == {"steps": ["a", {"tool": "b"}]}
    assert parse_spec('{"steps": [{"tool": "a"}]}').to_json() == '{"steps":[{"tool":"a"}]}'


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"steps": [{"tol": "a"}]}, "trajectory.steps[0]: unknown key 'tol'; did you mean 'tool'?"),
        ({"steps": [{"tool": "a", "unordered": []}]}, "exactly one of"),
        (
            {"steps": [{"tool": "a", "count": {"min": 3, "max": 1}}]},
            "trajectory.steps[0].count: max (1) must be",
        ),
        ({"steps": [{"tool": "a", "count": {"max": 0}}]}, "at least 1"),
        ({"steps": [{"tool": "a", "weight": -1}]}, "trajectory.steps[0].weight must be a number >= 0"),
        ({"steps": [{"tool": "a", "optional": "yes"}]}, "optional must be true or false"),
        ({"steps": [{"unordered": []}]}, "unordered must be a non-empty list"),
        ({"steps": [{"id": "x", "tool": "a"}, {"id": "x", "tool": "b"}]}, "x"),
        (
            {"steps": [{"any_of": [{"tool": "a", "args": {"q": {"$regxe": "x"}}}]}]},
            "trajectory.steps[0].any_of[0].args.q",
        ),
        ({"extra": "warn"}, "trajectory.extra must be one of ignore, penalize, forbid"),
        ({"max_calls": -1}, "max_calls"),
        ({"threshold": 2}, "threshold"),
        ({"forbid": {"tool": "x"}}, "forbid must be a list"),
        ({"steps": "a"}, "steps must be a list"),
        ({"stesp": []}, "did you mean 'steps'"),
        ("not json", "not valid JSON"),
        (42, "a trajectory spec is a table"),
    ],
)
def test_a_spec_that_cannot_be_read_is_refused_naming_where(spec: Any, message: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse_spec(spec)
    assert message in str(raised.value), str(raised.value)
