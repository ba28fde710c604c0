"""The alignment is the exact optimum: a brute force written from the spec's semantics (every assignment of
every call to a tool step or to "extra", kept when it respects order, alternatives and counts) agrees with it
on random small specs and runs; and the cases a greedy left-to-right matcher gets wrong are scored right."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import parse_spec, score_trajectory
from tests.unit.trajectory.strategies import groups_of, tool_step

TOOLS = "abc"

# --- an independent brute force over the written spec -------------------------------------------------------


def _leaves(step: dict[str, Any]) -> list[dict[str, Any]]:
    if "tool" in step:
        return [step]
    (kind,) = [k for k in ("steps", "unordered", "any_of") if k in step]
    return [leaf for member in step[kind] for leaf in _leaves(member)]


def _kind(step: dict[str, Any]) -> str:
    return next(k for k in ("tool", "steps", "unordered", "any_of") if k in step)


def _least(step: dict[str, Any]) -> int:
    return 0 if step.get("optional") else step.get("count", {}).get("min", 1)


def _own_required(step: dict[str, Any]) -> Fraction:
    kind = _kind(step)
    if kind == "tool":
        return Fraction(1)
    members = [_required(m) for m in step[kind]]
    if kind == "any_of":  # optional when one alternative is; else as heavy as the heaviest
        return Fraction(0) if any(r == 0 for r in members) else max(members)
    return sum(members, Fraction(0))


def _required(step: dict[str, Any]) -> Fraction:
    """What a step can earn its parent: its weight (default: its own required weight), 0 when not required."""
    own = _own_required(step)
    weight = Fraction(str(step["weight"])) if "weight" in step else own
    return weight if _least(step) > 0 and own > 0 and weight > 0 else Fraction(0)


def _fraction_matched(step: dict[str, Any], taken: dict[int, list[int]], ids: dict[int, int]) -> Fraction:
    """How much of a required step the assignment matched, from 0 to 1."""
    kind = _kind(step)
    if kind == "tool":
        return Fraction(min(len(taken.get(ids[id(step)], [])), _least(step)), _least(step))
    members = step[kind]
    if kind == "any_of":
        chosen = [m for m in members if _calls_under(m, taken, ids)]
        return _fraction_matched(chosen[0], taken, ids) if chosen and _required(chosen[0]) else Fraction(0)
    own = _own_required(step)
    return (
        sum((_required(m) * _fraction_matched(m, taken, ids) for m in members if _required(m)), Fraction(0))
        / own
    )


def _calls_under(step: dict[str, Any], taken: dict[int, list[int]], ids: dict[int, int]) -> list[int]:
    return sorted(j for leaf in _leaves(step) for j in taken.get(ids[id(leaf)], []))


def _valid(step: dict[str, Any], taken: dict[int, list[int]], ids: dict[int, int]) -> bool:
    kind = _kind(step)
    if kind == "tool":
        high = step["count"].get("max") if "count" in step else 1  # a count without max: unbounded
        return high is None or len(taken.get(ids[id(step)], [])) <= high
    members = step[kind]
    if not all(_valid(m, taken, ids) for m in members):
        return False
    blocks = [_calls_under(m, taken, ids) for m in members]
    if kind == "any_of":
        return sum(1 for b in blocks if b) <= 1
    if kind == "steps":  # members in order: every call of a member before every call of a later member
        used = [b for b in blocks if b]
        return all(earlier[-1] < later[0] for earlier, later in itertools.pairwise(used))
    return True


def _eligible(leaf: dict[str, Any], call: ToolCall) -> bool:
    if call.name != leaf["tool"]:
        return False
    return all((call.input_parameters or {}).get(k) == v for k, v in (leaf.get("args") or {}).items())


def brute_force(spec: dict[str, Any], calls: list[ToolCall]) -> tuple[Fraction, int]:
    """(best score, fewest extra calls at that score) over every assignment."""
    root = {"steps": spec["steps"]}
    leaves = _leaves(root)
    ids = {id(leaf): k for k, leaf in enumerate(leaves)}
    options = [[None, *(k for k, leaf in enumerate(leaves) if _eligible(leaf, call))] for call in calls]
    total = _own_required(root)
    best: tuple[Fraction, int] | None = None
    for assignment in itertools.product(*options):
        taken: dict[int, list[int]] = {}
        for j, k in enumerate(assignment):
            if k is not None:
                taken.setdefault(k, []).append(j)
        if not _valid(root, taken, ids):
            continue
        score = Fraction(1) if total == 0 else _fraction_matched(root, taken, ids)
        extra = sum(1 for k in assignment if k is None)
        if best is None or (score, -extra) > (best[0], -best[1]):
            best = (score, extra)
    assert best is not None  # all extra is always valid
    return best


# --- random specs and runs ----------------------------------------------------------------------------------


def _group(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return groups_of(children, ("steps", "unordered", "any_of"), ("none", "none", "optional", "weight"))


TOOL_STEP = st.builds(
    tool_step,
    st.sampled_from(TOOLS),
    st.sampled_from(["none", "optional", "count", "weight", "args"]),
    st.integers(0, 2),
    st.one_of(st.none(), st.integers(0, 2)),
    st.sampled_from([0.5, 2.0, 3.0]),
    st.integers(1, 2),
)
STEPS = st.recursive(TOOL_STEP, _group, max_leaves=5)
CALLS = st.lists(
    st.builds(lambda name, x: ToolCall(name, {"x": x}), st.sampled_from(TOOLS), st.integers(1, 2)), max_size=6
)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(STEPS, min_size=1, max_size=4), calls=CALLS)
def test_the_alignment_is_the_brute_force_optimum(steps: list[dict[str, Any]], calls: list[ToolCall]) -> None:
    spec = {"steps": steps}
    best_score, fewest_extra = brute_force(spec, calls)
    outcome = score_trajectory(parse_spec(spec), calls)
    assert outcome.score == pytest.approx(float(best_score)), outcome.details["steps"]
    assert len(outcome.details["extra"]) == fewest_extra, outcome.details["steps"]


# --- where greedy fails -------------------------------------------------------------------------------------


def _score(spec: dict[str, Any], calls: list[ToolCall]) -> tuple[float, list[int]]:
    outcome = score_trajectory(parse_spec(spec), calls)
    return outcome.score, outcome.details["extra"]


def test_a_loose_step_does_not_take_the_call_a_strict_one_needs() -> None:
    # greedy gives a(x=1) to the unconstrained member first, then finds no a(x=1) for the other
    spec = {"steps": [{"unordered": [{"tool": "a"}, {"tool": "a", "args": {"x": 1}}]}]}
    assert _score(spec, [ToolCall("a", {"x": 1}), ToolCall("a", {"x": 2})]) == (1.0, [])
    ordered = {"steps": [{"tool": "a"}, {"tool": "a", "args": {"x": 1}}]}
    assert _score(ordered, [ToolCall("a", {"x": 2}), ToolCall("a", {"x": 1})]) == (1.0, [])
    score, extra = _score(ordered, [ToolCall("a", {"x": 1}), ToolCall("a", {"x": 2})])
    assert (score, len(extra)) == (0.5, 1)  # in this order only one step can be kept


def test_an_early_match_that_skips_a_step_is_not_taken() -> None:
    # matching y at once (skipping x) leaves x unmatchable: 2 of 3; waiting for the later y gives all three
    spec = {"steps": [{"tool": "x"}, {"tool": "y"}, {"tool": "z"}]}
    assert _score(spec, [ToolCall("y"), ToolCall("x"), ToolCall("y"), ToolCall("z")]) == (1.0, [0])


def test_any_of_takes_the_alternative_that_ends_best_not_the_one_that_starts_first() -> None:
    spec = {
        "steps": [
            {
                "any_of": [
                    {"steps": [{"tool": "a"}, {"tool": "x"}]},
                    {"steps": [{"tool": "a"}, {"tool": "b"}, {"tool": "c"}]},
                ]
            }
        ]
    }
    assert _score(spec, [ToolCall("a"), ToolCall("b"), ToolCall("c")]) == (1.0, [])
    # partial credit: two of the second alternative's three steps, one of the first's two
    assert _score(spec, [ToolCall("a"), ToolCall("b")])[0] == pytest.approx(2 / 3)


def test_repeats_count_with_multiplicity() -> None:
    twice = {"steps": [{"tool": "a"}, {"tool": "a"}]}
    assert _score(twice, [ToolCall("a")]) == (0.5, [])
    score, extra = _score(twice, [ToolCall("a"), ToolCall("a"), ToolCall("a")])
    assert (score, len(extra)) == (1.0, 1)
    penalized = score_trajectory(parse_spec({**twice, "extra": "penalize"}), [ToolCall("a")] * 3)
    assert (penalized.recall, penalized.precision) == (1.0, pytest.approx(2 / 3)) and penalized.score < 1
    counted = {"steps": [{"tool": "a", "count": {"min": 2, "max": 3}}]}
    score, extra = _score(counted, [ToolCall("a")] * 4)
    assert (score, len(extra)) == (1.0, 1)  # one of the four is past max: extra
    assert _score(counted, [ToolCall("a")]) == (0.5, [])  # one of the two required


def test_fewer_extra_calls_break_ties_between_equal_scores() -> None:
    # an optional step can take the second b, so it is not extra
    spec = {"steps": [{"tool": "b"}, {"tool": "b", "optional": True}]}
    assert _score(spec, [ToolCall("b"), ToolCall("b")]) == (1.0, [])


def test_the_brute_force_itself_sees_order() -> None:
    """The reference must not be vacuous: it tells an ordered group from an unordered one."""
    calls = [ToolCall("b"), ToolCall("a")]
    assert brute_force({"steps": [{"tool": "a"}, {"tool": "b"}]}, calls) == (Fraction(1, 2), 1)
    assert brute_force({"steps": [{"unordered": [{"tool": "a"}, {"tool": "b"}]}]}, calls) == (Fraction(1), 0)
