"""Each preset gives the verdict its peer gives, on the peer's own test cases; and today's three modes score
as the tool-correctness metric does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.test_case import EvalTestCase, ToolCall
from agentotel_eval.trajectory import SpecError, parse_spec, score_trajectory

AGENTEVALS = json.loads((Path(__file__).parent / "data" / "agentevals_trajectory_match.json").read_text())


def passes(spec: dict[str, Any], calls: list[ToolCall]) -> bool:
    read = parse_spec(spec)
    outcome = score_trajectory(read, calls, read.threshold if read.threshold is not None else 1.0)
    return outcome.score >= (read.threshold or 1.0) and not outcome.violations


def _agentevals_entry(call: dict[str, Any], ignore_args: bool) -> Any:
    return call["name"] if ignore_args else {"tool": call["name"], "args": call["args"]}


@pytest.mark.parametrize("case", AGENTEVALS["cases"], ids=[c["test"] for c in AGENTEVALS["cases"]])
@pytest.mark.parametrize("mode", ["strict", "unordered", "subset", "superset"])
def test_langchain_presets_agree_with_agentevals(case: dict[str, Any], mode: str) -> None:
    """agentevals' trajectory match modes, on its own tests: each assistant message is one LLM turn."""
    ignore = (case.get("overrides") or {}).get("get_weather") == "ignore"
    expected = [[_agentevals_entry(c, ignore) for c in turn] for turn in case["reference"]]
    calls = [
        ToolCall(c["name"], c["args"], llm_turn=f"turn-{k}")
        for k, turn in enumerate(case["outputs"])
        for c in turn
    ]
    verdict = passes({"preset": f"langchain:{mode}", "expected_tools": expected}, calls)
    assert verdict is (case["expected"][mode] == 1.0)


# Google ADK's TrajectoryEvaluator (google/adk-python
# tests/unittests/evaluation/test_trajectory_evaluator.py): (match type, ignore_args, actual tool uses,
# expected tool uses, per-invocation score). Calls are (name, args).
T = {name: (name, {}) for name in ("t1", "t1_1", "t2", "t2_1", "t3", "t3_1", "t4")}
ADK_CASES = [
    ("EXACT", False, [("test_func", {"arg1": "val1"})], [("test_func", {"arg1": "val1"})], 1.0),
    ("EXACT", False, [("test_func1", {"arg1": "val1"})], [("test_func2", {"arg1": "val1"})], 0.0),
    ("EXACT", False, [("test_func", {"arg1": "val1"})], [("test_func", {"arg1": "val2"})], 0.0),
    ("EXACT", False, [("test_func", {"arg1": "val1"})], [("test_func", {"arg1": "val1"})] * 2, 0.0),
    ("EXACT", False, [], [], 1.0),
    (
        "IN_ORDER",
        False,
        [T["t1"], T["t1_1"], T["t2"], T["t2_1"], T["t3"], T["t3_1"]],
        [T["t1"], T["t2"], T["t3"]],
        1.0,
    ),
    (
        "IN_ORDER",
        False,
        [T["t1"], T["t1_1"], T["t2"], T["t2_1"], T["t3_1"]],
        [T["t1"], T["t2"], T["t4"]],
        0.0,
    ),
    ("IN_ORDER", False, [T["t1"], T["t3"], T["t2"]], [T["t1"], T["t2"], T["t3"]], 0.0),
    (
        "ANY_ORDER",
        False,
        [T["t2"], T["t2_1"], T["t1"], T["t1_1"], T["t3"], T["t3_1"]],
        [T["t1"], T["t2"], T["t3"]],
        1.0,
    ),
    (
        "ANY_ORDER",
        False,
        [T["t1"], T["t1_1"], T["t2"], T["t2_1"], T["t3_1"]],
        [T["t1"], T["t2"], T["t4"]],
        0.0,
    ),
    ("ANY_ORDER", False, [T["t1"], T["t2"], T["t3"], T["t1"]], [T["t1"], T["t2"], T["t1"]], 1.0),
    ("ANY_ORDER", False, [T["t1"], T["t2"], T["t3"]], [T["t1"], T["t2"], T["t1"]], 0.0),
    ("ANY_ORDER", False, [T["t1"], T["t2"]], [T["t2"], T["t1"]], 1.0),
    ("EXACT", True, [("t1", {"a": 1}), ("t2", {"b": 2})], [("t1", {"x": 99}), ("t2", {"y": 100})], 1.0),
    ("EXACT", True, [("t1", {})], [("t2", {})], 0.0),
    (
        "IN_ORDER",
        True,
        [("t1", {"a": 1}), ("extra", {}), ("t2", {"b": 2})],
        [("t1", {"x": 99}), ("t2", {"y": 100})],
        1.0,
    ),
    ("ANY_ORDER", True, [("t2", {"b": 2}), ("t1", {"a": 1})], [("t1", {"x": 99}), ("t2", {"y": 100})], 1.0),
    ("ANY_ORDER", True, [("t1", {})], [("t1", {}), ("t2", {})], 0.0),
    ("EXACT", True, [("t1", {}), ("t2", {})], [("t1", {})], 0.0),
    ("IN_ORDER", True, [("t2", {}), ("t1", {})], [("t1", {}), ("t2", {})], 0.0),
    ("IN_ORDER", True, [("t1", {})], [("t1", {}), ("t2", {})], 0.0),
    ("EXACT", False, [("t1", {"a": 1})], [("t1", {"a": 2})], 0.0),
]


