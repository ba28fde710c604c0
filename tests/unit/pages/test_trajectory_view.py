"""The run page's trajectory section, from details a real scoring wrote: what each step
shows, and the markup."""

from __future__ import annotations

import json
from typing import Any

from agentotel_eval.pages.templating import macro
from agentotel_eval.pages.trajectory_view import trajectory_view
from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import parse_spec, score_trajectory

SPEC = {
    "extra": "ignore",
    "forbid": [{"tool": "delete_account"}],
    "steps": [
        {"id": "who", "tool": "find_user", "args": {"zip": {"$regex": r"\d{5}"}}},
        {"any_of": [{"tool": "get_user_details"}, {"tool": "search_users"}]},
        {"tool": "check_policy", "optional": True},
        {"tool": "issue_refund", "args": {"method": {"$in": ["paypal", "card"]}, "note": "<b>refund</b>"}},
    ],
}


def _row() -> dict[str, Any]:
    calls = [
        ToolCall("find_user", {"zip": "94110"}),
        ToolCall("get_user_details", None),
        ToolCall("issue_refund", {"method": "cash", "note": "<i>x</i>"}),
        ToolCall("delete_account", {}),
    ]
    outcome = score_trajectory(parse_spec(SPEC), calls)
    # as the page reads it back from the evaluations table
    return {
        "metric": "trajectory",
        "status": "ok",
        "score": outcome.score,
        "success": False,
        "details": json.loads(json.dumps(outcome.details)),
        "reason": outcome.details["reason"],
    }


def test_each_step_shows_its_status_calls_checks_and_near_misses() -> None:
    view = trajectory_view(_row())
    assert view is not None and view.error is None
    assert (view.score, view.result, view.weight) == ("0.67", "fail", "2 of 3")
    steps = {s.path: s for s in view.steps}
    who = steps["steps[0]"]
    assert (who.status_text, who.chip, who.calls, who.marks) == (
        "matched",
        "pass",
        ["#1 find_user"],
        ["id who"],
    )
    assert [(c.key, c.verdict) for _, checks in who.checks for c in checks] == [("zip", "holds")]
    assert (
        steps["steps[1]"].status == "matched"
        and steps["steps[1].any_of[1]"].status_text == "alternative not taken"
    )
    assert steps["steps[2]"].status_text == "optional, skipped" and steps["steps[2]"].marks == ["optional"]
    refund = steps["steps[3]"]
    assert refund.status_text == "missing" and refund.calls == []
    (near,) = refund.near_misses
    assert near.call == "#3 issue_refund"
    assert [(c.key, c.verdict, c.reason) for c in near.checks] == [
        ("method", "failed", "'cash' is not one of ['paypal', 'card']"),
        ("note", "failed", "expected '<b>refund</b>', got '<i>x</i>'"),
    ]
    assert view.extra == ["#3 issue_refund", "#4 delete_account"] and view.extra_mode == "not penalised"
    assert [v.kind for v in view.violations] == ["forbidden"]


def test_the_section_escapes_what_runs_recorded() -> None:
    html = str(macro("trajectory.html", "trajectory")(trajectory_view(_row())))
    assert 'data-path="steps[3]" data-status="missing"' in html
    assert "violation: forbidden" in html and 'data-violation="forbidden"' in html
    assert "&lt;b&gt;refund&lt;/b&gt;" in html and "&lt;i&gt;x&lt;/i&gt;" in html
    assert "<b>refund</b>" not in html and "<i>x</i>" not in html


def test_a_spec_that_could_not_be_read_says_why_and_a_run_without_one_shows_nothing() -> None:
    row = {
        "metric": "trajectory",
        "status": "error",
        "reason": "expected_trajectory.steps[0].weight must be >= 0",
    }
    view = trajectory_view(row)
    assert view is not None and view.error == row["reason"] and view.steps == []
    html = str(macro("trajectory.html", "trajectory")(view))
    assert "not scored: expected_trajectory.steps[0].weight must be" in html
    assert trajectory_view(None) is None
    assert str(macro("trajectory.html", "trajectory")(None)).strip() == ""
