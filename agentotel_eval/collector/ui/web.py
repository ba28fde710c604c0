"""The web UI as an HTTP listener serves it (``receive.http.app.WebUi``): the pages' routes and the sign-in
routes, the paths that take the sign-in cookie, and the sign-in form as the answer to a page opened without
the token. The listener knows these four, never the pages."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from agentotel_eval.collector.receive.auth import Authenticator
from agentotel_eval.collector.receive.http.answers import Blocking
from agentotel_eval.collector.ui.routes import UiPages, is_page, is_ui_path, ui_routes
from agentotel_eval.collector.ui.sign_in import local_path, sign_in, sign_in_routes


class WebUi:
    def __init__(self, pages: UiPages | None) -> None:
        #: None: only the sign-in routes (a listener with a token and no pages)
        self.pages = pages

    def routes(self, blocking: Blocking, auth: Authenticator | None, *, secure: bool) -> list[BaseRoute]:
        routes: list[BaseRoute] = list(sign_in_routes(auth, secure=secure)) if auth is not None else []
        if self.pages is not None:
            routes += ui_routes(self.pages, blocking)
        return routes

    @staticmethod
    def is_ui_path(path: str) -> bool:
        return is_ui_path(path)

    @staticmethod
    def sign_in_page(request: Request) -> Response | None:
        """The sign-in form for a page a person opened without the token; None for any other request."""
        if request.method in ("GET", "HEAD") and is_page(request.url.path):
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return sign_in(local_path(target))
        return None
