"""``/v1/query`` bodies checked at the HTTP edge (``api.query_request``): what reaches the service is a statement and
its limits, or the client is told what is wrong."""

from __future__ import annotations

import re

import pytest

from agentotel_eval.collector.receive.http.api import QueryRequest, query_request


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
