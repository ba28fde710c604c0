"""ToolCorrectnessMetric: the semantics of each mode, edge cases and properties."""

from __future__ import annotations

import asyncio
import json
import pickle
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentotel_eval.metrics.base import MetricResult
from agentotel_eval.metrics.tool_correctness import (
    ToolCorrectnessMetric,
)
from agentotel_eval.test_case import EvalTestCase, MLLMImage, ModelTestCase, ToolCall, ToolCallParams


def case(expected, called, **kwargs):
    return EvalTestCase("question", "answer", tools_called=called, expected_tools=expected, **kwargs)


def score(expected, called, **kwargs):
    return ToolCorrectnessMetric(**kwargs).measure(case(expected, called)).score


# --- the semantics ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "called", "value"),
    [
        (["search", "book"], ["search", "validate", "book"], 1.0),
        (["search", "book"], ["search"], 0.5),
        (["search", "book"], ["validate"], 0.0),
        (["a", "a"], ["a"], 0.5),
        (["a", "a"], ["a", "a"], 1.0),
        (["a"], ["a", "a", "a"], 1.0),
        (["search", "book"], ["book", "search"], 1.0),
        (["search", "book"], [], 0.0),
        ([], [], 1.0),
        ([], ["search"], 1.0),
    ],
)
def test_default_mode(expected, called, value):
    assert score(expected, called) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expected", "called", "value"),
    [
        (["search", "book"], ["search", "book"], 1.0),
        (["search", "book"], ["book", "search"], 1.0),  # order ignored without check_ordering
        (["search", "book"], ["search", "validate", "book"], 0.0),
        (["search", "book"], ["search"], 0.0),
        (["a", "a"], ["a"], 0.0),
        (["a"], ["a", "a"], 0.0),
        (["a", "a", "b"], ["a", "b", "a"], 1.0),
        ([], [], 1.0),
        ([], ["search"], 0.0),
    ],
)
def test_exact_mode(expected, called, value):
    assert score(expected, called, exact_match=True) == value


@pytest.mark.parametrize(
    ("expected", "called", "value"),
    [
        (["search", "book"], ["search", "book"], 1.0),
        (["search", "book"], ["book", "search"], 0.0),
        (["a", "a", "b"], ["a", "b", "a"], 0.0),
        (["a", "b"], ["a", "b", "c"], 0.0),
        ([], [], 1.0),
        ([], ["x"], 0.0),
    ],
)
def test_exact_and_ordering_mode(expected, called, value):
    assert score(expected, called, exact_match=True, check_ordering=True) == value


@pytest.mark.parametrize(
    ("expected", "called", "value"),
    [
        (["search", "sort", "book"], ["sort", "search", "book", "sort"], 2 / 3),
        (["a", "b", "c"], ["c", "b", "a"], 1 / 3),
        (["a", "b", "c"], ["a", "x", "b", "y", "c"], 1.0),
        (["a", "a"], ["a"], 0.5),
        ([], ["a"], 1.0),
        ([], [], 1.0),
        (["a"], [], 0.0),
    ],
)
def test_ordering_mode(expected, called, value):
    assert score(expected, called, check_ordering=True) == pytest.approx(value)


@pytest.mark.parametrize("called", [["Search"], ["search "], [" search"], ["search\n"]])
def test_names_compare_exactly(called):
    assert score(["search"], called) == 0.0


def test_threshold_and_success():
    metric = ToolCorrectnessMetric(threshold=0.5)
    assert metric.measure(case(["a", "b"], ["a"])).success is True  # 0.5 >= 0.5
    assert ToolCorrectnessMetric(threshold=0.51).measure(case(["a", "b"], ["a"])).success is False
    assert ToolCorrectnessMetric(threshold=0.0).measure(case(["a"], [])).success is True


def test_strict_mode_forces_threshold_one_and_binary_score():
    metric = ToolCorrectnessMetric(threshold=0.2, strict_mode=True)
    assert metric.threshold == 1.0
    result = metric.measure(case(["a", "b"], ["a"]))
    assert (result.score, result.success) == (0.0, False)
    assert "Strict mode" in result.reason and "0.5" in result.reason
    assert result.evaluation_log["raw_score"] == 0.5
    perfect = metric.measure(case(["a", "b"], ["b", "a", "c"]))
    assert (perfect.score, perfect.success) == (1.0, True)
    ordered = ToolCorrectnessMetric(check_ordering=True, strict_mode=True).measure(
        case(["a", "b"], ["b", "a"])
    )
    assert ordered.score == 0.0


