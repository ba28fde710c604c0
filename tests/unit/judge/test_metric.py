"""ToolsErrorMetric through a CustomLLMClient: the judge layer without litellm or HTTP."""

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

from agentotel_eval import EvalTestCase, ToolCall, ToolDefinition
from agentotel_eval.judge.client import CustomLLMClient
from agentotel_eval.judge.errors import RetryableJudgeError
from agentotel_eval.metrics.tool_errors import LOG_KEYS, ToolsErrorMetric
from agentotel_eval.retry import RetryPolicy
from agentotel_eval.runtime import judge_cache_dir

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)
CLEAN = {
    "detected": False,
    "confidence": 0.9,
    "reason": "fine",
    "error_types": [],
    "errors": [],
    "error_severity": "none",
}
FOUND = {
    "detected": True,
    "confidence": 0.8,
    "reason": "booked before searching",
    "error_types": ["sequence_error"],
    "errors": [{"type": "sequence_error", "description": "#1 before #2"}],
    "error_severity": "medium",
}


class ScriptedClient(CustomLLMClient):
    """Answers from a script; an Exception in the script is raised; records every call."""

    def __init__(self, *answers, cost=0.001, delay=0.0):
        self.answers = list(answers)
        self.default = json.dumps(CLEAN)
        self.cost = cost
        self.delay = delay
        self.calls = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def chat_complete(self, messages, temperature=0.0):
        self.calls.append((messages, temperature))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            item = self.answers.pop(0) if self.answers else self.default
            if isinstance(item, Exception):
                raise item
            if isinstance(item, tuple):  # (delay, answer)
                await asyncio.sleep(item[0])
                item = item[1]
            return (item if isinstance(item, str) else json.dumps(item)), self.cost
        finally:
            self.in_flight -= 1

    def get_model_name(self):
        return "scripted-judge"


CASE = EvalTestCase(
    input="Book the cheapest flight from Paris to New York.",
    actual_output="Booked flight AF9 for you.",
    tool_calls=[
        ToolCall("book_flight", {"flight_id": "AF9"}, status="ok", output={"confirmation": "X1"}),
        ToolCall("search_flights", {"from": "PAR", "to": "NYC"}, status="ok", output=[{"id": "AF9"}]),
    ],
)


def metric(client, **kw):
    kw.setdefault("retry", FAST)
    kw.setdefault("cache", False)
    return ToolsErrorMetric(client, **kw)


def test_custom_client_result_and_log():
    client = ScriptedClient(FOUND)
    result = metric(client).measure(CASE)
    assert (result.status, result.metric, result.model, result.score, result.success) == (
        "ok",
        "tool_errors",
        "scripted-judge",
        0.8,
        False,
    )
    assert tuple(result.evaluation_log) == LOG_KEYS
    assert result.cost_usd == 0.001 and result.evaluation_log["cost_usd"] == 0.001
    assert result.evaluation_log["model"] == "scripted-judge"
    messages, temperature = client.calls[0]
    assert temperature == 0.0 and [m["role"] for m in messages] == ["system", "user"]
    assert '"flight_id": "AF9"' in messages[1]["content"] and "#2 search_flights" in messages[1]["content"]


def test_score_and_success_semantics():
    below = {**FOUND, "confidence": 0.5}
    result = metric(ScriptedClient(below), threshold=0.7).measure(CASE)
    assert (result.score, result.success) == (0.5, True)  # detected, but not confidently enough to fail
    result = metric(ScriptedClient(CLEAN)).measure(CASE)
    assert (result.score, result.success) == (0.0, True)


def test_repair_retry_then_success():
    client = ScriptedClient("Sure! I think there is an error, confidence high.", FOUND, cost=0.002)
    result = metric(client).measure(CASE)
    assert result.status == "ok" and result.score == 0.8
    assert result.cost_usd == pytest.approx(0.004)  # both answers were paid for
    repair = client.calls[1][0]
    assert repair[-2] == {"role": "assistant", "content": "Sure! I think there is an error, confidence high."}
    assert "could not be used" in repair[-1]["content"] and "no JSON object" in repair[-1]["content"]


def test_still_invalid_after_repair_is_an_error_that_keeps_the_raw_text():
    client = ScriptedClient("no json here", '{"detected": "perhaps", "confidence": 0.5}')
    result = metric(client).measure(CASE)
    assert result.status == "error" and result.score is None and result.success is None
    assert len(client.calls) == 2
    assert result.evaluation_log["raw_response"] == '{"detected": "perhaps", "confidence": 0.5}'
    assert "detected" in result.error and "repair" in result.error
    assert set(LOG_KEYS) <= set(result.evaluation_log)


def test_retryable_client_errors_are_retried_with_retry_after():
    client = ScriptedClient(RetryableJudgeError("busy", retry_after=0.05, status_code=429), FOUND)
    result = metric(client).measure(CASE)
    assert result.status == "ok" and len(client.calls) == 2


