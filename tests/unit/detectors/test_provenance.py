"""Provenance: an id an argument uses must have appeared before the call; first seen in a later call's result
is a sequence error."""

from __future__ import annotations

import dataclasses

from agentotel_eval import ToolCall
from agentotel_eval.detectors import could_not_run, detect
from agentotel_eval.detectors.tokens import id_like
from agentotel_eval.detectors.types import SEQUENCE_ERROR


def test_what_counts_as_an_id() -> None:
    assert all(
        id_like(v) for v in ("A-1042", "u_7731", "3f2a9c1e-77d0-4b8e-9a61-0c5a8a3a4b11", "ORD2026X", "H-12x")
    )
    assert id_like("1656367028") and not id_like(1656367028) and not id_like("50000000")
    assert not any(
        id_like(v)
        for v in ("Paris", "12345", "2026-12-03", "2026-12-03T10:00:00Z", "10:30", "a b1", "x1", 42, None)
    )


def test_an_id_used_before_the_call_that_produced_it() -> None:
    calls = [
        ToolCall("get_order", {"order_id": "ORD-9931"}, output={"status": "shipped"}),
        ToolCall("list_orders", {"user": "me"}, output=[{"id": "ORD-9931"}, {"id": "ORD-9932"}]),
    ]
    (finding,) = detect(calls, types=[SEQUENCE_ERROR], user_input="Where is my latest order?")
    assert (finding.subtype, finding.rule, finding.call_indices) == (
        "used_before_produced",
        "sequence_error.provenance",
        (0, 1),
    )
    assert finding.to_dict()["evidence"] == {"value": "ORD-9931", "used_by": 0, "produced_by": 1}
    in_order = list(reversed(calls))
    assert detect(in_order, types=[SEQUENCE_ERROR], user_input="Where is my latest order?") == []
    # the user gave it: no sequence error whatever the order
    assert detect(calls, types=[SEQUENCE_ERROR], user_input="Where is order ORD-9931?") == []
    # a longer id that merely contains it is another id
    other = [ToolCall("get_order", {"order_id": "ORD-99"}), calls[1]]
    assert detect(other, types=[SEQUENCE_ERROR]) == []


def test_without_recorded_results_provenance_says_it_could_not_run() -> None:
    calls = [ToolCall("get_order", {"order_id": "ORD-9931"}), ToolCall("list_orders", {"user": "me"})]
    assert detect(calls, types=[SEQUENCE_ERROR]) == []
    assert (
        "sequence_error (provenance) could not run: no call's result or error is recorded"
        in could_not_run(calls, None, types=[SEQUENCE_ERROR])
    )


def test_an_id_found_nowhere_is_an_ungrounded_argument() -> None:
    listed = ToolCall("list_orders", {"user": "me"}, output=[{"id": "ORD-9931"}])
    made_up = ToolCall("get_order", {"order_id": "ORD-7777"}, output={"error": "no such order"})
    (finding,) = detect([listed, made_up], types=[SEQUENCE_ERROR], user_input="Where is my latest order?")
    assert (finding.subtype, finding.call_indices) == ("ungrounded_argument", (1,))
    assert finding.to_dict()["evidence"] == {
        "value": "ORD-7777",
        "argument": "order_id",
        "kind": "an id",
        "used_by": 1,
        "system_prompt_recorded": True,
    }
    assert not finding.uncertain
    # where the system prompt was not recorded, the id may be there: the finding is one the
    # rule is not sure of
    (unsure,) = detect(
        [listed, made_up], types=[SEQUENCE_ERROR], user_input="Where is my latest order?", system_prompt=None
    )
    assert unsure.uncertain
    question = "Where is my latest order?"
    # grounded by the input, by an earlier result, or by the tool's own definition (an example
    # in its description)
    assert detect([listed, made_up], types=[SEQUENCE_ERROR], user_input="Is ORD-7777 shipped?") == []
    real = ToolCall("get_order", {"order_id": "ORD-9931"}, output={"status": "shipped"})
    assert detect([listed, real], types=[SEQUENCE_ERROR], user_input=question) == []
    documented = [
        {
            "name": "get_order",
            "description": "Look an order up, e.g. ORD-7777.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        }
    ]
    assert detect([listed, made_up], documented, types=[SEQUENCE_ERROR], user_input=question) == []
    # the model's own vocabulary is no id; without the input recorded nothing can be said
    model = ToolCall("summarise", {"model": "gpt-4o", "encoding": "utf-8"}, output="ok")
    assert detect([listed, model], types=[SEQUENCE_ERROR], user_input=question) == []
    assert detect([listed, made_up], types=[SEQUENCE_ERROR], user_input=None) == []


def test_a_real_run_with_an_argument_changed() -> None:
    """A real sequence of calls (flight search, weather, hotel booking): clean as recorded; an argument
    changed to the booking's id (its result, made later) or to an id found nowhere is a sequence error."""
    from agentotel_eval.reconstruct import reconstruct
    from tests.support.fixture_traces import fixtures

    (fx,) = [f for f in fixtures() if f.name == "openai-agents__openinference__sequence"]
    (run,) = reconstruct(fx.spans(), fx.logs())
    calls = list(run.tool_calls)
    assert [c.name for c in calls] == ["search_flights", "get_weather", "book_hotel"]
    assert detect(calls, types=[SEQUENCE_ERROR], user_input=run.input) == []
    booking = str(calls[2].output)
    early = [calls[0], dataclasses.replace(calls[1], input_parameters={"city": booking}), calls[2]]
    assert [
        (f.subtype, f.call_indices) for f in detect(early, types=[SEQUENCE_ERROR], user_input=run.input)
    ] == [("used_before_produced", (1, 2))]
    invented = [calls[0], dataclasses.replace(calls[1], input_parameters={"city": "HTL-PARIS-9"}), calls[2]]
    assert [
        (f.subtype, f.call_indices) for f in detect(invented, types=[SEQUENCE_ERROR], user_input=run.input)
    ] == [("ungrounded_argument", (1,))]


def test_numbers_written_as_strings_are_no_ids_and_unrecorded_results_stop_the_search() -> None:
    assert not id_like("1.257e-06") and not id_like("12e5")
    unknown = ToolCall("list_orders", {"user": "me"})  # its result is not on record: it may have given the id
    used = ToolCall("get_order", {"order_id": "ORD-7777"}, output={"status": "shipped"})
    assert detect([unknown, used], types=[SEQUENCE_ERROR], user_input="Where is my order?") == []
    assert [f.subtype for f in detect([used], types=[SEQUENCE_ERROR], user_input="Where is my order?")] == [
        "ungrounded_argument"
    ]