def test_metric_names_per_mode():
    assert ToolCorrectnessMetric().metric_name == "tool_correctness"
    assert ToolCorrectnessMetric(exact_match=True).metric_name == "tool_correctness_exact"
    assert ToolCorrectnessMetric(check_ordering=True).metric_name == "tool_correctness_ordering"
    assert (
        ToolCorrectnessMetric(exact_match=True, check_ordering=True).metric_name
        == "tool_correctness_exact_ordering"
    )
    assert (
        ToolCorrectnessMetric(exact_match=True).measure(case(["a"], ["a"])).metric == "tool_correctness_exact"
    )


def test_deepeval_aliases():
    metric = ToolCorrectnessMetric(should_exact_match=True, should_consider_ordering=True, verbose_mode=False)
    assert metric.exact_match and metric.check_ordering
    assert metric.should_exact_match and metric.should_consider_ordering
    assert metric.metric_name == "tool_correctness_exact_ordering"
    with pytest.raises(ValueError, match="contradicts"):
        ToolCorrectnessMetric(exact_match=False, should_exact_match=True)
    assert ToolCorrectnessMetric(exact_match=True, should_exact_match=True).exact_match


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.5", True, None])
def test_threshold_is_validated(bad):
    with pytest.raises((TypeError, ValueError)):
        ToolCorrectnessMetric(threshold=bad)


def test_configuration_is_read_only():
    metric = ToolCorrectnessMetric()
    with pytest.raises(AttributeError):
        metric.threshold = 0.9
    with pytest.raises(AttributeError):
        metric.exact_match = True


def test_unknown_evaluation_param_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown evaluation param 'arguments'"):
        ToolCorrectnessMetric(evaluation_params=["arguments"])


# --- evaluation params --------------------------------------------------------------------------------------


SEARCH_PARIS = ToolCall("search", {"city": "Paris", "stars": 4}, output="3 hotels")


@pytest.mark.parametrize(
    "params", [[ToolCallParams.INPUT_PARAMETERS], ["input_parameters"], "input_parameters"]
)
def test_input_parameters_weight_pairs(params):
    called = [ToolCall("search", {"city": "Paris", "stars": 5}), ToolCall("book", {"id": 1})]
    expected = [SEARCH_PARIS, ToolCall("book", {"id": 1})]
    result = ToolCorrectnessMetric(evaluation_params=params).measure(case(expected, called))
    assert result.score == pytest.approx((0.5 + 1.0) / 2)
    assert "stars" in result.reason
    assert ToolCorrectnessMetric().measure(case(expected, called)).score == 1.0


def test_numbers_compare_numerically_but_bools_are_not_numbers():
    params = {"evaluation_params": ["input_parameters"]}
    assert score([ToolCall("pay", {"amount": 100})], [ToolCall("pay", {"amount": 100.0})], **params) == 1.0
    assert score([ToolCall("pay", {"confirm": True})], [ToolCall("pay", {"confirm": 1})], **params) == 0.0


def test_nested_parameters_count_their_own_fraction():
    expected = [ToolCall("search", {"q": "hotel", "filters": {"city": "Paris", "stars": 4}})]
    called = [ToolCall("search", {"q": "hotel", "filters": {"city": "Paris", "stars": 5}})]
    assert score(expected, called, evaluation_params=["input_parameters"]) == pytest.approx(0.75)


def test_missing_parameters_are_empty_and_two_empties_weigh_one():
    params = {"evaluation_params": ["input_parameters"]}
    assert score([ToolCall("now")], [ToolCall("now", {})], **params) == 1.0
    assert score([ToolCall("search", {"q": "x"})], [ToolCall("search")], **params) == 0.0


def test_output_check_zeroes_a_pair_whose_output_differs():
    expected = [SEARCH_PARIS]
    same_input_other_output = [ToolCall("search", {"city": "Paris", "stars": 4}, output="no hotels")]
    both = {"evaluation_params": ["input_parameters", "output"]}
    assert score(expected, same_input_other_output, **both) == 0.0
    assert score(expected, [SEARCH_PARIS], **both) == 1.0
    assert score(expected, same_input_other_output, evaluation_params=["input_parameters"]) == 1.0
    result = ToolCorrectnessMetric(**both).measure(case(expected, same_input_other_output))
    assert "output" in result.reason


