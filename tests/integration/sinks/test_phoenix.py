"""Phoenix: every evaluation of the example runs is a span annotation on its run's span, read back with
Phoenix's own client, equal to the evaluations table; a re-score updates the annotations
instead of adding more."""

from __future__ import annotations

import pytest

from agentotel_eval.collector.config_sinks import SinkConfig
from tests.integration.sinks.scenario import changed, rescore_stricter, scored_runs
from tests.support.sink_servers import running_phoenix, sink_marks

pytestmark = sink_marks("phoenix", "phoenix.client")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    with running_phoenix(tmp_path_factory.mktemp("phoenix")) as server:
        yield server


def _annotations(url: str, span_ids: list[str]) -> dict[tuple[str, str], dict]:
    from phoenix.client import Client

    found = Client(base_url=url).spans.get_span_annotations(
        span_ids=span_ids, project_identifier="default", limit=1000
    )
    ours = [a for a in found if a["identifier"] == "agentotel-eval"]
    keyed = {(a["span_id"], a["name"]): a for a in ours}
    assert len(keyed) == len(ours), "one annotation per run span and metric"
    return keyed


def test_scores_round_trip_through_phoenix(phoenix, tmp_path) -> None:
    with scored_runs(tmp_path, SinkConfig(kind="phoenix", url=phoenix.url)) as (collector, expected):
        spans = sorted({span for span, _metric in expected})
        shown = _annotations(phoenix.url, spans)
        assert shown.keys() == expected.keys()
        for key, e in expected.items():
            a = shown[key]
            assert (a["result"]["score"], a["result"]["label"], a["result"]["explanation"]) == (
                e.score,
                e.label,
                e.reason,
            ), key
            assert a["annotator_kind"] == e.annotator and a["metadata"]["evaluator"] == e.evaluator
        detectors = [a for (_s, m), a in shown.items() if m == "tool_errors_detectors"]
        assert any(a["metadata"]["findings"] for a in detectors)
        assert all(
            {"type", "subtype", "rule", "confidence", "uncertain"} <= f.keys()
            for a in detectors
            for f in a["metadata"]["findings"]
        )

        after = rescore_stricter(collector, tmp_path)
        again = _annotations(phoenix.url, spans)
        assert again.keys() == shown.keys()  # updated, not duplicated
        for key in changed(expected, after):
            assert again[key]["result"]["label"] == after[key].label != shown[key]["result"]["label"]
