"""The sign-in page a collector that requires a token answers to a browser: a browser cannot send a bearer
header, so the page posts the token to ``/login`` and the collector answers with a cookie.

The page needs nothing else from the server (its stylesheet is inline, allowed by its hash in the page's own
Content-Security-Policy): the assets behind ``/static`` require the token too.
"""

from __future__ import annotations

import base64
import functools
import hashlib

from markupsafe import Markup

from agentotel_eval.pages.markup import asset
from agentotel_eval.pages.templating import render

_EXTRA_STYLE = """
form.sign-in { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin-top: 12px; }
form.sign-in input[type=password] { min-width: 320px; }
section.sign-in { max-width: 640px; }
"""


@functools.cache
def _style() -> Markup:
    # our own stylesheet, inserted as it is: escaping would change it, and its hash with it
    return Markup(asset("style.css") + _EXTRA_STYLE)


@functools.cache
def content_security_policy() -> str:
    """Nothing but the page's own inline stylesheet, a form posting to this origin, and no favicon fetch."""
    digest = base64.b64encode(hashlib.sha256(_style().encode()).digest()).decode()
    return (
        f"default-src 'none'; style-src 'sha256-{digest}'; img-src data:; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    )


def sign_in_page(next_path: str, error: str = "") -> str:
    """The form; ``next_path`` is where a right token leads (a local path, checked by the server again)."""
    return render("sign_in.html", next_path=next_path, error=error, style=_style())