def test_default_mode_takes_the_best_assignment_not_a_greedy_one():
    expected = [ToolCall("search", {"q": "paris", "n": 1}), ToolCall("search", {"q": "rome", "n": 2})]
    called = [ToolCall("search", {"q": "paris", "n": 2}), ToolCall("search", {"q": "lyon", "n": 1})]
    # optimum: e0-c1 (n) + e1-c0 (n) = 1.0 -> 0.5; greedy e0-c0 (q, 0.5) leaves e1-c1 (0) -> 0.25
    assert score(expected, called, evaluation_params=["input_parameters"]) == pytest.approx(0.5)
    expected = [ToolCall("s", {"a": 1, "b": 1}), ToolCall("s", {"a": 1, "b": 2})]
    called = [ToolCall("s", {"a": 1, "b": 2}), ToolCall("s", {"a": 2, "b": 9})]
    # optimum: e1-c0 (1) + e0-c1 (0) = 1.0 -> 0.5; greedy e0-c0 (0.5) leaves e1-c1 (0) -> 0.25
    assert score(expected, called, evaluation_params=["input_parameters"]) == pytest.approx(0.5)


def test_parameter_weighted_lcs():
    expected = [
        ToolCall("search", {"q": "paris"}),
        ToolCall("book", {"id": 7}),
        ToolCall("pay", {"amount": 10}),
    ]
    called = [
        ToolCall("book", {"id": 7}),  # too early
        ToolCall("search", {"q": "paris"}),
        ToolCall("book", {"id": 8}),  # in order, wrong id
        ToolCall("pay", {"amount": 10}),
    ]
    params = {"check_ordering": True, "evaluation_params": ["input_parameters"]}
    # search(1) + book#3 (0) + pay(1) = 2, or book#1(1) + pay(1) = 2: either way 2/3
    assert score(expected, called, **params) == pytest.approx(2 / 3)
    called[2] = ToolCall("book", {"id": 7})
    assert score(expected, called, **params) == pytest.approx(1.0)


def test_exact_match_with_params_needs_equal_fields():
    expected = [ToolCall("search", {"q": "paris"}), ToolCall("book", {"id": 7})]
    called = [ToolCall("book", {"id": 7.0}), ToolCall("search", {"q": "paris"})]
    assert score(expected, called, exact_match=True, evaluation_params=["input_parameters"]) == 1.0
    called[0] = ToolCall("book", {"id": 8})
    result = ToolCorrectnessMetric(exact_match=True, evaluation_params=["input_parameters"]).measure(
        case(expected, called)
    )
    assert result.score == 0.0
    assert "Called with other input parameters: book" in result.reason
    assert score(expected, called, exact_match=True) == 1.0  # names alone still match


# --- reasons and logs ---------------------------------------------------------------------------------------


def test_reason_names_missing_calls_with_multiplicity_and_extra_calls():
    result = ToolCorrectnessMetric().measure(case(["a", "a", "a", "b", "c"], ["a", "x", "x", "y"]))
    assert result.score == pytest.approx(1 / 5)
    assert result.reason == (
        "Matched 1 of 5 expected tool calls. Missing: a ×2, b, c. Extra calls (not penalised): x ×2, y."
    )


def test_reason_for_perfect_and_empty_cases():
    assert (
        ToolCorrectnessMetric().measure(case(["a", "b"], ["b", "a"])).reason
        == "Matched 2 of 2 expected tool calls."
    )
    assert "No tool calls were expected" in ToolCorrectnessMetric().measure(case([], ["a"])).reason
    exact = ToolCorrectnessMetric(exact_match=True)
    assert exact.measure(case([], [])).reason == "No tool calls were expected and none were made."
    assert exact.measure(case([], ["a", "a"])).reason == "No tool calls were expected, but 2 were made: a ×2."


def test_reason_names_the_first_out_of_order_call():
    result = ToolCorrectnessMetric(check_ordering=True).measure(case(["a", "b", "c"], ["c", "b", "a"]))
    assert "First out-of-order call: b (expected #2, called #2)" in result.reason
    assert "Missing" not in result.reason and "Extra" not in result.reason
    assert [p["name"] for p in result.evaluation_log["out_of_order"]] == ["b", "c"]
    mixed = ToolCorrectnessMetric(check_ordering=True).measure(case(["a", "b", "z"], ["b", "a", "q"]))
    assert "First out-of-order call: b" in mixed.reason
    assert "Missing: z." in mixed.reason and "Extra calls (not penalised): q." in mixed.reason


