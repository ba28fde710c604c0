"""``agentotel-eval compare`` on a real collector's database: two versions of an agent told apart by
``service.version``, a regression found and gated on; and on two ``eval --format json`` files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.collector_harness import running_collector, wait_until
from tests.support.ui_data import ROOT, cli

AGENT = """
import sys
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from agentotel_eval.tracing import configure, force_flush, traced

endpoint, version = sys.argv[1], sys.argv[2]
configure(endpoint, tracer_provider=TracerProvider(resource=Resource.create(
    {"service.name": "hotel-bot", "service.version": version})))

@traced(kind="tool")
def search_hotels(city: str) -> list:
    return [f"Casa {city}"]

@traced(kind="tool")
def book_hotel(hotel: str) -> str:
    return "BK-1"

@traced(kind="agent", expected_tools=["search_hotels", "book_hotel"])
def hotel_bot(question: str) -> str:
    city = question.split()[-1]
    hotels = search_hotels(city)
    if version == "1.0" or city != "Rome":  # 1.1 forgets to book in Rome
        book_hotel(hotels[0])
    return "done"

for city in ("Paris", "Rome", "Oslo", "Lima"):
    hotel_bot(f"Book a hotel in {city}")
force_flush()
"""


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("compare")
    script = directory / "hotel_bot.py"
    script.write_text(AGENT)
    db = directory / "versions.duckdb"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with running_collector(db) as collector:
        for version in ("1.0", "1.1"):
            done = subprocess.run(
                [sys.executable, str(script), collector.grpc_endpoint, version],
                capture_output=True,
                text=True,
                timeout=60,
                env=env,
            )
            assert done.returncode == 0, done.stderr
        wait_until(
            lambda: (
                collector.query(
                    "SELECT count(DISTINCT run_span_id) FROM evaluations WHERE metric = 'tool_correctness'"
                )["rows"][0][0]
                == 8
            ),
            timeout=30,
            what="8 scored runs",
        )
    return db


def _cells(line: str) -> list[str]:
    """A table row's cells (columns are two or more spaces apart)."""
    return [cell for cell in re.split(r"\s{2,}", line.strip()) if cell]


def test_a_regression_between_versions_is_shown_and_gated(versions: Path) -> None:
    base = [
        "compare",
        "--db",
        str(versions),
        "--baseline",
        "service.version=1.0",
        "--candidate",
        "service=hotel-bot,service.version=1.1",
    ]
    done = cli(*base)
    assert done.returncode == 0, done.stderr  # no gate asked for
    assert "baseline: 4 run(s), candidate: 4 run(s)" in done.stdout
    # Rome scores 0.5 by default and ordering, a pass at the 0.5 threshold; the exact mode fails it
    rows = {tuple(cells[:2]): cells[2:] for cells in map(_cells, done.stdout.splitlines())}
    assert rows[("agent", "metric")] == [
        "baseline passed",
        "mean score",
        "candidate passed",
        "mean score",
        "pass rate change",
    ]
    assert rows[("hotel_bot", "tool_correctness ↑")] == [
        "100.0% (4)",
        "1.000",
        "100.0% (4)",
        "0.875",
        "+0.0 pts",
    ]
    assert rows[("hotel_bot", "tool_correctness_exact ↑")] == [
        "100.0% (4)",
        "1.000",
        "75.0% (4)",
        "0.750",
        "-25.0 pts",
    ]
    assert "↑ higher is better, ↓ lower is better; the change is in percentage points" in done.stdout
    assert "book_hotel  0.0% -> 25.0%" in done.stdout  # missing in a quarter of the runs now
    assert "passed before, fail now (1):" in done.stdout
    assert "hotel_bot tool_correctness_exact: 1.000 -> 0.000  'Book a hotel in Rome'" in done.stdout
    gated = cli(*base, "--fail-on-regression", "0.05")
    assert (
        gated.returncode == 1
        and "hotel_bot tool_correctness_exact pass rate fell 25.0 percentage points (more than 5.0)"
        in gated.stderr
    )
    assert cli(*base, "--fail-on-regression", "0.3").returncode == 0
    document = json.loads(cli(*base, "--format", "json").stdout)
    row = next(m for m in document["metrics"] if m["metric"] == "tool_correctness_exact")
    assert (row["baseline_pass_rate"], row["candidate_pass_rate"], row["pass_rate_change"]) == (
        1.0,
        0.75,
        -0.25,
    )
    assert {r["input"] for r in document["regressions"]} == {"Book a hotel in Rome"}
    tool = next(t for t in document["tools"] if t["tool"] == "book_hotel")
    assert tool["baseline"].get("missing", 0) == 0 and tool["candidate"]["missing"] == 0.25
    # the same version against itself: nothing changed
    same = cli(
        "compare",
        "--db",
        str(versions),
        "--baseline",
        "service.version=1.1",
        "--candidate",
        "service.version=1.1",
        "--fail-on-regression",
        "0",
    )
    assert same.returncode == 0 and "no input that passed in the baseline fails" in same.stdout


