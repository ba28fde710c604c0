"""The collector's JSON API: ``POST /v1/query`` (one sealed, read-only SQL statement) and ``POST /v1/rescore``
(re-score stored runs where the database is held). Bodies are JSON objects of at most 1 MiB; a query's is
checked here (``query_request``), so what reaches the service is a statement and its limits."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentotel_eval.collector.receive.errors import ReceiverError, RequestTimeout
from agentotel_eval.collector.receive.http.answers import CLOSE, Blocking, JsonAnswer
from agentotel_eval.collector.receive.http.bodies import ClientGone, read_body
from agentotel_eval.store.query import QueryError

log = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024


class Query(Protocol):
    """Runs one sealed read-only statement within the given limits (None: the configured ones) -> the answer
    as a dict; raises ``QueryError``."""

    def __call__(
        self, sql: str, *, limit: int | None = None, timeout: float | None = None, params: Sequence[Any] = ()
    ) -> dict[str, Any]: ...


#: a re-score request (the JSON body) -> its JSON answer; raises ``QueryError`` or an error whose
#: ``http_status`` says how it is answered (``rescore_answer``)
Rescore = Callable[[Any], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """What a ``/v1/query`` body asks for."""

    sql: str
    limit: int | None = None
    timeout: float | None = None
    params: Sequence[Any] = ()


def query_request(payload: Any) -> QueryRequest:
    """The query a ``/v1/query`` body asks for; ``ValueError`` saying what is wrong with it. ``params`` are
    checked with the statement, where their placeholders are known."""
    if not isinstance(payload, dict) or not isinstance(payload.get("sql"), str):
        raise ValueError('expected a JSON object {"sql": "SELECT ..."}')
    limit, timeout = payload.get("limit"), payload.get("timeout")
    # JSON's true and false are Python ints: a flag is not a count
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError("'limit' must be a positive integer")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ValueError("'timeout' must be a positive number of seconds")
    return QueryRequest(payload["sql"], limit, timeout, payload.get("params") or ())


def rescore_answer(rescore: Rescore, payload: Any) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON answer to a re-score: 200 and its summary; 400 for a bad request or condition,
    409 while another runs (the error's ``http_status``). Any other error propagates: a 500, logged."""
    try:
        return 200, rescore(payload)
    except QueryError as exc:
        return 400, {"error": str(exc)}
    except Exception as exc:
        status = getattr(exc, "http_status", None)
        if not isinstance(status, int):
            raise
        return status, {"error": str(exc)}


async def _json_body(request: Request) -> Any:
    """The body parsed as JSON (an empty body is ``{}``); ``ReceiverError`` or
    ``ValueError`` when it cannot be."""
    return json.loads(await read_body(request, MAX_BODY) or b"{}")


def _unreadable(exc: Exception, **extra: str) -> Response:
    """The answer to a body that could not be read or parsed: 408 when it did not arrive in time, else 400."""
    status = exc.http_status if isinstance(exc, RequestTimeout) else 400
    headers = CLOSE if isinstance(exc, ReceiverError) else None
    return JsonAnswer({"error": str(exc), **extra}, status, headers=headers)


def api_routes(query: Query, rescore: Rescore | None, blocking: Blocking) -> list[Route]:
    async def run_query(request: Request) -> Response:
        try:
            asked = query_request(await _json_body(request))
        except (ReceiverError, ValueError) as exc:
            return _unreadable(exc, kind="invalid")
        except ClientGone:
            return Response(status_code=400)
        try:
            result = await blocking.run(
                lambda: query(asked.sql, limit=asked.limit, timeout=asked.timeout, params=asked.params)
            )
        except QueryError as exc:
            if exc.kind == "unavailable":
                return JsonAnswer({"error": str(exc), "kind": exc.kind}, 503, headers={"Retry-After": "1"})
            return JsonAnswer({"error": str(exc), "kind": exc.kind}, 400)
        except Exception as exc:
            log.exception("query failed")
            return JsonAnswer({"error": f"internal error: {exc}", "kind": "internal"}, 500)
        return JsonAnswer(result)

    async def run_rescore(request: Request) -> Response:
        try:
            payload = await _json_body(request)
        except (ReceiverError, ValueError) as exc:
            return _unreadable(exc)
        except ClientGone:
            return Response(status_code=400)
        if rescore is None:
            return JsonAnswer({"error": "this server does not re-score"}, 404)
        try:
            status, answer = await blocking.run(rescore_answer, rescore, payload)
        except Exception as exc:
            log.exception("re-score failed")
            return JsonAnswer({"error": f"internal error: {exc}"}, 500)
        return JsonAnswer(answer, status)

    return [
        Route("/v1/query", run_query, methods=["POST"]),
        Route("/v1/rescore", run_rescore, methods=["POST"]),
    ]