def test_a_hanging_client_is_cut_off_by_the_timeout_and_retried():
    client = ScriptedClient((5.0, FOUND), FOUND)
    m = metric(client, timeout=0.1)
    result = m.measure(CASE)
    assert result.status == "ok" and len(client.calls) == 2
    assert m.runner.stats.snapshot()["retries"] == 1


def test_every_attempt_failing_is_an_error_result():
    client = ScriptedClient(*[RetryableJudgeError("down", status_code=503)] * 5)
    result = metric(client).measure(CASE)
    assert result.status == "error" and "after 3 attempt" in result.error and len(client.calls) == 3
    assert result.cost_usd == 0.0  # nothing answered, nothing paid


async def test_concurrency_is_limited_per_metric():
    client = ScriptedClient(delay=0.02)
    m = metric(client, max_concurrency=3)
    results = await asyncio.gather(*(m.a_measure(CASE) for _ in range(20)))
    assert all(r.status == "ok" for r in results)
    assert client.max_in_flight == 3


async def test_sync_measure_works_inside_a_running_loop():
    result = metric(ScriptedClient(FOUND)).measure(CASE)
    assert result.score == 0.8


def test_error_types_filter_shapes_the_prompt():
    client = ScriptedClient(CLEAN)
    metric(client, error_types=["parameter_error", "sequence_error"]).measure(CASE)
    system = client.calls[0][0][0]["content"]
    assert "- parameter_error:" in system and "- sequence_error:" in system
    for other in ("invalid_function", "result_ignored", "repeated_failure", "error_handling"):
        assert f"- {other}:" not in system


def test_cache_hit_makes_no_call(tmp_path):
    client = ScriptedClient(FOUND)
    m = metric(client, cache=tmp_path)
    first, second = m.measure(CASE), m.measure(CASE)
    assert len(client.calls) == 1
    assert first.evaluation_log["detected"] == second.evaluation_log["detected"] is True
    assert (first.cost_usd, second.cost_usd) == (0.001, 0.0)
    assert m.runner.stats.snapshot()["cache_hits"] == 1


def test_invalid_answers_are_not_cached(tmp_path):
    client = ScriptedClient("junk", "junk", FOUND)
    m = metric(client, cache=tmp_path)
    assert m.measure(CASE).status == "error"
    assert m.measure(CASE).status == "ok"  # asked again, not replayed
    assert len(client.calls) == 3


def test_cache_directory_from_the_evaluate_contextvar(tmp_path):
    client = ScriptedClient(FOUND)
    m = ToolsErrorMetric(client, retry=FAST)  # cache=None: inherit
    token = judge_cache_dir.set(tmp_path)
    try:
        m.measure(CASE)
        m.measure(CASE)
        asyncio.run(m.a_measure(CASE))
    finally:
        judge_cache_dir.reset(token)
    assert len(client.calls) == 1 and list(tmp_path.glob("??/*.json"))
    m.measure(CASE)  # outside evaluate(): no cache
    assert len(client.calls) == 2


def test_detectors_only():
    case = EvalTestCase(
        "weather?",
        "It is sunny",
        tool_calls=[ToolCall("get_wether", {"city": "Oslo"}, status="ok")],
        available_tools=[ToolDefinition("get_weather", parameters={"type": "object"})],
    )
    m = ToolsErrorMetric(judge=False)
    result = m.measure(case)
    assert (result.metric, result.model, result.cost_usd, result.status) == (
        "tool_errors_detectors",
        None,
        0.0,
        "ok",
    )
    log = result.evaluation_log
    assert tuple(log) == LOG_KEYS and log["model"] is None
    assert (log["detected"], log["confidence"], log["score"], log["success"]) == (True, 1.0, 1.0, False)
    assert log["errors"][0]["type"] == "invalid_function" and log["detectors"][0]["call_indices"] == [0]
    clean = m.measure(EvalTestCase("q", "a", tools_called=["x"]))
    assert (clean.score, clean.success) == (0.0, True)
    assert "available tools are unknown" in clean.reason


def test_detector_findings_reach_the_judge_and_override_its_denial():
    case = EvalTestCase(
        "weather?",
        "It is sunny",
        available_tools=["get_weather"],
        tool_calls=[ToolCall("get_wether", {"city": "Oslo"}, status="ok", output="sunny")],
    )
    client = ScriptedClient(CLEAN)
    result = metric(client).measure(case)
    assert "[invalid_function] call #1 invokes 'get_wether'" in client.calls[0][0][1]["content"]
    assert (result.score, result.success, result.evaluation_log["detected"]) == (1.0, False, True)
    assert "did not report" in result.reason


def test_bad_cases_are_error_results_with_the_same_keys():
    result = metric(ScriptedClient()).measure(EvalTestCase(input="", actual_output="a"))
    assert result.status == "error" and "input" in result.error
    assert tuple(result.evaluation_log) == LOG_KEYS
    with pytest.raises(TypeError):
        metric(ScriptedClient()).measure("not a case")


