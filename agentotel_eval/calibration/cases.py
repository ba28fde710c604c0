"""A labelled case: one agent run (the user's request, the tools offered, the calls with their results, the
final answer) and the tool-use error types it really contains. Plain data: suites build them, ``spans`` turns
them into OTLP spans, ``runner`` scores them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentotel_eval.detectors.types import (
    TABLE_ORDER as ERROR_TYPES,  # the six types, in the order tables show them
)


@dataclass(frozen=True, slots=True)
class CaseCall:
    """One tool call. ``arguments`` is what the model sent (a dict, or a string that is not JSON); ``error``,
    when set, makes the call a failed one (its message, as the tool raised it); ``result`` is what it
    returned. ``executed=False``: the model requested it and it never ran; ``requested=False``: it ran with no
    request. ``turn``: which LLM turn (0-based) requested it; calls of one turn run in parallel."""

    name: str
    arguments: Mapping[str, Any] | str
    result: Any = None
    error: str | None = None
    call_id: str = ""
    executed: bool = True
    requested: bool = True
    turn: int = 0


@dataclass(frozen=True, slots=True)
class LabelledCase:
    """``labels``: the error types present (empty for a clean run). ``operator``: the mutation that made it
    ("none" for the original). ``tools``: function definitions as an OpenAI-style API receives them
    (``{"name", "description", "parameters"}``). ``rules``: ``[[tools]]`` declarations the case is scored
    with. ``oracle``: the source benchmark's own verdict on the case, where it has a checker."""

    id: str
    suite: str
    operator: str
    user_input: str
    tools: tuple[Mapping[str, Any], ...]
    calls: tuple[CaseCall, ...]
    answer: str
    labels: frozenset[str]
    system_prompt: str = ""
    rules: tuple[Mapping[str, Any], ...] = ()
    oracle: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.labels) - set(ERROR_TYPES)
        if unknown:
            raise ValueError(
                f"case {self.id}: unknown error types {sorted(unknown)}; known: {', '.join(ERROR_TYPES)}"
            )
