"""The test-suite assertions score with the declared metrics: what each reports is the metric its declaration
builds, and the assertion's own threshold takes precedence over a trajectory spec's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentotel_eval.metrics.registry import METRICS, TOOL_ERRORS_DETECTORS, TRAJECTORY, tool_correctness
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.test_case import ToolCall
from agentotel_eval.tracing import testing
from agentotel_eval.tracing.testing import (
    ToolUseAssertion,
    assert_no_tool_errors,
    assert_tool_correctness,
    assert_trajectory,
)

RUN = AgentRun(
    "ab" * 16,
    "cd" * 8,
    "agent",
    1,
    2,
    input="book it",
    tool_calls=(ToolCall("search", {"city": "Paris"}), ToolCall("book", {"hotel": "h1"})),
)


@pytest.fixture
def reported() -> Iterator[list[ToolUseAssertion]]:
    seen: list[ToolUseAssertion] = []
    testing.listeners.append(seen.append)
    try:
        yield seen
    finally:
        testing.listeners.remove(seen.append)


def test_each_assertion_reports_its_declared_metric(reported: list[ToolUseAssertion]) -> None:
    for exact in (False, True):
        for ordering in (False, True):
            assert assert_tool_correctness(RUN, ["search", "book"], exact=exact, ordering=ordering) == 1.0
    assert assert_trajectory(RUN, [{"tool": "search"}, {"tool": "book"}]) == 1.0
    assert_no_tool_errors(RUN)
    assert [r.metric for r in reported] == [
        *(tool_correctness(e, o).name for e in (False, True) for o in (False, True)),
        TRAJECTORY.name,
        TOOL_ERRORS_DETECTORS.name,
    ]
    assert all(r.metric in METRICS and r.success for r in reported)


def test_the_assertions_threshold_takes_precedence_over_the_specs(reported: list[ToolUseAssertion]) -> None:
    spec = {"steps": [{"tool": "search"}, {"tool": "pay"}], "threshold": 0.9}
    with pytest.raises(AssertionError, match=r"^trajectory of agent .*: 0\.50 < 0\.90"):
        assert_trajectory(RUN, spec)
    assert assert_trajectory(RUN, spec, threshold=0.5) == 0.5
    with pytest.raises(AssertionError, match=r"0\.50 < 0\.60"):
        assert_trajectory(RUN, {"steps": spec["steps"]}, threshold=0.6)
    with pytest.raises(AssertionError, match=r"0\.50 < 1\.00"):  # the declared threshold when none is given
        assert_trajectory(RUN, {"steps": spec["steps"]})
    assert [(r.metric, r.score, r.success) for r in reported] == [
        (TRAJECTORY.name, 0.5, False),
        (TRAJECTORY.name, 0.5, True),
        (TRAJECTORY.name, 0.5, False),
        (TRAJECTORY.name, 0.5, False),
    ]
    with pytest.raises(AssertionError, match=r"tool_correctness of agent .*: 0\.50 < 1\.00"):
        assert_tool_correctness(RUN, ["search", "pay"])
