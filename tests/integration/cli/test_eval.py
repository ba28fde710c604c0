"""The real `agentotel-eval eval` command in a subprocess, on JSONL files in tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentotel_eval.evaluate import LONG_INPUT

HOTEL = {
    "input": "Search for hotels in Paris and book the cheapest one.",
    "actual_output": "I found and booked Hotel Le Marais for $120/night.",
    "tools_called": ["search_hotels", "sort_by_price", "book_hotel"],
    "expected_tools": ["search_hotels", "book_hotel"],
}
HALF = {"input": "book it", "tools_called": ["search"], "expected_tools": ["search", "book"], "name": "half"}


def write_cases(path: Path, *rows: object) -> Path:
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8"
    )
    return path


def run_cli(
    *args: str, stdin: str | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", "eval", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )


def test_all_cases_pass(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", HOTEL, {**HOTEL, "name": "again"})
    proc = run_cli(str(cases))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # short input, not a terminal: no progress bar
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["line", "case", "tool_correctness", "↑", "result"]  # higher is better
    assert "1.00 pass" in lines[1] and lines[1].rstrip().endswith("PASS")
    assert "again" in lines[2]
    assert "2/2 cases passed (100.0%)" in proc.stdout
    assert "tool_correctness: mean score 1.000, passed 2/2" in proc.stdout
    assert "  tool_correctness: Tool correctness (higher is better). share of the expected" in proc.stdout


def test_a_failing_case_fails_the_command_and_explains_why(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", HOTEL, HALF)
    proc = run_cli(str(cases), "--threshold", "0.6")
    assert proc.returncode == 1
    assert (
        "FAILED line 2 (half) tool_correctness [0.50 < 0.6]: Matched 1 of 2 expected tool "
        "calls. Missing: book." in proc.stdout
    )
    assert "1/2 cases passed (50.0%)" in proc.stdout
    assert "mean score 0.750" in proc.stdout
    assert run_cli(str(cases), "--threshold", "0.6", "--exit-zero").returncode == 0
    assert run_cli(str(cases)).returncode == 0  # 0.5 passes the default threshold


def test_json_output_and_mode_flags(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", HOTEL, HALF)
    proc = run_cli(
        str(cases), "--format", "json", "--metric", "tool_correctness", "-m", "tool_correctness", "--ordering"
    )
    document = json.loads(proc.stdout)
    assert [c["line"] for c in document["cases"]] == [1, 2]
    first = document["cases"][0]["metrics"]
    assert [m["metric"] for m in first] == ["tool_correctness_ordering"]  # deduplicated after --ordering
    assert first[0]["score"] == 1.0 and first[0]["evaluation_log"]["mode"] == "ordering"
    summary = document["summary"]
    assert summary["cases"] == 2 and summary["pass_rate"] == 1.0
    assert summary["metrics"]["tool_correctness_ordering"]["mean_score"] == pytest.approx(0.75)

    proc = run_cli(
        str(cases), "--format", "json", "--exact", "--metric", "tool_correctness,tool_correctness_ordering"
    )
    document = json.loads(proc.stdout)
    assert proc.returncode == 1
    names = [m["metric"] for m in document["cases"][0]["metrics"]]
    assert names == ["tool_correctness_exact", "tool_correctness_exact_ordering"]
    assert document["summary"]["pass_rate"] == 0.0

    strict = json.loads(run_cli(str(cases), "--format", "json", "--strict").stdout)
    assert [c["metrics"][0]["score"] for c in strict["cases"]] == [1.0, 0.0]
    assert strict["cases"][0]["metrics"][0]["threshold"] == 1.0


def test_params_compare_arguments(tmp_path):
    row = {
        "input": "q",
        "tools_called": [{"name": "search", "input_parameters": {"city": "Paris", "stars": 5}}],
        "expected_tools": [{"name": "search", "input_parameters": {"city": "Paris", "stars": 4}}],
    }
    cases = write_cases(tmp_path / "cases.jsonl", row)
    document = json.loads(run_cli(str(cases), "--format", "json", "--params", "input_parameters").stdout)
    result = document["cases"][0]["metrics"][0]
    assert result["score"] == 0.5 and "stars" in result["reason"]
    assert result["evaluation_log"]["evaluation_params"] == ["input_parameters"]


def test_invalid_lines_are_reported_and_the_valid_ones_still_scored(tmp_path):
    cases = write_cases(
        tmp_path / "cases.jsonl",
        HOTEL,
        "",
        "{not json",
        '["a list"]',
        {"input": "x", "expected_tools": ["a"], "surprise": 1},
        {"expected_tools": ["a"]},
        HALF,
    )
    with cases.open("ab") as stream:
        stream.write(b'{"input": "\xff"}\n')
    proc = run_cli(str(cases), "--format", "json")
    assert proc.returncode == 2
    err = proc.stderr
    assert f"{cases}:3: invalid JSON" in err
    assert f"{cases}:4: expected a JSON object, got list" in err
    assert f"{cases}:5: invalid test case: unknown test case field(s): ['surprise']" in err
    assert f"{cases}:6: invalid test case: a test case needs an 'input'" in err
    assert f"{cases}:8: not UTF-8" in err
    document = json.loads(proc.stdout)
    assert [c["line"] for c in document["cases"]] == [1, 7]
    assert [e["line"] for e in document["invalid_lines"]] == [3, 4, 5, 6, 8]


def test_usage_errors(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", HOTEL)
    unknown = run_cli(str(cases), "--metric", "accuracy")
    assert unknown.returncode == 2 and "unknown metric 'accuracy'" in unknown.stderr
    missing = run_cli(str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    bad_threshold = run_cli(str(cases), "--threshold", "2")
    assert bad_threshold.returncode == 2 and "threshold must be between 0 and 1" in bad_threshold.stderr
    empty = write_cases(tmp_path / "empty.jsonl", "")
    proc = run_cli(str(empty))
    assert proc.returncode == 5 and "no test cases" in proc.stderr


def test_tool_errors_judge_through_litellm_against_the_stub(tmp_path):
    """The LLM judge from the command line: litellm talks HTTP to the local stub; cost
    and verdict reported."""
    from tests.support.llm_stub import LLMStub, Reply

    verdict = {
        "detected": True,
        "confidence": 0.9,
        "reason": "book_hotel before search_hotels",
        "error_types": ["sequence_error"],
        "errors": [{"type": "sequence_error", "description": "booked before searching"}],
        "error_severity": "high",
    }
    case = {
        **HOTEL,
        "tool_calls": [
            {"name": "book_hotel", "input_parameters": {"hotel": "x"}},
            {"name": "search_hotels", "input_parameters": {"city": "Paris"}},
        ],
    }
    cases = write_cases(tmp_path / "cases.jsonl", case)
    with LLMStub(default=Reply.json(verdict)) as stub:
        proc = run_cli(
            str(cases),
            "-m",
            "tool_errors",
            "--model",
            "openai/gpt-4o-mini",
            "--api-base",
            stub.base_url,
            "--format",
            "json",
            "--cache-dir",
            str(tmp_path / "cache"),
            env={"OPENAI_API_KEY": "sk-test"},
        )
        assert proc.returncode == 1, proc.stderr  # a confidently detected error fails the case
        (result,) = json.loads(proc.stdout)["cases"][0]["metrics"]
        assert (result["metric"], result["score"], result["success"]) == ("tool_errors", 0.9, False)
        assert result["evaluation_log"]["error_types"] == ["sequence_error"]
        assert result["cost_usd"] == 0.0  # a model on a local api_base costs nothing (no price given)
        assert "book_hotel" in stub.requests[0].prompt_text()
        # the second run is answered from the on-disk cache: no request reaches the stub
        again = run_cli(
            str(cases),
            "-m",
            "tool_errors",
            "--model",
            "openai/gpt-4o-mini",
            "--api-base",
            stub.base_url,
            "--cache-dir",
            str(tmp_path / "cache"),
            env={"OPENAI_API_KEY": "sk-test"},
        )
        assert again.returncode == 1 and len(stub.requests) == 1


def test_tool_errors_needs_a_model_and_detectors_need_none(tmp_path):
    cases = write_cases(
        tmp_path / "cases.jsonl", {**HOTEL, "available_tools": ["search_hotels", "book_hotel"]}
    )
    proc = run_cli(str(cases), "--metric", "tool_errors")
    assert proc.returncode == 2 and "tool_errors needs a judge model" in proc.stderr
    detectors = run_cli(str(cases), "--metric", "tool_errors_detectors", "--format", "json")
    (result,) = json.loads(detectors.stdout)["cases"][0]["metrics"]
    assert result["metric"] == "tool_errors_detectors" and result["model"] is None
    assert (
        result["evaluation_log"]["detectors"][0]["type"] == "invalid_function"
    )  # sort_by_price is not offered
    assert detectors.returncode == 1


def test_stdin_and_progress_for_long_inputs(tmp_path):
    text = "\n".join(json.dumps({**HOTEL, "name": f"c{k}"}) for k in range(LONG_INPUT)) + "\n"
    proc = run_cli("-", "--quiet", stdin=text)
    assert proc.returncode == 0
    assert f"{LONG_INPUT}/{LONG_INPUT} cases passed" in proc.stdout
    assert "c0" not in proc.stdout  # --quiet: no per-case rows
    progress = proc.stderr.strip().splitlines()
    assert len(progress) == 10 and progress[-1].startswith("[" + "#" * 30 + f"] {LONG_INPUT}/{LONG_INPUT}")
    quiet = run_cli("-", "--quiet", "--no-progress", stdin=text)
    assert quiet.stderr == ""


def test_console_script_and_no_litellm_import(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", HOTEL)
    script = Path(sys.executable).parent / "agentotel-eval"
    if script.exists():
        proc = subprocess.run([str(script), "eval", str(cases)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and "1/1 cases passed" in proc.stdout
    code = (
        "import sys; from agentotel_eval.cli import main\n"
        f"rc = main(['eval', {str(cases)!r}, '--no-progress'])\n"
        "print('litellm' in sys.modules, rc, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stderr.strip() == "False 0"


def test_a_junit_report_has_a_testcase_per_case_and_metric(tmp_path):
    import xml.etree.ElementTree as ET

    no_expectation = {"input": "hello", "tools_called": ["search"]}
    cases = write_cases(tmp_path / "cases.jsonl", HOTEL, HALF, no_expectation)
    report = tmp_path / "reports" / "junit.xml"
    report.parent.mkdir()
    proc = run_cli(
        str(cases),
        "--threshold",
        "0.6",
        "-m",
        "tool_correctness,tool_correctness_exact",
        "--junit",
        str(report),
    )
    assert proc.returncode == 1
    root = ET.parse(report).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "6",
        "3",
        "0",
        "2",
    )
    cases_ = suite.findall("testcase")
    assert [c.get("classname") for c in cases_[:2]] == [
        "agentotel-eval.tool_correctness",
        "agentotel-eval.tool_correctness_exact",
    ]
    assert cases_[0].find("failure") is None and cases_[1].find("failure") is not None  # extra sort_by_price
    failure = cases_[2].find("failure")
    assert failure is not None and failure.get("message") == "tool_correctness 0.50 < 0.6"
    assert "Missing: book" in (failure.text or "")
    assert cases_[2].get("name", "").startswith("line 2: half")
    assert all(c.find("skipped") is not None for c in cases_[4:])
    assert run_cli(str(cases), "--junit", str(tmp_path / "missing" / "x.xml")).returncode == 2


def test_trajectory_specs_in_case_files(tmp_path):
    spec = {
        "extra": "penalize",
        "steps": [
            {"id": "found", "tool": "search_hotels", "args": {"city": {"$eq": "paris", "$norm": ["case"]}}},
            {"tool": "book_hotel", "args": {"hotel": {"$ref": "found.result.0"}}},
        ],
    }
    tools = [
        {"name": "search_hotels", "input_parameters": {"city": "Paris"}, "output": ["Le Marais", "Ritz"]},
        {"name": "book_hotel", "input_parameters": {"hotel": "Le Marais"}},
    ]
    wrong = [tools[0], {"name": "book_hotel", "input_parameters": {"hotel": "Hilton"}}]
    cases = write_cases(
        tmp_path / "cases.jsonl",
        {"name": "booked", "input": "book", "tools_called": tools, "expected_trajectory": spec},
        {"name": "invented", "input": "book", "tools_called": wrong, "expected_trajectory": spec},
        {
            "name": "bad-spec",
            "input": "book",
            "tools_called": tools,
            "expected_trajectory": {"steps": [{"tool": "x", "weight": -1}]},
        },
    )
    proc = run_cli(str(cases), "--metric", "trajectory", "--format", "json")
    assert proc.returncode == 2, proc.stdout  # the unreadable spec is an input error; the others still scored
    assert "cases.jsonl:3: invalid test case: expected_trajectory.steps[0].weight must be" in proc.stderr
    document = json.loads(proc.stdout)
    assert [c["line"] for c in document["cases"]] == [1, 2]
    (booked,), (invented,) = (c["metrics"] for c in document["cases"])
    assert (booked["metric"], booked["score"], booked["success"]) == ("trajectory", 1.0, True)
    assert invented["success"] is False and invented["score"] == pytest.approx(0.5)  # F1 of 1/2 and 1/2
    assert "'Hilton'" in invented["reason"]
    assert invented["evaluation_log"]["extra"] == [1]


def test_cases_with_no_expectation_are_reported_apart_and_left_out_of_the_pass_rate(tmp_path):
    """export-cases writes ``expected_tools: null`` for a person to fill in: such a case is not a pass."""
    todo = {"input": "to fill in", "tools_called": ["search"], "expected_tools": None}
    wrong = {"input": "book it", "tools_called": ["cancel"], "expected_tools": ["book"]}
    cases = write_cases(tmp_path / "cases.jsonl", HOTEL, wrong, todo, {**todo, "input": "also to fill in"})
    proc = run_cli(str(cases), "--no-progress")
    assert proc.returncode == 1, proc.stderr  # one fails; the two not scored neither pass nor fail
    rows = proc.stdout.splitlines()
    assert rows[3].rstrip().endswith("not scored") and rows[4].rstrip().endswith("not scored")
    assert "skip" in rows[3]
    assert "1/2 cases passed (50.0%); 2 not scored (no expectation to compare with" in proc.stdout
    summary = json.loads(run_cli(str(cases), "--format", "json", "--no-progress").stdout)["summary"]
    assert (summary["scored"], summary["not_scored"], summary["passed"], summary["pass_rate"]) == (
        2,
        2,
        1,
        0.5,
    )
    only_todo = run_cli(str(write_cases(tmp_path / "todo.jsonl", todo)), "--no-progress")
    assert only_todo.returncode == 5 and "could be scored: none has an expectation" in only_todo.stderr
    assert "no case was scored; 1 not scored" in only_todo.stdout


def test_the_table_says_which_way_each_score_is_good(tmp_path):
    """``tool_errors_detectors`` 1.00 is a failure: the header's arrow and the legend say lower is better, and
    the exact-set score says order is not checked."""
    cases = write_cases(
        tmp_path / "cases.jsonl", {"input": "a", "tools_called": ["x", "y"], "expected_tools": ["y", "x"]}
    )
    proc = run_cli(str(cases), "-m", "tool_correctness_exact,tool_errors_detectors", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0]
    assert "tool_correctness_exact ↑" in header and "tool_errors_detectors ↓" in header
    assert "tool_errors_detectors: Tool-use errors (detectors) (lower is better)" in proc.stdout
    assert (
        "Tool correctness (exact set) (higher is better)" in proc.stdout
        and "order is NOT checked" in proc.stdout
    )
