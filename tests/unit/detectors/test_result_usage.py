"""Results nothing used: reported as low-severity observations apart from the findings,
never in the verdict."""

from __future__ import annotations

from typing import Any

from agentotel_eval import ToolCall
from agentotel_eval.detectors import detect, observations
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.reconstruct import reconstruct
from agentotel_eval.test_case import EvalTestCase
from tests.support.fixture_traces import fixtures


def call(name: str, output: Any, **args: Any) -> ToolCall:
    return ToolCall(name, args, output=output)


def unused(calls: list[ToolCall], answer: str | None) -> list[tuple[str, tuple[int, ...]]]:
    return [(f.subtype, f.call_indices) for f in observations(calls, answer=answer)]


def test_a_result_no_later_step_used_is_an_observation() -> None:
    calls = [
        call("get_weather", {"temp_c": 18, "sky": "clear"}, city="Paris"),
        call("get_news", {"headline": "Louvre closes for renovation works"}, topic="Paris"),
    ]
    assert unused(calls, "It is 18 degrees in Paris.") == [("result_unused", (1,))]
    (found,) = observations(calls, answer="It is 18 degrees in Paris.")
    assert found.severity == "low" and found.to_dict()["severity"] == "low"
    assert found.type == "result_ignored" and found.rule == "result_ignored.unused"
    assert "louvre closes for renovation works" in found.evidence["sample"]


def test_a_result_is_used_by_a_later_argument_a_number_or_its_words() -> None:
    lookup = call("find_user", {"user_id": "u_7731", "name": "Ada"}, email="ada@example.com")
    assert unused([lookup, call("get_orders", [], user_id="u_7731")], "You have no orders.") == []
    price = call("quote", {"total": 1234.5}, sku="A1")
    assert unused([price], "That comes to $1,234.50.") == []
    assert unused([call("weather", "Cairo: 35C sunny", city="Cairo")], "Cairo: 35C, sunny.") == []
    assert unused([call("weather", "Lima: 17C overcast", city="Lima")], "It's overcast there.") == []
    assert unused([price], "That comes to $99.") == [("result_unused", (0,))]


def test_nothing_to_use_or_nothing_recorded_is_never_reported() -> None:
    for output in ("ok", True, [], {"status": "success"}, None):
        assert unused([call("save", output, id="x")], "Saved.") == []
    failed = ToolCall("get_news", {}, status="error", error="timeout")
    assert unused([failed], "Sorry, the news service timed out.") == []
    weather = call("get_weather", {"temp_c": 18}, city="Paris")
    assert unused([weather], None) == [] and unused([weather], "  ") == []


def test_observations_never_change_the_verdict() -> None:
    case = EvalTestCase(
        input="Weather in Paris?",
        actual_output="I could not say.",
        tools_called=[call("get_weather", {"temp_c": 18, "sky": "clear"}, city="Paris")],
    )
    result = ToolsErrorMetric(judge=False).measure(case)
    log = result.evaluation_log
    assert result.success and result.score == 0.0 and log["detected"] is False and log["detectors"] == []
    assert [f["subtype"] for f in log["informational"]] == ["result_unused"]
    assert detect(case.tools_called, answer=case.actual_output) == []
    only_params = ToolsErrorMetric(judge=False, error_types=["parameter_error"]).measure(case)
    assert only_params.evaluation_log["informational"] == []  # result_ignored not selected


def test_recorded_fixture_runs_mostly_use_their_results() -> None:
    """Real runs answer from their results: a handful of observations over every fixture, no findings."""
    metric = ToolsErrorMetric(judge=False)
    runs = observed = 0
    for fx in fixtures():
        for run in reconstruct(fx.spans()):
            log = metric.measure(run.to_test_case()).evaluation_log
            runs += 1
            observed += len(log["informational"])
            assert log["detectors"] == [], fx.name
            if fx.lost_arguments():  # a lost value is not a missing argument
                assert any("keeps only some argument values" in n for n in log["could_not_run"]), fx.name
    assert runs > 100 and observed <= runs // 20
