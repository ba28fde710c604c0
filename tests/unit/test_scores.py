from agentotel_eval import semconv as sc
from agentotel_eval.metrics.base import MetricResult
from agentotel_eval.otlp.records import LogRecord, SpanEvent, SpanRecord
from agentotel_eval.scores import (
    EVALUATOR_ATTRIBUTE,
    SCOPE_NAME,
    evaluation_log,
    evaluation_span,
    external_evaluations,
    score_attributes,
    with_scores,
)

RUN = SpanRecord(
    "ab" * 16,
    "cd" * 8,
    None,
    "invoke_agent travel",
    attributes={"gen_ai.agent.name": "travel"},
    resource={"service.name": "svc"},
    scope_name="app",
)


def _result(metric="tool_correctness", score=0.5, success=True, reason="1 of 2 expected tools called", **kw):
    return MetricResult(
        metric=metric,
        score=score,
        success=success,
        reason=reason,
        threshold=0.5,
        evaluator="ToolCorrectnessMetric",
        evaluator_version="1",
        **kw,
    )


def test_score_attributes_follow_the_contract():
    attrs = score_attributes(
        [_result(), _result("tool_correctness_exact", 0.0, False, "extra call: validate")]
    )
    assert attrs == {
        "agentotel.eval.tool_correctness.score": 0.5,
        "agentotel.eval.tool_correctness.success": True,
        "agentotel.eval.tool_correctness.reason": "1 of 2 expected tools called",
        "agentotel.eval.tool_correctness_exact.score": 0.0,
        "agentotel.eval.tool_correctness_exact.success": False,
        "agentotel.eval.tool_correctness_exact.reason": "extra call: validate",
    }


def test_pending_and_skipped_results_write_no_attributes_and_errors_say_so():
    attrs = score_attributes(
        [
            _result("tool_errors", None, None, "", status="pending"),
            _result(
                "tool_errors_detectors",
                None,
                None,
                "judge timed out",
                status="error",
                error="TimeoutError: x",
            ),
        ]
    )
    assert attrs == {
        "agentotel.eval.tool_errors_detectors.reason": "judge timed out",
        "agentotel.eval.tool_errors_detectors.status": "error",
    }


def test_with_scores_adds_attributes_and_one_event_per_metric_and_replaces_on_rescore():
    first = with_scores(RUN, [_result(score=0.5, success=True)], time_ns=10)
    assert first.attributes["gen_ai.agent.name"] == "travel"
    assert first.attributes["agentotel.eval.tool_correctness.score"] == 0.5
    (event,) = first.events
    assert event.name == sc.EVENT_EVALUATION_RESULT
    assert event.attributes[sc.GEN_AI_EVALUATION_NAME] == "tool_correctness"
    assert event.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == 0.5
    assert event.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "pass"
    assert event.attributes[sc.GEN_AI_EVALUATION_EXPLANATION] == "1 of 2 expected tools called"
    second = with_scores(first, [_result(score=1.0, success=True, reason="all called")], time_ns=20)
    assert second.attributes["agentotel.eval.tool_correctness.score"] == 1.0
    assert [e.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] for e in second.events] == [1.0]
    assert RUN.attributes == {"gen_ai.agent.name": "travel"}  # the input span is untouched


def test_rescore_keeps_external_events_of_the_same_name():
    external = SpanEvent(
        sc.EVENT_EVALUATION_RESULT,
        5,
        {sc.GEN_AI_EVALUATION_NAME: "tool_correctness", sc.GEN_AI_EVALUATION_SCORE_VALUE: 0.1},
    )
    span = SpanRecord(RUN.trace_id, RUN.span_id, None, RUN.name, events=(external,))
    scored = with_scores(span, [_result()], time_ns=10)
    assert scored.events[0] is external
    assert EVALUATOR_ATTRIBUTE in scored.events[1].attributes


def test_evaluation_span_is_a_stable_child_of_the_run():
    result = _result(
        "tool_errors", 0.85, False, "sequence error", model="openai/gpt-4o-mini", cost_usd=0.0002
    )
    span = evaluation_span(RUN, result, 100, 200)
    assert span.parent_span_id == RUN.span_id and span.trace_id == RUN.trace_id
    assert span.name == "gen_ai.evaluation tool_errors"
    assert span.attributes["agentotel.eval.tool_errors.score"] == 0.85
    assert span.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
    assert span.attributes[sc.GEN_AI_REQUEST_MODEL] == "openai/gpt-4o-mini"
    assert span.events[0].name == sc.EVENT_EVALUATION_RESULT
    assert evaluation_span(RUN, result, 300, 400).span_id == span.span_id
    assert evaluation_span(RUN, _result("tool_correctness"), 1, 2).span_id != span.span_id


