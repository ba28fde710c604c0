"""Prompt templates, versioned as ``<name>.v<N>.txt`` files next to this module.

A template is changed by adding a new version, never by editing one in place: the version is part of the cache
key and of the metric's evaluator version, so stored scores say which prompt produced them. Placeholders are
``string.Template``'s ``$name``, which leaves the JSON braces of the templates alone.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template


@cache
def load(name: str) -> Template:
    """The template ``<name>.txt`` (``name`` includes the version, e.g. ``tool_errors.v1.system``)."""
    text = resources.files(__name__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    return Template(text)


def render(name: str, **values: object) -> str:
    """Fill a template; a placeholder without a value is an error, not a silent ``$name`` in the prompt."""
    return load(name).substitute({k: str(v) for k, v in values.items()})
