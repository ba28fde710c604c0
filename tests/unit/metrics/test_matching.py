"""The pure matching core, checked against brute-force oracles."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.metrics import matching
from agentotel_eval.test_case import ToolCall

# --- value equality and parameter similarity ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (100, 100.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        ({"n": 1}, {"n": 1.0}, True),
        ({"n": True}, {"n": 1}, False),
        ([1, 2], (1, 2), True),
        ([1, 2], [2, 1], False),
        ({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2.0}]}, True),
        ({"a": 1}, {"a": 1, "b": None}, False),
        ("1", 1, False),
        (None, None, True),
        (None, {}, False),
    ],
)
def test_values_equal(a, b, equal):
    assert matching.values_equal(a, b) is equal
    assert matching.values_equal(b, a) is equal
    assert (matching.canonical(a) == matching.canonical(b)) is equal


@pytest.mark.parametrize(
    ("expected", "called", "similarity"),
    [
        (None, None, 1.0),
        ({}, None, 1.0),
        ({}, {}, 1.0),
        ({"q": "paris"}, {"q": "paris"}, 1.0),
        ({"q": "paris"}, None, 0.0),
        ({"q": "paris", "n": 3}, {"q": "paris", "n": 5}, 0.5),
        ({"q": "paris"}, {"q": "paris", "limit": 10}, 0.5),
        ({"price": 100}, {"price": 100.0}, 1.0),
        ({"flag": True}, {"flag": 1}, 0.0),
        # nested dicts count their own fraction: q equal (1) + filters half-equal (0.5) over 2 keys
        (
            {"q": "x", "filters": {"stars": 4, "city": "Paris"}},
            {"q": "x", "filters": {"stars": 5, "city": "Paris"}},
            0.75,
        ),
        ({"filters": {}}, {"filters": {}}, 1.0),
        ({"filters": {"a": 1}}, {"filters": "a=1"}, 0.0),
        # lists compare whole
        ({"ids": [1, 2, 3]}, {"ids": [1, 2]}, 0.0),
        # non-mapping arguments compare whole
        ("raw text", "raw text", 1.0),
        ("raw text", "other", 0.0),
    ],
)
def test_parameter_similarity(expected, called, similarity):
    assert matching.parameter_similarity(expected, called) == pytest.approx(similarity)
    assert matching.parameter_similarity(called, expected) == pytest.approx(similarity)


def test_parameter_differences_name_nested_paths():
    diffs = matching.parameter_differences(
        {"q": "x", "filters": {"stars": 4, "city": "Paris"}, "gone": 1},
        {"q": "x", "filters": {"stars": 5, "city": "Paris"}, "new": 2},
    )
    assert diffs == ["filters.stars", "gone", "new"]


def test_call_weight_output_check_zeroes_pair():
    a = ToolCall("search", {"q": "x"}, output="3 hotels")
    b = ToolCall("search", {"q": "x"}, output="no hotels")
    assert matching.call_weight(a, b, input_parameters=True, output=False) == 1.0
    assert matching.call_weight(a, b, input_parameters=True, output=True) == 0.0
    assert matching.call_weight(a, b, input_parameters=False, output=True) == 0.0
    assert (
        matching.call_weight(a, ToolCall("Search", {"q": "x"}), input_parameters=False, output=False) == 0.0
    )


def test_call_key_equality_follows_considered_fields():
    a = ToolCall("s", {"n": 100, "f": {"x": [1]}}, output=1)
    b = ToolCall("s", {"f": {"x": [1.0]}, "n": 100.0}, output=2)
    assert matching.call_key(a, input_parameters=True, output=False) == matching.call_key(
        b, input_parameters=True, output=False
    )
    assert matching.call_key(a, input_parameters=True, output=True) != matching.call_key(
        b, input_parameters=True, output=True
    )
    # missing parameters are the empty set
    assert matching.call_key(ToolCall("s"), input_parameters=True, output=False) == matching.call_key(
        ToolCall("s", {}), input_parameters=True, output=False
    )


# --- default mode -------------------------------------------------------------------------------------------


def test_multiset_match_pairs_occurrences_in_order():
    assert matching.multiset_match(list("aba"), list("baab")) == [(0, 1, 1.0), (1, 0, 1.0), (2, 2, 1.0)]
    assert matching.multiset_match(list("aa"), list("a")) == [(0, 0, 1.0)]


def _brute_assignment(weights):
    n, m = len(weights), len(weights[0]) if weights else 0
    best = 0.0
    if n <= m:
        for cols in itertools.permutations(range(m), n):
            best = max(best, sum(weights[i][c] for i, c in enumerate(cols)))
    else:
        for rows in itertools.permutations(range(n), m):
            best = max(best, sum(weights[r][j] for j, r in enumerate(rows)))
    return best


def _greedy_assignment(weights):
    """Each row in turn takes its best free column: what a naive matcher does."""
    used, total = set(), 0.0
    for row in weights:
        free = [(w, j) for j, w in enumerate(row) if j not in used]
        if free:
            w, j = max(free)
            used.add(j)
            total += w
    return total


weights_st = st.integers(1, 5).flatmap(
    lambda n: st.integers(1, 5).flatmap(
        lambda m: st.lists(
            st.lists(st.sampled_from([0.0, 0.25, 0.5, 1 / 3, 0.75, 1.0]), min_size=m, max_size=m),
            min_size=n,
            max_size=n,
        )
    )
)


@settings(max_examples=300, deadline=None)
@given(weights_st)
def test_hungarian_is_optimal_and_a_valid_assignment(weights):
    pairs = matching.max_weight_assignment(weights)
    rows = [r for r, _ in pairs]
    cols = [c for _, c in pairs]
    assert len(set(rows)) == len(rows) and len(set(cols)) == len(cols)
    assert len(pairs) == min(len(weights), len(weights[0]))
    total = sum(weights[r][c] for r, c in pairs)
    assert total == pytest.approx(_brute_assignment(weights))
    assert total >= _greedy_assignment(weights) - 1e-9


def test_hungarian_beats_greedy_on_the_classic_trap():
    # Greedy gives row 0 its best column (0.9) and leaves row 1 with 0; the optimum pairs 0.8 + 0.7.
    weights = [[0.9, 0.8], [0.7, 0.0]]
    assert _greedy_assignment(weights) == pytest.approx(0.9)
    pairs = matching.max_weight_assignment(weights)
    assert sum(weights[r][c] for r, c in pairs) == pytest.approx(1.5)


def test_weighted_match_is_not_greedy():
    expected = [ToolCall("search", {"q": "paris", "n": 1}), ToolCall("search", {"q": "rome", "n": 2})]
    called = [ToolCall("search", {"q": "paris", "n": 2}), ToolCall("search", {"q": "lyon", "n": 1})]
    # expected[0] likes called[0] (q) and called[1] (n) equally: 0.5 each; expected[1] only
    # called[0] (n): 0.5.
    pairs = matching.weighted_match(expected, called, input_parameters=True, output=False)
    assert matching.total_weight(pairs) == pytest.approx(1.0)
    assert sorted((i, j) for i, j, _ in pairs) == [(0, 1), (1, 0)]


def test_weighted_match_keeps_zero_weight_same_name_pairs_and_skips_other_names():
    expected = [ToolCall("search", {"q": "paris"}), ToolCall("book")]
    called = [ToolCall("search", {"q": "rome"}), ToolCall("pay")]
    pairs = matching.weighted_match(expected, called, input_parameters=True, output=False)
    assert pairs == [(0, 0, 0.0)]


# --- ordering mode ------------------------------------------------------------------------------------------


def _brute_common_subsequence(weight, n, m):
    """Best total over every pair of equal-length increasing index tuples."""
    best = 0.0
    for k in range(min(n, m) + 1):
        for rows in itertools.combinations(range(n), k):
            for cols in itertools.combinations(range(m), k):
                ws = [weight(i, j) for i, j in zip(rows, cols, strict=True)]
                if all(w is not None for w in ws):
                    best = max(best, sum(ws))
    return best


@pytest.mark.parametrize(
    ("expected", "called", "length"),
    [
        ("abc", "abc", 3),
        (["search", "sort", "book"], ["sort", "search", "book", "sort"], 2),
        ("abc", "cba", 1),
        ("", "abc", 0),
        ("abc", "", 0),
        ("aab", "aba", 2),
    ],
)
def test_lcs_lengths(expected, called, length):
    pairs = matching.lcs_match(list(expected), list(called))
    assert len(pairs) == length
    assert [i for i, _, _ in pairs] == sorted(i for i, _, _ in pairs)
    assert [j for _, j, _ in pairs] == sorted(j for _, j, _ in pairs)
    assert all(expected[i] == called[j] for i, j, _ in pairs)


def test_lcs_keeps_the_earliest_expected_calls():
    # [search, sort] and [search, book] are both longest; the front trace keeps search and sort.
    pairs = matching.lcs_match(["search", "sort", "book"], ["sort", "search", "book", "sort"])
    assert [i for i, _, _ in pairs] == [0, 1]


calls_st = st.lists(
    st.builds(
        lambda name, q, n: ToolCall(name, {"q": q, "n": n}),
        st.sampled_from("abc"),
        st.sampled_from(["x", "y"]),
        st.integers(0, 1),
    ),
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(calls_st, calls_st)
def test_weighted_lcs_is_optimal(expected, called):
    pairs = matching.weighted_lcs_match(expected, called, input_parameters=True, output=False)
    assert [i for i, _, _ in pairs] == sorted({i for i, _, _ in pairs})
    assert [j for _, j, _ in pairs] == sorted({j for _, j, _ in pairs})

    def weight(i, j):
        if expected[i].name != called[j].name:
            return None
        return matching.call_weight(expected[i], called[j], input_parameters=True, output=False)

    assert matching.total_weight(pairs) == pytest.approx(
        _brute_common_subsequence(weight, len(expected), len(called))
    )


@settings(max_examples=200, deadline=None)
@given(calls_st, calls_st)
def test_weighted_match_is_optimal(expected, called):
    pairs = matching.weighted_match(expected, called, input_parameters=True, output=False)
    assert len({i for i, _, _ in pairs}) == len(pairs) == len({j for _, j, _ in pairs})
    grid = [
        [matching.call_weight(e, c, input_parameters=True, output=False) for c in called] for e in expected
    ]
    best = _brute_assignment(grid) if expected and called else 0.0
    assert matching.total_weight(pairs) == pytest.approx(best)


def test_first_difference():
    assert matching.first_difference("abc", "abc") is None
    assert matching.first_difference("abc", "abd") == 2
    assert matching.first_difference("ab", "abc") == 2
    assert matching.first_difference("", "") is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abc"), max_size=7), st.lists(st.sampled_from("abc"), max_size=7))
def test_names_lcs_traces_like_the_weighted_one(expected, called):
    """The 0/1 fast path must choose the same pairs as the general trace (so reasons agree)."""
    general = matching._front_alignment(
        len(expected), len(called), lambda i, j: 1.0 if expected[i] == called[j] else None
    )
    assert matching.lcs_match(expected, called) == general
    assert len(general) == _brute_common_subsequence(
        lambda i, j: 1.0 if expected[i] == called[j] else None, len(expected), len(called)
    )
