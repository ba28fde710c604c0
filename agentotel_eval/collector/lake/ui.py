"""The web UI over the shared lake: the pages a node serves (overview, runs, a run), over every node's rows,
on a read-only server of its own (``agentotel-eval lake ui --config FILE``).

The pages read through the lake's sealed reader (``store.lake.open_reader``): the same SQL as over one node's
file, each query within the ``[query]`` limits. There is no OTLP here and nothing is written; with a token,
every page asks for it as a node's do (the sign-in form, then a cookie).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from agentotel_eval.collector.receive.auth import Authenticator, BearerAuth
from agentotel_eval.collector.receive.http.answers import Blocking
from agentotel_eval.collector.receive.http.app import refusal
from agentotel_eval.collector.receive.http.server import ConnectionLimits, HttpServer
from agentotel_eval.collector.ui.routes import UiPages
from agentotel_eval.collector.ui.web import WebUi
from agentotel_eval.store import lake
from agentotel_eval.store.query import QueryError, QueryResult, run_query


class LakeUi:
    """``start()`` binds (raising ``OSError`` on a taken port), ``shutdown()`` stops serving and detaches."""

    def __init__(
        self,
        settings: lake.LakeSettings,
        host: str,
        port: int,
        *,
        token: str | None = None,
        row_limit: int = 10_000,
        timeout: float = 30.0,
        workers: int = 8,
    ) -> None:
        self._settings = settings
        self._row_limit = row_limit
        self._timeout = timeout
        self._con = lake.open_reader(settings)
        self.pages = UiPages(self.read)
        self._blocking = Blocking(workers)
        web = WebUi(self.pages)
        auth = Authenticator(token) if token else None
        routes: list[BaseRoute] = [
            *web.routes(self._blocking, auth, secure=False),
            Route("/healthz", _healthy),
        ]
        middleware = []
        if auth is not None:
            middleware.append(
                Middleware(
                    BearerAuth,
                    auth=auth,
                    open_paths=frozenset({"/healthz", "/login", "/logout"}),
                    cookie_paths=web.is_ui_path,
                    refusal=functools.partial(refusal, ui=web),
                )
            )
        self._server = HttpServer(
            host,
            port,
            Starlette(routes=routes, middleware=middleware),
            limits=ConnectionLimits(max_connections=workers * 8),
        )

    @property
    def address(self) -> tuple[str, int]:
        return self._server.address

    def read(self, sql: str, params: Sequence[Any] = ()) -> QueryResult:
        cursor = self._con.cursor()
        try:
            return run_query(cursor, sql, row_limit=self._row_limit, timeout=self._timeout, params=params)
        except (
            QueryError
        ) as exc:  # DuckDB's words can name the catalog's connection string: a page shows them
            exc.args = (self._settings.scrub(str(exc)),)
            raise
        finally:
            cursor.close()

    def start(self) -> LakeUi:
        self._server.start()
        return self

    def shutdown(self) -> None:
        self._server.stop_accepting()
        self._server.shutdown()
        self._blocking.close()
        self.pages.close()
        self._con.close()


async def _healthy(_request: Request) -> Response:
    return JSONResponse({"status": "ok"})
