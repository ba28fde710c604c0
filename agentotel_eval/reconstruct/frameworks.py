"""Which agent frameworks produced a trace, and the plumbing tools each of them defines.

Frameworks run tools of their own that are not the application's calls: handoffs that move control to another
agent (OpenAI Agents' ``transfer_to_<agent>``, ADK's ``transfer_to_agent``, Semantic Kernel's
``Handoff-transfer_to_<agent>``, LlamaIndex's ``handoff``), answer tools that end a run (smolagents'
``final_answer``), merged-tool spans (ADK's ``(merged tools)``); and some offer a tool to the model under
another name than the one their spans record (CrewAI's display names). Each rule holds only where its
framework is present in the trace, recognised by the instrumentation scopes of its spans, so an application
tool named ``transfer_to_savings`` or ``search web`` in a plain GenAI or OpenInference trace stays a call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentotel_eval.otlp.records import SpanRecord

_NOT_CALLABLE = re.compile(r"[\s()]")


@dataclass(frozen=True, slots=True)
class Framework:
    """One framework's plumbing rules. ``scopes``: substrings of the instrumentation scope
    names that mark it."""

    name: str
    scopes: tuple[str, ...]
    handoff_prefixes: tuple[str, ...] = ()  # a tool named <prefix><agent> hands off to <agent>
    handoff_tools: Mapping[str, str] | None = None  # tool name -> the argument naming the target agent
    answer_tools: frozenset[str] = frozenset()  # the framework's own tool that ends a run with its answer
    merged_tools: bool = False  # a tool span named with spaces or parentheses stands for several calls
    #: its tool spans can say OK for a call that failed (AutoGen's OpenInference instrumentation sets OK
    #: before the error): the result fed back to the model decides
    unreliable_ok: bool = False
    #: it names every tool to the model in snake case (CrewAI: "Delegate work to coworker" and "SearchWeb" are
    #: offered as delegate_work_to_coworker and search_web): a tool span named otherwise stands for that call
    snake_case_names: bool = False


FRAMEWORKS: tuple[Framework, ...] = (
    Framework("openai-agents", ("openai_agents", "openai-agents"), handoff_prefixes=("transfer_to_",)),
    Framework(
        "google-adk",
        ("gcp.vertex.agent",),
        handoff_tools={"transfer_to_agent": "agent_name"},
        merged_tools=True,
    ),
    Framework("semantic-kernel", ("semantic_kernel",), handoff_prefixes=("Handoff-transfer_to_",)),
    Framework("autogen", ("autogen",), handoff_prefixes=("transfer_to_",), unreliable_ok=True),
    Framework("llama-index", ("llama_index", "llamaindex"), handoff_tools={"handoff": "to_agent"}),
    Framework("smolagents", ("smolagents",), answer_tools=frozenset({"final_answer"})),
    Framework("dspy", ("dspy",), answer_tools=frozenset({"finish"})),  # ReAct's own tool that ends the loop
    Framework("crewai", ("crewai",), snake_case_names=True),
)


@dataclass(frozen=True, slots=True)
class Plumbing:
    """The plumbing rules of the frameworks present in one trace."""

    frameworks: tuple[Framework, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.frameworks)

    @property
    def unreliable_ok(self) -> bool:
        """Whether a tool span's OK status may hide a failure in this trace (see
        ``Framework.unreliable_ok``)."""
        return any(f.unreliable_ok for f in self.frameworks)

    def kind(self, name: str) -> str | None:
        """ "handoff", "answer" or "internal" when a framework of this trace defines
        ``name`` as its own tool."""
        for f in self.frameworks:
            if name.startswith(f.handoff_prefixes) or (f.handoff_tools and name in f.handoff_tools):
                return "handoff"  # (startswith of an empty tuple is False)
            if name in f.answer_tools:
                return "answer"
            if f.merged_tools and not name.isidentifier() and _NOT_CALLABLE.search(name) is not None:
                return "internal"
        return None

    def model_name(self, name: str) -> str:
        """The name the model knows a tool by, given the name a framework's span records."""
        if not any(f.snake_case_names for f in self.frameworks):
            return name
        return snake_case(name) or name

    def handoff_target(self, name: str, arguments: Mapping[str, Any] | None) -> str | None:
        """The agent a handoff tool moves control to, from its name or its arguments."""
        for f in self.frameworks:
            for prefix in f.handoff_prefixes:
                if name.startswith(prefix):
                    return name[len(prefix) :] or None
            key = f.handoff_tools.get(name) if f.handoff_tools else None
            if key is not None:
                target = arguments.get(key) if arguments else None
                return target if isinstance(target, str) and target else None
        return None

    def handoff_name(self, target: str) -> tuple[str, ...]:
        """The tool names a model calls to hand off to ``target``."""
        return tuple(prefix + target for f in self.frameworks for prefix in f.handoff_prefixes)


NO_PLUMBING = Plumbing()

_CAMEL_UPPER_LOWER = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_LOWER_UPPER = re.compile(r"([a-z])([A-Z])")
_NOT_WORD = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=1024)
def snake_case(name: str) -> str:
    """``Delegate work to coworker`` -> ``delegate_work_to_coworker`` (camel case split, lower case, anything
    else one underscore), as CrewAI offers its tools to the model."""
    name = _CAMEL_LOWER_UPPER.sub(r"\1_\2", _CAMEL_UPPER_LOWER.sub(r"\1_\2", name)).lower().replace("'", "")
    return _NOT_WORD.sub("_", name.replace('"', "")).strip("_")


def plumbing_of(spans: Iterable[SpanRecord]) -> Plumbing:
    """The plumbing rules of the frameworks whose instrumentation scopes appear among these spans."""
    scopes = frozenset(s.scope_name for s in spans)
    return _plumbing_of_scopes(scopes)


@lru_cache(maxsize=1024)
def _plumbing_of_scopes(scopes: frozenset[str]) -> Plumbing:
    found = tuple(f for f in FRAMEWORKS if any(marker in scope for scope in scopes for marker in f.scopes))
    return Plumbing(found) if found else NO_PLUMBING
