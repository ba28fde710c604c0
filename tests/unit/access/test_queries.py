"""What the pages read, on a database written row by row: the latest score of each run and metric counts, time
ranges cut, judge cost and findings add up, and a rule's expected tools reach the run page."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentotel_eval.access import queries
from agentotel_eval.access.filters import parse_filters
from agentotel_eval.store.opening import open_store
from agentotel_eval.store.query import QueryResult, run_query
from agentotel_eval.store.sealed import cursor as sealed_cursor

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def run(
    con: Any,
    trace: str,
    agent: str,
    age: timedelta,
    called: Sequence[str],
    expected: Sequence[str] | None,
    text: str = "",
) -> None:
    con.execute(
        "INSERT INTO agent_runs (trace_id, span_id, agent_name, service_name, input, start_time, status, "
        "tools_called, expected_tools, tool_call_count) VALUES (?, ?, ?, 'svc', ?, ?, 'ok', ?, ?, ?)",
        [trace, "s" + trace, agent, text, NOW - age, list(called), expected, len(called)],
    )


def score(
    con: Any,
    trace: str,
    metric: str,
    value: float,
    success: bool,
    *,
    at: int = 0,
    status: str = "ok",
    cost: float | None = None,
    model: str | None = None,
    **details: Any,
) -> None:
    con.execute(
        "INSERT INTO evaluations (trace_id, run_span_id, metric, score, success, status, details, cost_usd, "
        "model, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            trace,
            "s" + trace,
            metric,
            value,
            success,
            status,
            json.dumps(details),
            cost,
            model,
            NOW - timedelta(hours=1) + timedelta(seconds=at),
        ],
    )


@pytest.fixture()
def read() -> Iterator[queries.Read]:
    con = open_store(":memory:")
    run(con, "a", "planner", timedelta(hours=2), ["search", "book"], ["search", "book"], "Rome trip")
    run(con, "b", "planner", timedelta(hours=3), ["book"], None, "Oslo trip")
    run(con, "c", "helper", timedelta(days=3), ["weather"], ["convert"])
    run(con, "old", "planner", timedelta(days=20), ["search"], ["search"])
    score(
        con,
        "a",
        "tool_correctness_ordering",
        1.0,
        True,
        expected=["search", "book"],
        missing=[],
        extra=[],
        out_of_order=[],
    )
    # run b was re-scored: only the later row counts
    score(
        con,
        "b",
        "tool_correctness_ordering",
        1.0,
        True,
        at=0,
        expected=["search", "book"],
        missing=[],
        extra=[],
        out_of_order=[],
    )
    score(
        con,
        "b",
        "tool_correctness_ordering",
        0.5,
        False,
        at=5,
        expected=["search", "book"],
        expectation="rule:planning",
        missing=["search"],
        extra=[],
        out_of_order=[],
    )
    score(
        con,
        "c",
        "tool_correctness_ordering",
        0.0,
        False,
        expected=["convert"],
        missing=["convert"],
        extra=["weather"],
        out_of_order=[],
    )
    score(con, "a", "tool_errors", 0.0, True, cost=0.002, model="openai/m", error_types=[])
    score(con, "b", "tool_errors", 0.9, False, cost=0.003, model="openai/m", error_types=["sequence_error"])
    score(con, "c", "tool_errors", 0.0, False, status="skipped")
    score(con, "c", "tool_errors_detectors", 1.0, False, error_types=["repeated_failure"])
    score(
        con,
        "old",
        "tool_correctness_ordering",
        1.0,
        True,
        expected=["search"],
        missing=[],
        extra=[],
        out_of_order=[],
    )

    def reader(sql: str, params: Sequence[Any]) -> QueryResult:
        return run_query(sealed_cursor(con), sql, params=params)

    yield reader
    con.close()


def test_the_overview_counts_latest_scores_in_range(read: queries.Read) -> None:
    ov = queries.read_overview(read, parse_filters({"since": "7d"}), now=NOW)
    by_name = {a.name: a for a in ov.agents}
    assert set(by_name) == {"planner", "helper"}  # the 20-day-old run is out of range
    assert by_name["planner"].runs == 2
    assert by_name["planner"].metrics["tool_correctness_ordering"] == (2, 1)  # b's latest row failed
    assert ov.departures_metric == "tool_correctness_ordering"
    assert dict(ov.departures) == {
        "search": {"missing": 1},
        "convert": {"missing": 1},
        "weather": {"extra": 1},
    }
    assert {(f["metric"], f["error_type"], f["runs"]) for f in ov.findings} == {
        ("tool_errors", "sequence_error", 1),
        ("tool_errors_detectors", "repeated_failure", 1),
    }
    judge = {j["status"]: j for j in ov.judge}
    assert judge["ok"]["evaluations"] == 2 and judge["ok"]["cost_usd"] == pytest.approx(0.005)
    assert judge["skipped"]["evaluations"] == 1 and judge["ok"]["models"] == "openai/m"
    # the chart's buckets hold the runs of each agent, and the pass rate of each bucket
    planner = by_name["planner"]
    assert sum(planner.runs_per_bucket) == 2
    assert [r for r in planner.rates["tool_correctness_ordering"] if r is not None] == [0.5]
    everything = queries.read_overview(read, parse_filters({"since": "all"}), now=NOW)
    assert everything.total_runs == 4


def test_the_runs_table_filters_on_latest_scores(read: queries.Read) -> None:
    def shown(**params: str) -> list[str]:
        return [r["trace_id"] for r in queries.read_runs(read, parse_filters(params), now=NOW).runs]

    assert shown() == ["a", "b", "c"]  # newest first, the old run out of range
    assert shown(since="all") == ["a", "b", "c", "old"]
    assert shown(result="fail") == ["b", "c"]
    assert shown(result="pass") == ["a"]  # every score passed
    assert shown(metric="tool_errors", result="pass") == ["a"]
    assert shown(agent="helper") == ["c"]
    assert shown(q="oslo") == ["b"]
    page = queries.read_runs(read, parse_filters({}), now=NOW)
    chips = {(r["trace_id"], s["metric"]): s["score"] for r in page.runs for s in r["scores"]}
    assert chips[("b", "tool_correctness_ordering")] == 0.5
    assert page.agents == ["helper", "planner"] and page.services == ["svc"]


def test_a_run_takes_its_expected_tools_from_the_score_that_used_them(read: queries.Read) -> None:
    detail = queries.read_run(read, "b", "sb")
    assert detail is not None
    assert detail.run["expected_tools"] is None
    assert (detail.expected, detail.expected_source) == (["search", "book"], "rule:planning")
    assert [e["score"] for e in detail.evaluations if e["metric"] == "tool_correctness_ordering"] == [0.5]
    assert queries.read_run(read, "nope", "nope") is None


def test_the_worst_runs_fail_most_first(read: queries.Read) -> None:
    worst = queries.read_worst(read, parse_filters({}), 10, now=NOW)
    assert [w["trace_id"] for w in worst] == [
        "c",
        "b",
    ]  # two failures each (a skipped score is none): c scored lower


def test_own_scores_alone_and_beside_another_tools(tmp_path: Any) -> None:
    """The collector's own rows are one per run and metric and are read as they are; a key another tool scored
    too counts once, its newest row."""
    con = open_store(":memory:")

    def reader(sql: str, params: Sequence[Any]) -> QueryResult:
        return run_query(sealed_cursor(con), sql, params=params)

    run(con, "a", "planner", timedelta(hours=1), ["search"], ["search"])
    run(con, "b", "planner", timedelta(hours=1), ["search"], ["search"])
    for trace in ("a", "b"):
        score(con, trace, "tool_correctness", 1.0, True)
    con.execute("UPDATE evaluations SET source = 'agentotel-eval'")
    assert queries.only_own_scores(reader)
    ov = queries.read_overview(reader, parse_filters({}), now=NOW)
    assert ov.agents[0].metrics["tool_correctness"] == (2, 2)
    # another tool scores run a under the same metric name, later: its row is the latest
    score(con, "a", "tool_correctness", 0.0, False, at=60)
    con.execute("UPDATE evaluations SET source = 'external:deepeval/ci' WHERE source IS NULL")
    assert not queries.only_own_scores(reader)
    ov = queries.read_overview(reader, parse_filters({}), now=NOW)
    assert ov.agents[0].metrics["tool_correctness"] == (2, 1)
    assert [
        r["trace_id"] for r in queries.read_runs(reader, parse_filters({"result": "fail"}), now=NOW).runs
    ] == ["a"]
    con.close()
