"""evaluate() / evaluate_sync(): concurrency, failure isolation, ordering, summaries, cache, progress."""

from __future__ import annotations

import asyncio
import io
import json
import random
from pathlib import Path

import pytest

from agentotel_eval import runtime
from agentotel_eval.evaluate import (
    LONG_INPUT,
    EvaluationResult,
    ProgressBar,
    evaluate,
    evaluate_sync,
    resolve_cache_dir,
    summary_lines,
)
from agentotel_eval.metrics.base import BaseMetric, MetricResult
from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.test_case import EvalTestCase, MLLMImage, ModelTestCase


def case(expected, called, name=None):
    return EvalTestCase("q", "a", tools_called=called, expected_tools=expected, name=name)


class SlowMetric(BaseMetric):
    """An async metric (like the LLM judge) that records how many runs overlap."""

    name = "slow"

    def __init__(self, delay=0.005, jitter=False, cost=None):
        super().__init__()
        self.threshold = 0.5
        self.delay, self.jitter, self.cost = delay, jitter, cost
        self.in_flight = self.peak = 0
        self.seen_cache_dirs: set = set()

    def _measure(self, case):
        raise NotImplementedError

    async def _a_measure(self, case):
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        self.seen_cache_dirs.add(runtime.judge_cache_dir.get())
        try:
            await asyncio.sleep(self.delay * (random.random() if self.jitter else 1))
        finally:
            self.in_flight -= 1
        score = 1.0 if case.name != "bad" else 0.0
        return self._result(score=score, success=score >= 0.5, reason="slow", cost_usd=self.cost)


class ExplodingMetric(BaseMetric):
    name = "exploding"
    threshold = 0.5

    def _measure(self, case):
        if case.name == "boom":
            raise RuntimeError("judge unavailable")
        return self._result(score=1.0, success=True, reason="fine")


def test_reference_usage_with_asyncio_run():
    test_case = EvalTestCase(
        input="Search for hotels in Paris and book the cheapest one.",
        actual_output="I found and booked Hotel Le Marais for $120/night.",
        tools_called=["search_hotels", "sort_by_price", "book_hotel"],
        expected_tools=["search_hotels", "book_hotel"],
    )
    results = asyncio.run(evaluate([test_case], [ToolCorrectnessMetric(threshold=0.5)], show_progress=False))
    assert isinstance(results, EvaluationResult)
    assert len(results) == 1 and results[0].success
    assert results[0]["tool_correctness"].score == 1.0
    assert results.pass_rate == 1.0


def test_every_metric_runs_on_every_case_in_input_order():
    cases = [case(["a"], ["a"] if k % 2 else [], name=f"c{k}") for k in range(30)]
    metrics = [ToolCorrectnessMetric(), SlowMetric(jitter=True), ToolCorrectnessMetric(exact_match=True)]
    result = evaluate_sync(cases, metrics, concurrency=8, show_progress=False)
    assert [c.test_case.name for c in result] == [f"c{k}" for k in range(30)]
    for k, c in enumerate(result):
        assert [r.metric for r in c] == ["tool_correctness", "slow", "tool_correctness_exact"]
        assert c.success is bool(k % 2)
    assert result.passed == 15 and result.failed == 15 and result.pass_rate == 0.5
    assert result.mean_scores == {"tool_correctness": 0.5, "slow": 1.0, "tool_correctness_exact": 0.5}


def test_concurrency_is_bounded_and_used():
    slow = SlowMetric(delay=0.01)
    evaluate_sync([case(["a"], ["a"]) for _ in range(24)], [slow], concurrency=4, show_progress=False)
    assert slow.peak == 4
    serial = SlowMetric(delay=0.001)
    evaluate_sync([case(["a"], ["a"]) for _ in range(5)], [serial], concurrency=1, show_progress=False)
    assert serial.peak == 1


def test_a_failing_metric_is_isolated():
    cases = [case(["a"], ["a"], name="ok1"), case(["a"], ["a"], name="boom"), case(["a"], ["a"], name="ok2")]
    result = evaluate_sync(cases, [ExplodingMetric(), ToolCorrectnessMetric()], show_progress=False)
    boom = result[1]
    assert boom["exploding"].status == "error"
    assert boom["exploding"].error == "RuntimeError: judge unavailable"
    assert "judge unavailable" in boom["exploding"].reason
    assert "RuntimeError" in boom["exploding"].evaluation_log["traceback"]
    assert boom["exploding"].score is None and boom["exploding"].threshold == 0.5
    assert boom["tool_correctness"].score == 1.0  # the other metric still ran
    assert not boom.success and result[0].success and result[2].success
    assert result.errors == 1
    assert result.metrics["exploding"].errors == 1 and result.metrics["exploding"].scored == 2