def test_exact_ordering_reason_shows_first_difference():
    metric = ToolCorrectnessMetric(exact_match=True, check_ordering=True)
    swapped = metric.measure(case(["search", "book"], ["book", "search"]))
    assert "all made, but in another order" in swapped.reason
    assert "First difference at call #1: expected search, called book" in swapped.reason
    short = metric.measure(case(["search", "book"], ["search"]))
    assert "First difference at call #2: expected book, called nothing more" in short.reason
    assert "Missing: book" in short.reason


def test_odd_names_are_quoted_in_reasons():
    result = ToolCorrectnessMetric().measure(case(["search "], ["search"]))
    assert "Missing: 'search '." in result.reason


def test_reason_never_prints_unless_verbose(capsys):
    ToolCorrectnessMetric().measure(case(["a"], ["b"]))
    assert capsys.readouterr().out == ""
    ToolCorrectnessMetric(verbose=True).measure(case(["a"], ["b"]))
    out = capsys.readouterr().out
    assert "tool_correctness" in out and "missing:  [a]" in out


def test_include_reason_false_leaves_reason_empty():
    result = ToolCorrectnessMetric(include_reason=False).measure(case(["a"], ["b"]))
    assert result.reason == "" and result.score == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"exact_match": True},
        {"check_ordering": True},
        {"exact_match": True, "check_ordering": True},
        {"evaluation_params": ["input_parameters", "output"]},
    ],
)
def test_evaluation_log_is_json_ready_and_pickles(kwargs):
    result = ToolCorrectnessMetric(**kwargs).measure(
        case([ToolCall("a", {"x": 1}), "b", "b"], ["b", ToolCall("a", {"x": 2}), "c"])
    )
    log = json.loads(json.dumps(result.to_dict()))["evaluation_log"]
    assert log["expected"] == ["a", "b", "b"] and log["called"] == ["b", "a", "c"]
    assert log["expected_count"] == 3
    assert log["raw_score"] == pytest.approx(result.score)
    assert pickle.loads(pickle.dumps(result)) == result


@pytest.mark.parametrize("kwargs", [{}, {"exact_match": True}, {"check_ordering": True}])
def test_lazy_log_is_not_changed_by_later_edits_of_the_case(kwargs):
    c = case(["a", "b"], ["a"])
    result = ToolCorrectnessMetric(**kwargs).measure(c)
    c.tools_called.append(ToolCall("b"))
    c.expected_tools.append(ToolCall("z"))
    assert result.evaluation_log["called"] == ["a"] and result.evaluation_log["expected"] == ["a", "b"]
    assert result.evaluation_log["missing"] == ["b"]


def test_default_log_lists_pairs_by_index():
    log = ToolCorrectnessMetric().measure(case(["a", "b", "a"], ["a", "a", "c"])).evaluation_log
    assert [(p["expected_index"], p["called_index"]) for p in log["matches"]] == [(0, 0), (2, 1)]
    assert log["missing"] == ["b"] and log["extra"] == ["c"]
    assert log["matched_weight"] == 2.0 and log["mode"] == "default"


# --- test cases of every kind -------------------------------------------------------------------------------


def test_missing_expectation_is_skipped_not_scored_zero():
    result = ToolCorrectnessMetric().measure(EvalTestCase("q", "a", tools_called=["a"]))
    assert result.status == "skipped" and result.score is None and result.success is None
    assert "no expected_tools" in result.reason


def test_no_tools_called_means_an_empty_list():
    assert ToolCorrectnessMetric().measure(EvalTestCase("q", "a", expected_tools=["a"])).score == 0.0
    assert (
        ToolCorrectnessMetric(exact_match=True).measure(EvalTestCase("q", "a", expected_tools=[])).score
        == 1.0
    )


def test_structured_tool_calls_are_used_when_tools_called_is_absent():
    traced = EvalTestCase("q", "a", expected_tools=["a", "b"], tool_calls=[ToolCall("a", status="ok")])
    assert ToolCorrectnessMetric().measure(traced).score == 0.5


def test_model_test_case():
    mm = ModelTestCase(
        input=["Draw a cat", MLLMImage(url="https://example.com/cat.png")],
        actual_output=["done"],
        tools_called=[ToolCall("draw_image"), ToolCall("describe_image")],
        expected_tools=[ToolCall("draw_image")],
    )
    assert ToolCorrectnessMetric(exact_match=True).measure(mm).score == 0.0
    assert ToolCorrectnessMetric().measure(mm).score == 1.0


