"""``/v1/query`` bodies checked at the HTTP edge (``api.query_request``): what reaches the service is a
statement and its limits, or the client is told what is wrong. A re-score's outcome as an HTTP answer
(``api.rescore_answer``)."""

from __future__ import annotations

import re

import pytest

from agentotel_eval.collector.pipeline.rescore import RescoreBusy, RescoreError
from agentotel_eval.collector.receive.http.api import QueryRequest, query_request, rescore_answer
from agentotel_eval.store.query import QueryForbidden


def test_a_whole_request_is_read_as_given() -> None:
    asked = query_request({"sql": "SELECT ?", "limit": 5, "timeout": 1.5, "params": [3]})
    assert asked == QueryRequest("SELECT ?", 5, 1.5, [3])


def test_limits_left_out_are_the_configured_ones() -> None:
    assert query_request({"sql": "SELECT 1", "limit": None}) == QueryRequest("SELECT 1", None, None, ())


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], '{"sql": "SELECT ..."}'),
        ({"query": "SELECT 1"}, '{"sql": "SELECT ..."}'),
        ({"sql": 1}, '{"sql": "SELECT ..."}'),
        ({"sql": "SELECT 1", "limit": 0}, "'limit' must be a positive integer"),
        ({"sql": "SELECT 1", "limit": True}, "'limit' must be a positive integer"),
        ({"sql": "SELECT 1", "limit": 2.5}, "'limit' must be a positive integer"),
        ({"sql": "SELECT 1", "limit": "10"}, "'limit' must be a positive integer"),
        ({"sql": "SELECT 1", "timeout": 0}, "'timeout' must be a positive number of seconds"),
        ({"sql": "SELECT 1", "timeout": -1.0}, "'timeout' must be a positive number of seconds"),
        ({"sql": "SELECT 1", "timeout": False}, "'timeout' must be a positive number of seconds"),
        ({"sql": "SELECT 1", "timeout": "5"}, "'timeout' must be a positive number of seconds"),
    ],
)
def test_a_malformed_request_is_refused_with_what_is_wrong(payload: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        query_request(payload)


def _raising(exc: Exception):
    def rescore(_payload: object) -> dict[str, object]:
        raise exc

    return rescore


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (RescoreError("no such column: x"), 400),
        (QueryForbidden("not a SELECT"), 400),
        (RescoreBusy("another re-score is running"), 409),
    ],
)
def test_a_refused_rescore_is_answered_with_its_status_and_why(exc: Exception, status: int) -> None:
    assert rescore_answer(_raising(exc), {}) == (status, {"error": str(exc)})


def test_a_rescore_answers_its_summary_and_a_bug_is_left_to_the_server_error() -> None:
    assert rescore_answer(lambda payload: {"asked": payload}, {"dry_run": True}) == (
        200,
        {"asked": {"dry_run": True}},
    )
    with pytest.raises(KeyError):
        rescore_answer(_raising(KeyError("bug")), {})
