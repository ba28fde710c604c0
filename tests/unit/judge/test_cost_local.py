"""A judge model on a local api_base costs nothing unless priced; litellm's name-based
price is for the rest."""

import asyncio
from types import SimpleNamespace

import pytest

from agentotel_eval.judge import litellm_client
from agentotel_eval.judge.litellm_client import LiteLLMClient
from agentotel_eval.judge.pricing import has_price, is_free, is_local_endpoint

OPENAI_RATE = 0.0008  # what litellm's map would charge gpt-4o-mini for the call


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://127.8.9.10",
        "http://localhost:11434",
        "http://LOCALHOST.:8080/v1",
        "http://[::1]:8000/v1",
        "http://[::ffff:127.0.0.1]:8000",
        "http://0.0.0.0:8000",
        "127.0.0.1:8000",
        "http://10.1.2.3:8000/v1",
        "https://172.16.0.9/v1",
        "http://192.168.1.20:8080",
        "http://[fd00::5]:8000",
        "http://169.254.10.1",
        "http://[fe80::1%25eth0]:8000",
        "http://vllm:8000/v1",
        "http://gpu-box.local:8000",
        "http://judge.internal/v1",
        "http://llm.home.arpa",
        "http://models.localhost",
    ],
)
def test_local_endpoints(url):
    assert is_local_endpoint(url)


@pytest.mark.parametrize(
    "url",
    [
        None,
        "",
        "   ",
        "https://api.openai.com/v1",
        "https://my-resource.openai.azure.com",
        "http://8.8.8.8/v1",
        "http://[2001:4860:4860::8888]/v1",
        "https://localhost.example.com/v1",
        "http://172.32.0.1",
        "http://[",
    ],
)
def test_remote_or_unknown_endpoints(url):
    assert not is_local_endpoint(url)


def test_a_price_in_the_arguments_is_a_price():
    assert has_price({"input_cost_per_token": 1e-7, "output_cost_per_token": 4e-7})
    assert has_price({"output_cost_per_second": 0.001})
    assert not has_price({"api_base": "http://127.0.0.1:8000/v1", "input_cost_per_token": None})


def test_free_is_local_and_unpriced():
    assert is_free({"api_base": "http://127.0.0.1:8000/v1"})
    assert is_free({"base_url": "http://localhost:8000/v1"})
    assert not is_free({"api_base": "http://127.0.0.1:8000/v1", "input_cost_per_token": 1e-7})
    assert not is_free({"api_base": "https://api.openai.com/v1"})
    assert not is_free({})  # litellm's provider default: a hosted API


class FakeLiteLLM:
    """litellm's surface the client calls: one canned response that litellm priced at OpenAI's rate."""

    def __init__(self):
        self.calls = []

    async def acompletion(self, **kwargs):
        self.calls.append(kwargs)
        message = SimpleNamespace(content='{"detected": false}')
        response = SimpleNamespace(choices=[SimpleNamespace(message=message)])
        response._hidden_params = {"response_cost": OPENAI_RATE}
        return response


@pytest.fixture
def fake_litellm(monkeypatch):
    fake = FakeLiteLLM()
    monkeypatch.setattr(litellm_client, "import_litellm", lambda: fake)
    return fake


def _cost(**llm_kwargs):
    client = LiteLLMClient("openai/gpt-4o-mini", json_mode=False, api_key="sk-local", **llm_kwargs)
    text, cost = asyncio.run(client.chat_complete([{"role": "user", "content": "judge this"}]))
    assert text == '{"detected": false}'
    return cost


@pytest.mark.parametrize(
    "base",
    [
        "http://127.0.0.1:8000/v1",
        "http://localhost:8080/v1",
        "http://[::1]:8000/v1",
        "http://192.168.1.20:8000/v1",
    ],
)
def test_a_local_model_costs_nothing(fake_litellm, base):
    assert _cost(api_base=base) == 0.0


def test_a_local_model_with_a_price_costs_what_litellm_computes_from_it(fake_litellm):
    price = {"input_cost_per_token": 1e-7, "output_cost_per_token": 4e-7}
    assert _cost(api_base="http://127.0.0.1:8000/v1", **price) == OPENAI_RATE
    assert {k: fake_litellm.calls[-1][k] for k in price} == price  # passed on: litellm prices with them


@pytest.mark.parametrize("kwargs", [{}, {"api_base": "https://api.openai.com/v1"}])
def test_a_hosted_model_costs_litellm_s_price(fake_litellm, kwargs):
    assert _cost(**kwargs) == OPENAI_RATE
