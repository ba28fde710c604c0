"""The UI's paths are declared once: the routes served are those ``is_ui_path`` and ``is_page`` answer for
(the token check and the sign-in form rely on them), so a path cannot be served without its cookie and
sign-in, nor the reverse."""

from __future__ import annotations

from typing import Any, cast

import pytest
from starlette.routing import Match, Route

from agentotel_eval.collector.ui.routes import UI_PATHS, is_page, is_ui_path, ui_routes

TRACE, SPAN = "ab" * 16, "cd" * 8
#: paths near the UI's that are not its own, and one of each of its own (templates filled in)
PATHS = [
    "/",
    "/runs",
    "/runs/",
    f"/runs/{TRACE}/{SPAN}",
    f"/runs/{TRACE}/{SPAN}/",
    "/runs/x/y",
    "/runs/x",
    f"/runs/{TRACE}/{SPAN}/more",
    "/runs//",
    "/api/runs/latest",
    "/api/runs",
    "/static/style.css",
    "/static/app.js",
    "/static/other.css",
    "/favicon.ico",
    "/v1/traces",
    "/metrics",
    "/healthz",
    "/query",
    "",
    "/RUNS",
]


def _routes() -> list[Route]:
    return ui_routes(cast(Any, None), cast(Any, None))  # pages and threads are not needed to match a path


def _served(path: str) -> Route | None:
    routes = _routes()
    scope = {"type": "http", "method": "GET", "path": path, "root_path": ""}
    return next((r for r in routes if isinstance(r, Route) and r.matches(scope)[0] is Match.FULL), None)


@pytest.mark.parametrize("path", PATHS)
def test_a_path_is_the_uis_exactly_when_a_ui_route_serves_it(path: str) -> None:
    assert is_ui_path(path) is (_served(path) is not None)


def test_every_declared_path_is_served_and_the_pages_are_html() -> None:
    served = [route.path for route in _routes()]
    assert served == [p.path for p in UI_PATHS]
    assert [p for p in PATHS if is_page(p)] == [
        "/",
        "/runs",
        "/runs/",
        f"/runs/{TRACE}/{SPAN}",
        f"/runs/{TRACE}/{SPAN}/",
        "/runs/x/y",
    ]
    assert not any(
        is_page(p) for p in ("/api/runs/latest", "/static/style.css", "/favicon.ico", "/v1/traces")
    )
