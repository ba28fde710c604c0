"""The one Jinja2 environment the pages and the report are rendered with, built once: the templates in
``agentotel_eval/pages/templates``, compiled on first use and kept; every value escaped unless it is
``Markup``; a name a template does not know is an error, not an empty string.

Templates are laid out for reading; the pages are sent without that layout: when a template is loaded, each
line break and the indentation after it are dropped, so a space that matters is written on its line. A value
prints as it is (``None`` as "None": the view modules give the templates text, ``markup.or_blank``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, Template
from jinja2.ext import Extension
from markupsafe import Markup

from agentotel_eval.pages.markup import fmt_percent, fmt_time

__all__ = ["environment", "macro", "render", "template"]

_LINE_BREAK = re.compile(r"\n[ \t]*")


class JoinLines(Extension):
    """Drop each line break of a template's source, and the indentation after it, before it is compiled."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return _LINE_BREAK.sub("", source)


@functools.cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("agentotel_eval.pages", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        auto_reload=False,  # the templates ship with the package: no file check on every render
        extensions=[JoinLines],
    )
    # Jinja's default globals (range, lipsum, ...) are not used here, and every render copies them into its
    # context: without them a small page renders in a third of the time.
    env.globals.clear()
    env.filters.update(utc=fmt_time, percent=fmt_percent, thousands="{:,}".format)
    return env


@functools.cache
def template(name: str) -> Template:
    """A template, loaded and compiled once (they do not change while the process runs)."""
    return environment().get_template(name)


def render(name: str, **values: Any) -> str:
    """The template ``name`` with ``values``."""
    return template(name).render(values)


def macro(name: str, macro_name: str) -> Callable[..., Markup]:
    """A macro of a template, to call from Python: it returns ``Markup``, escaped as any template output."""
    return getattr(template(name).module, macro_name)
