"""A labelled case written as spans of either convention rebuilds, through reconstruction, to the same run."""

import pytest

from agentotel_eval.calibration.cases import CaseCall, LabelledCase
from agentotel_eval.calibration.runner import score_case, summarise
from agentotel_eval.calibration.spans import CONVENTIONS, case_spans
from agentotel_eval.reconstruct.pipeline import reconstruct

TOOLS = (
    {
        "name": "get_user",
        "description": "Look a user up.",
        "parameters": {
            "type": "object",
            "properties": {"user_id": {"type": "string"}},
            "required": ["user_id"],
        },
    },
    {
        "name": "cancel_reservation",
        "description": "Cancel a reservation.",
        "parameters": {
            "type": "object",
            "properties": {"reservation_id": {"type": "string"}},
            "required": ["reservation_id"],
        },
    },
)


def _case(**changes) -> LabelledCase:
    base = dict(
        id="t/1",
        suite="unit",
        operator="none",
        user_input="Cancel my trip; I am user u_1234.",
        tools=TOOLS,
        calls=(
            CaseCall("get_user", {"user_id": "u_1234"}, {"reservations": ["AB12CD"]}, turn=0),
            CaseCall(
                "cancel_reservation",
                {"reservation_id": "AB12CD"},
                {"status": "cancelled", "refund": 468},
                turn=1,
            ),
        ),
        answer="Reservation AB12CD is cancelled; the refund of $468 is on its way.",
        labels=frozenset(),
    )
    return LabelledCase(**{**base, **changes})


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_each_convention_rebuilds_the_calls_their_results_and_the_answer(convention: str) -> None:
    calls = (
        *_case().calls,
        CaseCall(
            "cancel_reservation", {"reservation_id": "AB12CD"}, error="Error: already cancelled", turn=2
        ),
        CaseCall("get_user", {"user_id": "u_1234"}, turn=3, executed=False),
    )
    (run,) = reconstruct(case_spans(_case(calls=calls), convention))
    case = run.to_test_case()
    assert case.input == "Cancel my trip; I am user u_1234." and case.actual_output == _case().answer
    assert [t.name for t in case.available_tools or ()] == ["get_user", "cancel_reservation"]
    assert [(c.name, c.input_parameters, c.status) for c in run.tool_calls] == [
        ("get_user", {"user_id": "u_1234"}, "ok"),
        ("cancel_reservation", {"reservation_id": "AB12CD"}, "ok"),
        ("cancel_reservation", {"reservation_id": "AB12CD"}, "error"),
    ]
    assert run.tool_calls[1].output == {"status": "cancelled", "refund": 468}
    assert run.tool_calls[2].error == "Error: already cancelled"
    assert [r["name"] for r in (case.metadata or {})["reconstruction"]["requests_without_execution"]] == [
        "get_user"
    ]


def test_the_same_case_gives_the_same_spans_and_another_case_other_ids() -> None:
    first, again = case_spans(_case()), case_spans(_case())
    assert [(s.trace_id, s.span_id, s.attributes) for s in first] == [
        (s.trace_id, s.span_id, s.attributes) for s in again
    ]
    assert case_spans(_case(id="t/2"))[0].trace_id != first[0].trace_id
    with pytest.raises(ValueError, match="unknown convention"):
        case_spans(_case(), "zipkin")


def test_scoring_a_clean_and_a_mutated_case_through_both_conventions() -> None:
    clean = _case()
    swapped = _case(
        id="t/swap",
        operator="swap_dependent",
        labels=frozenset({"sequence_error"}),
        calls=(
            CaseCall("cancel_reservation", {"reservation_id": "AB12CD"}, {"status": "cancelled"}, turn=0),
            CaseCall("get_user", {"user_id": "u_1234"}, {"reservations": ["AB12CD"]}, turn=1),
        ),
        answer="Reservation AB12CD is cancelled.",
    )
    scored = [score_case(c, conv) for c in (clean, swapped) for conv in CONVENTIONS]
    assert all(s.runs == 1 for s in scored)
    assert [s.predicted for s in scored] == [
        frozenset(),
        frozenset(),
        frozenset({"sequence_error"}),
        frozenset({"sequence_error"}),
    ]
    by_type = {f.type: f for f in summarise(scored)}
    assert (by_type["sequence_error"].tp, by_type["sequence_error"].tn) == (2, 2)
