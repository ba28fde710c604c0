"""A tool offered on one LLM turn and not on the turn that requested it: an invalid_function, read from the
tool sets each turn's span records (tools change per turn: a frontend withdrawing one after use, a phase's
toolset)."""

from __future__ import annotations

import json

import pytest

from agentotel_eval.calibration.cases import CaseCall, LabelledCase
from agentotel_eval.calibration.spans import case_spans
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.reconstruct.pipeline import reconstruct

TOOLS = tuple(
    {"name": n, "description": n, "parameters": {"type": "object", "properties": {}}}
    for n in ("search", "book", "pay")
)


def _spans(convention: str, second_turn_tools: tuple[str, ...]):
    case = LabelledCase(
        "turns/1",
        "unit",
        "none",
        "Book something.",
        TOOLS,
        (CaseCall("search", {}, {"hits": 1}, turn=0), CaseCall("pay", {}, {"ok": True}, turn=1)),
        "Paid.",
        frozenset(),
    )
    spans = case_spans(case, convention)
    llm = [
        s
        for s in spans
        if s.attributes.get("gen_ai.operation.name") == "chat"
        or s.attributes.get("openinference.span.kind") == "LLM"
    ]
    second = llm[1].attributes
    kept = [t for t in TOOLS if t["name"] in second_turn_tools]
    if convention == "genai":
        second["gen_ai.tool.definitions"] = json.dumps([{"type": "function", **t} for t in kept])
    else:
        for key in [k for k in second if k.startswith("llm.tools.")]:
            del second[key]
        for i, tool in enumerate(kept):
            second[f"llm.tools.{i}.tool.json_schema"] = json.dumps({"type": "function", "function": tool})
    return spans


@pytest.mark.parametrize("convention", ["genai", "openinference"])
def test_a_call_the_requesting_turn_did_not_offer(convention: str) -> None:
    (run,) = reconstruct(_spans(convention, ("search", "book")))  # "pay" withdrawn on the turn that calls it
    log = ToolsErrorMetric(judge=False).measure(run.to_test_case()).evaluation_log
    assert [(f["type"], f["subtype"], f["call_indices"]) for f in log["detectors"]] == [
        ("invalid_function", "not_offered_on_turn", [1])
    ]
    assert log["detectors"][0]["evidence"]["offered"] == ["book", "search"]
    # the same run whose second turn offers "pay": nothing; and one tool set for every turn records no turns
    (fine,) = reconstruct(_spans(convention, ("pay", "search")))
    assert ToolsErrorMetric(judge=False).measure(fine.to_test_case()).evaluation_log["detectors"] == []
    (same,) = reconstruct(_spans(convention, ("search", "book", "pay")))
    assert "offered_by_turn" not in (same.diagnostics or {})
