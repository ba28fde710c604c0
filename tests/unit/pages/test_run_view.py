"""The run page's verdict beside the agent's name, and the pass condition of each evaluation row: a run whose
tool failed while its answer claimed success has an ``ok`` span, and must not look green."""

from __future__ import annotations

from agentotel_eval.access.queries import RunDetail
from agentotel_eval.pages.markup import Links
from agentotel_eval.pages.run_view import run_view

RUN = {
    "trace_id": "0af7651916cd43dd8448eb211c80319c",
    "span_id": "b7ad6b7169203331",
    "agent_name": "booker",
    "status": "ok",
    "tools_called": ["book_hotel"],
    "input": "Book Casa Lisbon",
    "output": "Booked!",
}
FAILED_CALL = {"seq": 0, "tool_name": "book_hotel", "status": "error", "error": "HTTP 500", "arguments": "{}"}
CLAIMED = {
    "trace_id": RUN["trace_id"],
    "run_span_id": RUN["span_id"],
    "metric": "tool_errors_detectors",
    "score": 1.0,
    "threshold": 0.7,
    "success": False,
    "status": "ok",
    "reason": "book_hotel failed and the answer says it was done",
    "details": {
        "detectors": [
            {
                "type": "error_handling",
                "subtype": "claimed_success",
                "rule": "claims",
                "description": "the answer claims a booking",
                "confidence": 1.0,
                "uncertain": False,
            }
        ]
    },
}


def _view(run=RUN, calls=(), evaluations=()):
    detail = RunDetail(
        dict(run), [dict(c) for c in calls], [dict(e) for e in evaluations], [], False, {}, None, ""
    )
    return run_view(detail, Links(lambda q: "/?" + q, lambda q: "/runs?" + q, None))


def test_a_claimed_success_after_a_failed_tool_is_not_a_green_ok() -> None:
    badge = _view(calls=[FAILED_CALL], evaluations=[CLAIMED]).badge
    assert (badge.text, badge.kind) == ("tool-use error: error_handling", "fail")
    assert "the span status is ok" in badge.title and CLAIMED["reason"] in badge.title


def test_the_badge_otherwise_says_what_it_checked() -> None:
    assert _view(run={**RUN, "status": "error"}).badge[:2] == ("error", "fail")
    assert _view(calls=[FAILED_CALL]).badge[:2] == ("1 failed tool call", "fail")
    passed = {**CLAIMED, "score": 0.0, "success": True, "details": {"detectors": []}}
    ok = _view(evaluations=[passed]).badge
    assert (ok.text, ok.kind) == ("ok", "pass") and "detectors found no tool-use error" in ok.title


def test_a_run_failing_any_evaluation_is_not_a_green_ok() -> None:
    """No failed call and no detector finding, but a missing tool and the judge's verdict: the badge fails."""
    clean = {**CLAIMED, "score": 0.0, "success": True, "details": {"detectors": []}}
    missing = {
        **CLAIMED,
        "metric": "tool_correctness",
        "score": 0.5,
        "threshold": 0.7,
        "success": False,
        "reason": "check_policy was not called",
        "details": {},
    }
    judged = {
        **CLAIMED,
        "metric": "tool_errors",
        "score": 0.9,
        "success": False,
        "reason": "wrong order id",
        "details": {},
    }
    badge = _view(evaluations=[clean, missing, judged]).badge
    assert badge.kind == "fail" and badge.text == "fails Tool correctness, Tool-use errors (judge)"
    assert "check_policy was not called" in badge.title and "wrong order id" in badge.title
    ok = _view(evaluations=[clean, {**missing, "score": 1.0, "success": True}]).badge
    assert (ok.text, ok.kind) == ("ok", "pass") and ok.title.endswith("it passes Tool correctness")


def test_the_detectors_row_passes_on_no_error_not_on_a_threshold() -> None:
    judged = {**CLAIMED, "metric": "tool_errors", "score": 0.2, "success": True, "details": {}}
    correctness = {
        **CLAIMED,
        "metric": "tool_correctness",
        "score": 1.0,
        "threshold": 0.5,
        "success": True,
        "details": {},
    }
    rows = {e.metric: e.threshold for e in _view(evaluations=[CLAIMED, judged, correctness]).evaluations}
    assert rows == {
        "tool_errors_detectors": "no error found",
        "tool_errors": "< 0.70",
        "tool_correctness": "≥ 0.50",
    }
