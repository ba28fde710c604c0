"""MLflow: the experiment is created, every run's trace is in it, and every evaluation is a feedback
assessment on the trace naming the run's span, read back with MLflow's own client, equal to the evaluations
table; a re-score updates the assessments instead of adding more."""

from __future__ import annotations

import json

import pytest

from agentotel_eval.collector.config_sinks import SinkConfig
from tests.integration.sinks.scenario import changed, rescore_stricter, scored_runs
from tests.support.sink_servers import running_mlflow, sink_marks

pytestmark = sink_marks("mlflow")


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    with running_mlflow(tmp_path_factory.mktemp("mlflow")) as server:
        yield server


def _assessments(url: str, traces: set[str]) -> dict[tuple[str, str], object]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=url)
    out = {}
    for trace in traces:
        for a in client.get_trace("tr-" + trace).info.assessments:
            if a.source.source_id.startswith("agentotel-eval/"):
                assert (a.span_id, a.name) not in out, "one assessment per run span and metric"
                out[(a.span_id, a.name)] = a
    return out


def test_scores_round_trip_through_mlflow(mlflow_server, tmp_path) -> None:
    from mlflow import MlflowClient

    sink = SinkConfig(kind="mlflow", url=mlflow_server.url, experiment="agents")
    with scored_runs(tmp_path, sink) as (collector, expected):
        client = MlflowClient(tracking_uri=mlflow_server.url)
        experiment = client.get_experiment_by_name("agents")
        assert experiment is not None
        traces = {e.trace_id for e in expected.values()}
        stored = client.search_traces(locations=[experiment.experiment_id], max_results=100)
        assert {t.info.trace_id for t in stored} >= {"tr-" + t for t in traces}
        shown = _assessments(mlflow_server.url, traces)
        assert shown.keys() == expected.keys()
        for key, e in expected.items():
            a = shown[key]
            assert (a.value, a.metadata["label"], a.rationale) == (e.score, e.label, e.reason), key
            assert a.source.source_type == ("LLM_JUDGE" if e.annotator == "LLM" else "CODE")
            assert a.metadata["evaluator"] == e.evaluator
        findings = [
            json.loads(a.metadata["findings"]) for (_s, m), a in shown.items() if m == "tool_errors_detectors"
        ]
        assert any(findings)

        after = rescore_stricter(collector, tmp_path)
        again = _assessments(mlflow_server.url, traces)
        assert again.keys() == shown.keys()  # updated in place, not added
        for key in changed(expected, after):
            assert again[key].metadata["label"] == after[key].label != shown[key].metadata["label"]
            assert again[key].assessment_id == shown[key].assessment_id
