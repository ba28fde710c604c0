"""The quality metrics: counts by service, agent, metric and result, with agents past the
bound as ``other``."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from agentotel_eval.collector.telemetry.quality import QualityCounts, QualityTelemetry


def test_counts_and_the_label_bound() -> None:
    counts = QualityCounts(max_agents=2)
    counts.count("shop", "refunds", "tool_correctness", "pass")
    counts.count("shop", "refunds", "tool_errors_detectors", "fail", ["error_handling", "error_handling"])
    counts.count("shop", "search", "tool_correctness", "fail")
    for i in range(5):  # generated agent names past the bound: one series, not five
        counts.count("shop", f"agent-{i}", "tool_correctness", "pass")
    counts.count("batch", "nightly", "tool_correctness", "error")
    registry = CollectorRegistry()
    registry.register(QualityTelemetry(counts))
    text = generate_latest(registry).decode()
    assert (
        'agentotel_evaluations_total{agent="refunds",metric="tool_correctness",result="pass",service="shop"} '
        "1.0" in text
    )
    assert (
        'agentotel_evaluations_total{agent="other",metric="tool_correctness",result="pass",service="shop"} '
        "5.0" in text
    )
    assert (
        'agentotel_evaluations_total{agent="other",metric="tool_correctness",result="error",service="batch"} '
        "1.0" in text
    )
    assert 'agentotel_tool_errors_total{agent="refunds",service="shop",type="error_handling"} 2.0' in text
    assert "agent-3" not in text and counts.folded == 6
