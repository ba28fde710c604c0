import pytest

from agentotel_eval.collector.config import ConfigError
from agentotel_eval.collector.config_scoring import JudgeSettings
from agentotel_eval.collector.config_validation import config_from_mapping
from agentotel_eval.collector.score.judge_policy import judge_decision, over_budget, sample_point
from agentotel_eval.metrics.base import MetricResult
from agentotel_eval.reconstruct.model import AgentRun
from agentotel_eval.test_case import ToolCall


def _run(span_id="cd" * 8, calls=()):
    return AgentRun("ab" * 16, span_id, "a", 1, 2, tool_calls=tuple(calls))


def _result(metric, success, detected=None, could_not_run=(), uncertain=None):
    log = {} if detected is None else {"detected": detected, "could_not_run": list(could_not_run)}
    if uncertain is not None:
        log["uncertain"] = uncertain
    return MetricResult(metric, 1.0 if success else 0.0, success, "", 0.5, evaluation_log=log)


def test_sampling_is_stable_and_close_to_the_rate():
    settings = JudgeSettings(model="m", sample_rate=0.25)
    runs = [_run(f"{i:016x}") for i in range(1, 4001)]
    chosen = [judge_decision(r, [], settings)[0] for r in runs]
    assert chosen == [judge_decision(r, [], settings)[0] for r in runs]
    assert 0.22 < sum(chosen) / len(chosen) < 0.28
    assert all(0 <= sample_point(r.trace_id, r.span_id) < 1 for r in runs[:50])
    assert judge_decision(runs[0], [], JudgeSettings(model="m", sample_rate=0.0)) == (
        False,
        "not sampled (sample_rate=0)",
    )


@pytest.mark.parametrize(
    ("only_when", "run", "results", "expected"),
    [
        (("always",), _run(), [], True),
        (("deterministic_failed",), _run(), [_result("tool_correctness", True)], False),
        (("deterministic_failed",), _run(), [_result("tool_correctness_exact", False)], True),
        (("tool_error",), _run(calls=[ToolCall("a", status="ok")]), [], False),
        (("tool_error",), _run(calls=[ToolCall("a", status="error")]), [], True),
        (("detector_found",), _run(), [_result("tool_errors_detectors", True, detected=False)], False),
        (("detector_found",), _run(), [_result("tool_errors_detectors", False, detected=True)], True),
        (("detector_uncertain",), _run(), [_result("tool_errors_detectors", True, detected=False)], False),
        (
            ("detector_uncertain",),
            _run(),
            [
                _result(
                    "tool_errors_detectors",
                    True,
                    detected=False,
                    could_not_run=["error_handling could not run: the run's final answer is not recorded"],
                )
            ],
            True,
        ),
        (
            ("detector_uncertain",),
            _run(),
            [_result("tool_errors_detectors", False, detected=True, could_not_run=["x could not run"])],
            False,
        ),  # found: nothing left for the judge to decide
        # a finding the detectors are not sure of is the judge's to decide; one they are sure of is not
        (
            ("detector_uncertain",),
            _run(),
            [_result("tool_errors_detectors", True, detected=True, uncertain=True)],
            True,
        ),
        (
            ("detector_found",),
            _run(),
            [_result("tool_errors_detectors", True, detected=True, uncertain=True)],
            False,
        ),
        (
            ("detector_uncertain",),
            _run(),
            [_result("tool_errors_detectors", False, detected=True, uncertain=False)],
            False,
        ),
        (("tool_error", "deterministic_failed"), _run(), [_result("tool_correctness", False)], True),
    ],
)
def test_only_when(only_when, run, results, expected):
    decision, reason = judge_decision(run, results, JudgeSettings(model="m", only_when=only_when))
    assert decision is expected
    assert (reason == "") is expected


def test_budget():
    settings = JudgeSettings(model="m", max_cost_usd_per_day=1.0)
    assert over_budget(0.99, settings) is None
    assert "daily judge budget reached" in over_budget(1.0, settings)
    assert over_budget(1e9, JudgeSettings(model="m")) is None


def _scoring_config(data):
    """The scoring sections parsed the way the collector parses its TOML."""
    return config_from_mapping(data).validate().scoring_config()


def test_config_from_dict_and_errors(tmp_path):
    config = _scoring_config(
        {
            "scoring": {"modes": ["default", "ordering"], "threshold": 0.8},
            "judge": {
                "model": "openai/gpt-4o-mini",
                "sample_rate": 0.5,
                "error_types": ["sequence_error"],
                "only_when": "tool_error",
                "api_base": "http://127.0.0.1:9/v1",
                "max_cost_usd_per_day": 2,
            },
            "forward": {"url": "grpc://127.0.0.1:4317", "headers": {"x-key": "v"}},
            "expectations": [{"agent": "a", "expected_tools": ["t"]}],
        }
    )
    assert config.scoring.modes == ("default", "ordering") and config.scoring.threshold == 0.8
    assert config.judge.only_when == ("tool_error",) and config.judge.llm_kwargs == {
        "api_base": "http://127.0.0.1:9/v1"
    }
    assert config.forward.resolved_protocol() == "grpc" and config.forward.headers == {"x-key": "v"}
    assert config.expectations[0].expected_tools == ("t",)
    for bad, message in [
        ({"judge": {"sample_rate": 0.5}}, r"^judge: model is required"),
        ({"judge": {"model": "m", "sample_rate": 2}}, r"^judge\.sample_rate: must be between 0\.0 and 1\.0"),
        (
            {"judge": {"model": "m", "error_types": ["typo"]}},
            r"^judge\.error_types: unknown error_types \['typo'\]",
        ),
        ({"judge": {"model": "m", "modle": "x"}}, r"^judge\.modle: unknown setting \(known here: api_base, "),
        ({"judge": {"model": "m", "only_when": ["sometimes"]}}, r"^judge\.only_when: must be some of"),
        ({"scoring": {"modes": ["fuzzy"]}}, r"unknown mode\(s\) \['fuzzy'\]"),
        ({"forward": {"url": "ftp://x"}}, "forward.url must be like"),
        ({"forward": {"url": "http://x:4318", "retries": 3}}, r"^forward\.retries: unknown setting"),
        ({"expectations": [{"agent": "a"}]}, "expected_tools or a trajectory table is required"),
        ({"dataset": str(tmp_path / "nope.jsonl")}, r"nope\.jsonl"),
    ]:
        with pytest.raises(ConfigError, match=message):
            _scoring_config(bad)