@pytest.mark.parametrize(("match", "ignore_args", "actual", "expected", "score"), ADK_CASES)
def test_adk_presets_agree_with_adk(
    match: str,
    ignore_args: bool,
    actual: list[tuple[str, dict]],
    expected: list[tuple[str, dict]],
    score: float,
) -> None:
    tools = [name if ignore_args else {"tool": name, "args": args} for name, args in expected]
    calls = [ToolCall(name, args) for name, args in actual]
    assert passes({"preset": f"adk:{match}", "expected_tools": tools}, calls) is (score == 1.0)


# today's three modes: the preset's score is the tool-correctness metric's (tool names only)
NAMES = st.lists(st.sampled_from("abcd"), max_size=6)


@settings(max_examples=300, deadline=None)
@given(expected=NAMES, called=NAMES)
def test_tool_correctness_presets_score_as_the_metric(expected: list[str], called: list[str]) -> None:
    case = EvalTestCase(
        input="q", tools_called=[ToolCall(n) for n in called], expected_tools=[ToolCall(n) for n in expected]
    )
    calls = [ToolCall(n) for n in called]
    for preset, metric in (
        ("default", ToolCorrectnessMetric()),
        ("ordering", ToolCorrectnessMetric(check_ordering=True)),
        ("exact", ToolCorrectnessMetric(exact_match=True)),
    ):
        spec = parse_spec({"preset": preset, "expected_tools": expected})
        outcome = score_trajectory(spec, calls)
        result = metric.measure(case)
        if preset == "exact":  # pass/fail as the metric's 1.0/0.0
            assert (outcome.score == 1.0 and not outcome.violations) is (result.score == 1.0), (
                preset,
                result.reason,
            )
        else:
            assert outcome.score == pytest.approx(result.score), (preset, expected, called, result.reason)


def test_a_preset_with_per_call_matchers_and_turns() -> None:
    spec = {
        "preset": "langchain:strict",
        "expected_tools": [
            {"tool": "search", "args": {"q": {"$regex": "(?i)paris.*"}}},
            ["get_weather", "get_hotels"],
        ],
    }
    calls = [
        ToolCall("search", {"q": "Paris hotels"}, llm_turn="1"),
        ToolCall("get_hotels", {}, llm_turn="2"),
        ToolCall("get_weather", {}, llm_turn="2"),
    ]
    assert passes(spec, calls)
    calls[2] = ToolCall("get_weather", {}, llm_turn="3")  # the turn's calls split over two turns
    assert not passes(spec, calls)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"preset": "langchain:fuzzy", "expected_tools": []}, "preset must be one of"),
        ({"preset": "adk:EXACT"}, "needs expected_tools"),
        ({"preset": "adk:EXACT", "expected_tools": ["a"], "steps": []}, "takes expected_tools, not steps"),
        (
            {"preset": "adk:EXACT", "expected_tools": [{"args": {}}]},
            "expected_tools[0]: an expected call needs a tool",
        ),
        ({"preset": "langchain:strict", "expected_tools": [[]]}, "a turn lists at least one call"),
        ({"expected_tools": ["a"]}, "expected_tools goes with a preset"),
    ],
)
def test_a_bad_preset_is_refused(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_spec(spec)