def test_since_and_until_take_any_duration(versions: Path) -> None:
    """The runs were stored minutes ago: within the last 1.5 hours, none before."""
    done = cli(
        "compare",
        "--db",
        str(versions),
        "--baseline",
        "service.version=1.0,since=1.5h",
        "--candidate",
        "service.version=1.1,since=90m",
    )
    assert done.returncode == 0, done.stderr
    assert "baseline: 4 run(s), candidate: 4 run(s)" in done.stdout
    done = cli(
        "compare",
        "--db",
        str(versions),
        "--baseline",
        "service.version=1.0,until=1.5h",
        "--candidate",
        "service.version=1.1",
    )
    assert done.returncode == 3 and "selects no scored run" in done.stderr


def test_bad_specs_are_named(versions: Path) -> None:
    done = cli("compare", "--db", str(versions), "--baseline", "since=yesterday", "--candidate", "agent=x")
    assert (
        done.returncode == 2
        and "--baseline: since=yesterday: unknown time range 'yesterday': expected a duration" in done.stderr
    )
    done = cli(
        "compare", "--db", str(versions), "--baseline", "service.version=9.9", "--candidate", "agent=x"
    )
    assert done.returncode == 3 and "selects no scored run" in done.stderr
    done = cli(
        "compare",
        "--db",
        str(versions),
        "--baseline",
        "agent=hotel_bot,where=no_such = 1",
        "--candidate",
        "agent=x",
    )
    assert done.returncode == 2 and "no_such" in done.stderr
    done = cli("compare", "--db", str(versions), "--baseline", "missing.json", "--candidate", "agent=x")
    assert done.returncode == 2 and "no such results file" in done.stderr


def test_two_eval_result_files(tmp_path: Path) -> None:
    def results(name: str, *rows: dict[str, Any]) -> Path:
        cases = tmp_path / f"{name}.jsonl"
        cases.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        out = tmp_path / f"{name}.json"
        done = cli(
            "eval",
            str(cases),
            "--ordering",
            "--threshold",
            "1",
            "--format",
            "json",
            "--exit-zero",
            "--no-progress",
        )
        assert done.returncode == 0, done.stderr
        out.write_text(done.stdout)
        return out

    good = {"input": "trip", "tools_called": ["search", "book"], "expected_tools": ["search", "book"]}
    bad = {**good, "tools_called": ["book", "search"]}
    main = results("main", good)
    pull = results("pull", bad)
    done = cli("compare", "--baseline", str(main), "--candidate", str(pull), "--fail-on-regression", "0.05")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {tuple(cells[:2]): cells[2:] for cells in map(_cells, done.stdout.splitlines())}
    baseline, _mean, candidate, _mean2, change = rows[("(cases)", "tool_correctness_ordering ↑")]
    # a 0-1 score's pass rate falling from all to none: 100 points, not a relative "-100%"
    assert (baseline, candidate, change) == ("100.0% (1)", "0.0% (1)", "-100.0 pts REGRESSION")
    assert (
        "search  0.0% -> 0.0%   0.0% -> 0.0%  0.0% -> 100.0%" in done.stdout or "out of order" in done.stdout
    )


def test_trajectory_scores_of_two_versions_gate_on_compare(tmp_path: Path) -> None:
    spec = {"steps": [{"tool": "search", "args": {"city": {"$regex": "[A-Z].*"}}}, {"tool": "book"}]}
    good = [
        {
            "input": f"trip {i}",
            "expected_trajectory": spec,
            "tools_called": [{"name": "search", "input_parameters": {"city": "Paris"}}, {"name": "book"}],
        }
        for i in range(4)
    ]
    # the new version lower-cases the city in every other run: the regex fails, search no longer matches
    worse = [
        dict(case, tools_called=[{"name": "search", "input_parameters": {"city": "paris"}}, {"name": "book"}])
        if i % 2
        else case
        for i, case in enumerate(good)
    ]
    results = {}
    for version, cases in (("v1", good), ("v2", worse)):
        path = tmp_path / f"{version}.jsonl"
        path.write_text("".join(json.dumps(c) + "\n" for c in cases))
        done = cli("eval", str(path), "--metric", "trajectory", "--format", "json", "--exit-zero")
        assert done.returncode == 0, done.stderr
        results[version] = tmp_path / f"{version}.json"
        results[version].write_text(done.stdout)
    gated = cli(
        "compare",
        "--baseline",
        str(results["v1"]),
        "--candidate",
        str(results["v2"]),
        "--fail-on-regression",
        "0.05",
    )
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "trajectory: 1.000 -> 0.500  'trip 1'" in gated.stdout and "'trip 3'" in gated.stdout
    assert "trajectory pass rate fell 50.0 percentage points" in gated.stderr
