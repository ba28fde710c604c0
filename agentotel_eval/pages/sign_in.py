"""The sign-in page a collector that requires a token answers to a browser: a browser cannot send a bearer header,
so the page posts the token to ``/login`` and the collector answers with a cookie.

The page needs nothing else from the server (its stylesheet is inline, allowed by its hash in the page's own
Content-Security-Policy): the assets behind ``/static`` require the token too.
"""

from __future__ import annotations

import base64
import functools
import hashlib

from agentotel_eval.pages.markup import asset, esc

_EXTRA_STYLE = """
form.sign-in { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin-top: 12px; }
form.sign-in input[type=password] { min-width: 320px; }
section.sign-in { max-width: 640px; }
"""


@functools.cache
def _style() -> str:
    return asset("style.css") + _EXTRA_STYLE


@functools.cache
def content_security_policy() -> str:
    """Nothing but the page's own inline stylesheet, a form posting to this origin, and no favicon fetch."""
    digest = base64.b64encode(hashlib.sha256(_style().encode()).digest()).decode()
    return (f"default-src 'none'; style-src 'sha256-{digest}'; img-src data:; form-action 'self'; "
            "frame-ancestors 'none'; base-uri 'none'")


def sign_in_page(next_path: str, error: str = "") -> str:
    """The form; ``next_path`` is where a right token leads (a local path, checked by the server again)."""
    alert = f'<p class="error-text" role="alert">{esc(error)}</p>' if error else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>Sign in · agentotel-eval</title><link rel="icon" href="data:,">'
        f"<style>{_style()}</style></head>"
        '<body><header><span class="brand">agentotel-eval</span></header>'
        '<main><section class="sign-in"><h1>Sign in</h1>'
        '<p class="muted">This collector requires its token: the one it was started with '
        "(<code>--auth-token</code> or <code>AGENTOTEL_AUTH_TOKEN</code>).</p>"
        f"{alert}"
        '<form class="sign-in" method="post" action="/login">'
        f'<input type="hidden" name="next" value="{esc(next_path)}">'
        '<label for="token">Token</label>'
        '<input id="token" type="password" name="token" autocomplete="current-password" required autofocus>'
        '<button type="submit">Sign in</button></form></section></main></body></html>'
    )
