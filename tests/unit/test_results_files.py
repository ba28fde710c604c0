"""Results files as ``compare`` reads them, whatever their length."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentotel_eval.results_files import ResultsFileError, assertion_record, scored_runs_from_file


def _record(test: str, score: float) -> dict:
    return assertion_record(
        test,
        trace_id="a" * 32,
        span_id="b" * 16,
        agent="planner",
        metric="tool_correctness",
        score=score,
        success=score >= 0.5,
        tools_called=["search"],
        reason="",
    )


@pytest.mark.parametrize("lines", [1, 2])
def test_a_pytest_results_file_of_any_length_is_read(tmp_path: Path, lines: int) -> None:
    """A suite with one agent test writes one line: a JSON object on its own, not a list or a document."""
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(_record(f"test_{i}", 1.0)) + "\n" for i in range(lines)))
    runs = scored_runs_from_file(path)
    assert [(r.agent, r.input, r.metric, r.score) for r in runs] == [
        ("planner", f"test_{i}", "tool_correctness", 1.0) for i in range(lines)
    ]


def test_one_case_of_an_eval_jsonl_is_read_and_a_stranger_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(
        json.dumps(
            {
                "name": "x",
                "input": "q",
                "metrics": [{"metric": "tool_correctness", "score": 0.5, "success": True, "status": "ok"}],
            }
        )
        + "\n"
    )
    assert [(r.input, r.score) for r in scored_runs_from_file(path)] == [("q", 0.5)]
    path.write_text('{"foo": 1}\n')
    with pytest.raises(ResultsFileError, match="not an 'agentotel-eval eval --format json' document"):
        scored_runs_from_file(path)
