"""Marks: what the assembler keeps of a stored span, and the rule that lets it skip
traces that hold no run."""

from __future__ import annotations

import json

import pytest

from agentotel_eval.collector.process.marks import log_marks, span_marks
from agentotel_eval.otlp.records import SpanEvent, SpanRecord
from agentotel_eval.reconstruct import is_run_span, reconstruct
from tests.support.fixture_traces import fixtures

FIXTURES = fixtures()

HTTP_SERVER = {"http.request.method": "GET", "url.path": "/orders/7", "http.response.status_code": 200}
DB_CALL = {"db.system.name": "postgresql", "db.query.text": "SELECT * FROM orders WHERE id = $1"}


def span_mark(span: SpanRecord):
    return span_marks([span])[0]


def plain(sid: int, parent: int | None, attrs: dict, events: tuple[SpanEvent, ...] = ()) -> SpanRecord:
    return SpanRecord(
        "ab" * 16,
        f"{sid:016x}",
        None if parent is None else f"{parent:016x}",
        f"s{sid}",
        start_ns=100 + sid,
        end_ns=200,
        attributes=attrs,
        events=events,
    )


def test_a_web_service_span_has_no_evidence_and_agent_spans_have():
    assert span_mark(plain(1, None, HTTP_SERVER))[5:] == (False, False)
    assert span_mark(plain(2, 1, DB_CALL))[5:] == (False, False)
    assert span_mark(plain(3, 1, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}))[5:] == (
        False,
        True,
    )
    assert span_mark(plain(4, 1, {"gen_ai.operation.name": "chat"}))[5:] == (False, True)
    assert span_mark(plain(5, 1, {"openinference.span.kind": "AGENT"}))[5:] == (True, True)
    # a root is never marked as a run span (a root completes its trace whatever it is), but it is evidence
    assert span_mark(plain(6, None, {"gen_ai.operation.name": "invoke_agent"}))[5:] == (False, True)


def test_a_step_whose_output_records_tool_calls_is_evidence():
    """An agent traced as one plain step (OpenInference's Haystack components) holds its
    calls in its output."""
    message = (
        "ChatMessage(_role=<ChatRole.ASSISTANT: 'assistant'>, _content=[ToolCall(tool_name='lookup', "
        "arguments={'q': 'x'}, id='c1', extra=None)])"
    )
    step = {"openinference.span.kind": "CHAIN", "output.value": json.dumps({"messages": [message]})}
    assert span_mark(plain(1, None, step))[5:] == (False, True)
    assert span_mark(plain(2, None, {**step, "output.value": '{"answer": "42"}'}))[5:] == (False, False)


def test_an_evaluation_event_is_evidence_other_events_are_not():
    score = SpanEvent("gen_ai.evaluation.result", 150, {"gen_ai.evaluation.name": "relevance"})
    error = SpanEvent("exception", 150, {"exception.type": "ValueError"})
    assert span_mark(plain(1, None, HTTP_SERVER, (score,)))[6] is True
    assert span_mark(plain(1, None, HTTP_SERVER, (error,)))[6] is False


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.name)
def test_marks_flag_run_spans_as_is_run_span_does(fx):
    spans = fx.spans()
    marks = span_marks(spans)
    assert [m[5] for m in marks] == [s.parent_span_id is not None and is_run_span(s) for s in spans]


@pytest.mark.parametrize("fx", FIXTURES, ids=lambda f: f.name)
def test_spans_without_evidence_never_make_a_run(fx):
    """The rule the assembler relies on, over real traces: drop every span with evidence, and whatever is left
    (HTTP, framework-internal and wrapper spans) reconstructs to no run; every trace that
    has runs has evidence."""
    spans = fx.spans()
    marks = span_marks(spans)
    rest = [s for s, m in zip(spans, marks, strict=True) if not m[6]]
    assert reconstruct(rest) == []
    if reconstruct(
        spans, fx.logs()
    ):  # evidence as the trace buffer counts it: a span's, or a non-score log's
        assert any(m[6] for m in marks) or any(not is_score for _, _, is_score in log_marks(fx.logs()))
