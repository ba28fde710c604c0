"""``agentotel-eval rescore``: stored runs scored again with today's expectations, on the file or through the
collector that holds it; rows replaced, never duplicated; the judge's verdicts kept unless asked again."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from agentotel_eval.metrics.tool_correctness import ToolCorrectnessMetric
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric
from tests.support.collector_harness import post_otlp, running_collector, wait_until
from tests.support.fixture_traces import fixtures
from tests.support.ui_data import cli

#: fixtures of several frameworks whose runs call two tools or more
_SCENARIO = "sequence"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed database of a few frameworks' runs, scored online with no expectation but their spans'."""
    db = tmp_path_factory.mktemp("rescore") / "stored.duckdb"
    chosen = [f for f in fixtures() if f.entry["scenario"] == _SCENARIO][:6]
    with running_collector(db) as collector:
        for fx in chosen:
            assert post_otlp(collector.http_endpoint, "traces", fx.body("protobuf")).status == 200
            logs = fx.logs_body("protobuf")
            if logs:
                assert post_otlp(collector.http_endpoint, "logs", logs).status == 200

        def scored() -> bool:
            runs = collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0]
            done = collector.query("SELECT count(*) FROM evaluations WHERE metric = 'tool_errors_detectors'")
            return runs >= len(chosen) and done["rows"][0][0] == runs and not collector.assembler.open_traces

        wait_until(scored, timeout=60, interval=0.1, what="the runs, scored")
    return db


@pytest.fixture
def db(stored: Path, tmp_path: Path) -> Path:
    return Path(shutil.copyfile(stored, tmp_path / "copy.duckdb"))


