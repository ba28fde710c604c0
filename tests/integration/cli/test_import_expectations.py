"""``agentotel-eval import-expectations``: peers' files become a dataset the collector
reads and scores with."""

from __future__ import annotations

import json
from pathlib import Path

from agentotel_eval.collector.expectations import Dataset
from agentotel_eval.test_case import ToolCall
from agentotel_eval.trajectory import score_trajectory
from tests.support.ui_data import cli

DATA = Path(__file__).resolve().parents[2] / "unit" / "trajectory" / "data"


def test_bfcl_answers_become_a_dataset_the_collector_scores_with(tmp_path: Path) -> None:
    out = tmp_path / "bfcl.jsonl"
    done = cli(
        "import-expectations",
        "--from",
        "bfcl",
        str(DATA / "bfcl_possible_answer.jsonl"),
        "--questions",
        str(DATA / "bfcl_questions.jsonl"),
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 7 expectation(s) from 1 file(s)" in done.stderr
    dataset = Dataset.load(out)
    question = json.loads((DATA / "bfcl_questions.jsonl").read_text().splitlines()[0])["question"][0][0][
        "content"
    ]
    entry = dataset.lookup(question)
    assert entry is not None and entry.trajectory is not None and entry.expected_tools is None
    calls = [ToolCall("calculate_triangle_area", {"base": 10, "height": 5, "unit": "units"})]
    assert score_trajectory(entry.trajectory, calls).score == 1.0
    assert (
        score_trajectory(
            entry.trajectory, [ToolCall("calculate_triangle_area", {"base": 5, "height": 5})]
        ).score
        == 0.0
    )


def test_adk_and_langchain_to_stdout_and_bad_files_write_nothing(tmp_path: Path) -> None:
    adk = cli(
        "import-expectations",
        "--from",
        "adk",
        "--mode",
        "ANY_ORDER",
        str(DATA / "adk_dependent_tool_calls.test.json"),
    )
    assert adk.returncode == 0, adk.stderr
    lines = [json.loads(line) for line in adk.stdout.splitlines()]
    assert [line["expected_trajectory"]["preset"] for line in lines] == ["adk:ANY_ORDER"] * 2
    langchain = cli(
        "import-expectations",
        "--from",
        "langchain",
        "--ignore-args",
        str(DATA / "agentevals_reference_outputs.json"),
    )
    assert langchain.returncode == 0, langchain.stderr
    (line,) = [json.loads(text) for text in langchain.stdout.splitlines()]
    assert line["expected_trajectory"] == {
        "preset": "langchain:strict",
        "expected_tools": [["get_weather", "get_weather"]],
    }
    out = tmp_path / "never.jsonl"
    wrong = cli(
        "import-expectations",
        "--from",
        "bfcl",
        str(DATA / "adk_dependent_tool_calls.test.json"),
        "-o",
        str(out),
    )
    assert wrong.returncode == 2 and "error:" in wrong.stderr and not out.exists()
    missing = cli("import-expectations", "--from", "adk", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
