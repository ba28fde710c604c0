"""Committed evaluation rows as what the sinks send, and each tool's payload of one evaluation."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from agentotel_eval.collector.sink import langfuse, mlflow, phoenix
from agentotel_eval.collector.sink.records import RunIdentity, sink_evaluations, sure_error_types

TRACE, SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
RUN = RunIdentity("travel", "planner", 1_700_000_000_000_000_000)


def _row(**over):
    row = {
        "trace_id": TRACE,
        "run_span_id": SPAN,
        "metric": "tool_errors_detectors",
        "score": 1.0,
        "threshold": 0.7,
        "success": False,
        "reason": "book_hotel failed and the answer says it booked",
        "status": "ok",
        "evaluator": "ToolsErrorMetric",
        "evaluator_version": "1",
        "source": "agentotel-eval",
        "model": None,
        "created_at": datetime(2025, 1, 2, tzinfo=UTC),
        "details": json.dumps(
            {
                "uncertain": False,
                "user_input": "secret prompt",
                "detectors": [
                    {
                        "type": "error_handling",
                        "subtype": "claimed_success",
                        "rule": "claims",
                        "confidence": 0.9,
                        "uncertain": False,
                        "evidence": {"result": "HTTP 500"},
                        "tool_name": "book_hotel",
                    },
                    {
                        "type": "parameter_error",
                        "subtype": "format",
                        "rule": "args",
                        "confidence": 0.4,
                        "uncertain": True,
                    },
                ],
            }
        ),
    }
    row.update(over)
    return row


def test_rows_become_evaluations_with_label_annotator_and_cut_findings() -> None:
    [e] = sink_evaluations([_row()], {(TRACE, SPAN): RUN})
    assert (e.label, e.annotator, e.run) == ("fail", "CODE", RUN)
    assert e.findings[0] == {
        "type": "error_handling",
        "subtype": "claimed_success",
        "rule": "claims",
        "confidence": 0.9,
        "uncertain": False,
        "tool_name": "book_hotel",
    }
    meta = e.metadata()
    assert (
        meta["uncertain"] is False and meta["agent"] == "planner" and meta["evaluator"] == "ToolsErrorMetric"
    )
    assert "secret prompt" not in json.dumps(meta) and "HTTP 500" not in json.dumps(
        meta
    )  # the log stays home
    assert sure_error_types(e) == ["error_handling"]


def test_pending_skipped_and_other_tools_scores_are_not_sent() -> None:
    rows = [
        _row(status="pending"),
        _row(status="skipped"),
        _row(source="external:ragas/x"),
        _row(metric="tool_errors", status="error", score=None, success=None, model="openai/gpt-4o-mini"),
    ]
    [e] = sink_evaluations(rows, {})
    assert (e.metric, e.label, e.annotator, e.run.agent) == ("tool_errors", "error", "LLM", "")


def test_phoenix_annotation_and_its_404() -> None:
    [e] = sink_evaluations([_row()], {(TRACE, SPAN): RUN})
    body = phoenix.annotation(e)
    assert (
        body["span_id"] == SPAN
        and body["identifier"] == "agentotel-eval"
        and body["annotator_kind"] == "CODE"
    )
    assert body["result"] == {"label": "fail", "score": 1.0, "explanation": e.reason}
    assert phoenix.missing_spans("Spans with IDs aa, bb do not exist.") == {"aa", "bb"}
    assert phoenix.missing_spans("Not Found") is None


def test_mlflow_assessment_metadata_is_strings_and_ours_are_found() -> None:
    [e] = sink_evaluations([_row()], {(TRACE, SPAN): RUN})
    body = mlflow.assessment(e)
    assert body["trace_id"] == "tr-" + TRACE and body["feedback"] == {"value": 1.0}
    assert body["source"] == {"source_type": "CODE", "source_id": "agentotel-eval/ToolsErrorMetric"}
    assert all(isinstance(v, str) for v in body["metadata"].values())
    assert json.loads(body["metadata"]["findings"])[0]["subtype"] == "claimed_success"
    [failed] = sink_evaluations([_row(status="error", score=None, success=None)], {})
    assert "error" in mlflow.assessment(failed)["feedback"]
    found = mlflow.ours(
        [
            {
                "assessment_id": "a-1",
                "assessment_name": "m",
                "span_id": SPAN,
                "source": {"source_id": "agentotel-eval/X"},
            },
            {
                "assessment_id": "h-1",
                "assessment_name": "m",
                "span_id": SPAN,
                "source": {"source_id": "someone@example.com"},
            },
        ]
    )
    assert found == {("m", SPAN): "a-1"}


def test_langfuse_score_keeps_its_id_and_timestamp_across_rescores() -> None:
    [first] = sink_evaluations([_row()], {(TRACE, SPAN): RUN})
    [again] = sink_evaluations(
        [_row(score=0.0, success=True, created_at=datetime(2025, 3, 1, tzinfo=UTC))], {(TRACE, SPAN): RUN}
    )
    a, b = langfuse.score(first), langfuse.score(again)
    assert (a["id"], a["timestamp"]) == (b["id"], b["timestamp"]) and a["value"] != b["value"]
    assert a["traceId"] == TRACE and a["observationId"] == SPAN and a["dataType"] == "NUMERIC"
    [failed] = sink_evaluations(
        [_row(status="error", score=None, success=None, reason="the judge timed out")], {}
    )
    sent = langfuse.score(failed)  # no number: a categorical "error" under the same id, saying why
    assert (sent["id"], sent["value"], sent["dataType"], sent["comment"]) == (
        a["id"],
        "error",
        "CATEGORICAL",
        "the judge timed out",
    )
    assert sent["metadata"]["label"] == "error"
