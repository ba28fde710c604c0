"""Every score the pages show says what it is and which way is good: the metric's label (no abbreviation), its
direction, what it measures; the runs table's chips and the run page's evaluations use them, and the span tree
shows what a span does as the conventions say it."""

from __future__ import annotations

import re
from html import unescape

from agentotel_eval.metrics.registry import HIGHER, LOWER, METRICS, metric_label
from agentotel_eval.pages.run_view import span_kind
from agentotel_eval.pages.runs_view import score_chip


def test_every_registered_metric_has_a_label_a_direction_and_a_meaning() -> None:
    for name, label in METRICS.items():
        assert metric_label(name) is label
        assert label.name == name and label.label and label.meaning and label.passes
        assert label.direction in (HIGHER, LOWER) and label.arrow in ("↑", "↓")
        assert "_" not in label.label  # words, not the stored name
    assert metric_label("tool_correctness_exact").label == "Tool correctness (exact set)"
    assert "order is NOT checked" in metric_label("tool_correctness_exact").meaning
    for errors in ("tool_errors", "tool_errors_detectors"):
        assert metric_label(errors).direction == LOWER and metric_label(errors).arrow == "↓"
    assert metric_label("tool_correctness").description.startswith(
        "Tool correctness (higher is better). share"
    )


def test_a_variant_or_an_unknown_metric_still_reads_as_words() -> None:
    multimodal = metric_label("multimodal_tool_correctness_exact")
    assert (
        multimodal.label == "Multimodal tool correctness (exact set)" and multimodal.higher_is_better is True
    )
    unknown = metric_label("answer_relevancy")
    assert unknown.label == "Answer relevancy" and unknown.direction == "" and unknown.arrow == ""


def chip_text(chip: str) -> tuple[str, str]:
    title = re.search(r'title="([^"]*)"', chip)
    assert title
    return unescape(re.sub(r"<[^>]+>", "", chip)).strip(), unescape(title.group(1))


def test_score_chips_name_the_metric_in_full_with_its_direction() -> None:
    text, title = chip_text(score_chip("tool_correctness_exact", "ok", True, 1.0))
    assert text == "Tool correctness (exact set) 1.00 ↑"
    assert "higher is better" in title and "order is NOT checked" in title and "passed" in title
    text, title = chip_text(score_chip("tool_errors_detectors", "ok", False, 1.0))
    assert text == "Tool-use errors (detectors) errors found"
    assert "lower is better" in title and "Score 1.00: failed" in title
    text, _ = chip_text(score_chip("tool_errors_detectors", "ok", True, 0.0))
    assert text == "Tool-use errors (detectors) no error found"
    text, title = chip_text(score_chip("tool_correctness", "skipped", False, None))
    assert text == "Tool correctness skipped" and "Not scored: skipped" in title
    for metric in METRICS:  # no abbreviation left
        assert not re.search(r"\btc\b|tc_", chip_text(score_chip(metric, "ok", True, 1.0))[0])


def test_the_span_tree_shows_what_a_span_does_rather_than_internal() -> None:
    assert span_kind({"kind": "INTERNAL", "openinference_span_kind": "LLM"})[0] == "LLM"
    assert span_kind({"kind": "INTERNAL", "openinference_span_kind": "TOOL"})[0] == "tool"
    assert span_kind({"kind": "INTERNAL", "openinference_span_kind": "CHAIN"}) == (
        "chain",
        "openinference.span.kind = CHAIN (OTLP kind: internal)",
    )
    assert span_kind({"kind": "CLIENT", "gen_ai_operation_name": "chat"})[0] == "chat"
    assert span_kind({"kind": "INTERNAL", "gen_ai_operation_name": "execute_tool"})[0] == "execute_tool"
    assert span_kind({"kind": "SERVER"}) == ("server", "OTLP span kind")
    assert span_kind({"kind": None}) == ("", "OTLP span kind")
