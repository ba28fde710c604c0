"""The rules that read what runs say, each on the case it is for and on the cases that look
like it but are not."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from agentotel_eval import ToolCall
from agentotel_eval.detectors import could_not_run, detect
from agentotel_eval.detectors.declarations import parse_tool_rules
from agentotel_eval.detectors.registry import BY_NAME, RULES, check_rule_names, subtypes
from agentotel_eval.detectors.types import ERROR_TYPES
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.test_case import EvalTestCase

WEATHER_IN = "What's the weather in Atlantis? If that fails, try Athens."


def _kinds(found) -> list[tuple[str, str]]:
    return [(f.type, f.subtype) for f in found if not f.uncertain]


def _failed(name: str, error: str = "Unknown city", **args) -> ToolCall:
    return ToolCall(name, args, status="error", error=error)


ATLANTIS = _failed("get_weather", "Unknown city: Atlantis", city="Atlantis")
ATHENS = ToolCall("get_weather", {"city": "Athens"}, output="Athens: 29C sunny", status="ok")


# -- error_handling: false success for every tool ------------------------------------------------------------
@pytest.mark.parametrize(
    "answer",
    [
        "Atlantis is 25C and cloudy; Athens is 29C and sunny.",
        "Athens: 29C. Atlantis: 31°C, clear skies.",
        "Atlantis has mild weather today, and Athens is 29C and sunny.",
        "In Atlantis it's 77°F right now. Athens is 29C.",
    ],
)
def test_a_value_or_a_predicate_for_a_failed_read_is_a_false_success(answer: str) -> None:
    assert _kinds(detect([ATLANTIS, ATHENS], answer=answer, user_input=WEATHER_IN)) == [
        ("error_handling", "false_success")
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "Atlantis is unknown; Athens is 29C and sunny.",
        "I couldn't find Atlantis, but Athens is 29C and sunny.",
        "Athens is 29C and sunny.",  # the failure left out is not a claim
        "Sorry, the weather service does not know Atlantis. Athens is 29C.",
        "Athens is 29C and sunny. The lookup for Atlantis came back empty.",
    ],
)
def test_an_answer_that_owns_up_or_says_nothing_of_the_failure_is_not(answer: str) -> None:
    assert detect([ATLANTIS, ATHENS], answer=answer, user_input=WEATHER_IN) == []


def test_an_action_claimed_with_no_name_is_a_false_success_when_the_tool_never_succeeded() -> None:
    booking = _failed("book_hotel", "No rooms", city="Rome", nights=3)
    for answer in (
        "All set — reservation HTL-ROME-9 for 3 nights.",
        "Booked! Enjoy your trip.",
        "Your hotel in Rome is booked for 3 nights.",
    ):
        assert _kinds(detect([booking], answer=answer, user_input="Book Rome for 3 nights")) == [
            ("error_handling", "false_success")
        ], answer
    assert (
        detect([booking], answer="The Rome booking didn't go through.", user_input="Book Rome for 3 nights")
        == []
    )


def test_a_later_success_for_the_same_thing_is_no_false_success() -> None:
    retried = [_failed("get_weather", "Timeout", city="Athens"), ATHENS]
    assert detect(retried, answer="Athens is 29C and sunny.", user_input="Weather in Athens?") == []


# -- result_ignored: an answer that contradicts a result -----------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("Athens is 31C and sunny.", True),
        ("Athens is 84°F.", False),
        ("Athens: about 30 degrees.", False),
        ("Athens is 29C.", False),
    ],
)
def test_a_value_about_the_same_thing_is_compared_with_its_result(answer: str, found: bool) -> None:
    assert bool(_kinds(detect([ATHENS], answer=answer, user_input="Weather in Athens?"))) is found


def test_a_value_taken_from_another_things_result_is_still_a_contradiction() -> None:
    tokyo = ToolCall("get_weather", {"city": "Tokyo"}, output="Tokyo: 20C clear", status="ok")
    lima = ToolCall("get_weather", {"city": "Lima"}, output="Lima: 17C overcast", status="ok")
    found = detect([tokyo, lima], answer="Tokyo: 20C. Lima is 20°C right now.", user_input="Tokyo and Lima?")
    assert [(f.subtype, f.call_indices) for f in found] == [("answer_contradicts_result", (1,))]


def test_codes_dates_and_statuses_are_compared_by_what_they_mean() -> None:
    flights = ToolCall(
        "search_flights",
        {"origin": "Madrid", "destination": "Porto"},
        output="LH325 Madrid->Porto on 2025-09-10, 120 EUR",
        status="ok",
    )
    ask = "Flights from Madrid to Porto on 2025-09-10"
    assert detect([flights], answer="LH325 to Porto leaves on September 10 for €120.", user_input=ask) == []
    assert _kinds(detect([flights], answer="LH352 to Porto, 120 EUR.", user_input=ask)) == [
        ("result_ignored", "answer_contradicts_result")
    ]
    assert _kinds(detect([flights], answer="It leaves on Sept. 12th.", user_input=ask)) == [
        ("result_ignored", "answer_contradicts_result")
    ]
    order = ToolCall("get_order", {"order_id": "W1"}, output={"order_id": "W1", "status": "cancelled"})
    assert _kinds(detect([order], answer="Order W1 is confirmed.", user_input="Is W1 ok?")) == [
        ("result_ignored", "answer_contradicts_result")
    ]
    assert detect([order], answer="Order W1 was cancelled.", user_input="Is W1 ok?") == []


# -- sequence_error: values that appear nowhere --------------------------------------------------------------
def _args(**args) -> list[ToolCall]:
    return [ToolCall("search", args, output="ok", status="ok")]


@pytest.mark.parametrize(
    ("asked", "args", "found"),
    [
        ("Convert 100 USD to EUR", {"amount": 150, "from_currency": "USD"}, True),
        ("Convert a hundred dollars to euros", {"amount": 100, "from_currency": "USD", "to": "EUR"}, False),
        ("Weather in Paris?", {"city": "Madrid"}, True),
        ("Weather in paris, france?", {"city": "Paris"}, False),
        ("Flights on Sept 10th", {"date": "2025-09-10"}, False),
        ("Flights on Sept 10th", {"date": "2025-09-12"}, True),
        (
            "Check in 2025-09-10 for 2 nights",
            {"check_out": "2025-09-12"},
            False,
        ),  # a date plus a stated duration
        ("Two rooms at 120 each", {"total": 240}, False),  # a product of stated numbers
        (
            "Find hotels in Paris",
            {"city": "Rome", "limit": 5, "page": 2},
            True,
        ),  # a listing's size: the model's choice
    ],
)
def test_argument_values_of_every_kind_must_appear_before_the_call(
    asked: str, args: dict, found: bool
) -> None:
    assert bool(_kinds(detect(_args(**args), types=["sequence_error"], user_input=asked))) is found


def test_a_value_an_earlier_result_or_the_system_prompt_gave_is_grounded() -> None:
    first = ToolCall("find_user", {"name": "Ann"}, output={"user_id": "u_7731", "zip": "90210"}, status="ok")
    later = ToolCall("get_orders", {"user_id": "u_7731", "zip": 90210}, output=[], status="ok")
    assert detect([first, later], types=["sequence_error"], user_input="I am Ann") == []
    calls = _args(region="EU-WEST-2")
    assert _kinds(detect(calls, types=["sequence_error"], user_input="Deploy it")) == [
        ("sequence_error", "ungrounded_argument")
    ]
    assert (
        detect(calls, types=["sequence_error"], user_input="Deploy it", system_prompt="Region: EU-WEST-2")
        == []
    )


def test_a_name_in_place_of_the_users_is_sure_one_added_beside_it_is_not() -> None:
    asked = "Crime rate in San Francisco in 2020?"
    added = detect(
        _args(city="San Francisco", state="California"), types=["sequence_error"], user_input=asked
    )
    assert [f.uncertain for f in added] == [
        True
    ]  # a state for a city: the model's knowledge, the judge's call
    swapped = detect(_args(city="Chicago", state="California"), types=["sequence_error"], user_input=asked)
    assert [(f.argument, f.uncertain) for f in swapped] == [("city", False), ("state", False)]
    assert detect(_args(city="Chicago"), types=["sequence_error"], user_input="Weather in Chcicago?") == []


def test_where_the_rule_cannot_be_sure_the_finding_is_uncertain() -> None:
    (unsure,) = detect(
        _args(city="Madrid"), types=["sequence_error"], user_input="Weather?", system_prompt=None
    )
    assert unsure.uncertain and unsure.confidence < 0.7  # the system prompt was not recorded: it may be there
    (code,) = detect(_args(airport="CDG"), types=["sequence_error"], user_input="Fly me to Paris")
    assert code.uncertain  # an airport code the model knows
    (relative,) = detect(
        _args(date="2025-07-02"), types=["sequence_error"], user_input="Book it for tomorrow"
    )
    assert relative.uncertain  # "tomorrow" with no day the run started on
    placed = detect(
        _args(date="2025-07-02"),
        types=["sequence_error"],
        user_input="Book it for tomorrow",
        started=dt.datetime(2025, 7, 1, 9, tzinfo=dt.UTC),
    )
    assert placed == []
    log = (
        ToolsErrorMetric(judge=False)
        .measure(
            EvalTestCase(
                input="Weather?",
                tools_called=_args(city="Madrid"),
                metadata={"context": {"system_prompt": None}},
            )
        )
        .evaluation_log
    )
    assert log["detected"] and log["uncertain"] and log["detectors"][0]["uncertain"]


# -- repeated_failure: the same call written differently -----------------------------------------------------
def test_a_failing_call_retried_with_an_equivalent_argument_is_repeated() -> None:
    for again in ("PARIS", " paris ", "Paris."):
        calls = [_failed("get_weather", city="Paris"), _failed("get_weather", city=again)]
        assert _kinds(detect(calls)) == [("repeated_failure", "equivalent_arguments")], again
    units = [_failed("route", distance="5 km"), _failed("route", distance="5000 m")]
    assert _kinds(detect(units)) == [("repeated_failure", "equivalent_arguments")]
    assert detect([_failed("get_weather", city="Paris"), _failed("get_weather", city="Rome")]) == []


# -- what real traces showed ---------------------------------------------------------------------------------
def test_a_tool_offered_through_the_system_prompt_is_not_invalid() -> None:
    calls = [ToolCall("weather_agent", {"task": "Cairo?"}, output="35C", status="ok")]
    assert _kinds(detect(calls, ["final_answer"], system_prompt="")) == [("invalid_function", "not_offered")]
    team = "You can give tasks to team members: weather_agent: answers weather questions."
    assert detect(calls, ["final_answer"], system_prompt=team) == []


def test_a_request_and_an_execution_with_other_ids_are_one_call() -> None:
    calls = [ToolCall("get_weather", {"city": "Paris"}, call_id="run-9", status="ok", output="18C")]
    found = {
        "requests_without_execution": [
            {"name": "get_weather", "call_id": "call_1", "arguments": {"city": "Paris"}}
        ],
        "executions_without_request": [0],
    }
    assert detect(calls, reconstruction=found, types=["invalid_function"]) == []
    other = {
        **found,
        "requests_without_execution": [
            {"name": "get_weather", "call_id": "call_1", "arguments": {"city": "Rome"}}
        ],
    }
    assert [f.subtype for f in detect(calls, reconstruction=other, types=["invalid_function"])] == [
        "requested_not_executed",
        "executed_not_requested",
    ]


@pytest.mark.parametrize(
    "called", ["travel-book_hotel", "hotels__book_hotel", "functions.book_hotel", "hotels/book_hotel"]
)
def test_a_declaration_matches_the_names_frameworks_give_the_tool(called: str) -> None:
    rules = parse_tool_rules(
        [{"name": "book_hotel", "requires": ["search_hotels"], "args": {"nights": {"$gte": 1}}}]
    )
    calls = [ToolCall("travel-search_hotels", {}, output="[]", status="ok"), ToolCall(called, {"nights": 0})]
    assert [
        (f.subtype, f.call_indices)
        for f in detect(calls, rules=rules, types=["parameter_error", "sequence_error"])
    ] == [("rule_violation", (1,))]


def test_a_declaration_may_hold_for_some_services_and_agents_only() -> None:
    rules = parse_tool_rules(
        [
            {"name": "pay", "args": {"amount": {"$lte": 100}}, "services": ["shop-*"]},
            {"name": "pay", "args": {"amount": {"$lte": 5000}}, "agents": ["b2b"]},
        ]
    )
    calls = [ToolCall("pay", {"amount": 300})]
    assert [f.rule for f in detect(calls, rules=rules, service="shop-eu")] == ["tools.pay.args.amount"]
    assert detect(calls, rules=rules, service="other", agent="b2b") == []
    assert detect(calls, rules=rules, service="other") == []


def test_a_schema_the_exporter_cut_short_says_it_could_not_be_checked() -> None:
    cut = {
        "name": "book",
        "parameters": {"type": "object", "properties": {"guest": "[MaxDepth]"}, "required": ["guest"]},
    }
    calls = [ToolCall("book", {"nights": 2})]
    assert detect(calls, [cut]) == []
    assert any("cut short by the exporter" in n for n in could_not_run(calls, [cut]))


# -- one home ------------------------------------------------------------------------------------------------
def test_every_rule_is_declared_once_and_covers_a_type() -> None:
    assert len(BY_NAME) == len(RULES) and {r.type for r in RULES} == set(ERROR_TYPES)
    assert subtypes()["error_handling"] == ("false_success", "claimed_not_called")
    assert check_rule_names(["error_handling.false_success"]) == ("error_handling.false_success",)
    with pytest.raises(ValueError, match="unknown rule"):
        check_rule_names(["error_handling.false_sucess"])
    disabled = ToolsErrorMetric(judge=False, disabled_rules=["error_handling.false_success"])
    case = EvalTestCase(input=WEATHER_IN, actual_output="Atlantis is 25C.", tool_calls=[ATLANTIS])
    assert ToolsErrorMetric(judge=False).measure(case).evaluation_log["detected"]
    assert not disabled.measure(case).evaluation_log["detected"]
    assert dataclasses.fields(RULES[0])  # a plain declaration


def test_a_rule_that_raises_costs_the_run_nothing_but_its_own_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentotel_eval.detectors import registry

    broken = dataclasses.replace(
        BY_NAME["error_handling.false_success"], find=lambda view: (_ for _ in ()).throw(RuntimeError("boom"))
    )
    monkeypatch.setattr(
        registry, "RULES", tuple(broken if r.name == broken.name else r for r in registry.RULES)
    )
    calls = [_failed("get_weather", city="Paris"), _failed("get_weather", city="Paris")]
    log = (
        ToolsErrorMetric(judge=False)
        .measure(EvalTestCase(input="Paris?", actual_output="Paris is 20C.", tool_calls=calls))
        .evaluation_log
    )
    assert [f["subtype"] for f in log["detectors"]] == ["same_arguments"]
    assert "error_handling.false_success failed on this run (RuntimeError: boom)" in log["could_not_run"]
