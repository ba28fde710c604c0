"""Model strings: litellm names pass through; the ``provider:model`` form becomes litellm's
``provider/model``.

The colon form is the one of the reference document and of pydantic-ai
(``anthropic:claude-3-5-sonnet-latest``, ``google:gemini-2.0-flash``, ``ollama:llama3:8b``). It is split on
the FIRST colon only, and only when the part before it is a provider we know: model names themselves hold
colons (``llama3:8b``, Bedrock's ``...-v1:0``, OpenAI fine-tunes ``ft:gpt-4o-mini:org::id``), and those must
reach litellm untouched.
"""

from __future__ import annotations

#: litellm provider names accepted before a colon as they are.
LITELLM_PROVIDERS = frozenset(
    {
        "openai",
        "azure",
        "azure_ai",
        "anthropic",
        "gemini",
        "vertex_ai",
        "bedrock",
        "sagemaker",
        "ollama",
        "ollama_chat",
        "mistral",
        "groq",
        "cohere",
        "cohere_chat",
        "together_ai",
        "deepseek",
        "xai",
        "openrouter",
        "fireworks_ai",
        "huggingface",
        "perplexity",
        "cerebras",
        "databricks",
        "watsonx",
        "hosted_vllm",
        "vllm",
        "lm_studio",
        "deepinfra",
        "nvidia_nim",
        "cloudflare",
        "ai21",
        "replicate",
        "anyscale",
        "text-completion-openai",
        "openai_like",
        "litellm_proxy",
        "github",
        "sambanova",
        "nebius",
        "novita",
        "dashscope",
        "moonshot",
    }
)

#: Other spellings of a provider (pydantic-ai's, the reference document's) and the litellm provider they mean.
PROVIDER_ALIASES = {
    "google": "gemini",
    "google-gla": "gemini",
    "google-vertex": "vertex_ai",
    "vertex": "vertex_ai",
    "vertexai": "vertex_ai",
    "grok": "xai",
    "together": "together_ai",
    "fireworks": "fireworks_ai",
    "hf": "huggingface",
    "azure-openai": "azure",
    "mistralai": "mistral",
    "nim": "nvidia_nim",
}


def known_provider(prefix: str) -> str | None:
    """The litellm provider a prefix names, or None when it names none we know."""
    key = prefix.strip().lower()
    if key in LITELLM_PROVIDERS:
        return key
    return PROVIDER_ALIASES.get(key)


def to_litellm_model(model: str) -> str:
    """The litellm model name for a user's model string.

    >>> to_litellm_model("ollama:llama3:8b")
    'ollama/llama3:8b'
    >>> to_litellm_model("google:gemini-2.0-flash")
    'gemini/gemini-2.0-flash'
    >>> to_litellm_model("gpt-4o")
    'gpt-4o'
    """
    if not isinstance(model, str):
        raise TypeError(f"a model name must be a str, got {type(model).__name__}")
    name = model.strip()
    if not name:
        raise ValueError("the model name is empty")
    prefix, colon, rest = name.partition(":")
    if not colon or "/" in prefix:  # no colon, or already litellm's provider/model form
        return name
    provider = known_provider(prefix)
    if provider is None:  # a colon inside a model name (ft:..., bedrock ids): litellm's business
        return name
    if not rest.strip():
        raise ValueError(f"model {model!r} names the provider {prefix!r} but no model after the colon")
    return f"{provider}/{rest.strip()}"
