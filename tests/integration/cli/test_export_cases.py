"""``agentotel-eval export-cases``: stored runs become test cases that ``eval`` scores
as the collector did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentotel_eval.stored_cases import expectations_of
from agentotel_eval.test_case import EvalTestCase
from tests.support.ui_data import DEMO_RUNS, cli


def read_cases_of(text: str) -> list[EvalTestCase]:
    return [EvalTestCase.from_dict(json.loads(line)) for line in text.splitlines()]


def read_cases(path: Path) -> list[EvalTestCase]:
    return read_cases_of(path.read_text())


def test_runs_become_cases_that_score_as_stored(demo_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "cases.jsonl"
    done = cli("export-cases", "--db", str(demo_db), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert f"wrote {DEMO_RUNS} case(s)" in done.stderr and "8 with expected tools" in done.stderr
    cases = read_cases(out)
    oslo = next(c for c in cases if "Oslo" in c.input)
    assert [t.name for t in oslo.tools_called or []] == ["search_flights", "search_hotels"]
    assert (oslo.tools_called or [])[0].input_parameters == {"destination": "Oslo"}
    assert [t.name for t in oslo.expected_tools or []] == ["search_flights", "search_hotels", "book_hotel"]
    assert (
        oslo.metadata
        and oslo.metadata["agent_name"] == "trip_planner"
        and len(oslo.metadata["trace_id"]) == 32
    )
    atlantis = next(c for c in cases if "Atlantis" in c.input)
    assert [(t.status, t.error) for t in atlantis.tools_called or []] == [
        ("error", "ValueError: unknown city: Atlantis")
    ] * 2
    # eval scores the exported cases as the collector scored the runs
    scored = cli("eval", str(out), "--ordering", "--format", "json", "--no-progress", "--exit-zero")
    assert scored.returncode == 0, scored.stderr
    by_trace = {
        c["name"].split()[-1].split("/")[0]: c["metrics"][0]["score"]
        for c in json.loads(scored.stdout)["cases"]
    }
    stored = cli(
        "query",
        "SELECT trace_id, score FROM latest_evaluations WHERE metric = 'tool_correctness_ordering'",
        "--db",
        str(demo_db),
        "--format",
        "json",
    )
    assert by_trace == {row["trace_id"]: row["score"] for row in json.loads(stored.stdout)}


def test_a_condition_selects_and_bad_sql_is_refused(demo_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "weather.jsonl"
    done = cli(
        "export-cases", "--db", str(demo_db), "--where", "agent_name = 'weather_assistant'", "-o", str(out)
    )
    assert done.returncode == 0 and {c.metadata["agent_name"] for c in read_cases(out)} == {
        "weather_assistant"
    }  # type: ignore[index]
    assert len(read_cases(out)) == 3
    done = cli("export-cases", "--db", str(demo_db), "--limit", "2", "-o", "-")
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 2
    failing = (
        "(trace_id, span_id) IN (SELECT trace_id, run_span_id FROM latest_evaluations "
        "WHERE metric = 'tool_correctness_exact' AND NOT success)"
    )
    done = cli("export-cases", "--db", str(demo_db), "--where", failing, "-o", "-")
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 4
    done = cli("export-cases", "--db", str(demo_db), "--where", "TRUE; DELETE FROM agent_runs", "-o", "-")
    assert done.returncode == 1 and "syntax error" in done.stderr  # one condition, in parentheses: never two
    assert len(read_cases_of(cli("export-cases", "--db", str(demo_db), "-o", "-").stdout)) == 8
    done = cli("export-cases", "--db", str(demo_db), "--where", "no_such_column = 1", "-o", str(out))
    assert done.returncode == 1 and "no_such_column" in done.stderr
    assert len(read_cases(out)) == 3  # a failed export leaves the earlier file as it was


def test_through_a_running_collector(ui_collector: Any, tmp_path: Path) -> None:
    out = tmp_path / "all.jsonl"
    done = cli("export-cases", "--db", str(ui_collector.db_path), "-o", str(out))
    assert done.returncode == 0, done.stderr
    total = ui_collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0]
    cases = read_cases(out)
    assert len(cases) == total
    calls = ui_collector.query("SELECT count(*) FROM tool_calls")["rows"][0][0]
    assert sum(len(c.tools_called or []) for c in cases) == calls
    # the fixtures' runs have no expectation: null, to be filled in (an empty list would
    # expect no tool at all)
    assert sum(1 for c in cases if c.expected_tools is None) > 100
    assert all(c.expected_tools or c.metadata["expected_tools_from"] is None for c in cases)  # type: ignore[index]


def test_a_rules_expectation_is_taken_from_the_score_that_used_it() -> None:
    run = {"expected_tools": None}
    assert expectations_of(run, [{"expected": ["a", "b"], "source": "rule:planning"}]) == (
        ["a", "b"],
        "rule:planning",
    )
    assert expectations_of({"expected_tools": ["x"]}, []) == (["x"], "span_attribute")
    assert expectations_of(run, []) is None
