"""The text form of a scored trajectory: what a failing test and ``explain`` print."""

from __future__ import annotations

import json

from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import parse_spec, score_trajectory
from agentotel_eval.trajectory.text import trajectory_lines

SPEC = {
    "extra": "penalize",
    "forbid": [{"tool": "delete_account"}],
    "steps": [
        {"id": "who", "tool": "find_user", "args": {"zip": {"$regex": r"\d{5}"}}},
        {"parallel": [{"tool": "get_order"}, {"tool": "get_product", "optional": True}]},
        {
            "tool": "issue_refund",
            "args": {"order_id": {"$ref": "get_order.args.order_id"}, "method": {"$in": ["paypal", "card"]}},
        },
    ],
}


def _lines(calls: list[ToolCall]) -> list[str]:
    details = score_trajectory(parse_spec(SPEC), calls).details
    return trajectory_lines(json.loads(json.dumps(details)))  # as read back from a stored row


def test_every_step_is_lined_up_with_its_call_and_its_checks() -> None:
    lines = _lines(
        [
            ToolCall("find_user", {"zip": "94110"}, output={"user_id": "u1"}),
            ToolCall("get_order", {"order_id": "o9"}),
            ToolCall("issue_refund", {"order_id": "o9", "method": "cash"}),
            ToolCall("delete_account", {}),
        ]
    )
    text = "\n".join(lines)
    assert (
        lines[0]
        == "trajectory 0.57 (2 of 3 required weight; recall 0.67, precision 0.50; extra calls penalised)"
    )
    assert "ok        steps[0] find_user [who]" in text and "#1 find_user   zip: ok ($regex" in text
    assert "skipped     steps[1].parallel[1] get_product (optional)" in text
    missing = next(line for line in lines if "steps[2] issue_refund" in line)
    assert missing.lstrip().startswith("missing") and "nearest #3 issue_refund" in missing
    assert "method: FAILED: 'cash' is not one of ['paypal', 'card']" in missing
    assert "  extra     #3 issue_refund, #4 delete_account (penalised)" in lines
    assert any(line.startswith("  violation forbidden: ") and "delete_account" in line for line in lines)


def test_an_argument_not_recorded_says_so_and_does_not_fail() -> None:
    lines = _lines(
        [
            ToolCall("find_user", None),  # arguments not captured
            ToolCall("get_order", {"order_id": "o9"}),
            ToolCall("issue_refund", {"order_id": "o9", "method": "card"}),
        ]
    )
    assert lines[0].startswith("trajectory 1.00 (3 of 3 required weight")
    (who,) = [line for line in lines if "steps[0] find_user" in line]
    assert "zip: not recorded" in who and who.lstrip().startswith("ok")
