"""The detectors through the running collector: real fixture runs changed by the robustness suite, sent as
OTLP over HTTP, reconstructed and scored at ingest; each run's detectors row names exactly the error type it
holds, and a finding the detectors are not sure of sends the run to the judge under only_when =
detector_uncertain."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from agentotel_eval.calibration.cases import LabelledCase
from agentotel_eval.calibration.robustness import OPERATORS, build_robustness_suite
from agentotel_eval.calibration.spans import case_spans
from agentotel_eval.collector.config_scoring import JudgeSettings
from agentotel_eval.otlp.encode import encode_traces
from tests.support.collector_harness import post_otlp, running_collector, wait_until
from tests.support.fixture_traces import TRACES_DIR
from tests.support.llm_stub import LLMStub, Reply


def _detectors(collector: Any, trace_id: str) -> dict[str, Any] | None:
    with collector._cursor() as cursor:
        row = cursor.execute(
            "SELECT details FROM evaluations WHERE trace_id = ? AND metric = 'tool_errors_detectors'",
            [trace_id],
        ).fetchone()
    return json.loads(row[0]) if row else None


def _send(collector: Any, case: LabelledCase, convention: str) -> str:
    spans = case_spans(case, convention)
    body = encode_traces(spans).SerializeToString()
    assert post_otlp(collector.http_endpoint, "traces", body).status == 200
    return spans[0].trace_id


def _sample() -> list[LabelledCase]:
    """Two cases of every operator, from different recorded runs."""
    chosen: dict[str, list[LabelledCase]] = {}
    for case in build_robustness_suite(Path(TRACES_DIR)):
        picked = chosen.setdefault(case.operator, [])
        if len(picked) < 2 and all(
            c.meta["base"].split("__")[0] != case.meta["base"].split("__")[0] for c in picked
        ):
            picked.append(case)
    return [c for cases in chosen.values() for c in cases]


def test_changed_runs_are_found_at_ingest_by_the_type_they_hold(tmp_path: Path) -> None:
    cases = _sample()
    assert {c.operator for c in cases} == set(OPERATORS)
    with running_collector(tmp_path / "detect.duckdb") as collector:
        sent = {
            (_send(collector, case, convention)): case
            for n, case in enumerate(cases)
            for convention in (("genai", "openinference")[n % 2],)
        }
        wait_until(
            lambda: all(_detectors(collector, t) is not None for t in sent),
            timeout=60,
            what="every run scored by the detectors",
        )
        for trace_id, case in sent.items():
            log = _detectors(collector, trace_id)
            assert log is not None
            found = {f["type"] for f in log["detectors"] if not f["uncertain"]}
            assert found == set(case.labels), (case.id, log["detectors"])


def _without_request_messages(spans: list[Any], user_input: str) -> list[Any]:
    """The spans of a capture that records the run's input on its agent span and no LLM request: nobody can
    say whether the model had a system prompt."""
    out = []
    for span in spans:
        attributes = {k: v for k, v in span.attributes.items() if k != "gen_ai.input.messages"}
        if span.name.startswith("invoke_agent"):
            attributes["gen_ai.input.messages"] = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": user_input}]}]
            )
        out.append(dataclasses.replace(span, attributes=attributes))
    return out


def test_an_uncertain_finding_goes_to_the_judge(tmp_path: Path) -> None:
    case = next(
        c
        for c in build_robustness_suite(Path(TRACES_DIR))
        if c.operator == "unground" and isinstance(c.meta["value"], str) and not c.meta["value"][:1].isdigit()
    )  # a made-up name
    spans = _without_request_messages(case_spans(case, "genai"), case.user_input)
    verdict = {
        "detected": True,
        "confidence": 0.8,
        "reason": "made up",
        "error_types": ["sequence_error"],
        "errors": [{"type": "sequence_error", "description": "an argument from nowhere"}],
        "error_severity": "medium",
    }
    with LLMStub(default=Reply.json(verdict)) as stub:
        judge = JudgeSettings(
            model="openai/gpt-4o-mini",
            api_base=stub.base_url,
            api_key="sk-test",
            max_retries=0,
            only_when=("detector_uncertain",),
        )
        with running_collector(tmp_path / "judge.duckdb", judge=judge) as collector:
            body = encode_traces(spans).SerializeToString()
            assert post_otlp(collector.http_endpoint, "traces", body).status == 200
            trace_id = spans[0].trace_id
            wait_until(lambda: _detectors(collector, trace_id) is not None, timeout=30)
            log = _detectors(collector, trace_id)
            assert (
                log is not None and log["uncertain"] and log["success"] is True
            )  # not sure: it fails nothing
            assert [f["subtype"] for f in log["detectors"]] == ["ungrounded_argument"]
            assert (
                log["detectors"][0]["uncertain"]
                and not log["detectors"][0]["evidence"]["system_prompt_recorded"]
            )
            wait_until(
                lambda: (_judge_row(collector, trace_id) or ("pending",))[0] != "pending",
                timeout=30,
                what="the judge's verdict",
            )
            assert _judge_row(collector, trace_id) == (
                "ok",
                False,
            )  # judged: an error it confirms fails the run


def _judge_row(collector: Any, trace_id: str) -> tuple[str, bool] | None:
    with collector._cursor() as cursor:
        row = cursor.execute(
            "SELECT status, success FROM evaluations WHERE trace_id = ? AND metric = 'tool_errors'",
            [trace_id],
        ).fetchone()
    return (row[0], row[1]) if row else None
