"""The alignment against an independent brute force on small random specs with every construct (ordered,
unordered and parallel groups, any_of, counts on steps and on groups, optional steps, weights, exact
arguments, ``$ref`` to step ids, LLM turns), and within its work budget on random specs of up to 30 steps
against runs of up to 200 calls: never a stall, and an approximate result says so."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import parse_spec, score_trajectory
from agentotel_eval.trajectory.align import BEAM, align, work_limit
from tests.unit.trajectory.strategies import GROUPS, groups_of, tool_step

TOOLS = "abc"

# --- the brute force: every assignment of calls to tool steps, judged from the written spec -----------------


def _kind(step: dict[str, Any]) -> str:
    return next(k for k in ("tool", *GROUPS) if k in step)


def _least(step: dict[str, Any]) -> int:
    return 0 if step.get("optional") else step.get("count", {}).get("min", 1)


def _most(step: dict[str, Any]) -> int | None:
    return step["count"].get("max") if "count" in step else 1


def _leaves(step: dict[str, Any]) -> list[dict[str, Any]]:
    kind = _kind(step)
    return [step] if kind == "tool" else [leaf for m in step[kind] for leaf in _leaves(m)]


def _own_required(step: dict[str, Any]) -> Fraction:
    kind = _kind(step)
    if kind == "tool":
        return Fraction(1)
    members = [_required(m) for m in step[kind]]
    if kind == "any_of":
        return Fraction(0) if any(r == 0 for r in members) else max(members)
    return sum(members, Fraction(0))


def _required(step: dict[str, Any]) -> Fraction:
    own = _own_required(step)
    weight = Fraction(str(step["weight"])) if "weight" in step else own
    return weight if _least(step) > 0 and own > 0 and weight > 0 else Fraction(0)


class Judge:
    """Judges one assignment (call -> leaf index): valid or not, its matched fraction and parallel splits."""

    def __init__(self, root: dict[str, Any], calls: list[ToolCall]) -> None:
        self.root, self.calls = root, calls
        self.leaves = _leaves(root)
        self.index = {id(leaf): k for k, leaf in enumerate(self.leaves)}

    def judge(self, step: dict[str, Any], pairs: list[tuple[int, int]]) -> tuple[Fraction, int] | None:
        """(fraction of the step matched, splits) for the (call, leaf) pairs under it, in call order, at best
        over how they divide into rounds; None when no division is valid."""
        most = _most(step)
        if _kind(step) == "tool":
            if most is not None and len(pairs) > most:
                return None
            least = _least(step)
            return (Fraction(min(len(pairs), least), least) if least else Fraction(0)), 0
        if (step.get("count", {}).get("min", 1), most) == (1, 1) or not pairs:
            return self.once(step, pairs)
        best: tuple[Fraction, int] | None = None
        for cuts in range(len(pairs)):  # rounds: consecutive runs of the calls, each a valid round
            for where in itertools.combinations(range(1, len(pairs)), cuts):
                if most is not None and cuts + 1 > most:
                    continue
                bounds = (0, *where, len(pairs))
                rounds = [self.once(step, pairs[a:b]) for a, b in itertools.pairwise(bounds)]
                if any(r is None for r in rounds):
                    continue
                least = _least(step)
                value = (
                    sum((r[0] for r in rounds[:least] if r), Fraction(0)) / least if least else Fraction(0)
                )
                candidate = (value, sum(r[1] for r in rounds if r))
                if best is None or (candidate[0], -candidate[1]) > (best[0], -best[1]):
                    best = candidate
        return best

    def once(self, step: dict[str, Any], pairs: list[tuple[int, int]]) -> tuple[Fraction, int] | None:
        kind = _kind(step)
        members = step[kind]
        under = [[p for p in pairs if p[1] in self.leaf_set(m)] for m in members]
        judged = [self.judge(m, u) for m, u in zip(members, under, strict=True)]
        if any(j is None for j in judged):
            return None
        splits = sum(j[1] for j in judged if j)
        if kind == "any_of" and sum(1 for u in under if u) > 1:
            return None
        if kind == "steps":
            used = [u for u in under if u]
            if any(a[-1][0] > b[0][0] for a, b in itertools.pairwise(used)):
                return None
        if kind == "parallel" and len({self.calls[c].llm_turn for c, _ in pairs} - {None}) > 1:
            splits += 1
        if kind == "any_of":
            chosen = [m for m, u, j in zip(members, under, judged, strict=True) if u]
            if not chosen or not _required(chosen[0]):
                return Fraction(0), splits
            k = members.index(chosen[0])
            return judged[k][0] if judged[k] else Fraction(0), splits  # type: ignore[index]
        own = _own_required(step)
        if not own:
            return Fraction(0), splits
        return sum(
            (_required(m) * j[0] for m, j in zip(members, judged, strict=True) if j and _required(m)),
            Fraction(0),
        ) / own, splits

    def leaf_set(self, step: dict[str, Any]) -> set[int]:
        return {self.index[id(leaf)] for leaf in _leaves(step)}


def _holds(leaf: dict[str, Any], j: int, calls: list[ToolCall], bound: dict[str, int]) -> bool:
    call = calls[j]
    for key, want in (leaf.get("args") or {}).items():
        got = (call.input_parameters or {}).get(key)
        if isinstance(want, dict):  # {"$ref": "ID.args.x"}: the latest earlier call of the step with that id
            source = bound.get(want["$ref"].split(".")[0])
            if source is None or (calls[source].input_parameters or {}).get("x") != got:
                return False
        elif got != want:
            return False
    return True


def brute_force(spec: dict[str, Any], calls: list[ToolCall]) -> tuple[Fraction, int, int]:
    """(best score, fewest splits at that score, fewest extra calls at those)."""
    root = {"steps": spec["steps"]}
    judge = Judge(root, calls)
    leaves = judge.leaves
    holders = {}  # step id -> the leaves under it
    for step in _walk(root):
        if "id" in step:
            holders[step["id"]] = judge.leaf_set(step)
    options = [[None, *(k for k, leaf in enumerate(leaves) if leaf["tool"] == call.name)] for call in calls]
    total = _own_required(root)
    best: tuple[Fraction, int, int] | None = None
    for assignment in itertools.product(*options):
        bound: dict[str, int] = {}
        ok = True
        for j, k in enumerate(assignment):
            if k is None:
                continue
            if not _holds(leaves[k], j, calls, bound):
                ok = False
                break
            for name, under in holders.items():
                if k in under:
                    bound[name] = j
        if not ok:
            continue
        pairs = [(j, k) for j, k in enumerate(assignment) if k is not None]
        judged = judge.once(root, pairs)
        if judged is None:
            continue
        score = Fraction(1) if total == 0 else judged[0]
        candidate = (score, judged[1], sum(1 for k in assignment if k is None))
        if best is None or (candidate[0], -candidate[1], -candidate[2]) > (best[0], -best[1], -best[2]):
            best = candidate
    assert best is not None  # every call extra is always valid
    return best


def _walk(step: dict[str, Any]) -> list[dict[str, Any]]:
    kind = _kind(step)
    return [step] if kind == "tool" else [step, *(s for m in step[kind] for s in _walk(m))]


# --- random specs -------------------------------------------------------------------------------------------


TOOL = st.builds(
    tool_step,
    st.sampled_from(TOOLS),
    st.sampled_from(["none", "optional", "count", "weight", "args"]),
    st.integers(0, 2),
    st.one_of(st.none(), st.integers(0, 2)),
    st.sampled_from([0.5, 2.0, 3.0]),
    st.integers(1, 2),
)


@st.composite
def specs_with_refs(draw: st.DrawFn, max_leaves: int = 5) -> dict[str, Any]:
    steps = draw(st.lists(st.recursive(TOOL, groups_of, max_leaves=max_leaves), min_size=1, max_size=4))
    spec = {"steps": steps}
    leaves = _leaves({"steps": steps})
    if len(leaves) >= 2 and draw(st.booleans()):  # data flow: a later step's x is an earlier step's x
        source, reader = draw(st.sampled_from(list(itertools.permutations(range(len(leaves)), 2))))
        leaves[source]["id"] = "src"
        leaves[reader].pop("count", None)
        leaves[reader]["args"] = {"x": {"$ref": "src.args.x"}}
    return spec


CALLS = st.lists(
    st.builds(
        lambda name, x, turn: ToolCall(name, {"x": x}, llm_turn=turn),
        st.sampled_from(TOOLS),
        st.integers(1, 2),
        st.sampled_from([None, "t1", "t2"]),
    ),
    max_size=6,
)


@settings(max_examples=250, deadline=None)
@given(spec=specs_with_refs(), calls=CALLS)
def test_the_alignment_is_the_brute_force_optimum(spec: dict[str, Any], calls: list[ToolCall]) -> None:
    best_score, fewest_splits, fewest_extra = brute_force(spec, calls)
    outcome = score_trajectory(parse_spec(spec), calls)
    assert outcome.alignment.approximate is None
    got = (outcome.score, len(outcome.alignment.splits), len(outcome.details["extra"]))
    assert got == (pytest.approx(float(best_score)), fewest_splits, fewest_extra), outcome.details["steps"]


def test_the_brute_force_sees_rounds_turns_and_refs() -> None:
    """The reference must not be vacuous."""
    twice = {"steps": [{"steps": [{"tool": "a"}, {"tool": "b"}], "count": {"min": 2, "max": 2}}]}
    ab = [ToolCall("a", {"x": 1}), ToolCall("b", {"x": 1})]
    assert brute_force(twice, ab * 2)[0] == 1 and brute_force(twice, ab)[0] == Fraction(1, 2)
    together = {"steps": [{"parallel": [{"tool": "a"}, {"tool": "b"}]}]}
    assert brute_force(together, [ToolCall("a", {}, llm_turn="1"), ToolCall("b", {}, llm_turn="2")])[1] == 1
    flow = {"steps": [{"id": "src", "tool": "a"}, {"tool": "b", "args": {"x": {"$ref": "src.args.x"}}}]}
    assert brute_force(flow, [ToolCall("a", {"x": 1}), ToolCall("b", {"x": 2})])[0] == Fraction(1, 2)


# --- bounded work -------------------------------------------------------------------------------------------

BIG_TOOL = st.builds(
    tool_step,
    st.sampled_from("abcd"),
    st.sampled_from(["none", "optional", "count", "args"]),
    st.integers(0, 3),
    st.one_of(st.none(), st.integers(0, 40)),
    st.just(1.0),
    st.integers(1, 3),
)


@st.composite
def big_specs(draw: st.DrawFn) -> dict[str, Any]:
    steps = draw(st.lists(st.recursive(BIG_TOOL, groups_of, max_leaves=30), min_size=1, max_size=30))
    spec = {"steps": steps}
    leaves = _leaves(spec)
    while len(leaves) > 30:  # at most 30 tool steps in all
        steps.pop()
        leaves = _leaves(spec)
    if len(leaves) >= 2 and draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):
            source, reader = draw(st.sampled_from(list(itertools.permutations(range(len(leaves)), 2))))
            leaves[source]["id"] = f"s{source}"
            leaves[reader]["args"] = {"x": {"$ref": f"s{source}.args.x"}}
    return spec if steps else {"steps": ["a"]}


@st.composite
def big_runs(draw: st.DrawFn) -> list[ToolCall]:
    """Up to 200 calls (drawn from a seeded generator: hypothesis's own lists stay short)."""
    size, rnd = draw(st.integers(0, 200)), draw(st.randoms(use_true_random=False))
    turns = rnd.randint(1, 60)
    return [
        ToolCall(rnd.choice("abcd"), {"x": rnd.randint(1, 3)}, llm_turn=f"t{rnd.randrange(turns)}")
        for _ in range(size)
    ]


@settings(max_examples=60, deadline=None)
@given(spec=big_specs(), calls=big_runs())
def test_any_spec_and_run_finish_within_the_work_budget(spec: dict[str, Any], calls: list[ToolCall]) -> None:
    read = parse_spec(spec)
    alignment = align(read, calls)
    limit = work_limit(len(calls))
    # the exact scan stops at its limit; the beam that follows at as much again, plus the last state it
    # expanded and the assignments that settle at most BEAM open groups at the end
    assert alignment.work <= 2 * limit + BEAM * (len(calls) + 30) ** 2, alignment.work
    if alignment.work > limit:
        assert alignment.approximate and "work" in alignment.approximate
    assert len(alignment.taken_by) == len(calls)


def test_an_alignment_past_its_budget_says_it_is_approximate_and_why() -> None:
    spec = parse_spec({"steps": [{"unordered": [{"steps": [{"tool": t} for t in "abc"]} for _ in range(3)]}]})
    calls = [ToolCall(t) for t in "abc" * 3]
    exact = score_trajectory(spec, calls)
    assert (exact.score, exact.alignment.approximate, exact.details.get("approximate")) == (1.0, None, None)
    small = score_trajectory(spec, calls, budget=0)
    assert small.details["approximate"] is True and small.alignment.approximate is not None
    assert (
        "units of work" in small.details["approximate_reason"] and "Approximate:" in small.details["reason"]
    )
    assert 0 < small.score <= exact.score