def test_duck_typed_cases_and_hand_edited_lists():
    other_library_case = SimpleNamespace(expected_tools=["a", {"name": "b"}], tools_called=["b"])
    assert ToolCorrectnessMetric().measure(other_library_case).score == 0.5
    edited = case(["a"], ["a"])
    edited.tools_called = ["b"]  # mutated after construction: names, not ToolCalls
    assert ToolCorrectnessMetric(exact_match=True).measure(edited).score == 0.0


def test_a_non_case_is_a_clear_error():
    with pytest.raises(TypeError, match="has no 'expected_tools'"):
        ToolCorrectnessMetric().measure("not a case")
    with pytest.raises(TypeError, match="must be a list of tool calls"):
        ToolCorrectnessMetric().measure(SimpleNamespace(expected_tools="search", tools_called=[]))


def test_equal_calls_are_distinct_calls():
    call = ToolCall("search", {"q": "x"})
    both = case([call, call], [call])
    assert ToolCorrectnessMetric(evaluation_params=["input_parameters"]).measure(both).score == 0.5
    assert (
        ToolCorrectnessMetric(check_ordering=True, evaluation_params=["input_parameters"]).measure(both).score
        == 0.5
    )


# --- the instance: reuse, threads, async, compatibility -----------------------------------------------------


def test_measure_returns_a_result_and_sets_compat_attributes():
    metric = ToolCorrectnessMetric()
    result = metric.measure(case(["a", "b"], ["a"]))
    assert isinstance(result, MetricResult)
    assert (metric.score, metric.success, metric.reason) == (result.score, result.success, result.reason)
    assert metric.is_successful() is True
    assert result.threshold == 0.5 and result.status == "ok" and result.label == "pass"
    assert result.evaluator == "ToolCorrectnessMetric" and result.evaluator_version == "1"


def test_a_measure():
    metric = ToolCorrectnessMetric(check_ordering=True)
    result = asyncio.run(metric.a_measure(case(["a", "b"], ["b", "a"])))
    assert result.score == 0.5 and metric.score == 0.5


def test_one_instance_scores_many_cases_from_many_threads():
    metric = ToolCorrectnessMetric(check_ordering=True)
    cases = [case(["a"] * (k % 4 + 1), ["a"] * (k % 3)) for k in range(400)]
    expected = [min(k % 4 + 1, k % 3) / (k % 4 + 1) for k in range(400)]
    barrier = threading.Barrier(4)

    def run(chunk):
        barrier.wait()
        return [metric.measure(c).score for c in chunk]

    with ThreadPoolExecutor(4) as pool:
        chunks = list(pool.map(run, [cases[k::4] for k in range(4)]))
    got = [None] * 400
    for k in range(4):
        got[k::4] = chunks[k]
    assert got == pytest.approx(expected)


def test_deterministic_metrics_never_import_litellm():
    code = (
        "import sys\n"
        "import agentotel_eval\n"
        "from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric\n"
        "from agentotel_eval.metrics.multimodal_tool_correctness import MultimodalToolCorrectnessMetric\n"
        "from agentotel_eval.evaluate import evaluate_sync\n"
        "from agentotel_eval.test_case import EvalTestCase\n"
        "r = evaluate_sync([EvalTestCase('q', tools_called=['a'], expected_tools=['a'])],"
        " [ToolCorrectnessMetric(), MultimodalToolCorrectnessMetric()], show_progress=False)\n"
        "assert r.cases[0].success\n"
        "print('litellm' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


# --- properties ---------------------------------------------------------------------------------------------

names_st = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=6)
calls_st = st.lists(
    st.builds(
        lambda name, x, out: ToolCall(name, {"x": x} if x is not None else None, output=out),
        st.sampled_from("abc"),
        st.one_of(st.none(), st.integers(0, 2)),
        st.sampled_from([None, "ok"]),
    ),
    max_size=6,
)
PARAMS = ["input_parameters", "output"]


def modes(**extra):
    return {
        "default": ToolCorrectnessMetric(**extra),
        "exact": ToolCorrectnessMetric(exact_match=True, **extra),
        "ordering": ToolCorrectnessMetric(check_ordering=True, **extra),
        "exact_ordering": ToolCorrectnessMetric(exact_match=True, check_ordering=True, **extra),
    }


UNWEIGHTED = modes()
WEIGHTED = modes(evaluation_params=PARAMS)


