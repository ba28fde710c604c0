"""Random trajectory specs for property tests: tool steps with modifiers, and groups of them."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

GROUPS = ("steps", "unordered", "parallel", "any_of")


def tool_step(tool: str, which: str, low: int, extra: int | None, weight: float, arg: int) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": tool}
    if which == "optional":
        step["optional"] = True
    elif which == "count":
        high = None if extra is None else max(low + extra, 1)
        step["count"] = {"min": low} | ({} if high is None else {"max": high})
    elif which == "weight":
        step["weight"] = weight
    elif which == "args":
        step["args"] = {"x": arg}
    return step


def groups_of(
    children: st.SearchStrategy[dict[str, Any]],
    kinds: tuple[str, ...] = GROUPS,
    modifiers: tuple[str, ...] = ("none", "none", "optional", "weight", "count"),
) -> st.SearchStrategy[dict[str, Any]]:
    def build(kind: str, members: list[dict[str, Any]], which: str) -> dict[str, Any]:
        group: dict[str, Any] = {kind: members}
        if which == "optional":
            group["optional"] = True
        elif which == "weight":
            group["weight"] = 2.0
        elif which == "count":
            group["count"] = {"min": 1, "max": 2}
        return group

    return st.builds(
        build, st.sampled_from(kinds), st.lists(children, min_size=1, max_size=3), st.sampled_from(modifiers)
    )
