"""The LLM judge layer: model strings, litellm calls, custom clients, JSON repair, cache and cost.

Nothing here imports litellm at import time; ``LiteLLMClient`` imports it on its first call.
"""

from agentotel_eval.judge.cache import ResponseCache, cache_key
from agentotel_eval.judge.client import CustomLLMClient
from agentotel_eval.judge.errors import JudgeError, JudgeOutputError, PermanentJudgeError, RetryableJudgeError
from agentotel_eval.judge.models import to_litellm_model
from agentotel_eval.judge.runner import JudgeOutcome, JudgeRunner, JudgeStats
from agentotel_eval.retry import RetryPolicy

__all__ = [
    "CustomLLMClient",
    "JudgeError",
    "JudgeOutcome",
    "JudgeOutputError",
    "JudgeRunner",
    "JudgeStats",
    "PermanentJudgeError",
    "ResponseCache",
    "RetryPolicy",
    "RetryableJudgeError",
    "cache_key",
    "to_litellm_model",
]
