"""The judge's cost through the real litellm against the local stub (on 127.0.0.1): free unless priced."""

import asyncio

import pytest

from agentotel_eval import EvalTestCase
from agentotel_eval.judge.litellm_client import _cost_of, import_litellm
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from agentotel_eval.retry import RetryPolicy
from tests.support.llm_stub import LLMStub, Reply

pytestmark = pytest.mark.filterwarnings(
    "ignore:Item.*ReadOnly:UserWarning", "ignore:Items.*ReadOnly:UserWarning"
)

CASE = EvalTestCase(input="Weather in Berlin?", actual_output="Sunny.", tools_called=["get_weather"])
CLEAN = {
    "detected": False,
    "confidence": 0.9,
    "reason": "fine",
    "error_types": [],
    "errors": [],
    "error_severity": "none",
}
TOKENS = (120, 40)  # the stub's prompt and completion tokens


@pytest.fixture
def stub():
    with LLMStub(default=Reply.json(CLEAN)) as server:
        yield server


def _measure(stub, **kw):
    metric = ToolsErrorMetric(
        "openai/gpt-4o-mini",
        api_base=stub.base_url,
        api_key="sk-local",
        cache=False,
        retry=RetryPolicy(max_attempts=1),
        **kw,
    )
    result = metric.measure(CASE)
    assert result.status == "ok", result.error
    return result


def test_a_model_on_a_local_server_costs_nothing(stub):
    result = _measure(stub)
    assert result.cost_usd == 0.0 and result.evaluation_log["cost_usd"] == 0.0


def test_a_price_in_the_config_is_what_the_local_model_costs(stub):
    result = _measure(stub, input_cost_per_token=1e-6, output_cost_per_token=2e-6)
    assert result.cost_usd == pytest.approx(TOKENS[0] * 1e-6 + TOKENS[1] * 2e-6)


def test_litellm_still_prices_a_hosted_model_by_its_name(stub):
    """The same response, priced as for a hosted API: litellm's cost map, gpt-4o-mini's rates."""
    litellm = import_litellm()
    response = asyncio.run(
        litellm.acompletion(
            model="openai/gpt-4o-mini",
            api_base=stub.base_url,
            api_key="sk",
            messages=[{"role": "user", "content": "hi"}],
            num_retries=0,
        )
    )
    assert _cost_of(litellm, response) == pytest.approx(TOKENS[0] * 0.15e-6 + TOKENS[1] * 0.60e-6)
