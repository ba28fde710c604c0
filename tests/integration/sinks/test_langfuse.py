"""Langfuse, whose server cannot run here: a local stand-in checks every request with the request models of
Langfuse's own SDK and the OTLP schema. Every evaluation with a value arrives as a valid score on its run's
observation, equal to the evaluations table, and the spans as OTLP; a re-score sends the same ids again."""

from __future__ import annotations

from agentotel_eval.collector.config_sinks import SinkConfig
from agentotel_eval.collector.sink.langfuse import LangfuseClient
from agentotel_eval.collector.sink.records import RunIdentity, sink_evaluations
from tests.integration.sinks.scenario import changed, rescore_stricter, scored_runs
from tests.support.sink_servers import running_langfuse_check, sink_marks

pytestmark = sink_marks("langfuse")


def test_scores_reach_langfuse_as_valid_requests(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTOTEL_TEST_LF_PUBLIC", "pk-lf-1234")
    monkeypatch.setenv("AGENTOTEL_TEST_LF_SECRET", "sk-lf-5678")
    with running_langfuse_check("pk-lf-1234", "sk-lf-5678") as langfuse:
        sink = SinkConfig(
            kind="langfuse",
            url=langfuse.url,
            public_key_env="AGENTOTEL_TEST_LF_PUBLIC",
            secret_key_env="AGENTOTEL_TEST_LF_SECRET",
        )
        with scored_runs(tmp_path, sink) as (collector, expected):
            assert not langfuse.refused, langfuse.refused
            shown = {(s["observationId"], s["name"]): s for s in langfuse.scores.values()}
            assert shown.keys() == expected.keys()
            for key, s in shown.items():
                e = expected[key]
                assert (s["traceId"], s["value"], s["metadata"]["label"], s.get("comment") or "") == (
                    e.trace_id,
                    e.score if e.score is not None else "error",
                    e.label,
                    e.reason,
                )
                assert s["metadata"]["annotator_kind"] == e.annotator
            assert {e.trace_id for e in expected.values()} <= langfuse.traces

            ids = set(langfuse.scores)
            after = rescore_stricter(collector, tmp_path)
            assert set(langfuse.scores) == ids  # the same ids: Langfuse updates them
            again = {(s["observationId"], s["name"]): s for s in langfuse.scores.values()}
            for key in changed(expected, after):
                assert again[key]["metadata"]["label"] == after[key].label
            assert not langfuse.refused, langfuse.refused


def test_a_failed_evaluation_reaches_langfuse_as_a_valid_error_score(monkeypatch) -> None:
    """No number to send: a categorical ``error`` score the SDK's models accept, with the
    reason as its comment."""
    monkeypatch.setenv("AGENTOTEL_TEST_LF_PUBLIC", "pk-lf-1234")
    monkeypatch.setenv("AGENTOTEL_TEST_LF_SECRET", "sk-lf-5678")
    row = {
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "run_span_id": "b7ad6b7169203331",
        "metric": "tool_errors",
        "score": None,
        "success": None,
        "status": "error",
        "reason": "the judge's provider answered 503",
        "evaluator": "ToolsErrorMetric",
        "evaluator_version": "1",
        "source": "agentotel-eval",
    }
    [failed] = sink_evaluations(
        [row], {(row["trace_id"], row["run_span_id"]): RunIdentity("shop", "planner", 1)}
    )
    with running_langfuse_check("pk-lf-1234", "sk-lf-5678") as langfuse:
        client = LangfuseClient(
            SinkConfig(
                kind="langfuse",
                url=langfuse.url,
                public_key_env="AGENTOTEL_TEST_LF_PUBLIC",
                secret_key_env="AGENTOTEL_TEST_LF_SECRET",
            )
        )
        try:
            outcome = client.send([failed])
        finally:
            client.close()
        assert (outcome.refused, list(outcome.waiting), langfuse.refused) == (0, [], [])
        [sent] = langfuse.scores.values()
        assert (
            sent["name"],
            sent["value"],
            sent["dataType"],
            sent["comment"],
            sent["metadata"]["label"],
        ) == ("tool_errors", "error", "CATEGORICAL", row["reason"], "error")
