"""The litellm client: any provider litellm knows, one attempt per call, with its cost.

litellm is imported on the first call, not with this module: it takes seconds to import, and deterministic
code paths must never pay that. ``LITELLM_LOCAL_MODEL_COST_MAP`` is defaulted first so the import does not try
to fetch a cost map over the network.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval.judge.client import CustomLLMClient, Message
from agentotel_eval.judge.models import to_litellm_model
from agentotel_eval.judge.pricing import is_free

DEFAULT_TIMEOUT_S = 120.0

# Arguments the judge owns: passing them in llm_kwargs would change what the judge is.
_RESERVED = frozenset({"model", "messages", "temperature", "stream", "n"})
# Retry arguments of litellm / the OpenAI SDK: theirs are switched off so the runner's
# retries are the only ones.
RETRY_KWARGS = frozenset({"num_retries", "max_retries"})

_import_lock = threading.Lock()


def import_litellm() -> Any:
    """litellm, imported once, quietly: no "Give Feedback" banner on every retried 429, and none of its INFO
    lines (one a call, "LiteLLM completion() model=...", printed twice under a service that logs at INFO)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with _import_lock:
        import litellm

        litellm.suppress_debug_info = True
        for name in _LITELLM_LOGGERS:
            logger = logging.getLogger(name)
            if logger.level in (logging.NOTSET, logging.INFO, logging.DEBUG) and not os.environ.get(
                "LITELLM_LOG"
            ):
                logger.setLevel(logging.WARNING)  # LITELLM_LOG, litellm's own switch, still turns them on
    return litellm


_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


class LiteLLMClient(CustomLLMClient):
    """Calls ``litellm.acompletion``. ``llm_kwargs`` (api_base, api_key, timeout,
    extra_headers, ...) pass through.

    ``json_mode``: None asks litellm whether the provider supports ``response_format`` and requests a JSON
    object when it does; True/False force it. A provider that rejects the parameter (400 naming
    ``response_format``) is retried once without it, and JSON mode stays off for this client after that.

    A model on a local ``api_base`` (this machine, a private network) costs 0.0 a call unless ``llm_kwargs``
    give litellm a price (``input_cost_per_token``/``output_cost_per_token``): litellm would
    price it by its name.
    """

    def __init__(self, model: str, *, json_mode: bool | None = None, **llm_kwargs: Any) -> None:
        bad = sorted(_RESERVED & set(llm_kwargs))
        if bad:
            raise ValueError(f"llm_kwargs may not set {', '.join(bad)}: the judge controls them")
        retry = sorted(RETRY_KWARGS & set(llm_kwargs))
        if retry:
            raise ValueError(
                f"{', '.join(retry)}: litellm's retries are disabled; configure the judge's retries"
            )
        self.model = to_litellm_model(model)
        self.requested_model = model
        self.llm_kwargs: dict[str, Any] = dict(llm_kwargs)
        self.llm_kwargs.setdefault("timeout", DEFAULT_TIMEOUT_S)
        self._json_mode = json_mode
        self.free = is_free(self.llm_kwargs)

    def get_model_name(self) -> str:
        return self.model

    def cache_identity(self) -> str:
        # The endpoint matters too: the same model name on two servers is two models.
        base = self.llm_kwargs.get("api_base") or self.llm_kwargs.get("base_url") or ""
        return f"{self.model}@{base}" if base else self.model

    @property
    def timeout(self) -> float | None:
        value = self.llm_kwargs.get("timeout")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    async def prepare(self) -> None:
        """Import litellm (seconds, the first time) in a worker thread, so the event loop keeps serving."""
        await asyncio.to_thread(self.json_mode)

    def json_mode(self) -> bool:
        if self._json_mode is None:
            self._json_mode = _supports_json_mode(import_litellm(), self.model, self.llm_kwargs)
        return self._json_mode

    async def chat_complete(
        self, messages: Sequence[Message], temperature: float = 0.0
    ) -> tuple[str, float | None]:
        litellm = import_litellm()
        kwargs: dict[str, Any] = {
            **self.llm_kwargs,
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
            "num_retries": 0,
            "max_retries": 0,
        }
        json_mode = self.json_mode()
        if json_mode:
            kwargs.setdefault("response_format", {"type": "json_object"})
        try:
            response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            if not (json_mode and "response_format" not in self.llm_kwargs and _rejects_response_format(exc)):
                raise
            self._json_mode = False
            kwargs.pop("response_format", None)
            response = await litellm.acompletion(**kwargs)
        return _text_of(response), 0.0 if self.free else _cost_of(litellm, response)


def _supports_json_mode(litellm: Any, model: str, llm_kwargs: Mapping[str, Any]) -> bool:
    try:
        _, provider, _, _ = litellm.get_llm_provider(
            model, custom_llm_provider=llm_kwargs.get("custom_llm_provider")
        )
        params = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider) or []
    except Exception:
        return False
    return "response_format" in params


def _rejects_response_format(exc: BaseException) -> bool:
    return getattr(exc, "status_code", None) in (400, 422) and "response_format" in str(exc).lower()


def _text_of(response: Any) -> str:
    try:
        choice = response.choices[0]
    except (AttributeError, IndexError, TypeError):
        return ""
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    if isinstance(content, list):  # content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _cost_of(litellm: Any, response: Any) -> float | None:
    """litellm's cost for this response: its hidden ``response_cost``, else
    ``completion_cost``; None if unknown."""
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        return float(cost)
    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:
        return None
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
