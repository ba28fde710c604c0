"""The scoring stage's deterministic part: which metrics a run gets, and the evaluation
rows of their results."""

from __future__ import annotations

import dataclasses

from agentotel_eval.collector.config import default_config
from agentotel_eval.collector.config_scoring import parse_expectations
from agentotel_eval.collector.expectations import MODES
from agentotel_eval.collector.score.stage import DETERMINISTIC_METRICS, RunScorer, result_row
from agentotel_eval.metrics.registry import (
    METRICS,
    TOOL_CORRECTNESS,
    TOOL_CORRECTNESS_EXACT,
    TOOL_CORRECTNESS_ORDERING,
    TOOL_ERRORS_DETECTORS,
    TRAJECTORY,
)
from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.store.rows import evaluations_to_arrow, to_json
from agentotel_eval.test_case import EvalTestCase, ToolCall
from tests.support.fixture_traces import fixtures


def _scorer(expected_tools: list[str], modes: list[str] | None = None) -> RunScorer:
    rule = {"name": "r", "expected_tools": expected_tools, **({"modes": modes} if modes else {})}
    config = dataclasses.replace(default_config(), expectations=parse_expectations([rule]))
    return RunScorer(config.scoring_config())


def test_each_run_gets_tool_correctness_in_the_expectations_modes_and_the_detectors():
    """Over every fixture run: the results are what fresh metrics give on the run against the expectation."""
    scorer = _scorer(["get_weather", "x"], ["default", "ordering"])
    fresh = [
        ToolCorrectnessMetric(),
        ToolCorrectnessMetric(check_ordering=True),
        ToolsErrorMetric(judge=False),
    ]
    runs = [run for fx in fixtures() for run in reconstruct(fx.spans(), fx.logs())]
    assert runs
    for run in runs:
        case, timed = scorer.score(run, scorer.expectation(run))
        assert [c.name for c in case.expected_tools] == ["get_weather", "x"]
        assert case.tools_called == list(run.tool_calls)
        measured = [m.measure(run.to_test_case(expected_tools=["get_weather", "x"])) for m in fresh]
        assert [r.metric for r, _ in timed] == [
            "tool_correctness",
            "tool_correctness_ordering",
            "tool_errors_detectors",
        ]
        assert [r.to_dict() | {"latency_s": None} for r, _ in timed] == [
            r.to_dict() | {"latency_s": None} for r in measured
        ]
        assert all(seconds >= 0 for _, seconds in timed)


def test_a_run_without_expectation_gets_the_detectors_only():
    scorer = RunScorer(default_config().scoring_config())
    run = reconstruct(fixtures()[0].spans(), fixtures()[0].logs())[0]
    expectation = scorer.expectation(run)
    _, timed = scorer.score(run, expectation)
    assert expectation is None and [r.metric for r, _ in timed] == ["tool_errors_detectors"]


def test_a_result_row_stores_the_log_with_the_extra_keys():
    result = ToolCorrectnessMetric().measure(
        EvalTestCase(input="q", tools_called=["a"], expected_tools=["a", "b"])
    )
    row = result_row("t" * 32, "s" * 16, result, 5, 0.25, expectation="rule:r")
    expected = {
        **result.evaluation_log,
        "expectation": "rule:r",
        "metric_version": ToolCorrectnessMetric.version,
    }
    assert row.details == expected
    assert (row.score, row.success, row.reason, row.latency_s) == (0.5, True, result.reason, 0.25)
    stored = evaluations_to_arrow([row]).column("details")[0].as_py()
    assert stored == to_json(expected)


def test_a_detectors_result_follows_a_threshold_changed_after_construction():
    metric = ToolsErrorMetric(judge=False, threshold=0.6)
    case = EvalTestCase(
        input="q",
        tool_calls=[ToolCall("a", status="error", error="boom"), ToolCall("a", status="error", error="boom")],
    )
    result = metric.measure(case)
    assert (result.metric, result.threshold, result.evaluator) == (
        "tool_errors_detectors",
        0.6,
        "ToolsErrorMetric",
    )
    assert result.score == 1.0 and result.success is False and "failed 2 times in a row" in result.reason
    metric.threshold = 1.0  # a deepeval-style change after construction is honoured
    assert metric.measure(case).threshold == 1.0


def test_the_stage_scores_with_the_declared_metrics_at_their_declared_thresholds():
    """Every mode an expectation may ask for, the trajectory and the detectors: each result is the metric its
    declaration builds, at the declared threshold when the configuration sets none."""
    rule = {
        "name": "r",
        "expected_tools": ["get_weather"],
        "modes": list(MODES),
        "trajectory": {"steps": [{"tool": "get_weather"}]},
    }
    config = dataclasses.replace(default_config(), expectations=parse_expectations([rule]))
    scorer = RunScorer(config.scoring_config())
    run = reconstruct(fixtures()[0].spans(), fixtures()[0].logs())[0]
    _, timed = scorer.score(run, scorer.expectation(run))
    results = [r for r, _ in timed]
    assert [r.metric for r in results] == list(DETERMINISTIC_METRICS)
    declared = (
        TOOL_CORRECTNESS,
        TOOL_CORRECTNESS_EXACT,
        TOOL_CORRECTNESS_ORDERING,
        TRAJECTORY,
        TOOL_ERRORS_DETECTORS,
    )
    assert list(DETERMINISTIC_METRICS) == [d.name for d in declared]
    for result in results:
        declaration = METRICS[result.metric]
        assert result.status == "ok" and result.threshold == declaration.threshold, result.metric
        assert result.evaluator == declaration.load().__name__
