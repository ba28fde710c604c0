"""The peers' presets give the peers' verdicts on random cases: agentevals' four match modes and ADK's three,
each peer's comparison transcribed from its source (agentevals 0.0.9 ``trajectory/strict.py`` and
``utils._is_trajectory_superset``; ADK ``TrajectoryEvaluator``) with exact argument matching, where their
greedy pairing is also the optimum. Each assistant message is one LLM turn."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import parse_spec, score_trajectory

Call = tuple[str, dict[str, Any]]
Turns = list[list[Call]]


# --- the peers, transcribed ---------------------------------------------------------------------------------


def agentevals_strict(outputs: Turns, reference: Turns) -> bool:
    """Message by message: as many messages, and each message's calls paired by name and arguments."""
    if len(outputs) != len(reference):
        return False
    for output, expected in zip(outputs, reference, strict=True):
        if len(output) != len(expected):
            return False
        seen = [False] * len(expected)
        for name, args in output:
            for i, (ref_name, ref_args) in enumerate(expected):
                if not seen[i] and name == ref_name and args == ref_args:
                    seen[i] = True
                    break
            else:
                return False
    return True


def agentevals_superset(outputs: Turns, reference: Turns) -> bool:
    """``_is_trajectory_superset``: each reference call takes the first unused output call that matches."""
    output_calls = [c for turn in outputs for c in turn]
    used: set[int] = set()
    for ref_name, ref_args in (c for turn in reference for c in turn):
        for i, (name, args) in enumerate(output_calls):
            if i not in used and name == ref_name and args == ref_args:
                used.add(i)
                break
        else:
            return False
    return True


AGENTEVALS = {
    "strict": agentevals_strict,
    "superset": agentevals_superset,
    "subset": lambda outputs, reference: agentevals_superset(reference, outputs),
    "unordered": lambda outputs, reference: (
        agentevals_superset(outputs, reference) and agentevals_superset(reference, outputs)
    ),
}


def adk(match: str, actual: list[Call], expected: list[Call]) -> bool:
    if match == "EXACT":
        return actual == expected
    if match == "IN_ORDER":  # the expected calls as a subsequence of the actual ones
        rest = iter(actual)
        return all(any(call == e for call in rest) for e in expected)
    remaining = list(actual)  # ANY_ORDER: each expected call takes one actual call
    for e in expected:
        if e not in remaining:
            return False
        remaining.remove(e)
    return True


# --- ours ---------------------------------------------------------------------------------------------------


def passes(spec: dict[str, Any], calls: list[ToolCall]) -> bool:
    read = parse_spec(spec)
    threshold = read.threshold if read.threshold is not None else 1.0
    outcome = score_trajectory(read, calls, threshold)
    return outcome.score >= threshold and not outcome.violations


def as_calls(turns: Turns) -> list[ToolCall]:
    return [ToolCall(name, args, llm_turn=f"turn-{k}") for k, turn in enumerate(turns) for name, args in turn]


def as_expected(turns: Turns) -> list[Any]:
    return [[{"tool": name, "args": args} for name, args in turn] for turn in turns]


CALL = st.tuples(st.sampled_from(["search", "book", "pay"]), st.sampled_from([{}, {"x": 1}, {"x": 2}]))
TURNS = st.lists(st.lists(CALL, min_size=1, max_size=3), max_size=4)


@settings(max_examples=400, deadline=None)
@given(outputs=TURNS, reference=TURNS)
def test_langchain_presets_give_agentevals_verdicts(outputs: Turns, reference: Turns) -> None:
    calls, expected = as_calls(outputs), as_expected(reference)
    for mode, peer in AGENTEVALS.items():
        ours = passes({"preset": f"langchain:{mode}", "expected_tools": expected}, calls)
        assert ours is peer(outputs, reference), (mode, outputs, reference)


@settings(max_examples=400, deadline=None)
@given(actual=st.lists(CALL, max_size=6), expected=st.lists(CALL, max_size=5))
def test_adk_presets_give_adk_verdicts(actual: list[Call], expected: list[Call]) -> None:
    calls = [ToolCall(name, args) for name, args in actual]
    tools = [{"tool": name, "args": args} for name, args in expected]
    for match in ("EXACT", "IN_ORDER", "ANY_ORDER"):
        assert passes({"preset": f"adk:{match}", "expected_tools": tools}, calls) is adk(
            match, actual, expected
        )


def test_two_expected_turns_answered_in_one_turn_fail_strict() -> None:
    reference: Turns = [[("search", {})], [("book", {})]]
    merged = [ToolCall("search", {}, llm_turn="t1"), ToolCall("book", {}, llm_turn="t1")]
    spec = {"preset": "langchain:strict", "expected_tools": as_expected(reference)}
    assert not passes(spec, merged) and not agentevals_strict([[("search", {}), ("book", {})]], reference)
    outcome = score_trajectory(parse_spec(spec), merged)
    assert [v["type"] for v in outcome.violations] == ["turns_merged"]
    assert outcome.violations[0]["steps"] == ["steps[0]", "steps[1]"]
    assert passes(spec, as_calls(reference))


def test_adk_reads_a_turn_list_in_the_order_written() -> None:
    spec = {"preset": "adk:EXACT", "expected_tools": ["a", ["b", "c"]]}
    assert passes(spec, [ToolCall("a"), ToolCall("b"), ToolCall("c")])
    assert not passes(spec, [ToolCall("a"), ToolCall("c"), ToolCall("b")])  # ADK has no turns: order counts
    assert passes(
        spec, [ToolCall("a", llm_turn="1"), ToolCall("b", llm_turn="2"), ToolCall("c", llm_turn="3")]
    )


# --- the peers' quirks not copied (docs/metrics.md lists them) ----------------------------------------------


def test_true_is_not_one() -> None:
    spec = {"preset": "langchain:superset", "expected_tools": [{"tool": "set", "args": {"flag": True}}]}
    assert not passes(spec, [ToolCall("set", {"flag": 1})])
    assert passes(spec, [ToolCall("set", {"flag": True})])


def test_a_matcher_is_the_expected_steps_in_every_mode() -> None:
    # agentevals' unordered mode swaps the roles in its second pass, so a partial match passes superset only
    entry = {"tool": "search", "args": {"q": "a"}, "strict_args": False}
    call = [ToolCall("search", {"q": "a", "page": 2})]
    for mode in ("superset", "unordered", "strict"):
        assert passes({"preset": f"langchain:{mode}", "expected_tools": [entry]}, call), mode


def test_the_pairing_is_the_optimum_not_greedy() -> None:
    expected = [{"tool": "search", "args": {"q": {"$any": True}}}, {"tool": "search", "args": {"q": "x"}}]
    calls = [ToolCall("search", {"q": "x"}), ToolCall("search", {"q": "y"})]
    for preset in ("langchain:superset", "langchain:unordered", "adk:ANY_ORDER"):
        assert passes({"preset": preset, "expected_tools": expected}, calls), preset
