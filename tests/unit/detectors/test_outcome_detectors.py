"""Failures repeated under other arguments, errors whose named argument is passed again, and successes claimed
for actions that failed: on hand-made calls, and on real fixture runs with their answer or
an argument changed."""

from __future__ import annotations

import dataclasses
from typing import Any

from agentotel_eval import ToolCall
from agentotel_eval.detectors import detect
from agentotel_eval.detectors.declarations import parse_tool_rules
from agentotel_eval.detectors.failure import error_signature, failed
from agentotel_eval.reconstruct import reconstruct
from tests.support.fixture_traces import fixtures


def fail(name: str, error: str = "boom", turn: str | None = None, **args: Any) -> ToolCall:
    return ToolCall(name, args, status="error", error=error, llm_turn=turn)


def kinds(found: list) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(f.type, f.subtype, f.call_indices) for f in found]


def test_failure_is_read_from_the_status_or_the_result() -> None:
    assert failed(fail("t"))
    assert failed(ToolCall("t", {}, output={"isError": True, "content": []}))
    assert failed(ToolCall("t", {}, output='{"error": "quota exceeded"}'))
    assert failed(ToolCall("t", {}, output={"status_code": 503}))
    assert failed(ToolCall("t", {}, output={"success": False}))
    assert not failed(ToolCall("t", {}, output={"error": None, "status": 200, "rows": []}))
    assert not failed(ToolCall("t", {}, output="error-free text"))


def test_the_same_error_under_changed_arguments_loops_and_retry_storms() -> None:
    same = [
        fail("pay", "Card 4242 declined (code 51)", amount=10),
        fail("pay", "Card 4243 declined (code 51)", amount=9),
        fail("pay", "Card 4244 declined (code 51)", amount=8),
    ]
    assert error_signature(same[0].error or "") == error_signature(same[2].error or "")
    assert ("repeated_failure", "same_error", (0, 1, 2)) in kinds(detect(same))
    assert "same_error" not in [f.subtype for f in detect(same[:2])]  # two attempts: a retry, not a pattern
    loop = [ToolCall("poll", {"id": 1}, output={"state": "pending"}) for _ in range(4)]
    assert kinds(detect(loop)) == [("repeated_failure", "loop", (0, 1, 2, 3))]
    assert detect(loop[:3]) == []
    storm = [fail("fetch", turn="t1", page=k) for k in range(3)]
    assert ("repeated_failure", "retry_storm", (0, 1, 2)) in kinds(detect(storm))
    assert "retry_storm" not in [
        f.subtype for f in detect([fail("fetch", turn=f"t{k}", page=k) for k in range(3)])
    ]


def test_an_error_naming_an_argument_then_the_same_value_again() -> None:
    calls = [
        fail("book", "Invalid date: 2026-02-30", date="2026-02-30", guests=2),
        ToolCall("book", {"date": "2026-02-30", "guests": 3}),
    ]
    (finding,) = [f for f in detect(calls) if f.type == "result_ignored"]
    assert (finding.subtype, finding.argument, finding.call_indices) == ("retried_same_value", "date", (0, 1))
    fixed = [calls[0], ToolCall("book", {"date": "2026-03-01", "guests": 2})]
    assert [f for f in detect(fixed) if f.type == "result_ignored"] == []
    by_key = [
        fail("search", "city is required to be a known city", city="Atlantis", n=1),
        ToolCall("search", {"city": "Atlantis", "n": 5}),
    ]
    assert [f.argument for f in detect(by_key) if f.type == "result_ignored"] == ["city"]


def test_a_success_claimed_for_a_failed_action() -> None:
    calls = [
        ToolCall("search_hotels", {"city": "Rome"}, output=[{"id": "H-1"}]),
        fail("book_hotel", "Payment declined", hotel="H-1"),
    ]
    claimed = detect(calls, answer="All set: I booked Hotel H-1 for you.")
    assert kinds(claimed) == [("error_handling", "false_success", (1,))]
    assert claimed[0].to_dict()["evidence"]["claim"] == "booked"
    assert detect(calls, answer="Sorry, the booking failed: your payment was declined.") == []
    retried = [*calls, ToolCall("book_hotel", {"hotel": "H-1"}, output={"confirmation": "BK-1"})]
    assert detect(retried, answer="I booked Hotel H-1.") == []
    # a read tool performs no action: its failure is not claimed by an answer
    assert detect([fail("get_weather", city="Atlantis")], answer="It is sunny.") == []


