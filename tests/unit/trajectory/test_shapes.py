"""A run of a shape scored before takes its report from that run and reads only its own argument checks: on
random specs and runs, a spec that has scored other runs gives the very result a spec read afresh gives."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentotel_eval.trajectory.score as scoring
from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import TrajectoryOutcome, parse_spec, score_trajectory
from tests.unit.trajectory.strategies import groups_of, tool_step

MATCHERS = [
    1,
    2,
    {"$gte": 2},
    {"$in": [1, 3]},
    {"$type": "integer"},
    {"$regex": "[A-Z].*"},
    {"$optional": True, "$lte": 2},
    {"$eq": "ab", "$norm": "case"},
]


def _with_args(step: dict[str, Any], matcher: Any, strict: bool) -> dict[str, Any]:
    if matcher is not None:
        step["args"] = {"x": matcher}
        if strict:
            step["strict_args"] = True
    return step


TOOL = st.builds(
    _with_args,
    st.builds(
        tool_step,
        st.sampled_from("abc"),
        st.sampled_from(["none", "optional", "count", "weight"]),
        st.integers(0, 2),
        st.one_of(st.none(), st.integers(0, 2)),
        st.just(0.5),
        st.just(1),
    ),
    st.one_of(st.none(), st.sampled_from(MATCHERS)),
    st.booleans(),
)


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "steps": draw(st.lists(st.recursive(TOOL, groups_of, max_leaves=6), min_size=1, max_size=4))
    }
    if draw(
        st.booleans()
    ):  # a $ref to a tool name reads that tool's latest call: the same for every alignment
        spec["steps"].append({"tool": "b", "args": {"x": {"$ref": "a.args.x"}}})
    spec["extra"] = draw(st.sampled_from(["ignore", "penalize", "forbid"]))
    if draw(st.booleans()):
        spec["max_calls"] = draw(st.integers(0, 4))
    spec["forbid"] = draw(
        st.lists(
            st.sampled_from(["d", {"tool": "d", "args": {"x": 1}}, {"tool": "a", "args": {"x": 3}}]),
            max_size=2,
        )
    )
    spec["separate_turns"] = draw(st.booleans())
    return spec


CALL = st.builds(
    lambda name, x, turn: ToolCall(name, None if x is None else {"x": x}, llm_turn=turn),
    st.sampled_from("abcd"),
    st.sampled_from([1, 2, 3, "Ab", "ab", None]),
    st.sampled_from([None, "t1", "t2", "t3"]),
)


def _alike(calls: list[ToolCall]) -> list[ToolCall]:
    """The same run with other values where no matcher tells them apart (3 and 30 pass and fail the same ones,
    but read differently in a check's reason) and its LLM turns renamed."""
    return [
        ToolCall(
            c.name,
            {"x": 30} if c.input_parameters == {"x": 3} else c.input_parameters,
            llm_turn=None if c.llm_turn is None else f"other-{c.llm_turn}",
        )
        for c in calls
    ]


def _one_turn(calls: list[ToolCall]) -> list[ToolCall]:
    """The same calls from one LLM turn: alike but for turns (a parallel group,
    separate_turns tell them apart)."""
    return [ToolCall(c.name, c.input_parameters, llm_turn="one") for c in calls]


def _own_turns(calls: list[ToolCall]) -> list[ToolCall]:
    return [ToolCall(c.name, c.input_parameters, llm_turn=f"turn-{j}") for j, c in enumerate(calls)]


def _result(outcome: TrajectoryOutcome) -> tuple[Any, ...]:
    alignment = outcome.alignment
    checks = [
        [(c.key, c.verdict, c.reason, c.expected) for c in alignment.checks(j)]
        for j in range(len(alignment.taken_by))
    ]
    return (
        outcome.details,
        outcome.score,
        outcome.violations,
        alignment.taken_by,
        alignment.earned,
        alignment.splits,
        alignment.bindings,
        alignment.approximate,
        alignment.work,
        checks,
    )


@settings(max_examples=300, deadline=None)
@given(
    spec=specs(),
    runs=st.lists(st.lists(CALL, max_size=5), min_size=1, max_size=4),
    budget=st.sampled_from([None, None, 0]),
)
def test_a_kept_report_gives_what_a_fresh_spec_gives(
    spec: dict[str, Any], runs: list[list[ToolCall]], budget: int | None
) -> None:
    shared = parse_spec(spec)
    for calls in [*runs, *map(_alike, runs), *map(_one_turn, runs), *map(_own_turns, runs), *runs]:
        fresh = score_trajectory(parse_spec(spec), calls, 0.5, budget)
        again = score_trajectory(shared, calls, 0.5, budget)
        assert _result(again) == _result(fresh)
        assert again.details["reason"] == fresh.details["reason"]


SPEC = {
    "steps": [
        {"tool": "get_weather", "args": {"city": {"$regex": "[A-Z].*"}}},
        {"parallel": [{"tool": "search_flights"}, {"tool": "search_hotels", "optional": True}]},
        {"tool": "book_hotel", "args": {"nights": {"$gte": 1}}, "count": {"min": 1, "max": 2}},
    ],
    "forbid": [{"tool": "delete_booking", "args": {"id": 7}}],
}


def _run(city: str, nights: int, turn: str) -> list[ToolCall]:
    return [
        ToolCall("get_weather", {"city": city}, llm_turn=f"{turn}1"),
        ToolCall("search_flights", {}, llm_turn=f"{turn}2"),
        ToolCall("search_hotels", {}, llm_turn=f"{turn}2"),
        ToolCall("book_hotel", {"nights": nights}, llm_turn=f"{turn}3"),
        ToolCall("delete_booking", {"id": nights}, llm_turn=f"{turn}4"),
    ]


def test_a_run_of_a_kept_shape_shares_its_rows_and_shows_its_own_checks() -> None:
    spec = parse_spec(SPEC)
    first = score_trajectory(spec, _run("Paris", 0, "a"))
    second = score_trajectory(spec, _run("Lyon", -3, "b"))
    assert second.details == score_trajectory(parse_spec(SPEC), _run("Lyon", -3, "b")).details
    # the same shape: the rows nothing of the run's own is shown in are the first run's (frozen) objects
    assert second.details["steps"][1] is first.details["steps"][1]
    assert second.details["steps"][0] is not first.details["steps"][0]  # its check of city is the run's own
    assert second.details["steps"][0]["checks"]["0"][0]["ok"] is True
    missing = second.details["steps"][-1]
    assert (
        missing["status"] == "missing"
        and missing["near_misses"][0]["checks"][0]["reason"] == "-3 is not >= 1"
    )
    assert [c["turn"] for c in second.details["calls"]] == ["b1", "b2", "b2", "b3", "b4"]
    assert "-3 is not >= 1" in second.details["reason"] and "0 is not >= 1" in first.details["reason"]
    with pytest.raises(TypeError):
        second.details["steps"][1]["status"] = "missing"  # shared parts cannot be changed by one result
    # the forbid rule reads the run's arguments: a delete_booking with id 7 is forbidden, with id 0 it is not
    assert [v["type"] for v in score_trajectory(spec, _run("Rome", 7, "c")).violations] == ["forbidden"]
    assert first.violations == ()


def test_a_ref_to_a_step_id_is_aligned_for_each_run() -> None:
    spec = parse_spec(
        [{"id": "q", "tool": "quote"}, {"tool": "pay", "args": {"total": {"$ref": "q.result.t"}}}]
    )
    paid = score_trajectory(spec, [ToolCall("quote", {}, output={"t": 5}), ToolCall("pay", {"total": 5})])
    unpaid = score_trajectory(spec, [ToolCall("quote", {}, output={"t": 6}), ToolCall("pay", {"total": 5})])
    assert (paid.score, unpaid.score) == (1.0, 0.5)


def test_kept_reports_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scoring, "SHAPE_ROWS_KEPT", 40)
    monkeypatch.setattr(scoring, "_shapes", {})
    monkeypatch.setattr(scoring, "_shape_rows", 0)
    spec = parse_spec(["a", {"tool": "b", "optional": True}])
    for n in range(30):  # thirty shapes of 2 rows and n calls
        score_trajectory(spec, [ToolCall("a")] * n)
        assert scoring._shape_rows <= 40
        assert scoring._shape_rows == sum(len(r.rows) + len(r.call_steps) for r in scoring._shapes.values())
    monkeypatch.setattr(scoring, "SHAPE_MOST_ROWS", 3)
    scoring._shapes.clear()
    scoring._shape_rows = 0
    score_trajectory(spec, [ToolCall("a")] * 2)  # 2 rows and 2 calls: more than a kept report may hold
    assert scoring._shapes == {}


def test_a_kept_report_holds_nothing_of_its_runs_values() -> None:
    class Result:
        """A tool's result (any object: one that can be watched for its collection)."""

    result = Result()
    watch = weakref.ref(result)
    spec = parse_spec(["a", {"tool": "b", "args": {"x": {"$gte": 1}}}])
    first = score_trajectory(spec, [ToolCall("a", {"x": 1}, output=result), ToolCall("b", {"x": 0})])
    second = score_trajectory(spec, [ToolCall("a", {"x": 2}), ToolCall("b", {"x": -1})])
    assert second.details["steps"][0] is first.details["steps"][0]  # the report is kept, and taken
    del first, result
    gc.collect()
    assert watch() is None