def rows(db: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def target_run(db: Path) -> tuple[str, str, str, list[str]]:
    """A run with two calls or more: (trace, span, agent, tools called)."""
    found = rows(
        db,
        "SELECT trace_id, span_id, agent_name, tools_called FROM agent_runs "
        "WHERE len(tools_called) >= 2 AND agent_name IS NOT NULL ORDER BY start_time LIMIT 1",
    )
    assert found, "the fixtures hold a run with two calls"
    return found[0]  # type: ignore[return-value]


def rule_config(path: Path, agent: str, tools: list[str], *, judge: bool = False) -> Path:
    text = (
        f'[[expectations]]\nname = "history"\nagent = {json.dumps(agent)}\n'
        f"expected_tools = {json.dumps(tools)}\n"
    )
    if judge:
        text += (
            '[judge]\nmodel = "openai/gpt-4o-mini"\napi_base = "http://127.0.0.1:9/v1"\napi_key = "sk-test"\n'
            "sample_rate = 1.0\n"
        )
    path.write_text(text)
    return path


def span_scores(db: Path, trace_id: str, span_id: str, metric: str) -> tuple[Any, int]:
    """The run span's ``agentotel.eval.<metric>.score`` attribute and how many of our events it has for it."""
    attributes, events = rows(
        db, "SELECT attributes, events FROM spans WHERE trace_id = ? AND span_id = ?", [trace_id, span_id]
    )[0]
    score = json.loads(attributes).get(f"agentotel.eval.{metric}.score")
    ours = [
        e
        for e in json.loads(events or "[]")
        if e["name"] == "gen_ai.evaluation.result"
        and e["attributes"].get("gen_ai.evaluation.name") == metric
        and "agentotel.eval.evaluator" in e["attributes"]
    ]
    return score, len(ours)


def rescore(db: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    done = cli("rescore", "--db", str(db), "--format", "json", *args)
    return done.returncode, (json.loads(done.stdout) if done.returncode == 0 else {}), done.stderr


def by_metric(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["metric"]: m for m in summary["metrics"]}


def duplicate_keys(db: Path) -> int:
    return rows(
        db,
        "SELECT count(*) FROM (SELECT trace_id, run_span_id, metric FROM evaluations "
        "GROUP BY ALL HAVING count(*) > 1)",
    )[0][0]


def test_a_new_rule_scores_history_and_removing_it_takes_the_scores_away(db: Path, tmp_path: Path) -> None:
    trace_id, span_id, agent, tools = target_run(db)
    of_agent = rows(db, "SELECT count(*) FROM agent_runs WHERE agent_name = ?", [agent])[0][0]
    assert rows(db, "SELECT count(*) FROM evaluations WHERE metric = 'tool_correctness'")[0][0] == 0
    evaluations_before = rows(db, "SELECT count(*) FROM evaluations")[0][0]
    config = rule_config(tmp_path / "rule.toml", agent, tools)

    code, summary, err = rescore(db, "--config", str(config), "--dry-run")
    assert code == 0, err
    assert by_metric(summary)["tool_correctness"]["added"] == of_agent and summary["dry_run"]
    assert rows(db, "SELECT count(*) FROM evaluations")[0][0] == evaluations_before  # nothing written

    code, summary, err = rescore(db, "--config", str(config))
    assert code == 0, err
    added = by_metric(summary)
    for metric in ("tool_correctness", "tool_correctness_exact", "tool_correctness_ordering"):
        assert added[metric]["added"] == of_agent and added[metric]["removed"] == 0
    assert added["tool_errors_detectors"]["changed"] == 0 and added["tool_errors_detectors"]["added"] == 0
    assert summary["runs_rebuilt_differently"] == 0
    stored = rows(
        db,
        "SELECT score, success, details->>'expectation', details->>'metric_version' FROM evaluations "
        "WHERE trace_id = ? AND run_span_id = ? AND metric = 'tool_correctness_ordering'",
        [trace_id, span_id],
    )
    assert stored == [(1.0, True, "rule:history", ToolCorrectnessMetric.version)]
    assert span_scores(db, trace_id, span_id, "tool_correctness_ordering") == (1.0, 1)
    assert duplicate_keys(db) == 0

    # the same again: nothing changes, nothing is added twice
    count = rows(db, "SELECT count(*) FROM evaluations")[0][0]
    code, summary, err = rescore(db, "--config", str(config))
    assert code == 0, err
    assert all(m["changed"] == m["added"] == m["removed"] == 0 for m in summary["metrics"])
    assert rows(db, "SELECT count(*) FROM evaluations")[0][0] == count
    assert span_scores(db, trace_id, span_id, "tool_correctness_ordering") == (1.0, 1)

    # the rule reversed: the ordering score of the run falls, and the summary says it now fails
    reversed_config = rule_config(tmp_path / "reversed.toml", agent, tools[::-1])
    code, summary, err = rescore(db, "--config", str(reversed_config))
    assert code == 0, err
    assert by_metric(summary)["tool_correctness_ordering"]["now_failing"] >= 1
    score, events = span_scores(db, trace_id, span_id, "tool_correctness_ordering")
    assert score is not None and score < 1.0 and events == 1

    # no rule any more: the scores it gave would go. Not without a yes: the dry run's summary and a refusal
    # (no terminal here to ask on), nothing written; with --yes, from the table and from the span
    scored = rows(db, "SELECT count(*) FROM evaluations WHERE metric LIKE 'tool_correctness%'")[0][0]
    code, _summary, err = rescore(db)
    assert code == 2 and f"would remove {3 * of_agent} score(s)" in err and "--yes" in err, err
    assert '"dry_run": true' in err  # what --dry-run shows, in the format asked for
    assert rows(db, "SELECT count(*) FROM evaluations WHERE metric LIKE 'tool_correctness%'")[0][0] == scored
    code, summary, err = rescore(db, "--yes")
    assert code == 0, err
    assert by_metric(summary)["tool_correctness"]["removed"] == of_agent
    assert rows(db, "SELECT count(*) FROM evaluations WHERE metric LIKE 'tool_correctness%'")[0][0] == 0
    assert span_scores(db, trace_id, span_id, "tool_correctness_ordering") == (None, 0)
    assert rows(db, "SELECT count(*) FROM evaluations")[0][0] == evaluations_before


def test_rows_of_an_older_metric_version_are_replaced_not_doubled(db: Path) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute(
            "UPDATE evaluations SET evaluator_version = '0', "
            'details = json_merge_patch(details, \'{"metric_version": "0"}\') '
            "WHERE metric = 'tool_errors_detectors'"
        )
    runs = rows(db, "SELECT count(*) FROM agent_runs")[0][0]
    code, _summary, err = rescore(db, "--since", "3650d")
    assert code == 0, err
    version = ToolsErrorMetric.version
    assert rows(
        db,
        "SELECT DISTINCT evaluator_version, details->>'metric_version' FROM evaluations "
        "WHERE metric = 'tool_errors_detectors'",
    ) == [(version, version)]
    assert rows(db, "SELECT count(*) FROM evaluations WHERE metric = 'tool_errors_detectors'")[0][0] == runs
    assert duplicate_keys(db) == 0


def test_since_takes_any_duration(db: Path) -> None:
    """``--since 1.5h``: the runs of the last 90 minutes, as the pages' range and compare's SPEC read it."""
    recent = rows(db, "SELECT trace_id FROM agent_runs ORDER BY trace_id LIMIT 1")[0][0]
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE agent_runs SET start_time = now() - INTERVAL 3 HOUR")
        con.execute("UPDATE agent_runs SET start_time = now() - INTERVAL 1 HOUR WHERE trace_id = ?", [recent])
    traces = rows(db, "SELECT count(DISTINCT trace_id) FROM agent_runs")[0][0]
    assert traces > 1
    code, summary, err = rescore(db, "--since", "1.5h", "--dry-run")
    assert code == 0, err
    assert summary["traces"] == 1
    code, summary, err = rescore(db, "--since", "200m", "--dry-run")
    assert code == 0, err
    assert summary["traces"] == traces
    done = cli("rescore", "--db", str(db), "--since", "all")  # no --since is every run
    assert (
        done.returncode == 2
        and "argument --since: unknown time range 'all': expected a duration" in done.stderr
    )


def test_the_judges_verdicts_stay_unless_it_is_asked_again(db: Path, tmp_path: Path) -> None:
    trace_id, span_id, agent, tools = target_run(db)
    with duckdb.connect(str(db)) as con:
        con.execute(
            "INSERT INTO evaluations (trace_id, run_span_id, metric, score, success, reason, status, source, "
            "evaluator_version, created_at) VALUES (?, ?, 'tool_errors', 1.0, true, 'no error found', 'ok', "
            "'agentotel-eval', '1', now())",
            [trace_id, span_id],
        )
    judged = "SELECT status, reason FROM evaluations WHERE metric = 'tool_errors' ORDER BY status"
    code, summary, err = rescore(db, "--config", str(rule_config(tmp_path / "rule.toml", agent, tools)))
    assert code == 0, err
    assert summary["judge_kept"] and rows(db, judged) == [("ok", "no error found")]

    code, _summary, err = rescore(
        db, "--judge", "--config", str(rule_config(tmp_path / "r.toml", agent, tools))
    )
    assert code == 2 and "[judge]" in err  # nothing to ask

    config = rule_config(tmp_path / "judge.toml", agent, tools, judge=True)
    code, summary, err = rescore(db, "--judge", "--config", str(config))
    assert code == 0, err
    with_input = rows(db, "SELECT count(*) FROM agent_runs WHERE trim(coalesce(input, '')) <> ''")[0][0]
    assert summary["judge_queued"] == with_input > 0
    statuses = dict(
        rows(db, "SELECT status, count(*) FROM evaluations WHERE metric = 'tool_errors' GROUP BY ALL")
    )
    assert statuses.get("pending") == with_input and "ok" not in statuses  # the old verdict gave way
    assert duplicate_keys(db) == 0


def test_a_bad_condition_or_config_is_refused_and_nothing_changes(db: Path, tmp_path: Path) -> None:
    before = rows(db, "SELECT count(*), max(created_at) FROM evaluations")
    code, _summary, err = rescore(db, "--where", "no_such_column = 1")
    assert code == 2 and "no_such_column" in err
    code, _summary, err = rescore(db, "--where", "TRUE) OR (TRUE; DELETE FROM agent_runs")
    assert code == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("[[expectations]]\nexpected_tools = 3\n")
    code, _summary, err = rescore(db, "--config", str(bad))
    assert code == 2 and "expected_tools" in err
    code, _summary, err = rescore(tmp_path / "missing.duckdb")
    assert code == 2 and "no database" in err
    assert not (tmp_path / "missing.duckdb").exists()
    assert rows(db, "SELECT count(*), max(created_at) FROM evaluations") == before


def test_a_condition_selects_the_runs(db: Path, tmp_path: Path) -> None:
    _trace, _span, agent, tools = target_run(db)
    config = rule_config(tmp_path / "rule.toml", agent, tools)
    code, summary, err = rescore(db, "--config", str(config), "--where", f"agent_name <> '{agent}'")
    assert code == 0, err
    assert "tool_correctness" not in by_metric(summary)  # the runs the rule matches were not selected
    code, summary, err = rescore(db, "--config", str(config), "--where", f"agent_name = '{agent}'")
    assert code == 0, err
    runs = rows(db, "SELECT count(*) FROM agent_runs WHERE agent_name = ?", [agent])[0][0]
    assert by_metric(summary)["tool_correctness"]["added"] == runs


def test_shards_split_the_traces_between_workers_once_each(db: Path, tmp_path: Path) -> None:
    _trace, _span, agent, tools = target_run(db)
    config = rule_config(tmp_path / "rule.toml", agent, tools)
    code, whole, err = rescore(db, "--config", str(config), "--dry-run")
    assert code == 0, err
    thirds = []
    for k in (1, 2, 3):
        code, part, err = rescore(db, "--config", str(config), "--dry-run", "--shard", f"{k}/3")
        assert code == 0, err
        thirds.append(part)
    assert (
        sum(p["traces"] for p in thirds) == whole["traces"]
        and sum(p["runs_after"] for p in thirds) == whole["runs_after"]
    )
    assert (
        sum(by_metric(p).get("tool_correctness", {}).get("added", 0) for p in thirds)
        == by_metric(whole)["tool_correctness"]["added"]
        > 0
    )
    for bad in ("0/3", "4/3", "2", "a/b"):
        code, _summary, err = rescore(db, "--shard", bad)
        assert code == 2 and "shard" in err, (bad, err)


@pytest.fixture
def serving(db: Path) -> Iterator[Any]:
    with running_collector(db) as collector:
        yield collector


def test_through_the_collector_that_holds_the_database(serving: Any, tmp_path: Path) -> None:
    db = serving.db_path
    trace_id, span_id = serving.query(
        "SELECT trace_id, span_id FROM agent_runs WHERE len(tools_called) >= 2 AND agent_name IS NOT NULL "
        "ORDER BY start_time LIMIT 1"
    )["rows"][0]
    agent, tools = serving.query(
        "SELECT agent_name, tools_called FROM agent_runs WHERE trace_id = ? AND span_id = ?",
        params=[trace_id, span_id],
    )["rows"][0]
    config = rule_config(tmp_path / "rule.toml", agent, tools)
    code, summary, err = rescore(
        db, "--config", str(config)
    )  # the file is held: only the collector can write
    assert code == 0, err
    assert by_metric(summary)["tool_correctness"]["added"] >= 1
    got = serving.query(
        "SELECT score, details->>'expectation' FROM evaluations WHERE trace_id = ? AND "
        "run_span_id = ? AND metric = 'tool_correctness'",
        params=[trace_id, span_id],
    )["rows"]
    assert got == [[1.0, "rule:history"]]
    attributes = serving.query(
        "SELECT attributes FROM spans WHERE trace_id = ? AND span_id = ?", params=[trace_id, span_id]
    )["rows"][0][0]
    assert attributes["agentotel.eval.tool_correctness.score"] == 1.0
    # the collector's own configuration has no rule: scoring with it takes the rule's scores away
    code, summary, err = rescore(db, "--yes")
    assert code == 0, err
    assert by_metric(summary)["tool_correctness"]["removed"] >= 1
    code, _summary, err = rescore(db, "--where", "no_such_column = 1")
    assert code == 2 and "no_such_column" in err


def test_every_fixture_rescored_as_it_was_scored_online(ui_collector: Any) -> None:
    """Rebuilt from the stored spans with the same configuration, every run and score is what ingest gave."""
    code, summary, err = rescore(ui_collector.db_path, "--dry-run")
    assert code == 0, err
    assert summary["errors"] == 0 and summary["runs_rebuilt_differently"] == 0
    assert summary["runs_after"] == ui_collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0]
    assert summary["metrics"] and all(
        m["changed"] == m["added"] == m["removed"] == 0 for m in summary["metrics"]
    )


def test_a_loop_of_one_trace_per_model_call_keeps_the_failure_a_later_trace_fed_back(tmp_path: Path) -> None:
    """A hand-written loop with no application span: the failure of the first trace's call is only the tool
    message of the second trace's request. The collector (its assembler process) rebuilds the first trace when
    the second arrives; a rescore, which rebuilds them together, keeps it."""
    from agentotel_eval.otlp.encode import encode_traces

    (fx,) = [f for f in fixtures() if f.name == "raw-openai__openinference__error"]
    by_trace: dict[str, list[Any]] = {}
    for span in sorted(fx.spans(), key=lambda s: s.start_ns):
        by_trace.setdefault(span.trace_id, []).append(span)
    db = tmp_path / "loop.duckdb"
    sql = "SELECT tool_name, arguments->>'city', status FROM tool_calls ORDER BY start_time"
    expected = [("get_weather", "Atlantis", "error"), ("get_weather", "Athens", "ok")]
    with running_collector(db) as collector:
        for k, spans in enumerate(by_trace.values()):  # each trace completes before the next arrives
            assert (
                post_otlp(collector.http_endpoint, "traces", encode_traces(spans).SerializeToString()).status
                == 200
            )
            wait_until(
                lambda k=k: (
                    collector.query("SELECT count(*) FROM spans")["rows"][0][0] == k + 1
                    and not collector.assembler.open_traces
                    and not collector.assembler.backlog
                ),
                timeout=60,
                interval=0.05,
                what="the trace, assembled",
            )
        wait_until(
            lambda: [tuple(r) for r in collector.query(sql)["rows"]] == expected,
            timeout=30,
            what="the first call's failure, from the second trace",
        )
    code, summary, err = rescore(db)
    assert code == 0, err
    assert rows(db, sql) == expected
    assert summary["runs_rebuilt_differently"] == 0