def test_a_declared_claim_for_a_tool_never_called() -> None:
    rules = parse_tool_rules(
        [{"name": "issue_refund", "claims": r"(?i)\brefund(ed)? (has been )?(issued|sent)\b"}]
    )
    found = detect(
        [ToolCall("lookup_order", {"id": "A-1"})], answer="Your refund has been issued.", rules=rules
    )
    assert kinds(found) == [("error_handling", "claimed_not_called", ())]
    assert found[0].rule == "tools.issue_refund.claims"


def _run(name: str) -> Any:
    (fx,) = [f for f in fixtures() if f.name == name]
    (run,) = reconstruct(fx.spans(), fx.logs())
    return run


def test_real_error_runs_are_clean_and_their_mutations_are_found() -> None:
    """A real run whose tool failed and whose answer admits it: nothing; the same run with a claim of success
    in its answer, or with the failing value passed again: found."""
    run = _run("langchain__openinference__error")  # get_weather(Atlantis) fails, then get_weather(Athens)
    assert run.output and detect(run.tool_calls, answer=run.output) == []
    rules = parse_tool_rules([{"name": "get_weather", "claims": r"(?i)\batlantis is \d+C\b"}])
    single = _run("google-adk__latest__error")  # its one call fails
    assert (
        detect(single.tool_calls, answer="Atlantis is 22C and sunny.", rules=rules)[0].subtype
        == "false_success"
    )
    assert detect(single.tool_calls, answer="Atlantis is unknown, sorry.", rules=rules) == []
    first, second = run.tool_calls[:2]
    again = dataclasses.replace(
        second, input_parameters={**(first.input_parameters or {}), "units": "metric"}
    )
    found = detect([first, again], answer=run.output)
    assert [(f.type, f.subtype) for f in found] == [("result_ignored", "retried_same_value")]


def test_what_the_detectors_could_not_check_is_said() -> None:
    from agentotel_eval.detectors import could_not_run
    from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
    from agentotel_eval.test_case import EvalTestCase

    names_only = [ToolCall("book_hotel"), ToolCall("pay")]
    notes = could_not_run(names_only, None, answer=None)
    assert notes == [
        "invalid_function could not run: the tools offered to the model are not recorded",
        "parameter_error (schemas) could not run: no tool schema is recorded",
        "parameter_error could not check 2 of 2 call(s): arguments not recorded",
        "sequence_error (provenance) could not run: no call's result or error is recorded",
        "sequence_error (grounding) could not run: the run's input is not recorded",
        "sequence_error (grounding) could not run: no call's result or error is recorded",
        "result_ignored could not run: no call's result or error is recorded",
        "result_ignored could not run: the run's final answer is not recorded",
        "error_handling could not run: the run's final answer is not recorded",
    ]
    assert could_not_run([], None) == []
    result = ToolsErrorMetric(judge=False).measure(EvalTestCase(input="q", tools_called=names_only))
    # the metric has the input: grounding is not blocked by it
    assert result.evaluation_log["could_not_run"] == [n for n in notes if "input is not recorded" not in n]


def test_requests_that_never_ran_and_calls_nobody_requested() -> None:
    from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
    from agentotel_eval.reconstruct.model import AgentRun

    run = AgentRun(
        "ab" * 16,
        "cd" * 8,
        "agent",
        1,
        2,
        input="q",
        output="done",
        tool_calls=(
            ToolCall("search", {"q": "x"}, span_id="e1" * 8),
            ToolCall("wipe_disk", {}, span_id="e2" * 8),
        ),
        diagnostics={
            "requests_without_execution": [{"name": "book", "call_id": "call_7", "llm_span": "11" * 8}],
            "executions_without_request": ["e2" * 8],
        },
    )
    case = run.to_test_case()
    assert case.metadata == {
        "reconstruction": {
            "requests_without_execution": [{"name": "book", "call_id": "call_7", "llm_span": "11" * 8}],
            "executions_without_request": [1],
        },
        "context": {"agent": "agent", "started": "1970-01-01T00:00:00+00:00", "system_prompt": None},
    }
    result = ToolsErrorMetric(judge=False).measure(run)
    found = [(f["subtype"], f["tool_name"], f["call_indices"]) for f in result.evaluation_log["detectors"]]
    assert found == [("requested_not_executed", "book", []), ("executed_not_requested", "wipe_disk", [1])]
    assert result.success is False
    clean = AgentRun(
        "ab" * 16, "cd" * 8, "agent", 1, 2, input="q", tool_calls=(ToolCall("search", {"q": "x"}),)
    )
    assert "reconstruction" not in (clean.to_test_case().metadata or {})


