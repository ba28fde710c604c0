import pytest

from agentotel_eval.judge.models import known_provider, to_litellm_model


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        # litellm names pass through untouched
        ("gpt-4o", "gpt-4o"),
        ("openai/gpt-4o-mini", "openai/gpt-4o-mini"),
        ("anthropic/claude-3-5-sonnet-latest", "anthropic/claude-3-5-sonnet-latest"),
        ("ollama/llama3:8b", "ollama/llama3:8b"),
        (
            "bedrock/anthropic.claude-3-sonnet-20240229-v1:0",
            "bedrock/anthropic.claude-3-sonnet-20240229-v1:0",
        ),
        # the provider:model form of the reference document
        ("anthropic:claude-3-5-sonnet-latest", "anthropic/claude-3-5-sonnet-latest"),
        ("google:gemini-2.0-flash", "gemini/gemini-2.0-flash"),
        ("ollama:llama3", "ollama/llama3"),
        ("ollama:llama3:8b", "ollama/llama3:8b"),  # split on the first colon only
        ("openai:gpt-4o", "openai/gpt-4o"),
        ("OpenAI:gpt-4o", "openai/gpt-4o"),
        ("google-vertex:gemini-1.5-pro", "vertex_ai/gemini-1.5-pro"),
        ("groq:llama-3.1-8b-instant", "groq/llama-3.1-8b-instant"),
        ("  mistral:mistral-large-latest ", "mistral/mistral-large-latest"),
        # colons that belong to the model name, not to a provider prefix
        ("ft:gpt-4o-mini:my-org::abc123", "ft:gpt-4o-mini:my-org::abc123"),
        ("anthropic.claude-3-haiku-20240307-v1:0", "anthropic.claude-3-haiku-20240307-v1:0"),
        ("llama3:8b", "llama3:8b"),
    ],
)
def test_model_strings(given, expected):
    assert to_litellm_model(given) == expected


def test_known_provider_aliases():
    assert known_provider("google") == "gemini"
    assert known_provider("gemini") == "gemini"
    assert known_provider("llama3") is None


@pytest.mark.parametrize("bad", ["", "   ", "anthropic:", "ollama:  "])
def test_bad_model_strings_are_clear_errors(bad):
    with pytest.raises(ValueError):
        to_litellm_model(bad)


def test_model_must_be_a_string():
    with pytest.raises(TypeError):
        to_litellm_model(42)  # type: ignore[arg-type]