def test_sync_custom_client_returning_a_string_is_tolerated():
    class SyncClient(CustomLLMClient):
        def chat_complete(self, messages, temperature=0.0):  # type: ignore[override]
            return json.dumps(FOUND)

        def get_model_name(self):
            return "sync"

    result = ToolsErrorMetric(SyncClient(), cache=False).measure(CASE)
    assert result.status == "ok" and result.cost_usd is None  # cost unknown, said so


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({}, ValueError),  # no model
        ({"model": 42}, TypeError),
        ({"model": "gpt-4o", "threshold": 1.5}, ValueError),
        ({"model": "gpt-4o", "error_types": ["typo_error"]}, ValueError),
        ({"model": "gpt-4o", "error_types": []}, ValueError),
        ({"model": "gpt-4o", "temperature": 0.7}, ValueError),
        ({"model": "gpt-4o", "num_retries": 2, "retry": FAST}, ValueError),
        ({"model": ScriptedClient(), "api_base": "http://x"}, ValueError),
    ],
)
def test_configuration_errors(kwargs, error):
    with pytest.raises(error):
        ToolsErrorMetric(**kwargs)


def test_num_retries_becomes_our_retry_policy():
    m = ToolsErrorMetric("gpt-4o", num_retries=5)
    assert m.runner.retry.max_attempts == 6
    assert "num_retries" not in m.runner.client.llm_kwargs


def test_importing_and_using_the_metric_without_a_judge_call_does_not_import_litellm():
    code = textwrap.dedent("""
        import sys
        import agentotel_eval
        from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
        from agentotel_eval import EvalTestCase
        ToolsErrorMetric("anthropic:claude-3-5-sonnet-latest", api_key="x")
        case = EvalTestCase("q", "a", tools_called=["t"], available_tools=["t"])
        r = ToolsErrorMetric(judge=False).measure(case)
        assert r.status == "ok", r
        print("litellm" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_an_agent_run_is_scored_directly():
    from agentotel_eval.reconstruct.model import AgentRun

    run = AgentRun(
        trace_id="a" * 32,
        span_id="b" * 16,
        agent_name="weather",
        start_time_ns=0,
        end_time_ns=1,
        input="Weather in Atlantis?",
        output="It is sunny.",
        tool_calls=(
            ToolCall("get_weather", {"city": "Atlantis"}, status="error", error="UnknownCity"),
            ToolCall("get_weather", {"city": "Atlantis"}, status="error", error="UnknownCity"),
        ),
        tool_definitions=(
            ToolDefinition("get_weather", parameters={"type": "object", "required": ["city"]}),
        ),
    )
    result = ToolsErrorMetric(judge=False).measure(run)
    assert result.status == "ok" and result.evaluation_log["error_types"] == ["repeated_failure"]
    assert result.evaluation_log["detectors"][0]["call_indices"] == [0, 1]
    assert result.evaluation_log["ai_response"] == "It is sunny."


def test_an_unwritable_cache_costs_a_warning_not_the_verdict(tmp_path, caplog):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    m = metric(ScriptedClient(FOUND, FOUND), cache=blocked)
    assert m.measure(CASE).status == "ok" and m.measure(CASE).status == "ok"
    assert m.runner.stats.snapshot()["cache_write_errors"] == 2
    assert sum("cannot be written" in r.message for r in caplog.records) == 1  # warned once


def test_client_set_up_runs_once_outside_the_attempt_timeout():
    class SlowStart(ScriptedClient):
        prepared = 0

        async def prepare(self):
            SlowStart.prepared += 1
            await asyncio.sleep(0.3)  # longer than the attempt timeout below

    client = SlowStart(FOUND, FOUND)
    m = metric(client, timeout=0.1)
    assert m.measure(CASE).status == "ok" and m.measure(CASE).status == "ok"
    assert SlowStart.prepared == 1 and len(client.calls) == 2 and m.runner.stats.snapshot()["retries"] == 0


def test_client_set_up_failure_is_an_error_result():
    class Broken(ScriptedClient):
        async def prepare(self):
            raise ImportError("no module named 'provider_sdk'")

    result = metric(Broken()).measure(CASE)
    assert result.status == "error" and "set-up failed" in result.error and "provider_sdk" in result.error


def test_detectors_alone_run_without_an_input():
    """A trace recorded without content (no user input) still gets its zero-cost deterministic checks."""
    from agentotel_eval import EvalTestCase, ToolCall, ToolsErrorMetric

    case = EvalTestCase(
        input="", tools_called=[ToolCall("lookup"), ToolCall("nope")], available_tools=["lookup"]
    )
    result = ToolsErrorMetric(judge=False).measure(case)
    assert result.status == "ok" and result.metric == "tool_errors_detectors"
    assert result.evaluation_log["error_types"] == ["invalid_function"]
    assert (
        ToolsErrorMetric("openai/gpt-4o-mini", api_base="http://127.0.0.1:9").measure(case).status == "error"
    )
