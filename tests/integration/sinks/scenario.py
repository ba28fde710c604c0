"""The example agents' runs sent through a real collector with one sink and the LLM judge (on a local stub),
what the evaluations table then holds, and a re-score that changes some verdicts: what each tool
must end up showing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentotel_eval.cli.demo import _export_to
from agentotel_eval.collector.config_scoring import JudgeSettings
from agentotel_eval.collector.config_sinks import SinkConfig
from agentotel_eval.demo.agents import run_all
from tests.support.collector_harness import running_collector, wait_until
from tests.support.llm_stub import LLMStub, Reply

VERDICT = {
    "detected": False,
    "confidence": 0.1,
    "reason": "the tools were used as asked",
    "error_types": [],
    "errors": [],
    "error_severity": "none",
}
SENT = (
    "SELECT trace_id, run_span_id, metric, score, success, status, reason, evaluator, evaluator_version, "
    "model FROM evaluations WHERE source = 'agentotel-eval' AND status IN ('ok', 'error')"
)


@dataclass(frozen=True)
class Expected:
    """One evaluation as the table holds it."""

    trace_id: str
    span_id: str
    metric: str
    score: float | None
    label: str
    reason: str
    evaluator: str
    annotator: str


def evaluations(collector: Any) -> dict[tuple[str, str], Expected]:
    """(run span, metric) -> what the table says, for every evaluation a sink sends."""
    out = {}
    for t, s, metric, score, success, status, reason, evaluator, _version, _model in collector.query(SENT)[
        "rows"
    ]:
        label = "error" if status == "error" or success is None else "pass" if success else "fail"
        out[(s, metric)] = Expected(
            t,
            s,
            metric,
            score,
            label,
            reason or "",
            evaluator or "",
            "LLM" if metric == "tool_errors" else "CODE",
        )
    return out


def _delivered(collector: Any, total: int) -> bool:
    worker = collector.sinks.workers[0]
    return worker.stats.queued == 0 and worker.stats.sent >= total


@contextlib.contextmanager
def scored_runs(tmp_path: Path, sink: SinkConfig) -> Iterator[tuple[Any, dict[tuple[str, str], Expected]]]:
    """A collector with ``sink`` and the judge, after the example agents' runs were scored,
    judged and delivered."""
    with LLMStub(default=Reply.json(VERDICT)) as stub:
        judge = JudgeSettings(
            model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="sk-test", max_retries=0
        )
        with running_collector(tmp_path / "sink.duckdb", sinks=(sink,), judge=judge) as collector:
            provider = _export_to(collector)
            runs = run_all()
            provider.force_flush()
            wait_until(
                lambda: (
                    collector.query(
                        "SELECT count(*) FROM evaluations WHERE metric = 'tool_errors' AND status = 'ok'"
                    )["rows"][0][0]
                    == runs
                ),
                timeout=60,
                what="the judge's answers",
            )
            expected = evaluations(collector)
            wait_until(lambda: _delivered(collector, len(expected)), timeout=120, what="the sink's delivery")
            assert collector.sinks.workers[0].stats.dropped == 0, collector.sinks.workers[0].stats
            yield collector, expected


def rescore_stricter(collector: Any, tmp_path: Path) -> dict[tuple[str, str], Expected]:
    """Re-score every run with a threshold of 0.9: partial tool-correctness scores turn from pass to fail.
    Returns the table's evaluations once the sink has sent the new ones."""
    config = tmp_path / "stricter.toml"
    config.write_text("[scoring]\nthreshold = 0.9\n")
    before = collector.sinks.workers[0].stats.sent
    summary = collector.rescore({"config": str(config)})
    assert summary["traces"] > 0
    after = evaluations(collector)
    rescored = sum(1 for e in after.values() if e.metric != "tool_errors")  # the judge's verdicts are kept
    wait_until(lambda: _delivered(collector, before + rescored), timeout=120, what="the re-score's delivery")
    return after


def changed(
    before: dict[tuple[str, str], Expected], after: dict[tuple[str, str], Expected]
) -> set[tuple[str, str]]:
    """The evaluations whose verdict the re-score changed (there must be some, or the test proves nothing)."""
    keys = {k for k in before if k in after and before[k].label != after[k].label}
    assert keys, "the stricter threshold changed no verdict"
    return keys
