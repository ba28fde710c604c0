"""The pages' Jinja2 environment: every template compiles, escapes what it prints, refuses a name it does not
know, and drops its layout's line breaks; the sign-in page's inline stylesheet is the
one its policy allows."""

from __future__ import annotations

import base64
import hashlib
import re
from html import unescape

import pytest
from jinja2 import UndefinedError

from agentotel_eval.pages.markup import server_links
from agentotel_eval.pages.render import message_page
from agentotel_eval.pages.sign_in import content_security_policy, sign_in_page
from agentotel_eval.pages.templating import environment, render, template

HOSTILE = """</pre><script>alert("x")</script> 'single' & more"""


def test_every_template_compiles_and_escapes() -> None:
    env = environment()
    names = env.list_templates()
    assert {"layout.html", "overview.html", "runs.html", "run.html", "report.html", "sign_in.html"} <= set(
        names
    )
    for name in names:
        assert template(name) is template(name) is env.get_template(name)  # compiled once
    assert env.autoescape is True and environment() is env
    page = message_page(HOSTILE, HOSTILE, server_links())
    assert "<script>alert" not in page
    ((title, message),) = re.findall(r'<h1>(.*?)</h1><p class="empty">(.*?)</p>', page)
    assert unescape(title) == unescape(message) == HOSTILE


def test_a_name_the_template_does_not_know_is_an_error() -> None:
    with pytest.raises(UndefinedError, match="mesage"):
        environment().from_string("<p>{{ mesage }}</p>").render(message="misspelt in the template")
    with pytest.raises(UndefinedError):  # a page, given less than it uses
        render("message.html", title="t", mesage="misspelt by the caller")


def test_line_breaks_and_indentation_of_a_template_are_not_sent() -> None:
    page = message_page("Bad request", "x", server_links())
    assert "\n" not in page
    assert page.startswith('<!doctype html><html lang="en"><head><meta charset="utf-8">')
    assert (
        '<header><span class="brand">agentotel-eval</span><nav><a href="/" aria-current=page>Overview</a>'
        not in page
    )  # no page is active on an error page
    assert '<nav><a href="/">Overview</a><a href="/runs">Runs</a></nav>' in page


def test_the_sign_in_page_shows_hostile_text_as_text_and_its_style_is_the_allowed_one() -> None:
    page = sign_in_page('/runs?q="><script>alert(1)</script>', HOSTILE)
    assert "<script" not in page
    assert 'value="/runs?q=&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in page
    alert = re.search(r'<p class="error-text" role="alert">(.*?)</p>', page)
    assert alert and unescape(alert.group(1)) == HOSTILE
    (style,) = re.findall(r"<style>(.*?)</style>", page, re.S)
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in content_security_policy()
    assert '"Segoe UI"' in style  # inserted as it is: its quotes are not escaped
