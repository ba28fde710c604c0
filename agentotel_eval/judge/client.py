"""The one interface between the judge and a model: ``CustomLLMClient``.

Bring any model (a local server, a company gateway, a fake in tests) by subclassing it. The litellm client is
one implementation. Retries, timeouts, concurrency, caching and JSON repair are applied around every client by
the judge runner, so an implementation only makes one call and reports its cost.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from agentotel_eval.judge.errors import PermanentJudgeError

Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


class CustomLLMClient(ABC):
    """A chat model the judge can call.

    ``chat_complete`` makes ONE attempt and returns ``(text, cost_usd_or_None)``. For a transient failure
    raise ``RetryableJudgeError`` (with ``retry_after`` when the server said), or let an exception with a
    ``status_code`` (429, 5xx) or a timeout propagate: the runner retries those. Anything else fails the call.
    """

    @abstractmethod
    async def chat_complete(
        self, messages: Sequence[Message], temperature: float = 0.0
    ) -> tuple[str, float | None]:
        """The assistant's reply text to ``messages``, and what the call cost in USD (None if unknown)."""

    @abstractmethod
    def get_model_name(self) -> str:
        """The model's name, reported in results and part of the cache key."""

    async def prepare(self) -> None:
        """One-time set-up before the first call (an import, a login), run outside the per-attempt timeout."""
        return None

    def cache_identity(self) -> str:
        """What distinguishes this client's answers in the cache; the model name unless overridden."""
        return self.get_model_name()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.get_model_name()!r})"


async def complete_once(
    client: CustomLLMClient, messages: Sequence[Message], temperature: float
) -> tuple[str, float | None]:
    """Call a client and check what it returned; tolerate a sync implementation and a bare string."""
    result: Any = client.chat_complete(list(messages), temperature)
    if inspect.isawaitable(result):
        result = await result
    if isinstance(result, str):
        return result, None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str | type(None)):
        text, cost = result
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float) or cost < 0):
            raise PermanentJudgeError(
                f"{type(client).__name__}.chat_complete returned an invalid cost {cost!r}"
            )
        return text or "", float(cost) if cost is not None else None
    raise PermanentJudgeError(
        f"{type(client).__name__}.chat_complete must return (text, cost_or_None), got {type(result).__name__}"
    )
