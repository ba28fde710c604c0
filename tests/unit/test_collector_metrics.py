"""Prometheus text rendering and collector discovery."""

from __future__ import annotations

import os

from agentotel_eval.collector.telemetry.prometheus import PromText
from agentotel_eval.store import discovery


def test_counters_gauges_and_histograms_render_in_the_text_format():
    out = PromText()
    out.add("spans_total", "counter", "Spans.", [({"transport": "grpc"}, 3), ({"transport": 'h"t\\tp'}, 1)])
    out.add("open_traces", "gauge", "Open.", 7)
    out.histogram("flush_seconds", "Flush.", (0.01, 0.1), [2, 1, 4], total=1.5, count=7)
    assert out.render().splitlines() == [
        "# HELP agentotel_spans_total Spans.",
        "# TYPE agentotel_spans_total counter",
        'agentotel_spans_total{transport="grpc"} 3',
        'agentotel_spans_total{transport="h\\"t\\\\tp"} 1',
        "# HELP agentotel_open_traces Open.",
        "# TYPE agentotel_open_traces gauge",
        "agentotel_open_traces 7",
        "# HELP agentotel_flush_seconds Flush.",
        "# TYPE agentotel_flush_seconds histogram",
        'agentotel_flush_seconds_bucket{le="0.01"} 2',
        'agentotel_flush_seconds_bucket{le="0.1"} 3',  # cumulative
        'agentotel_flush_seconds_bucket{le="+Inf"} 7',
        "agentotel_flush_seconds_sum 1.5",
        "agentotel_flush_seconds_count 7",
    ]


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
    discovery.write_sidecar(db, discovery.CollectorInfo(pid=2**22 + 12345, http="127.0.0.1:9", db="", token="t"))
    assert discovery.find_collector(db) is None  # no such process
    discovery.write_sidecar(db, discovery.CollectorInfo(pid=os.getpid(), http="127.0.0.1:9", db="", token="t"))
    assert discovery.find_collector(db, timeout=0.5) is None  # alive, but nothing answers there
    discovery.sidecar_path(db).write_text("{broken")
    assert discovery.find_collector(db) is None
