"""The web UI's routes over a real DuckDB database (the store's schema, in memory): which paths are pages,
what each page answers, and why a page cannot be shown."""

from __future__ import annotations

import json
from collections.abc import Iterator

import duckdb
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from agentotel_eval.collector.receive.http.answers import Blocking
from agentotel_eval.collector.ui.routes import SECURITY_HEADERS, UiPages, is_page, is_ui_path, ui_routes
from agentotel_eval.store.query import QueryError, QueryResult, QueryUnavailable, run_query
from agentotel_eval.store.schema import migrate

TRACE, SPAN = "ab" * 16, "cd" * 8


class Database:
    """The store's schema in memory, read through the sealed query layer; counts the statements."""

    def __init__(self) -> None:
        self.con = duckdb.connect()
        migrate(self.con)
        self.reads = 0
        self.error: QueryError | None = None

    def read(self, sql: str, params: object = ()) -> QueryResult:
        self.reads += 1
        if self.error is not None:
            raise self.error
        return run_query(self.con.cursor(), sql, params=params)


@pytest.fixture
def db() -> Iterator[Database]:
    database = Database()
    yield database
    database.con.close()


@pytest.fixture
def pages(db) -> Iterator[UiPages]:
    ui = UiPages(db.read, workers=2)
    yield ui
    ui.close()


@pytest.mark.parametrize(
    "path, ui, page",
    [
        ("/", True, True),
        ("/runs", True, True),
        ("/runs/", True, True),
        (f"/runs/{TRACE}/{SPAN}", True, True),
        (f"/runs/{TRACE}/{SPAN}/", True, True),
        ("/api/runs/latest", True, False),
        ("/static/app.js", True, False),
        ("/static/style.css", True, False),
        ("/favicon.ico", True, False),
        ("/static/other.js", False, False),
        ("/runs/a/b/c", False, False),
        ("/v1/traces", False, False),
        ("/metrics", False, False),
        ("/login", False, False),
    ],
)
def test_which_paths_are_the_ui_s_and_which_of_them_pages(path, ui, page):
    assert is_ui_path(path) is ui and is_page(path) is page


def test_the_pages_of_an_empty_database_render_with_their_security_headers(pages):
    for answer in (pages.overview({}), pages.runs({})):
        assert answer.status == 200 and answer.content_type.startswith("text/html")
        assert answer.headers["Content-Security-Policy"] == SECURITY_HEADERS["Content-Security-Policy"]
        assert b"<html" in answer.body.lower()


def test_the_polled_version_is_json_and_moves_when_a_run_arrives(pages, db):
    first = pages.latest()
    assert first.status == 200 and first.content_type == "application/json"
    before = json.loads(first.body)
    assert before["runs"] == 0 and "version" in before
    db.con.execute("INSERT INTO agent_runs (trace_id, span_id) VALUES (?, ?)", [TRACE, SPAN])
    after = json.loads(pages.latest().body)
    assert after["runs"] == 1 and after["version"] != before["version"]


@pytest.mark.parametrize(
    "trace_id, span_id",
    [
        ("ab" * 15, SPAN),
        (TRACE, "cd" * 7),
        ("zz" * 16, SPAN),
        (TRACE, SPAN + "0"),
        ("", ""),
    ],
)
def test_a_bad_run_address_is_refused_without_reading(pages, db, trace_id, span_id):
    answer = pages.run(trace_id, span_id)
    assert answer.status == 400 and b"Bad run address" in answer.body and db.reads == 0


def test_a_run_not_stored_is_404_naming_it_in_lower_case(pages):
    answer = pages.run(f" {TRACE.upper()} ", SPAN.upper())
    assert answer.status == 404 and TRACE.encode() in answer.body and SPAN.encode() in answer.body


def test_a_bad_filter_is_a_400_page_saying_why(pages):
    for params in ({"since": "someday"}, {"result": "maybe"}, {"page": "0"}):
        answer = pages.runs(params)
        assert answer.status == 400 and b"Bad request" in answer.body, params


def test_a_database_that_cannot_be_read_now_asks_for_a_retry(pages, db):
    db.error = QueryUnavailable("reopening")
    for answer in (pages.overview({}), pages.runs({}), pages.run(TRACE, SPAN), pages.latest()):
        assert answer.status == 503 and answer.headers.get("Retry-After") == "1"
        assert b"reopening" in answer.body
    db.error = QueryError("broken")
    answer = pages.runs({})
    assert answer.status == 500 and "Retry-After" not in answer.headers


def test_the_routes_serve_the_pages_assets_and_favicon(pages):
    blocking = Blocking(2)
    try:
        with TestClient(Starlette(routes=ui_routes(pages, blocking))) as client:
            assert client.get("/runs/").status_code == 200
            assert client.get("/runs", params=[("result", "maybe"), ("result", "pass")]).status_code == 400
            assert client.get(f"/runs/{TRACE}/{SPAN}/").status_code == 404
            script = client.get("/static/app.js")
            assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
            assert script.headers["cache-control"] == "max-age=300" and script.content
            style = client.get("/static/style.css")
            assert style.headers["content-type"].startswith("text/css") and style.content
            assert client.get("/favicon.ico").status_code == 204
            assert client.post("/runs").status_code == 405
    finally:
        blocking.close()