def test_a_metric_returning_something_else_is_an_error_result():
    class Legacy:
        name = "legacy"

        def measure(self, case):  # deepeval style: returns a float
            return 1.0

    result = evaluate_sync([case(["a"], ["a"])], [Legacy()], show_progress=False)
    assert result[0]["legacy"].status == "error"
    assert "returned float, not a MetricResult" in result[0]["legacy"].error


def test_sync_only_metrics_run_off_the_event_loop():
    import threading

    main = threading.get_ident()

    class SyncOnly:
        name = "sync_only"

        def measure(self, case):
            assert threading.get_ident() != main
            return MetricResult("sync_only", 1.0, True, "ok", 0.5)

    result = evaluate_sync([case(["a"], ["a"])] * 3, [SyncOnly()], show_progress=False)
    assert all(c["sync_only"].status == "ok" for c in result)


def test_skipped_metrics_do_not_fail_a_case():
    no_expectation = EvalTestCase("q", "a", tools_called=["a"])
    result = evaluate_sync([no_expectation], [ToolCorrectnessMetric()], show_progress=False)
    assert result[0]["tool_correctness"].status == "skipped"
    assert result[0].success
    assert result.metrics["tool_correctness"].skipped == 1
    assert result.mean_scores["tool_correctness"] is None


