"""Validation of the judge's answer and its combination with the detectors: pure functions, no model."""

import json

import pytest

from agentotel_eval.detectors import Finding
from agentotel_eval.judge.errors import JudgeOutputError
from agentotel_eval.metrics.tool_errors import (
    ERROR_TYPES,
    Verdict,
    as_bool,
    as_confidence,
    combine,
    detectors_verdict,
    parse_verdict,
)

ALL = list(ERROR_TYPES)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("false", False),
        ("False", False),
        (" TRUE ", True),
        ("no", False),
        ("yes", True),
        (0, False),
        (1, True),
    ],
)
def test_detected_must_be_a_real_boolean(value, expected):
    assert as_bool(value) is expected


@pytest.mark.parametrize("value", ["maybe", "", None, 2, 0.5, [], {}])
def test_detected_rejects_anything_else(value):
    with pytest.raises(JudgeOutputError, match="detected"):
        as_bool(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.85, 0.85),
        (0, 0.0),
        (1, 1.0),
        (1.0, 1.0),
        ("0.7", 0.7),
        (85, 0.85),
        (100, 1.0),
        ("85%", 0.85),
        ("85", 0.85),
        (90.0, 0.9),
        (1.0000000001, 1.0),
        ("0 %", 0.0),
    ],
)
def test_confidence_is_a_fraction_or_a_clear_percentage(value, expected):
    assert as_confidence(value) == pytest.approx(expected)


@pytest.mark.parametrize("value", [1.5, 85.5, 150, -0.2, "high", None, True, float("nan"), "120%", [0.5]])
def test_confidence_that_is_not_clearly_valid_is_invalid(value):
    with pytest.raises(JudgeOutputError, match="confidence"):
        as_confidence(value)


def answer(**fields):
    base = {
        "detected": True,
        "confidence": 0.8,
        "reason": "r",
        "error_types": [],
        "errors": [],
        "error_severity": "medium",
    }
    base.update(fields)
    return json.dumps(base)


def test_string_false_is_false():
    verdict = parse_verdict(answer(detected="false", error_severity="none"), ALL)
    assert verdict.detected is False and verdict.error_severity == "none"


def test_unknown_types_are_dropped_and_types_follow_errors():
    verdict = parse_verdict(
        answer(
            error_types=["sequence_error", "made_up"],
            errors=[
                {"type": "Result-Ignored", "description": "ignored #2"},
                {"type": "hallucination", "description": "x"},
            ],
        ),
        ALL,
    )
    assert verdict.error_types == ["sequence_error", "result_ignored"]
    assert verdict.errors == [{"type": "result_ignored", "description": "ignored #2"}]
    assert verdict.dropped == ["hallucination", "made_up"]


def test_types_outside_the_filter_are_dropped_and_then_nothing_is_detected():
    text = answer(error_types=["sequence_error"], errors=[{"type": "sequence_error", "description": "d"}])
    verdict = parse_verdict(text, ["parameter_error"])
    assert (verdict.detected, verdict.errors, verdict.error_types, verdict.error_severity) == (
        False,
        [],
        [],
        "none",
    )
    assert "outside error_types" in verdict.reason


def test_mixed_types_keep_only_the_filtered_ones():
    text = answer(
        errors=[
            {"type": "sequence_error", "description": "a"},
            {"type": "parameter_error", "description": "b"},
        ]
    )
    verdict = parse_verdict(text, ["parameter_error"])
    assert verdict.detected and verdict.errors == [{"type": "parameter_error", "description": "b"}]


def test_missing_confidence():
    assert parse_verdict('{"detected": false}', ALL).confidence == 0.0
    with pytest.raises(JudgeOutputError, match="confidence"):
        parse_verdict('{"detected": true}', ALL)


def test_contradictory_answer_is_invalid():
    with pytest.raises(JudgeOutputError, match="agree"):
        parse_verdict(answer(detected=False, errors=[{"type": "sequence_error", "description": "d"}]), ALL)


def test_severity_normalised_or_defaulted():
    assert parse_verdict(answer(error_severity="Critical"), ALL).error_severity == "high"
    assert parse_verdict(answer(error_severity="whatever"), ALL).error_severity == "medium"
    assert parse_verdict(answer(detected=False, error_severity="high"), ALL).error_severity == "none"


FINDING = Finding(
    "invalid_function", "call #2 invokes 'get_wether', which is not an available tool", "get_wether", (1,)
)


def judge_says(detected, confidence=0.9, errors=(), severity=None):
    return Verdict(
        detected,
        confidence,
        "judge reason",
        [e["type"] for e in errors],
        list(errors),
        severity or ("medium" if detected else "none"),
    )


def test_a_hard_finding_overrides_a_judge_that_saw_nothing():
    verdict = combine(judge_says(False, 0.9), [FINDING])
    assert verdict.detected and verdict.confidence == 1.0 and verdict.error_severity == "high"
    assert verdict.errors == [{"type": "invalid_function", "description": FINDING.description}]
    assert "did not report" in verdict.reason and "detected=false (confidence 0.9)" in verdict.reason


def test_findings_the_judge_reported_are_not_duplicated():
    mine = {"type": "invalid_function", "description": "#2 calls get_wether, a tool that does not exist"}
    verdict = combine(judge_says(True, 0.7, [mine], "low"), [FINDING])
    assert verdict.errors == [mine] and verdict.confidence == 1.0 and verdict.error_severity == "high"
    assert verdict.reason == "judge reason"


def test_without_findings_the_judge_stands():
    judge = judge_says(True, 0.6)
    assert combine(judge, []) is judge


def test_detectors_alone():
    verdict = detectors_verdict([FINDING], "checks run: invalid_function")
    assert (verdict.detected, verdict.confidence, verdict.error_types, verdict.error_severity) == (
        True,
        1.0,
        ["invalid_function"],
        "high",
    )
    clean = detectors_verdict([], "checks run: invalid_function")
    assert (clean.detected, clean.confidence, clean.errors, clean.error_severity) == (False, 0.0, [], "none")
    assert "checks run: invalid_function" in clean.reason


def test_findings_the_judge_missed_are_added_and_named_in_the_reason():
    other = {"type": "sequence_error", "description": "#1 before #3"}
    verdict = combine(judge_says(True, 0.7, [other]), [FINDING])
    assert verdict.errors == [other, {"type": "invalid_function", "description": FINDING.description}]
    assert verdict.error_types == ["sequence_error", "invalid_function"]
    assert verdict.reason.startswith("judge reason [Deterministic checks also found: call #2 invokes")
