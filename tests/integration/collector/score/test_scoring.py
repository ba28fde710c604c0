"""Online scoring end to end: a real collector scores every completed run, writes the scores as rows and as
run-span attributes, queues the LLM judge (litellm against the local stub) and forwards spans with their
scores to a real downstream OTLP endpoint."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentotel_eval import semconv as sc
from agentotel_eval.collector.config_forward import ForwardConfig
from agentotel_eval.collector.config_scoring import JudgeSettings, parse_expectations
from agentotel_eval.collector.service import Collector
from agentotel_eval.otlp.encode import encode_logs, encode_traces
from agentotel_eval.tracing import traced
from tests.support.collector_harness import (
    Blocker,
    fast_config,
    metric_samples,
    post_otlp,
    running_collector,
    wait_until,
)
from tests.support.fixture_traces import fixtures
from tests.support.llm_stub import LLMStub, Reply
from tests.support.otlp_sink import OtlpSink

VERDICT = {
    "detected": True,
    "confidence": 0.9,
    "reason": "booked before confirming the price",
    "error_types": ["result_ignored"],
    "errors": [{"type": "result_ignored", "description": "the price in the search result was ignored"}],
    "error_severity": "medium",
}
CLEAN = {
    "detected": False,
    "confidence": 0.0,
    "reason": "no errors",
    "error_types": [],
    "errors": [],
    "error_severity": "none",
}


def _rows(collector: Any, sql: str, params: list | None = None) -> list[tuple]:
    with collector._cursor() as cursor:
        return cursor.execute(sql, params or []).fetchall()


def _evaluations(collector: Any, trace_id: str | None = None) -> dict[str, tuple]:
    """metric -> (score, success, status, reason, details, model, cost_usd, source, evaluator)"""
    where = "WHERE trace_id = ?" if trace_id else ""
    rows = _rows(
        collector,
        "SELECT metric, score, success, status, reason, details, model, cost_usd, source, "
        f"evaluator, run_span_id FROM evaluations {where}",
        [trace_id] if trace_id else [],
    )
    return {r[0]: r[1:] for r in rows}


# gpt-4o-mini's list price, given: a model on a local api_base (the stub's 127.0.0.1) costs
# nothing unless priced
PRICE = {"input_cost_per_token": 0.15e-6, "output_cost_per_token": 0.60e-6}


def _judge(stub: LLMStub, **kw: Any) -> JudgeSettings:
    return JudgeSettings(
        model="openai/gpt-4o-mini",
        api_base=stub.base_url,
        api_key="sk-test",
        max_retries=kw.pop("max_retries", 0),
        extra=kw.pop("extra", PRICE),
        **kw,
    )


def _send_fixture(collector: Any, name: str) -> str:
    (fx,) = [f for f in fixtures() if f.name == name]
    assert post_otlp(collector.http_endpoint, "traces", fx.body("protobuf")).status == 200
    if fx.logs_body("protobuf"):
        assert post_otlp(collector.http_endpoint, "logs", fx.logs_body("protobuf")).status == 200
    return fx.spans()[0].trace_id


def test_a_traced_agent_is_scored_judged_and_forwarded_with_its_scores(tmp_path):
    with OtlpSink() as sink, LLMStub(default=Reply.json(VERDICT)) as stub:
        forward = ForwardConfig(url=sink.grpc_endpoint.replace("http://", "grpc://"))
        with running_collector(tmp_path / "e2e.duckdb", judge=_judge(stub), forward=forward) as collector:
            provider = TracerProvider(resource=Resource.create({"service.name": "hotel-bot"}))
            provider.add_span_processor(
                BatchSpanProcessor(OTLPSpanExporter(endpoint=collector.grpc_endpoint, insecure=True))
            )

            @traced(kind="tool", tracer_provider=provider)
            def search_hotels(city: str) -> list[dict]:
                return [{"name": "Le Marais", "price": 120}]

            @traced(kind="tool", tracer_provider=provider)
            def sort_by_price(hotels: list[dict]) -> list[dict]:
                return sorted(hotels, key=lambda h: h["price"])

            @traced(kind="tool", tracer_provider=provider)
            def book_hotel(name: str, nights: int) -> dict:
                return {"confirmation": "X1"}

            @traced(
                kind="agent",
                name="hotel-agent",
                expected_tools=["search_hotels", "book_hotel"],
                tracer_provider=provider,
            )
            def agent(question: str) -> str:
                hotels = sort_by_price(search_hotels("Paris"))
                book_hotel(hotels[0]["name"], 3)
                return "Booked Le Marais for $120/night."

            agent("Search for hotels in Paris and book the cheapest one.")
            assert provider.force_flush(10_000)
            run = wait_until(
                lambda: _rows(collector, "SELECT trace_id, span_id FROM agent_runs"), what="the run"
            )[0]
            trace_id, run_span_id = run
            wait_until(
                lambda: _evaluations(collector, trace_id).get("tool_errors", (None,) * 3)[2] == "ok",
                timeout=60,  # a judge call through litellm: seconds on a busy machine
                what="the judge's answer",
            )
            evals = _evaluations(collector, trace_id)

            # deterministic scores, from the expectation on the span (@traced(expected_tools=...))
            assert evals["tool_correctness"][:3] == (1.0, True, "ok")
            assert evals["tool_correctness_exact"][:3] == (0.0, False, "ok")  # sort_by_price was extra
            assert "sort_by_price" in evals["tool_correctness_exact"][3]
            assert evals["tool_correctness_ordering"][:3] == (1.0, True, "ok")
            assert json.loads(evals["tool_correctness"][4])["expectation"] == "span_attribute"
            assert evals["tool_errors_detectors"][2] == "ok"
            # the judge: queued, answered through litellm by the stub, cost recorded
            score, success, status, _reason, details, model, cost, source, evaluator, _ = evals["tool_errors"]
            assert (score, success, status, model, source) == (
                0.9,
                False,
                "ok",
                "openai/gpt-4o-mini",
                "agentotel-eval",
            )
            assert cost > 0 and evaluator == "ToolsErrorMetric"
            assert json.loads(details)["error_types"] == ["result_ignored"]
            assert "search_hotels" in stub.requests[0].prompt_text()

            # the stored run span carries every score as attributes and as gen_ai.evaluation.result events
            ((attrs, events),) = _rows(
                collector, "SELECT attributes, events FROM spans WHERE span_id = ?", [run_span_id]
            )
            attrs, events = json.loads(attrs), json.loads(events)
            assert attrs["agentotel.eval.tool_correctness.score"] == 1.0
            assert attrs["agentotel.eval.tool_correctness_exact.success"] is False
            assert attrs["agentotel.eval.tool_errors.score"] == 0.9
            assert attrs[sc.GEN_AI_AGENT_NAME] == "hotel-agent"  # what the agent sent is kept
            by_name = {
                e["attributes"][sc.GEN_AI_EVALUATION_NAME]: e["attributes"]
                for e in events
                if e["name"] == sc.EVENT_EVALUATION_RESULT
            }
            assert set(by_name) == {
                "tool_correctness",
                "tool_correctness_exact",
                "tool_correctness_ordering",
                "tool_errors_detectors",
                "tool_errors",
            }
            assert by_name["tool_errors"][sc.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
            assert by_name["tool_correctness"][sc.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0

            # downstream: every span, the run span with its deterministic scores, then the
            # judge's child span + log
            sink.wait_for(
                lambda s: len(s.spans_named("gen_ai.evaluation tool_errors")) == 1 and s.logs, timeout=15
            )
            names = sorted(s.name for s in sink.spans)
            assert (
                names.count("execute_tool search_hotels") == 1
                and names.count("invoke_agent hotel-agent") == 1
            )
            (forwarded_run,) = sink.spans_named("invoke_agent hotel-agent")
            assert forwarded_run.attributes["agentotel.eval.tool_correctness.score"] == 1.0
            assert forwarded_run.attributes["agentotel.eval.tool_correctness_exact.score"] == 0.0
            (evaluation,) = sink.spans_named("gen_ai.evaluation tool_errors")
            assert (evaluation.trace_id, evaluation.parent_span_id) == (trace_id, run_span_id)
            assert evaluation.attributes["agentotel.eval.tool_errors.score"] == 0.9
            assert evaluation.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
            (log,) = [r for r in sink.logs if r.event_name == sc.EVENT_EVALUATION_RESULT]
            assert (log.trace_id, log.span_id) == (trace_id, run_span_id)
            assert log.attributes[sc.GEN_AI_EVALUATION_NAME] == "tool_errors"
            provider.shutdown()
        metrics = collector.metrics_text()
        assert re.search(r'agentotel_judge_results_total\{status="ok"\} [1-9]', metrics)
        assert re.search(r"agentotel_judge_cost_usd_total [0-9.e-]+", metrics)
        assert metric_samples(metrics)['agentotel_forward_dropped_total{signal="traces"}'] == 0


def test_expectations_from_rules_and_dataset_and_runs_without_one(tmp_path):
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(
        json.dumps(
            {
                "input": "Plan a trip from Berlin   to Rome on 2025-07-01 and book 3 nights.",
                "expected_tools": ["search_flights", "get_weather", "book_hotel"],
            }
        )
        + "\n"
    )
    rules = parse_expectations(
        [
            {
                "name": "pydantic",
                "service": "travel-bot-pydantic-*",
                "expected_tools": ["search_flights", "book_hotel"],
                "modes": ["exact"],
            },
            {"name": "weather", "input_regex": "(?i)weather in paris", "expected_tools": ["get_weather"]},
        ]
    )
    with running_collector(tmp_path / "rules.duckdb", expectations=rules, dataset=str(dataset)) as collector:
        sent = {
            name: _send_fixture(collector, name)
            for name in (
                "pydantic-ai__native-v5__sequence",
                "openai-agents__otel-genai__single",
                "strands__latest__sequence",
                "langchain__otel-genai__no_tool",
            )
        }
        wait_until(
            lambda: all("tool_errors_detectors" in _evaluations(collector, t) for t in sent.values()),
            what="every run scored",
        )
        pydantic = _evaluations(collector, sent["pydantic-ai__native-v5__sequence"])
        assert set(pydantic) == {"tool_correctness_exact", "tool_errors_detectors"}  # the rule's modes only
        assert pydantic["tool_correctness_exact"][:2] == (0.0, False)  # get_weather was not expected
        assert json.loads(pydantic["tool_correctness_exact"][4])["expectation"] == "rule:pydantic"
        weather = _evaluations(collector, sent["openai-agents__otel-genai__single"])
        assert {m: v[0] for m, v in weather.items() if m.startswith("tool_correctness")} == {
            "tool_correctness": 1.0,
            "tool_correctness_exact": 1.0,
            "tool_correctness_ordering": 1.0,
        }
        assert json.loads(weather["tool_correctness"][4])["expectation"] == "rule:weather"
        strands = _evaluations(collector, sent["strands__latest__sequence"])
        assert strands["tool_correctness_ordering"][:2] == (1.0, True)
        assert json.loads(strands["tool_correctness"][4])["expectation"] == "dataset:dataset.jsonl:1"
        # no expectation: tool correctness is not run (not scored 0); the detectors still are
        assert set(_evaluations(collector, sent["langchain__otel-genai__no_tool"])) == {
            "tool_errors_detectors"
        }
        # counted in the assembler process; its counters follow the rows within a moment
        wait_until(
            lambda: collector.assembler.snapshot().scoring.runs_without_expectation == 1,
            timeout=5,
            what="the scoring counters",
        )


def test_evaluation_results_from_other_tools_are_stored_with_their_source(tmp_path):
    with running_collector(tmp_path / "external.duckdb") as collector:
        trace_id = _send_fixture(collector, "raw-openai__otel-genai-manual__sequence")
        external = wait_until(
            lambda: _evaluations(collector, trace_id).get("tool_sequence_match"),
            what="the external evaluation",
        )
        score, success, status, reason, _details, _model, _cost, source, evaluator, run_span_id = external
        assert (score, success, status, evaluator) == (1.0, True, "ok", "external")
        assert source == "external:travel_bot.evaluator/travel-bot-raw-openai"
        assert reason == "called ['search_flights', 'get_weather', 'book_hotel']"
        run = wait_until(
            lambda: _rows(collector, "SELECT span_id FROM agent_runs WHERE trace_id = ?", [trace_id]),
            what="the run",
        )
        assert [(run_span_id,)] == run  # parented to the invoke_agent span, as the convention asks


def test_the_judge_runs_concurrently_within_its_limit(tmp_path):
    with LLMStub(default=Reply.json(CLEAN, delay=0.3)) as stub:
        judge = _judge(stub, max_concurrency=3)
        with running_collector(tmp_path / "c.duckdb", judge=judge) as collector:
            traces = [_replayed_run(collector, i) for i in range(8)]
            wait_until(
                lambda: (
                    sum(
                        1
                        for t in traces
                        if _evaluations(collector, t).get("tool_errors", ("",) * 3)[2] == "ok"
                    )
                    == 8
                ),
                timeout=30,
                what="eight judge answers",
            )
        assert 2 <= stub.max_in_flight <= 3
        assert len(stub.requests) == 8


def _replayed_run(collector: Any, i: int) -> str:
    """A copy of a real pydantic-ai run under fresh trace ids, so several distinct runs can be sent."""
    (fx,) = [f for f in fixtures() if f.name == "pydantic-ai__native-v5__single"]
    trace_id = f"{i + 1:032x}"
    import dataclasses

    spans = [dataclasses.replace(s, trace_id=trace_id) for s in fx.spans()]
    assert (
        post_otlp(collector.http_endpoint, "traces", encode_traces(spans).SerializeToString()).status == 200
    )
    return trace_id


def test_pending_judge_work_survives_a_restart(tmp_path):
    db = tmp_path / "restart.duckdb"
    with LLMStub(default=Reply.json(CLEAN, delay=20)) as slow:  # answers long after the collector stops
        collector = Collector(fast_config(db, judge=_judge(slow)), summary_interval=3600).start()
        try:
            trace_id = _replayed_run(collector, 1)
            wait_until(lambda: slow.requests, timeout=15, what="the judge to take the row")
        finally:
            collector.shutdown(grace=0.5)
    from agentotel_eval.store.opening import open_read_only

    con = open_read_only(db)
    assert con.execute("SELECT status FROM evaluations WHERE metric = 'tool_errors'").fetchall() == [
        ("pending",)
    ]
    con.close()
    with LLMStub(default=Reply.json(VERDICT)) as stub, running_collector(db, judge=_judge(stub)) as collector:
        wait_until(
            lambda: _evaluations(collector, trace_id).get("tool_errors", ("",) * 3)[2] == "ok",
            timeout=20,
            what="the pending row answered after the restart",
        )
        assert _evaluations(collector, trace_id)["tool_errors"][0] == 0.9
        assert len(stub.requests) == 1


def test_the_daily_budget_skips_runs_with_the_reason(tmp_path):
    with LLMStub(default=Reply.json(CLEAN)) as stub:
        judge = _judge(stub, max_concurrency=1, max_cost_usd_per_day=1e-9)
        with running_collector(tmp_path / "budget.duckdb", judge=judge) as collector:
            traces = [_replayed_run(collector, i) for i in range(3)]

            def statuses() -> list[str]:
                return sorted(_evaluations(collector, t).get("tool_errors", ("",) * 3)[2] for t in traces)

            # one query a look: two could see no row yet, then rows all pending, and pass between them
            wait_until(lambda: not {"pending", ""} & set(statuses()), timeout=20, what="all decided")
            assert statuses() == ["ok", "skipped", "skipped"]
            skipped = [_evaluations(collector, t)["tool_errors"] for t in traces]
            reasons = [e[3] for e in skipped if e[2] == "skipped"]
            assert all(r.startswith("daily judge budget reached") for r in reasons)
        assert len(stub.requests) == 1  # nothing was spent past the cap


def test_provider_failures_after_retries_become_error_rows(tmp_path):
    with LLMStub(default=Reply.server_error(503)) as stub:
        with running_collector(tmp_path / "fail.duckdb", judge=_judge(stub, max_retries=1)) as collector:
            trace_id = _replayed_run(collector, 1)
            row = wait_until(
                lambda: (
                    _evaluations(collector, trace_id).get("tool_errors", ("",) * 3)[2] == "error"
                    and _evaluations(collector, trace_id)["tool_errors"]
                ),
                timeout=20,
                what="an error row",
            )
        assert row[0] is None and row[1] is None
        assert "ServiceUnavailableError" in row[3]  # the provider's answer (HTTP 503), kept
        assert len(stub.requests) == 2  # one retry, then the error is recorded


def test_runs_recorded_without_content_are_not_sent_to_the_judge(tmp_path):
    with LLMStub(default=Reply.json(CLEAN)) as stub:
        with running_collector(tmp_path / "nocontent.duckdb", judge=_judge(stub)) as collector:
            trace_id = _send_fixture(
                collector, "google-adk__default__sequence"
            )  # no message content recorded
            rows = wait_until(
                lambda: [
                    r
                    for r in _rows(
                        collector,
                        "SELECT status, reason FROM evaluations WHERE trace_id = ? AND "
                        "metric = 'tool_errors'",
                        [trace_id],
                    )
                ],
                what="the judge decision",
            )
        assert rows == [
            ("skipped", "not judged: the run has no recorded user input (is message content capture on?)")
        ]
        assert stub.requests == []


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_forwarding_delivers_every_span_and_log_despite_downstream_errors(tmp_path, protocol):
    with OtlpSink() as sink:
        sink.reject(times=2)  # the first two exports fail with a retryable error
        url = sink.grpc_endpoint if protocol == "grpc" else sink.http_endpoint
        forward = ForwardConfig(url=url, protocol=protocol, initial_backoff_s=0.05)
        with running_collector(tmp_path / "fwd.duckdb", forward=forward) as collector:
            (fx,) = [f for f in fixtures() if f.name == "raw-openai__openai-v2-legacy__sequence"]
            assert post_otlp(collector.http_endpoint, "traces", fx.body("protobuf")).status == 200
            assert post_otlp(collector.http_endpoint, "logs", fx.logs_body("protobuf")).status == 200
            sink.wait_for(
                lambda s: len(s.spans) == len(fx.spans()) and len(s.logs) == len(fx.logs()), timeout=20
            )
        assert sorted(s.span_id for s in sink.spans) == sorted(s.span_id for s in fx.spans())
        root = next(s for s in sink.spans if s.parent_span_id is None)
        assert (
            root.attributes["agentotel.eval.tool_errors_detectors.success"] is True
        )  # scored before it went
        assert collector.forwarder.stats.failed_attempts >= 2
        assert collector.forwarder.stats.dropped_spans == 0


def test_late_spans_rescore_the_run_and_replace_its_rows(tmp_path):
    (fx,) = [f for f in fixtures() if f.name == "pydantic-ai__native-v6__sequence"]
    spans = fx.spans()
    late = next(s for s in spans if s.name == "execute_tool book_hotel")
    import dataclasses

    run_span = next(s for s in spans if s.name.startswith("invoke_agent"))
    expected = dataclasses.replace(
        run_span,
        attributes={
            **run_span.attributes,
            sc.AGENTOTEL_EXPECTED_TOOLS: ["search_flights", "get_weather", "book_hotel"],
        },
    )
    early = [expected if s is run_span else s for s in spans if s is not late]
    with running_collector(tmp_path / "late.duckdb") as collector:
        assert (
            post_otlp(collector.http_endpoint, "traces", encode_traces(early).SerializeToString()).status
            == 200
        )
        trace_id = run_span.trace_id
        wait_until(lambda: "tool_correctness" in _evaluations(collector, trace_id), what="first scores")
        first = _rows(collector, "SELECT count(*) FROM evaluations WHERE trace_id = ?", [trace_id])[0][0]
        assert (
            post_otlp(collector.http_endpoint, "traces", encode_traces([late]).SerializeToString()).status
            == 200
        )
        wait_until(
            lambda: collector.assembler.snapshot().assembler.traces_reopened == 1,
            what="the trace to be re-opened",
        )
        wait_until(
            lambda: (
                _rows(
                    collector,
                    "SELECT count(*) FROM tool_calls WHERE trace_id = ? AND span_id = ?",
                    [trace_id, late.span_id],
                )[0][0]
                == 1
            ),
            what="the rebuilt run",
        )
        collector.writer.flush(5)
        rows = _rows(
            collector,
            "SELECT metric, count(*) FROM evaluations WHERE trace_id = ? GROUP BY metric",
            [trace_id],
        )
        assert all(n == 1 for _, n in rows) and sum(n for _, n in rows) == first  # replaced, not added
        assert _evaluations(collector, trace_id)["tool_correctness_exact"][:2] == (1.0, True)


def test_logs_only_evaluations_for_a_stored_trace(tmp_path):
    """A gen_ai.evaluation.result log sent on its own (later, by an offline grader) is stored too."""
    from agentotel_eval.otlp.records import LogRecord

    with running_collector(tmp_path / "late-eval.duckdb") as collector:
        trace_id = _replayed_run(collector, 7)
        wait_until(lambda: _evaluations(collector, trace_id).get("tool_errors_detectors"), what="scored")
        run_span_id = _rows(collector, "SELECT span_id FROM agent_runs WHERE trace_id = ?", [trace_id])[0][0]
        now = time.time_ns()  # graded later, outside the trace's own time window
        record = LogRecord(
            now,
            now,
            trace_id,
            run_span_id,
            event_name=sc.EVENT_EVALUATION_RESULT,
            attributes={
                sc.GEN_AI_EVALUATION_NAME: "helpfulness",
                sc.GEN_AI_EVALUATION_SCORE_VALUE: 4.0,
                sc.GEN_AI_EVALUATION_SCORE_LABEL: "good",
            },
            scope_name="grader",
        )
        assert (
            post_otlp(collector.http_endpoint, "logs", encode_logs([record]).SerializeToString()).status
            == 200
        )
        found = wait_until(
            lambda: _evaluations(collector, trace_id).get("helpfulness"), what="the external score"
        )
        assert found[0] == 4.0 and found[1] is None and found[7] == "external:grader"
        assert "tool_errors_detectors" in _evaluations(collector, trace_id)  # ours were re-computed, not lost


def test_an_answer_waiting_for_the_writer_is_not_asked_for_again(tmp_path):
    """The judged row stays pending until the writer applies the answer; meanwhile it must not be taken (and
    paid for) again."""
    with (
        LLMStub(default=Reply.json(CLEAN)) as stub,
        running_collector(tmp_path / "once.duckdb", judge=_judge(stub)) as collector,
    ):
        _send_fixture(collector, "pydantic-ai__native-v5__sequence")
        wait_until(
            lambda: _rows(collector, "SELECT count(*) FROM evaluations WHERE metric = 'tool_errors'")[0][0],
            what="the queued judge row",
        )
        blocker = Blocker(hold=8.0)
        collector.writer.submit_operation(blocker)  # the answer will wait behind it
        blocker.entered.wait(10)
        wait_until(lambda: len(stub.requests) >= 1, timeout=15, what="the judge's call")
        for _ in range(6):  # polls and wake-ups come and go while the answer waits for the writer
            collector.judge.wake()
            time.sleep(0.5)
        blocker.release.set()
        wait_until(
            lambda: (
                _rows(collector, "SELECT status FROM evaluations WHERE metric = 'tool_errors'") == [("ok",)]
            ),
            timeout=15,
            what="the answer written",
        )
        assert len(stub.requests) == 1
        assert collector.judge.stats.stale == 0


def test_a_finished_answer_takes_the_next_row_without_waiting_for_a_poll(tmp_path):
    """Free slots take the next pending rows as answers finish, not once per poll: the judge keeps up with a
    backlog at the speed of the LLM, whatever max_concurrency is."""
    with LLMStub(default=Reply.json(CLEAN)) as stub:
        judge = _judge(stub, max_concurrency=2)
        with running_collector(tmp_path / "backlog.duckdb", judge=judge) as collector:
            collector.judge._poll = 120.0  # only answers finishing (and new runs) may start the next rows
            trace_ids = []
            for fx in [f for f in fixtures() if f.entry["scenario"] in ("sequence", "single")][:12]:
                trace_ids.append(_send_fixture(collector, fx.name))
            pending = "SELECT count(*) FROM evaluations WHERE metric = 'tool_errors' AND status = 'pending'"
            wait_until(
                lambda: (
                    _rows(collector, "SELECT count(*) FROM evaluations WHERE metric = 'tool_errors'")[0][0]
                    >= 12
                ),
                timeout=30,
                what="the queued rows",
            )
            wait_until(lambda: _rows(collector, pending)[0][0] == 0, timeout=60, what="every row answered")