def test_summary_and_total_cost():
    cases = [case(["a"], ["a"]), case(["a"], ["a"], name="bad"), case(["a", "b"], ["a"])]
    result = evaluate_sync(cases, [ToolCorrectnessMetric(), SlowMetric(cost=0.0015)], show_progress=False)
    summary = result.summary()
    assert summary["cases"] == 3 and summary["passed"] == 2 and summary["pass_rate"] == pytest.approx(2 / 3)
    assert summary["metrics"]["tool_correctness"]["mean_score"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert summary["metrics"]["slow"]["pass_rate"] == pytest.approx(2 / 3)
    assert result.total_cost_usd == pytest.approx(0.0045)
    assert summary["total_cost_usd"] == pytest.approx(0.0045)
    json.dumps(result.to_dict())  # JSON-ready
    lines = summary_lines(result)
    assert lines[0].startswith("2/3 cases passed (66.7%)")
    assert any("tool_correctness: mean score 0.833" in line for line in lines)
    assert any("cost: $0.0045" in line for line in lines)


def test_multimodal_cases_serialise_their_text():
    mm = ModelTestCase(
        input=["Draw a cat", MLLMImage(url="https://example.com/cat.png")],
        actual_output=["done"],
        tools_called=["draw_image"],
        expected_tools=["draw_image"],
    )
    result = evaluate_sync([mm], [ToolCorrectnessMetric()], show_progress=False)
    assert result[0].to_dict()["input"] == "Draw a cat [image]"


def test_empty_input():
    result = evaluate_sync([], [ToolCorrectnessMetric()], show_progress=False)
    assert len(result) == 0 and result.pass_rate is None and result.success
    assert summary_lines(result) == ["No test cases."]


@pytest.mark.parametrize(
    ("metrics", "kwargs", "error"),
    [
        ([], {}, ValueError),
        (["not a metric"], {}, TypeError),
        ([ToolCorrectnessMetric()], {"concurrency": 0}, ValueError),
        ([ToolCorrectnessMetric()], {"cache": 3}, TypeError),
    ],
)
def test_bad_arguments(metrics, kwargs, error):
    with pytest.raises(error):
        evaluate_sync([case(["a"], ["a"])], metrics, show_progress=False, **kwargs)


def test_a_single_metric_is_accepted():
    result = evaluate_sync([case(["a"], ["a"])], ToolCorrectnessMetric(), show_progress=False)
    assert result[0].success


async def test_evaluate_sync_inside_a_running_loop():
    result = evaluate_sync([case(["a"], ["b"])], [ToolCorrectnessMetric()], show_progress=False)
    assert not result[0].success


# --- cache --------------------------------------------------------------------------------------------------


def test_cache_dir_is_set_for_the_run_and_reset_after(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTOTEL_CACHE_DIR", raising=False)
    slow = SlowMetric(delay=0)
    evaluate_sync([case(["a"], ["a"])], [slow], show_progress=False)
    assert slow.seen_cache_dirs == {tmp_path / ".agentotel-cache"}
    assert runtime.judge_cache_dir.get() is None
    assert not (tmp_path / ".agentotel-cache").exists()  # nothing is written unless a judge caches

    monkeypatch.setenv("AGENTOTEL_CACHE_DIR", str(tmp_path / "env-cache"))
    slow = SlowMetric(delay=0)
    evaluate_sync([case(["a"], ["a"])], [slow], show_progress=False)
    assert slow.seen_cache_dirs == {tmp_path / "env-cache"}

    slow = SlowMetric(delay=0)
    evaluate_sync([case(["a"], ["a"])], [slow], show_progress=False, cache=tmp_path / "mine")
    assert slow.seen_cache_dirs == {tmp_path / "mine"}

    slow = SlowMetric(delay=0)
    evaluate_sync([case(["a"], ["a"])], [slow], show_progress=False, cache=False)
    assert slow.seen_cache_dirs == {None}


def test_resolve_cache_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTOTEL_CACHE_DIR", "")
    assert resolve_cache_dir(True) == tmp_path / ".agentotel-cache"
    assert resolve_cache_dir("rel") == tmp_path / "rel"
    assert resolve_cache_dir(None) is None


# --- progress -----------------------------------------------------------------------------------------------


def test_progress_for_long_inputs_goes_to_stderr(capsys):
    cases = [case(["a"], ["a"]) for _ in range(LONG_INPUT)]
    evaluate_sync(cases, [ToolCorrectnessMetric()])
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 10  # one line per 10% when stderr is not a terminal
    assert lines[-1].startswith("[" + "#" * 30 + f"] {LONG_INPUT}/{LONG_INPUT} cases (100%)")


def test_no_progress_for_short_inputs_or_when_disabled(capsys):
    evaluate_sync([case(["a"], ["a"])] * 5, [ToolCorrectnessMetric()])
    evaluate_sync([case(["a"], ["a"])] * LONG_INPUT, [ToolCorrectnessMetric()], show_progress=False)
    assert capsys.readouterr().err == ""


class FakeTty(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_redraws_on_a_terminal():
    stream = FakeTty()
    assert ProgressBar.wanted(3, True, stream) and not ProgressBar.wanted(3, False, stream)
    bar = ProgressBar(3, stream=stream, min_interval=0)
    for _ in range(3):
        bar.advance()
    bar.close()
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("3/3 cases (100%) 0.0s\n")
    assert "[##########--------------------] 1/3" in text


def test_progress_bar_throttles_redraws():
    stream = FakeTty()
    bar = ProgressBar(1000, stream=stream, min_interval=3600)
    for _ in range(1000):
        bar.advance()
    assert stream.getvalue().count("\r") == 2  # the first draw and the final one


def test_cache_default_is_relative_to_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTOTEL_CACHE_DIR", raising=False)
    assert resolve_cache_dir(True) == Path.cwd() / ".agentotel-cache"


def test_trajectory_specs_are_scored_offline_and_a_case_without_one_is_skipped():
    from agentotel_eval import EvalTestCase, ToolCall, TrajectoryMetric

    spec = {
        "steps": [{"unordered": [{"tool": "b"}, {"tool": "a", "args": {"n": {"$gte": 2}}}]}],
        "extra": "forbid",
    }
    cases = [
        EvalTestCase(
            input="x", tools_called=[ToolCall("a", {"n": 2}), ToolCall("b")], expected_trajectory=spec
        ),
        EvalTestCase(
            input="y", tools_called=[ToolCall("a", {"n": 1}), ToolCall("b")], expected_trajectory=spec
        ),
        EvalTestCase(input="z", tools_called=[ToolCall("a")]),
    ]
    results = [case.results[0] for case in evaluate_sync(cases, [TrajectoryMetric()]).cases]
    assert [(r.score, r.success, r.status) for r in results] == [
        (1.0, True, "ok"),
        (0.5, False, "ok"),
        (None, None, "skipped"),
    ]
    assert "extra_forbidden" in [v["type"] for v in results[1].evaluation_log["violations"]]
    assert repr(cases[0].expected_trajectory).startswith('TrajectorySpec({"steps":[{"unordered"')
