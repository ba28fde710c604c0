"""The expected-against-called timeline: each call placed once, in its row's order, with the marks the
ordering score is made of."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.metrics.alignment import EXTRA, MATCHED, MISSING, OUT_OF_ORDER, align
from agentotel_eval.metrics.tool_correctness import score_names


def kinds(expected: list[str], called: list[str]) -> list[tuple[str, str | None, str | None]]:
    a = align(expected, called)
    return [
        (
            c.kind,
            None if c.expected is None else expected[c.expected],
            None if c.called is None else called[c.called],
        )
        for c in a.columns
    ]


def test_a_correct_run_is_all_matched_pairs() -> None:
    assert kinds(["search", "book"], ["search", "book"]) == [
        (MATCHED, "search", "search"),
        (MATCHED, "book", "book"),
    ]


def test_a_missing_call_has_a_top_cell_only() -> None:
    assert kinds(["search", "sort", "book"], ["search", "book"]) == [
        (MATCHED, "search", "search"),
        (MISSING, "sort", None),
        (MATCHED, "book", "book"),
    ]


def test_an_extra_call_has_a_bottom_cell_only() -> None:
    assert kinds(["convert"], ["weather", "convert"]) == [
        (EXTRA, None, "weather"),
        (MATCHED, "convert", "convert"),
    ]


def test_a_wrong_tool_is_one_missing_and_one_extra() -> None:
    assert kinds(["get_weather"], ["search_flights"]) == [
        (MISSING, "get_weather", None),
        (EXTRA, None, "search_flights"),
    ]


def test_calls_out_of_order_are_joined_across_columns() -> None:
    a = align(["flights", "hotels", "book"], ["flights", "book", "hotels"])
    assert [c.kind for c in a.columns] == [MATCHED, OUT_OF_ORDER, MATCHED, OUT_OF_ORDER]
    # the longest common subsequence keeps flights, hotels: book was called before hotels were searched
    assert kinds(["flights", "hotels", "book"], ["flights", "book", "hotels"]) == [
        (MATCHED, "flights", "flights"),
        (OUT_OF_ORDER, None, "book"),
        (MATCHED, "hotels", "hotels"),
        (OUT_OF_ORDER, "book", None),
    ]
    assert a.columns[1].partner == 3 and a.columns[3].partner == 1
    assert a.count(OUT_OF_ORDER) == 1 and a.count(MATCHED) == 2


def test_no_expectation_and_no_calls() -> None:
    assert align([], []).columns == ()
    assert kinds([], ["a"]) == [(EXTRA, None, "a")]
    assert kinds(["a"], []) == [(MISSING, "a", None)]


names = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=8)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(names, names)
def test_every_call_is_placed_once_in_order_and_agrees_with_the_score(
    expected: list[str], called: list[str]
) -> None:
    a = align(expected, called)
    top = [c.expected for c in a.columns if c.expected is not None]
    bottom = [c.called for c in a.columns if c.called is not None]
    assert top == list(range(len(expected)))
    assert bottom == list(range(len(called)))
    for k, c in enumerate(a.columns):
        if c.kind == MATCHED:
            assert (
                c.expected is not None and c.called is not None and expected[c.expected] == called[c.called]
            )
        elif c.kind == OUT_OF_ORDER:
            assert c.partner is not None and a.columns[c.partner].partner == k
            other = a.columns[c.partner]
            name = expected[c.expected] if c.expected is not None else called[c.called]  # type: ignore[index]
            partner_name = called[other.called] if other.called is not None else expected[other.expected]  # type: ignore[index]
            assert name == partner_name
        else:
            assert (c.kind == MISSING) == (c.called is None)
    outcome = score_names(expected, called, check_ordering=True)
    assert a.count(MATCHED) == len(outcome.pairs)
    assert a.count(MISSING) == len(outcome.missing)
    assert a.count(EXTRA) == len(outcome.extra)
    assert a.count(OUT_OF_ORDER) == len(outcome.out_of_order)


def test_the_text_timeline_lines_each_call_up_with_its_mark() -> None:
    from agentotel_eval.metrics.alignment import alignment_text

    lines = alignment_text(["search", "sort", "book"], ["search", "book", "share"], indent="")
    assert lines == [
        "expected search  sort     book",
        "called   search           book  share",
        "                 missing        extra",
    ]
    assert alignment_text([], [], indent="") == ["expected (none)", "called   (none)", ""]
