"""Presets: a peer's trajectory mode in one line, over a plain ``expected_tools`` list.

    { preset = "adk:IN_ORDER", expected_tools = ["search", { tool = "book", args = { id = "h1" } }] }

Each preset is a spec like any other (steps, ``extra``, a threshold), so its result has the same details:

=====================  =======================================================================================
``langchain:strict``   the same calls in the same order, nothing else (agentevals ``trajectory_strict_match``)
``langchain:unordered``  the same calls in any order, nothing else (``trajectory_unordered_match``)
``langchain:subset``   every call is one of the expected ones, none needed (``trajectory_subset_match``)
``langchain:superset``  every expected call was made, others allowed (``trajectory_superset_match``)
``adk:EXACT``          the same calls in the same order, nothing else (ADK ``TrajectoryEvaluator``)
``adk:IN_ORDER``       the expected calls in order, others allowed between them
``adk:ANY_ORDER``      the expected calls in any order, others allowed
``default``            today's ``tool_correctness``: the fraction of expected calls made (threshold as set)
``exact``              today's ``tool_correctness_exact``: the same calls, order ignored
``ordering``           today's ``tool_correctness_ordering``: the longest in-order part (threshold as set)
=====================  =======================================================================================

An entry that is a list is one LLM turn's calls (``expected_tools = ["search", ["get_order", "get_user"]]``).
``langchain:strict`` compares turn by turn, as agentevals compares messages: each entry is an LLM turn of its
own (``separate_turns``: two entries answered in one turn fail), and a list's calls come in any order among
themselves from one turn (a ``parallel`` group). ADK has no turns: its presets read a list's calls in the
order written. The other presets are order-free and a list's calls simply join the others; ``ordering`` keeps
a list as a ``parallel`` group.

Peers compare a call's arguments whole: where an entry gives ``args``, the peers' presets check them exactly
(``strict_args``: no other keys); an entry with a name only leaves the arguments free. An entry's ``args`` may
use matchers (``$regex``, ``$approx``, ...), like agentevals' per-tool argument overrides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentotel_eval.trajectory.matchers import SpecError

#: preset -> (group of the expected calls, each call optional, extra calls, threshold, exact arguments, turns:
#: "separate" (each entry its own LLM turn, a list a parallel group), "parallel" (a list a parallel group
#: where order counts), "flat" (a list's calls as written))
PRESETS: dict[str, tuple[str, bool, str, float | None, bool, str]] = {
    "langchain:strict": ("steps", False, "forbid", 1.0, True, "separate"),
    "langchain:unordered": ("unordered", False, "forbid", 1.0, True, "flat"),
    "langchain:subset": ("unordered", True, "forbid", 1.0, True, "flat"),
    "langchain:superset": ("unordered", False, "ignore", 1.0, True, "flat"),
    "adk:EXACT": ("steps", False, "forbid", 1.0, True, "flat"),
    "adk:IN_ORDER": ("steps", False, "ignore", 1.0, True, "flat"),
    "adk:ANY_ORDER": ("unordered", False, "ignore", 1.0, True, "flat"),
    "default": ("unordered", False, "ignore", None, False, "flat"),
    "exact": ("unordered", False, "forbid", 1.0, False, "flat"),
    "ordering": ("steps", False, "ignore", None, False, "parallel"),
}
_ALIASES = {f"tool_correctness:{mode}": mode for mode in ("default", "exact", "ordering")}


def _entry(value: Any, optional: bool, exact_args: bool, where: str) -> dict[str, Any]:
    if isinstance(value, str):
        step: dict[str, Any] = {"tool": value}
    elif isinstance(value, Mapping):
        name = value.get("tool", value.get("name"))
        if not isinstance(name, str) or not name:
            raise SpecError(f"{where}: an expected call needs a tool name, got {value!r}")
        step = {"tool": name}
        args = value.get("args", value.get("input_parameters", value.get("arguments")))
        if args is not None:
            step["args"] = args
            step["strict_args"] = bool(value.get("strict_args", exact_args))
    else:
        raise SpecError(f"{where}: an expected call is a tool name or {{ tool, args }}, got {value!r}")
    if optional:
        step["optional"] = True
    return step


def expand_preset(body: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The spec a preset means: ``steps``, ``extra`` and ``threshold`` filled in (given ones are kept)."""
    name = body.get("preset")
    name = _ALIASES.get(name, name) if isinstance(name, str) else name
    if name not in PRESETS:
        raise SpecError(f"{where}.preset must be one of {', '.join(PRESETS)}, got {body.get('preset')!r}")
    if "steps" in body:
        raise SpecError(f"{where}: a preset takes expected_tools, not steps")
    tools = body.get("expected_tools")
    if not isinstance(tools, list):
        raise SpecError(
            f"{where}: preset {name!r} needs expected_tools = [...] (tool names or {{ tool, args }})"
        )
    group, optional, extra, threshold, exact_args, turns = PRESETS[name]
    calls: list[dict[str, Any]] = []
    for i, entry in enumerate(tools):
        if isinstance(entry, list):  # one LLM turn's calls: in any order among themselves
            turn = [
                _entry(t, optional, exact_args, f"{where}.expected_tools[{i}][{k}]")
                for k, t in enumerate(entry)
            ]
            if not turn:
                raise SpecError(f"{where}.expected_tools[{i}]: a turn lists at least one call")
            calls.extend(turn if turns == "flat" or len(turn) == 1 else [{"parallel": turn}])
        else:
            calls.append(_entry(entry, optional, exact_args, f"{where}.expected_tools[{i}]"))
    out = {k: v for k, v in body.items() if k not in ("preset", "expected_tools")}
    if not calls or group == "steps":
        out["steps"] = calls
    else:
        out["steps"] = [{"unordered": calls}]
    out.setdefault("extra", extra)
    if turns == "separate" and calls:
        out.setdefault("separate_turns", True)
    if threshold is not None:
        out.setdefault("threshold", threshold)
    return out
