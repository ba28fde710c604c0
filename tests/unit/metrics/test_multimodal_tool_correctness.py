"""MultimodalToolCorrectnessMetric: the reference-002 API over the shared tool-correctness scoring."""

from __future__ import annotations

import asyncio

import pytest

from agentotel_eval.evaluate import evaluate_sync
from agentotel_eval.metrics.multimodal_tool_correctness import MultimodalToolCorrectnessMetric
from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.test_case import EvalTestCase, MLLMImage, ModelTestCase, ToolCall


def mm_case(expected, called):
    return ModelTestCase(
        input=["Draw a cat and then describe it.", MLLMImage(url="https://example.com/ref.png")],
        actual_output=["Image generated and described.", MLLMImage(url="https://example.com/cat.png")],
        tools_called=[ToolCall(**c) if isinstance(c, dict) else ToolCall(c) for c in called],
        expected_tools=[ToolCall(**c) if isinstance(c, dict) else ToolCall(c) for c in expected],
    )


@pytest.mark.parametrize(
    ("kwargs", "expected", "called", "score", "name"),
    [
        (
            {},
            ["draw_image", "describe_image"],
            ["draw_image", "describe_image"],
            1.0,
            "multimodal_tool_correctness",
        ),
        ({}, ["draw_image", "describe_image"], ["draw_image"], 0.5, "multimodal_tool_correctness"),
        (
            {"should_exact_match": True},
            ["draw_image"],
            ["draw_image", "upscale"],
            0.0,
            "multimodal_tool_correctness_exact",
        ),
        (
            {"should_consider_ordering": True},
            ["draw_image", "describe_image"],
            ["describe_image", "draw_image"],
            0.5,
            "multimodal_tool_correctness_ordering",
        ),
        (
            {"should_exact_match": True, "should_consider_ordering": True},
            ["a", "b"],
            ["a", "b"],
            1.0,
            "multimodal_tool_correctness_exact_ordering",
        ),
    ],
)
def test_modes_score_like_the_text_metric(kwargs, expected, called, score, name):
    case = mm_case(expected, called)
    result = MultimodalToolCorrectnessMetric(**kwargs).measure(case)
    assert result.score == score and result.metric == name
    text = ToolCorrectnessMetric(
        exact_match=kwargs.get("should_exact_match", False),
        check_ordering=kwargs.get("should_consider_ordering", False),
    ).measure(case)
    assert text.score == result.score and text.reason == result.reason


def test_evaluation_params():
    expected = [{"name": "draw_image", "input_parameters": {"subject": "cat", "style": "photo"}}]
    called = [{"name": "draw_image", "input_parameters": {"subject": "cat", "style": "sketch"}}]
    metric = MultimodalToolCorrectnessMetric(evaluation_params=["input_parameters"])
    assert metric.measure(mm_case(expected, called)).score == 0.5


def test_include_reason_false_leaves_the_reason_empty():
    metric = MultimodalToolCorrectnessMetric(include_reason=False)
    metric.measure(mm_case(["a"], ["b"]))
    assert metric.reason == "" and metric.score == 0.0 and not metric.is_successful()
    assert metric.evaluation_log["missing"] == ["a"]  # the details are still there


def test_strict_mode():
    metric = MultimodalToolCorrectnessMetric(threshold=0.1, strict_mode=True)
    assert metric.measure(mm_case(["a", "b"], ["a"])).score == 0.0
    assert metric.threshold == 1.0 and not metric.is_successful()


def test_verbose_mode_prints_the_steps(capsys):
    MultimodalToolCorrectnessMetric(verbose_mode=True).measure(mm_case(["a", "b"], ["a"]))
    out = capsys.readouterr().out
    assert "[multimodal_tool_correctness] score=0.5" in out and "missing:  [b]" in out
    MultimodalToolCorrectnessMetric().measure(mm_case(["a"], ["a"]))
    assert capsys.readouterr().out == ""


def test_async_mode_and_a_measure():
    for async_mode in (True, False):
        metric = MultimodalToolCorrectnessMetric(async_mode=async_mode)
        assert asyncio.run(metric.a_measure(mm_case(["a"], ["a"]))).score == 1.0
        assert metric.measure(mm_case(["a"], ["b"])).score == 0.0


def test_model_is_accepted_but_never_called():
    metric = MultimodalToolCorrectnessMetric(model="openai/gpt-4o")
    result = metric.measure(mm_case(["a"], ["a"]))
    assert result.model is None and result.cost_usd is None and metric.model == "openai/gpt-4o"


def test_works_on_text_cases_and_in_evaluate():
    text_case = EvalTestCase("q", "a", tools_called=["a"], expected_tools=["a", "b"])
    result = evaluate_sync(
        [text_case, mm_case(["a"], ["a"])], [MultimodalToolCorrectnessMetric()], show_progress=False
    )
    assert [c.results[0].score for c in result] == [0.5, 1.0]