def test_an_answer_that_states_another_number_than_the_result() -> None:
    refund = ToolCall(
        "cancel_reservation",
        {"reservation_id": "AB12CD"},
        output={"status": "cancelled", "refund_amount": 468, "currency": "USD"},
    )
    assert detect([refund], answer="Cancelled: the refund of $468 is on its way.") == []
    (found,) = detect([refund], answer="Cancelled: the refund of $486 is on its way.")
    assert (found.type, found.subtype, found.argument) == (
        "result_ignored",
        "answer_contradicts_result",
        "refund_amount",
    )
    assert found.to_dict()["evidence"] == {
        "stated": "$486",
        "recorded": "468",
        "kind": "number",
        "key": "refund_amount",
        "call": 0,
        "linked_by": "key",
    }
    # a number the answer computed from the results (a total), or one the user gave, is not a contradiction
    prices = [ToolCall("search", {"q": "x"}, output=[{"price": 120}, {"price": 80}])]
    assert detect(prices, answer="Both come to a price of 200 in total.") == []
    assert (
        detect(
            [refund],
            answer="Your refund: 500, as you asked.",
            user_input="refund me 500",
            types=["result_ignored"],
        )
        == []
    )
    # a failed call's numbers are not what the answer reports
    failed_refund = dataclasses.replace(refund, status="error", error="refund_amount 468 exceeds the limit")
    assert [
        f.subtype for f in detect([failed_refund], answer="The refund amount is 486, sorry it failed.")
    ] == []


def test_a_real_run_with_its_answer_changed_to_contradict_a_result() -> None:
    run = _run(
        "langchain__openinference__parallel"
    )  # ... convert_currency -> "92.0 EUR"; "100 USD is 92 EUR."
    assert run.output and detect(run.tool_calls, answer=run.output, user_input=run.input) == []
    changed = run.output.replace("92 EUR", "95 EUR")
    (found,) = detect(run.tool_calls, answer=changed, user_input=run.input)
    assert (found.subtype, found.tool_name) == ("answer_contradicts_result", "convert_currency")
    assert (
        found.to_dict()["evidence"]["stated"] == "95 EUR"
        and found.to_dict()["evidence"]["recorded"] == "92.0 EUR"
    )


def test_success_in_other_words_is_a_claim_for_an_action() -> None:
    calls = [fail("update_address", "Address service unavailable", street="Main St 1")]
    assert kinds(detect(calls, answer="Your address change went through successfully.")) == [
        ("error_handling", "false_success", (0,))
    ]
    assert detect(calls, answer="Sorry, I could not update the address.") == []
    lookups = [fail("get_address", "Address service unavailable")]
    assert detect(lookups, answer="Done successfully.") == []  # a read performs no action to claim


def test_numbers_match_as_an_answer_writes_them_and_one_false_success_is_one_finding() -> None:
    history = ToolCall(
        "update_order",
        {"order_id": "W1"},
        output={"payment_history": [{"amount": 120.0}, {"amount": -0.35000000000000003}]},
    )
    # a refund of the -0.35 on record, written to the cent and without its sign: no contradiction
    assert (
        detect(
            [history],
            answer="Your order W1 is updated; a refund of amount $0.35 is on its way.",
            types=["result_ignored"],
        )
        == []
    )
    prices = [
        ToolCall("get_product", {"id": "P1"}, output={"variants": [{"price": 153.23}, {"price": 148.15}]})
    ]
    assert detect(prices, answer="The price difference is $5.08.", types=["result_ignored"]) == []
    # the amounts of an action that failed belong to the false success the answer claims, found once
    failed_update = ToolCall("exchange_items", {"order_id": "W1"}, status="error", error="Order not found")
    found = detect(
        [*prices, failed_update], answer="Done: exchanged, the price difference of $9.99 is charged."
    )
    assert [(f.type, f.subtype) for f in found] == [("error_handling", "false_success")]
    assert [f.evidence["claim"] for f in found if f.evidence] == ["exchanged"]  # the verb before the lexicon
    done = detect([failed_update], answer="Done: the price difference of $9.99 is charged.")
    assert [f.evidence["claim"] for f in done if f.evidence] == ["Done"]