@settings(max_examples=300, deadline=None)
@given(calls_st, calls_st, st.randoms(use_true_random=False))
def test_mode_properties(expected, called, rnd):
    c = case(expected, called)
    s = {name: m.measure(c).score for name, m in UNWEIGHTED.items()}
    w = {name: m.measure(c).score for name, m in WEIGHTED.items()}
    for value in (*s.values(), *w.values()):
        assert 0.0 <= value <= 1.0
    assert s["ordering"] <= s["default"] + 1e-12
    assert w["ordering"] <= w["default"] + 1e-12
    for mode in s:
        assert w[mode] <= s[mode] + 1e-12  # considering more fields never raises a score
    if s["exact"] == 1.0:
        assert s["default"] == 1.0
    if s["exact_ordering"] == 1.0:
        assert s["exact"] == s["ordering"] == 1.0
    if w["exact"] == 1.0:
        assert w["default"] == pytest.approx(1.0)
    if w["exact_ordering"] == 1.0:
        assert w["ordering"] == pytest.approx(1.0)
    # default and exact modes ignore order, of either list
    shuffled_c, shuffled_e = list(called), list(expected)
    rnd.shuffle(shuffled_c)
    rnd.shuffle(shuffled_e)
    other = case(shuffled_e, shuffled_c)
    for table, got in ((UNWEIGHTED, s), (WEIGHTED, w)):
        assert table["default"].measure(other).score == pytest.approx(got["default"])
        assert table["exact"].measure(other).score == got["exact"]


@settings(max_examples=200, deadline=None)
@given(names_st, names_st)
def test_reason_agrees_with_score(expected, called):
    result = ToolCorrectnessMetric().measure(case(expected, called))
    if expected:
        matched = round(result.score * len(expected))
        assert result.reason.startswith(f"Matched {matched} of {len(expected)} expected tool calls.")
        assert ("Missing:" in result.reason) == (matched < len(expected))
        assert len(result.evaluation_log["missing"]) == len(expected) - matched
    assert ("Extra calls" in result.reason) == bool(result.evaluation_log["extra"])


def test_repeated_measures_are_equal_and_results_are_read_only():
    """A metric keeps no state a result depends on: the same case scores the same, on this instance and on a
    new one. Results may be shared between equal cases, so their logs refuse changes, to
    the last nested list."""
    metric = ToolCorrectnessMetric(check_ordering=True)
    c = case(["a", "b", "c"], ["b", "a"])
    first = metric.measure(c)
    assert first.to_dict() == ToolCorrectnessMetric(check_ordering=True).measure(c).to_dict()
    assert metric.measure(case(["a", "b", "c"], ["b", "a"])).to_dict() == first.to_dict()
    log = first.evaluation_log
    assert log["missing"] == ["c"] and log["out_of_order"][0]["name"] == "b"
    with pytest.raises(TypeError):
        log["missing"] = []  # type: ignore[index]
    with pytest.raises(TypeError):
        log["matches"].append("x")
    with pytest.raises(TypeError):
        log["matches"][0]["name"] = "x"
    assert json.loads(json.dumps(log)) == dict(log)  # still JSON, read as plain dicts and lists


def test_evaluation_params_results_are_scored_each_time():
    """With evaluation params the arguments count, so two cases with equal names are
    never given one result."""
    metric = ToolCorrectnessMetric(evaluation_params=["input_parameters"])
    same = metric.measure(case([ToolCall("a", {"x": 1})], [ToolCall("a", {"x": 1})]))
    other = metric.measure(case([ToolCall("a", {"x": 1})], [ToolCall("a", {"x": 2})]))
    assert same.score == 1.0 and other.score < 1.0


def test_names_keep_their_own_type_in_the_log():
    """``1 == True`` in Python: a duck-typed case with such names is scored and logged with its own names."""
    calls = lambda *names: [SimpleNamespace(name=n) for n in names]  # noqa: E731
    metric = ToolCorrectnessMetric(exact_match=True, check_ordering=True)
    one = metric.measure(SimpleNamespace(expected_tools=calls(1), tools_called=calls(1)))
    true = metric.measure(SimpleNamespace(expected_tools=calls(True), tools_called=calls(True)))
    assert one.evaluation_log["expected"] == [1] and type(one.evaluation_log["expected"][0]) is int
    assert type(true.evaluation_log["expected"][0]) is bool


def test_remembered_results_are_bounded(monkeypatch):
    from agentotel_eval.metrics import tool_correctness

    monkeypatch.setattr(tool_correctness, "_MEMO_SIZE", 4)
    metric = ToolCorrectnessMetric()
    for k in range(10):
        metric.measure(case(["t0"], [f"t{k}"]))
        assert len(metric._memo) <= 4
    assert metric.measure(case(["t0"], ["t0"])).score == 1.0
