from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentotel_eval.collector.lake.reconciler import searcher

T = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_first_live_node_by_name_searches_and_rebuilds_split_traces():
    assert searcher(["b", "a", "c"]) == "a"
    assert searcher(["c"]) == "c"  # a and b gone: c takes over
    assert searcher([]) is None


def at(seconds: float) -> datetime:
    return T + timedelta(seconds=seconds)


def test_membership_changes_are_joins_returns_and_departures_seen_in_the_flush_marks():
    from agentotel_eval.collector.lake.reconciler import membership_changes

    away = timedelta(seconds=20)
    marks = [("a", at(s)) for s in range(0, 300, 5)]  # always there
    marks += [("b", at(s)) for s in (0, 5, 10, 100, 105)]  # away from 10 s to 100 s, back, gone since 105 s
    marks += [("c", at(s)) for s in (200, 205, 210)]  # joined at 200 s
    first = {"a": at(-3600), "b": at(-3600), "c": at(200)}
    assert membership_changes(marks, first, at(300), away) == [at(10), at(100), at(105), at(200), at(210)]
    # a cluster whose nodes all flush steadily has no change: a look is then only this read of the marks
    steady = [(n, at(s)) for n in "ab" for s in range(0, 300, 5)]
    assert membership_changes(steady, {"a": at(-3600), "b": at(-3600)}, at(301), away) == []


def test_a_part_of_a_trace_has_no_root_or_a_span_whose_parent_it_lacks():
    from agentotel_eval.collector.lake.peer_spans import incomplete_traces

    trace_ids = ["whole", "whole", "rootless", "orphan", "orphan", "root-only"]
    span_ids = ["r", "c", "c", "r", "c", "r"]
    parents = [None, "r", "r", "", "x", None]
    assert incomplete_traces(trace_ids, span_ids, parents) == {"rootless", "orphan"}


def test_a_split_traces_whole_build_is_kept_when_made_after_its_last_part():
    from agentotel_eval.collector.lake.reconciler import SplitTrace, whole_build_kept

    trace = SplitTrace("t", first_part=at(0), last_part=at(10), rooted=True)
    assert whole_build_kept(trace, ("reconciler@a", at(12)))
    assert whole_build_kept(trace, ("rescore@lake", at(10)))  # a re-score's rules stay
    assert not whole_build_kept(trace, ("reconciler@a", at(9)))  # a part came after it: rebuild
    assert not whole_build_kept(trace, ("b", at(20)))  # a node's build of its part is shown: rebuild
    assert not whole_build_kept(trace, None)