def test_evaluation_log_is_parented_to_the_run_span():
    record = evaluation_log(RUN.trace_id, RUN.span_id, _result(), 50, RUN.resource)
    assert (record.trace_id, record.span_id, record.event_name) == (
        RUN.trace_id,
        RUN.span_id,
        sc.EVENT_EVALUATION_RESULT,
    )
    assert record.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == 0.5
    assert record.scope_name == SCOPE_NAME


def test_external_evaluations_from_logs_and_span_events_but_not_our_own():
    attrs = {
        sc.GEN_AI_EVALUATION_NAME: "relevance",
        sc.GEN_AI_EVALUATION_SCORE_VALUE: 0.9,
        sc.GEN_AI_EVALUATION_SCORE_LABEL: "pass",
        sc.GEN_AI_EVALUATION_EXPLANATION: "on topic",
    }
    logs = [
        LogRecord(
            7,
            0,
            RUN.trace_id,
            RUN.span_id,
            event_name=sc.EVENT_EVALUATION_RESULT,
            attributes=attrs,
            resource={"service.name": "grader"},
            scope_name="my.evaluator",
        ),
        LogRecord(
            8,
            0,
            RUN.trace_id,
            RUN.span_id,
            event_name=sc.EVENT_EVALUATION_RESULT,
            attributes=attrs,
            scope_name=SCOPE_NAME,
        ),
        LogRecord(
            9,
            0,
            RUN.trace_id,
            RUN.span_id,
            event_name=sc.EVENT_EVALUATION_RESULT,
            attributes={sc.GEN_AI_EVALUATION_SCORE_VALUE: 1.0},
        ),  # no name: nothing to store
        LogRecord(10, 0, RUN.trace_id, RUN.span_id, event_name="gen_ai.choice", attributes=attrs),
    ]
    span = SpanRecord(
        RUN.trace_id,
        "ef" * 8,
        RUN.span_id,
        "chat",
        scope_name="lib",
        events=(
            SpanEvent(
                sc.EVENT_EVALUATION_RESULT,
                11,
                {sc.GEN_AI_EVALUATION_NAME: "toxicity", sc.GEN_AI_EVALUATION_SCORE_LABEL: "fail"},
            ),
        ),
    )
    found = external_evaluations([span], logs)
    assert [(e.name, e.score, e.success, e.source, e.span_id) for e in found] == [
        ("relevance", 0.9, True, "external:my.evaluator/grader", RUN.span_id),
        ("toxicity", None, False, "external:lib", "ef" * 8),
    ]


def test_our_own_events_on_a_stored_run_span_are_not_external():
    scored = with_scores(RUN, [_result()], time_ns=10)
    assert external_evaluations([scored], []) == []


def test_external_evaluation_fixture_log_is_found():
    from tests.support.fixture_traces import fixtures

    (fixture,) = [f for f in fixtures() if f.name == "raw-openai__otel-genai-manual__sequence"]
    (found,) = external_evaluations(fixture.spans(), fixture.logs())
    run = next(s for s in fixture.spans() if s.name.startswith("invoke_agent"))
    assert (found.name, found.score, found.success, found.span_id) == (
        "tool_sequence_match",
        1.0,
        True,
        run.span_id,
    )


def test_score_patch_sets_every_field_and_clears_what_has_no_value():
    from agentotel_eval.scores import score_patch

    patch = score_patch(
        [
            _result(),
            _result("tool_errors", None, None, "judge failed", status="error", error="Timeout: x"),
            _result("q", status="pending"),
        ]
    )
    assert patch == {
        "agentotel.eval.tool_correctness.score": 0.5,
        "agentotel.eval.tool_correctness.success": True,
        "agentotel.eval.tool_correctness.reason": "1 of 2 expected tools called",
        "agentotel.eval.tool_correctness.status": None,
        "agentotel.eval.tool_errors.score": None,
        "agentotel.eval.tool_errors.success": None,
        "agentotel.eval.tool_errors.reason": "judge failed",
        "agentotel.eval.tool_errors.status": "error",
    }
