from __future__ import annotations

from datetime import UTC, datetime

from agentotel_eval.collector.lake.reconciler import SplitTrace, owner

T = datetime(2026, 1, 1, tzinfo=UTC)


def split(*nodes: str) -> SplitTrace:
    return SplitTrace("t", nodes, T, reconciled=False)


def test_a_split_trace_is_rebuilt_by_the_first_live_node_that_stored_it():
    assert owner(split("b", "c"), ["a", "b", "c"]) == "b"
    assert owner(split("b", "c"), ["a", "c"]) == "c"  # b is gone: c, which also stored it


def test_a_split_trace_whose_nodes_are_all_gone_is_taken_over_by_the_first_live_node():
    assert owner(split("b", "c"), ["d", "a"]) == "a"
    assert owner(split("b", "c"), []) is None
