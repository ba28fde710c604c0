"""Peers' expectation files read into specs that score the peers' own runs as the peers would.

The data files are the peers' own: ``adk_dependent_tool_calls.test.json`` is google/adk-python
tests/integration/fixture/home_automation_agent/test_files/dependent_tool_calls.test.json; ``bfcl_*.jsonl``
are the first lines of BFCL v4's possible_answer and data files for simple_python and parallel_multiple (the
``bfcl-eval`` package, bfcl_eval/data); ``agentevals_*.json`` are the messages of langchain-ai/agentevals
python/tests/ test_trajectory.py::test_trajectory_with_different_message_count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import parse_spec, score_trajectory
from agentotel_eval.trajectory.importers import (
    ImportFailure,
    bfcl_questions,
    from_adk,
    from_bfcl,
    from_langchain,
)

DATA = Path(__file__).parent / "data"


def _lines(name: str) -> list[Any]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def passes(entry: dict[str, Any], calls: list[ToolCall]) -> bool:
    spec = parse_spec(entry["expected_trajectory"])
    threshold = spec.threshold if spec.threshold is not None else 1.0
    outcome = score_trajectory(spec, calls, threshold)
    return outcome.score >= threshold and not outcome.violations


def test_an_adk_eval_set_gives_one_entry_per_invocation() -> None:
    entries = from_adk(json.loads((DATA / "adk_dependent_tool_calls.test.json").read_text()))
    assert [e["input"] for e in entries] == [
        "Turn off device_2 in the Bedroom.",
        "What's the status of device_2 in the Bedroom?",
    ]
    assert entries[0]["name"].endswith("dependent_tool_calls.test.json#1")
    turn_off = entries[0]
    exact = ToolCall("set_device_info", {"location": "Bedroom", "status": "OFF", "device_id": "device_2"})
    assert passes(turn_off, [exact])
    assert not passes(
        turn_off,
        [ToolCall("set_device_info", {"location": "Bedroom", "status": "ON", "device_id": "device_2"})],
    )
    assert not passes(turn_off, [exact, ToolCall("get_device_info", {"device_id": "device_2"})])  # EXACT
    in_order = from_adk(json.loads((DATA / "adk_dependent_tool_calls.test.json").read_text()), "IN_ORDER")[0]
    assert passes(in_order, [ToolCall("get_device_info", {"device_id": "device_2"}), exact])


def test_adks_older_list_format() -> None:
    (entry,) = from_adk(
        [
            {
                "query": "roll a die",
                "expected_tool_use": [{"tool_name": "roll_die", "tool_input": {"sides": 6}}],
            }
        ]
    )
    assert entry["input"] == "roll a die"
    assert passes(entry, [ToolCall("roll_die", {"sides": 6})])
    assert not passes(entry, [ToolCall("roll_die", {"sides": 20})])


def test_bfcl_answers_take_any_allowed_value_and_nothing_else() -> None:
    entries = from_bfcl(_lines("bfcl_possible_answer.jsonl"), bfcl_questions(_lines("bfcl_questions.jsonl")))
    by_id = {e["name"]: e for e in entries}
    triangle = by_id["simple_python_0"]  # base [10], height [5], unit ["units", ""]
    assert triangle["input"].startswith("Find the area of a triangle with a base of 10 units")
    assert passes(triangle, [ToolCall("calculate_triangle_area", {"base": 10, "height": 5})])  # unit optional
    assert passes(triangle, [ToolCall("calculate_triangle_area", {"base": 10, "height": 5, "unit": "Units"})])
    assert not passes(triangle, [ToolCall("calculate_triangle_area", {"base": 10, "height": 6})])
    assert not passes(
        triangle, [ToolCall("calculate_triangle_area", {"base": 10, "height": 5, "colour": "red"})]
    )
    assert not passes(
        triangle,
        [
            ToolCall("calculate_triangle_area", {"base": 10, "height": 5}),
            ToolCall("calculate_triangle_area", {"base": 10, "height": 5}),
        ],
    )  # extra
    # parallel_multiple_1: two functions in either order
    areas = by_id["parallel_multiple_1"]
    circle, rectangle = (
        ToolCall("area_circle.calculate", {"radius": 5.0}),
        ToolCall("area_rectangle.calculate", {"length": 7, "breadth": 3.0}),
    )
    assert passes(areas, [circle, rectangle]) and passes(areas, [rectangle, circle])
    assert not passes(areas, [circle])


def test_agentevals_reference_messages_per_mode() -> None:
    reference = json.loads((DATA / "agentevals_reference_outputs.json").read_text())
    outputs = json.loads((DATA / "agentevals_outputs.json").read_text())
    calls = [
        ToolCall(c["function"]["name"], json.loads(c["function"]["arguments"]), llm_turn=str(k))
        for k, m in enumerate(outputs)
        if m.get("tool_calls")
        for c in m["tool_calls"]
    ]
    # the test's verdicts: unordered, superset and subset pass; strict does not (two turns against one)
    verdicts = {
        mode: passes(from_langchain(reference, mode)[0], calls)
        for mode in ("strict", "unordered", "subset", "superset")
    }
    assert verdicts == {"strict": False, "unordered": True, "subset": True, "superset": True}
    (entry,) = from_langchain({"messages": reference}, "strict")
    assert entry["input"] == "What is the weather in SF and London?"


@pytest.mark.parametrize(
    ("reader", "data", "message"),
    [
        (lambda d: from_adk(d), {"cases": []}, "not an ADK eval set"),
        (lambda d: from_adk(d, "FUZZY"), {"eval_cases": []}, "--mode for ADK"),
        (lambda d: from_adk(d), [{"question": "x"}], "query"),
        (lambda d: from_bfcl(d), [{"id": "x", "ground_truth": "f(1)"}], "possible_answer line"),
        (
            lambda d: from_bfcl(d),
            [{"id": "x", "ground_truth": [{"f": {"a": 1}}]}],
            "f.a: BFCL lists the allowed",
        ),
        (lambda d: from_langchain(d), [{"text": "hi"}], "expected a list of chat messages"),
        (lambda d: from_langchain(d, "exact"), [], "--mode for LangChain"),
        (
            lambda d: from_langchain(d),
            [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}],
            "not JSON",
        ),
    ],
)
def test_a_file_in_another_shape_is_refused_saying_what_was_expected(
    reader: Any, data: Any, message: str
) -> None:
    with pytest.raises(ImportFailure, match=message):
        reader(data)
