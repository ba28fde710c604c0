"""The collector under [limits], over both transports and through its decode worker: what is over a soft limit
is cut, stored with a marker and counted in /metrics; a request over a hard limit is refused whole, naming the
limit, and nothing of it is stored while what came before stays."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agentotel_eval.otlp import SpanRecord
from agentotel_eval.otlp.encode import encode_traces
from tests.support.collector_harness import (
    grpc_export,
    http_request,
    metric_samples,
    post_otlp,
    running_collector,
)
from tests.unit.otlp.test_limits import span

LIMITS = {
    "max_attribute_value_length": 64,
    "max_attributes_per_span": 8,
    "max_value_depth": 3,
    "max_spans_per_request": 10,
}


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from agentotel_eval.otlp.limits import Limits

    db: Path = tmp_path_factory.mktemp("limits") / "limits.duckdb"
    with running_collector(db, limits=Limits(**LIMITS)) as running:
        yield running


def body(spans: list[SpanRecord]) -> bytes:
    return encode_traces(spans).SerializeToString()


def stored(collector: Any, trace_id: str) -> list[list[Any]]:
    return collector.query(
        "SELECT span_id, name, attributes FROM spans WHERE trace_id = ? ORDER BY span_id", params=[trace_id]
    )["rows"]


def metric(collector: Any, name: str) -> float:
    samples = metric_samples(http_request(collector.http_endpoint, "GET", "/metrics").body.decode())
    return samples.get(name, 0.0)


def test_soft_limits_cut_store_with_a_marker_and_count(collector: Any) -> None:
    trace = "a1" * 16
    hostile = span(
        1,
        trace_id=trace,
        attributes={"prompt": "p" * 1000, "deep": {"a": [{"b": [1]}]}, **{f"extra{i}": i for i in range(20)}},
    )
    assert post_otlp(collector.http_endpoint, "traces", body([hostile])).status == 200
    grpc_export(collector.grpc_endpoint, "traces", body([span(2, trace_id=trace, name="x" * 500)]))
    rows = stored(collector, trace)
    assert len(rows) == 2
    attributes = rows[0][2]
    assert attributes["prompt"] == "p" * 64 + "…[truncated: 1000 characters]"
    assert attributes["deep"] == {"a": [{"b": "[value nested deeper than 3 levels]"}]}
    assert len(attributes) == 8
    assert rows[1][1] == "x" * 64 + "…[truncated: 500 characters]"
    assert metric(collector, 'agentotel_limited_total{signal="traces",kind="values_truncated"}') >= 2
    assert metric(collector, 'agentotel_limited_total{signal="traces",kind="attributes_dropped"}') >= 14


def test_a_request_over_a_hard_limit_is_refused_whole_and_named(collector: Any) -> None:
    trace = "b2" * 16
    assert post_otlp(collector.http_endpoint, "traces", body([span(1, trace_id=trace)])).status == 200
    too_many = body([span(i, trace_id=trace) for i in range(2, 14)])
    answer = post_otlp(collector.http_endpoint, "traces", too_many)
    assert answer.status == 400
    assert b"12 spans, more than limits.max_spans_per_request (10)" in answer.body
    json_answer = post_otlp(
        collector.http_endpoint,
        "traces",
        json.dumps(
            {
                "resourceSpans": [
                    {
                        "scopeSpans": [
                            {"spans": [{"traceId": trace, "spanId": f"{i:016x}"} for i in range(20, 32)]}
                        ]
                    }
                ]
            }
        ).encode(),
        encoding="json",
    )
    assert json_answer.status == 400 and "max_spans_per_request" in json_answer.body.decode()
    with pytest.raises(grpc.RpcError) as refused:
        grpc_export(collector.grpc_endpoint, "traces", too_many)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "max_spans_per_request (10)" in (refused.value.details() or "")
    assert [r[0] for r in stored(collector, trace)] == [f"{1:016x}"]  # what came before stays, nothing after
    assert (
        metric(
            collector,
            'agentotel_export_requests_total{transport="grpc",signal="traces",outcome="over_limit"}',
        )
        == 1
    )
    # the service goes on
    assert post_otlp(collector.http_endpoint, "traces", body([span(40, trace_id=trace)])).status == 200
    assert len(stored(collector, trace)) == 2
