"""The web UI's routes: the overview (``/``), the runs table (``/runs``), a run (``/runs/<trace>/<span>``),
the version the pages poll (``/api/runs/latest``) and their assets. Pages read the database through ``read``
(the collector's sealed query surface) on the HTTP edge's threads, never on its loop."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, compile_path

from agentotel_eval.access import queries as data
from agentotel_eval.access.filters import FilterError, parse_filters
from agentotel_eval.collector.receive.http.answers import Blocking
from agentotel_eval.pages.markup import asset, server_links
from agentotel_eval.pages.render import message_page, overview_page, run_page, runs_page, version_text
from agentotel_eval.store.query import QueryError, QueryResult

log = logging.getLogger(__name__)

HTML = "text/html; charset=utf-8"
_HEX = re.compile(r"^[0-9a-f]+$")
_STATIC = {
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
}
#: the pages are ours alone: no frames elsewhere, no scripts or styles from anywhere else, no referrer leaked
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True, slots=True)
class UiPath:
    """One path the UI answers (a Starlette path template), the ``UiPages`` answer it gets, and whether it is
    an HTML page a person opens (answered with the sign-in form when a token is required and not given)."""

    path: str
    answer: str  # overview | runs | run | latest | static | favicon
    page: bool


#: every path of the UI, once: ``ui_routes`` serves these and ``is_ui_path`` / ``is_page`` read them
UI_PATHS = (
    UiPath("/", "overview", page=True),
    UiPath("/runs", "runs", page=True),
    UiPath("/runs/", "runs", page=True),
    UiPath("/runs/{trace_id}/{span_id}", "run", page=True),
    UiPath("/runs/{trace_id}/{span_id}/", "run", page=True),
    UiPath("/api/runs/latest", "latest", page=False),
    *(UiPath(path, "static", page=False) for path in _STATIC),
    UiPath("/favicon.ico", "favicon", page=False),
)
_FIXED = {p.path: p for p in UI_PATHS if "{" not in p.path}
_TEMPLATED = tuple((compile_path(p.path)[0], p) for p in UI_PATHS if "{" in p.path)


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)

    def response(self) -> Response:
        return Response(self.body, self.status, headers=self.headers, media_type=self.content_type)


def ui_path(path: str) -> UiPath | None:
    """The UI path that answers ``path``, if any (as the routes match it)."""
    fixed = _FIXED.get(path)
    if fixed is not None:
        return fixed
    return next((p for pattern, p in _TEMPLATED if pattern.match(path)), None)


def is_ui_path(path: str) -> bool:
    return ui_path(path) is not None


def is_page(path: str) -> bool:
    """An HTML page a person opens, as opposed to an asset or the polled JSON."""
    found = ui_path(path)
    return found is not None and found.page


class UiPages:
    """The pages over ``read``, each rendered whole (blocking: DuckDB reads). The overview's independent
    statements run on a small pool of threads (DuckDB runs each on its own cursor and releases the GIL): about
    a fifth less time per overview over 100,000 runs."""

    def __init__(self, read: data.Read, *, workers: int = 4) -> None:
        self._read = read
        self._links = server_links()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentotel-ui")

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _gather(self, tasks: Sequence[Callable[[], QueryResult]]) -> list[QueryResult]:
        futures = [self._pool.submit(task) for task in tasks]
        return [future.result() for future in futures]

    def _html(self, status: int, body: str, headers: Mapping[str, str] | None = None) -> Answer:
        return Answer(status, HTML, body.encode(), {**SECURITY_HEADERS, **(headers or {})})

    def _guarded(self, render: Callable[[], Answer]) -> Answer:
        """A page, or the page that says why it cannot be shown."""
        try:
            return render()
        except FilterError as exc:
            return self._html(400, message_page("Bad request", str(exc), self._links))
        except QueryError as exc:
            status = 503 if exc.kind == "unavailable" else 500
            log.warning("a UI page could not be read: %s", exc)
            headers = {"Retry-After": "1"} if status == 503 else {}
            return self._html(
                status, message_page("Cannot read the database", str(exc), self._links), headers
            )

    def _version(self) -> tuple[dict[str, object], str]:
        latest = data.latest_version(self._read)
        return latest, version_text(latest)

    def latest(self) -> Answer:
        def render() -> Answer:
            latest, version = self._version()
            body = json.dumps({"version": version, **latest}, default=str).encode()
            return Answer(200, "application/json", body, {"Cache-Control": "no-store"})

        return self._guarded(render)

    def overview(self, params: Mapping[str, str]) -> Answer:
        def render() -> Answer:
            _, version = self._version()
            overview = data.read_overview(self._read, parse_filters(params), gather=self._gather)
            return self._html(200, overview_page(overview, self._links, version))

        return self._guarded(render)

    def runs(self, params: Mapping[str, str]) -> Answer:
        def render() -> Answer:
            _, version = self._version()
            return self._html(
                200, runs_page(data.read_runs(self._read, parse_filters(params)), self._links, version)
            )

        return self._guarded(render)

    def run(self, trace_id: str, span_id: str) -> Answer:
        trace_id, span_id = trace_id.strip().lower(), span_id.strip().lower()
        if len(trace_id) != 32 or len(span_id) != 16 or not _HEX.match(trace_id) or not _HEX.match(span_id):
            return self._html(
                400,
                message_page(
                    "Bad run address",
                    "A run is /runs/<trace id: 32 hex digits>/<span id: 16 hex digits>.",
                    self._links,
                ),
            )

        def render() -> Answer:
            _, version = self._version()
            detail = data.read_run(self._read, trace_id, span_id)
            if detail is None:
                return self._html(
                    404,
                    message_page(
                        "No such run",
                        f"No agent run is stored for trace {trace_id}, span {span_id}.",
                        self._links,
                    ),
                )
            return self._html(200, run_page(detail, self._links, version))

        return self._guarded(render)


@cache
def _asset(path: str) -> Answer:
    name, content_type = _STATIC[path]
    return Answer(
        200, content_type, asset(name).encode(), {**SECURITY_HEADERS, "Cache-Control": "max-age=300"}
    )


def ui_routes(pages: UiPages, blocking: Blocking) -> list[Route]:
    """The routes of ``pages``; every page is rendered on ``blocking``'s threads."""

    def params(request: Request) -> dict[str, str]:
        query = request.query_params
        return {key: query.getlist(key)[0] for key in query}  # the first value of each key

    async def overview(request: Request) -> Response:
        return (await blocking.run(pages.overview, params(request))).response()

    async def runs(request: Request) -> Response:
        return (await blocking.run(pages.runs, params(request))).response()

    async def run(request: Request) -> Response:
        trace_id, span_id = request.path_params["trace_id"], request.path_params["span_id"]
        return (await blocking.run(pages.run, trace_id, span_id)).response()

    async def latest(_request: Request) -> Response:
        return (await blocking.run(pages.latest)).response()

    async def static(request: Request) -> Response:
        return _asset(request.url.path).response()

    async def favicon(_request: Request) -> Response:
        return Response(b"", 204, headers={"Cache-Control": "max-age=86400"}, media_type="image/x-icon")

    answers = {
        "overview": overview,
        "runs": runs,
        "run": run,
        "latest": latest,
        "static": static,
        "favicon": favicon,
    }
    return [Route(p.path, answers[p.answer], methods=["GET"]) for p in UI_PATHS]
