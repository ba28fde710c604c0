"""Provenance: an id an argument uses must have appeared before the call; first seen in a later call's result is a
sequence error."""

from __future__ import annotations

from agentotel_eval import ToolCall
from agentotel_eval.metrics.detectors import SEQUENCE_ERROR, could_not_run, detect
from agentotel_eval.metrics.provenance import id_like


def test_what_counts_as_an_id() -> None:
    assert all(id_like(v) for v in ("A-1042", "u_7731", "3f2a9c1e-77d0-4b8e-9a61-0c5a8a3a4b11", "ORD2026X", "H-12x"))
    assert not any(id_like(v) for v in ("Paris", "12345", "2026-12-03", "2026-12-03T10:00:00Z", "10:30", "a b1",
                                        "x1", 42, None))


def test_an_id_used_before_the_call_that_produced_it() -> None:
    calls = [ToolCall("get_order", {"order_id": "ORD-9931"}, output={"status": "shipped"}),
             ToolCall("list_orders", {"user": "me"}, output=[{"id": "ORD-9931"}, {"id": "ORD-9932"}])]
    (finding,) = detect(calls, types=[SEQUENCE_ERROR], user_input="Where is my latest order?")
    assert (finding.subtype, finding.rule, finding.call_indices) == (
        "used_before_produced", "sequence_error.provenance", (0, 1))
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
    assert "sequence_error (provenance) could not run: no call's result is recorded" in could_not_run(
        calls, None, types=[SEQUENCE_ERROR])
