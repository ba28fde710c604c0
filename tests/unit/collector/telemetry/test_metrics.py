"""Metric families in the Prometheus text format, and collector discovery."""

from __future__ import annotations

import os
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from agentotel_eval.access import discovery
from agentotel_eval.collector.telemetry.families import counter, gauge, histogram
from tests.support.collector_harness import metric_samples


class Parts(Collector):
    def collect(self) -> Iterator[Metric]:
        yield counter("spans", "Spans.", [(("grpc",), 3), (('a "b"',), 1)], labels=("transport",))
        yield counter("requests", "Requests.", [], labels=("outcome",), empty=("ok",))
        yield gauge("open_traces", "Open.", 7)
        yield histogram("flush_seconds", "Flush.", (0.01, 0.1), [2, 1, 4], total=1.5, count=7)


def test_families_render_as_prometheus_text_that_its_parser_reads_back():
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Parts())
    text = generate_latest(registry).decode()
    assert "# TYPE agentotel_spans_total counter" in text and "# HELP agentotel_open_traces Open." in text
    assert metric_samples(text) == {
        'agentotel_spans_total{transport="grpc"}': 3,
        'agentotel_spans_total{transport="a \\"b\\""}': 1,  # quotes escaped, and read back
        'agentotel_requests_total{outcome="ok"}': 0,  # an empty family shows its zero
        "agentotel_open_traces": 7,
        'agentotel_flush_seconds_bucket{le="0.01"}': 2,
        'agentotel_flush_seconds_bucket{le="0.1"}': 3,  # cumulative
        'agentotel_flush_seconds_bucket{le="+Inf"}': 7,
        "agentotel_flush_seconds_sum": 1.5,
        "agentotel_flush_seconds_count": 7,
    }


def test_wildcard_binds_are_reached_on_loopback():
    assert discovery.client_address("0.0.0.0", 4318) == "127.0.0.1:4318"
    assert discovery.client_address("::", 4318) == "[::1]:4318"
    assert discovery.client_address("127.0.0.1", 5) == "127.0.0.1:5"


def test_the_sidecar_round_trips_and_is_only_removed_by_its_owner(tmp_path):
    db = tmp_path / "x.duckdb"
    info = discovery.CollectorInfo(pid=os.getpid(), http="127.0.0.1:1", db=str(db), token="mine")
    discovery.write_sidecar(db, info)
    assert discovery.read_sidecar(db) == info
    discovery.remove_sidecar(db, "someone else's")
    assert discovery.sidecar_path(db).exists()
    discovery.remove_sidecar(db, "mine")
    assert not discovery.sidecar_path(db).exists()


def test_a_dead_or_silent_collector_is_not_found(tmp_path):
    db = tmp_path / "y.duckdb"
    assert discovery.find_collector(db) is None  # no file
    discovery.write_sidecar(
        db, discovery.CollectorInfo(pid=2**22 + 12345, http="127.0.0.1:9", db="", token="t")
    )
    assert discovery.find_collector(db) is None  # no such process
    discovery.write_sidecar(
        db, discovery.CollectorInfo(pid=os.getpid(), http="127.0.0.1:9", db="", token="t")
    )
    assert discovery.find_collector(db, timeout=0.5) is None  # alive, but nothing answers there
    discovery.sidecar_path(db).write_text("{broken")
    assert discovery.find_collector(db) is None
