"""A real collector with every kind of sink configured and none of the tools up: the example agents' runs are
all stored and scored as without sinks, ``/metrics`` counts every evaluation by service, agent, metric and
result and the detectors' errors by type (the same numbers as the evaluations table), and each sink
counts what it dropped."""

from __future__ import annotations

import urllib.request

from agentotel_eval.cli.demo import _export_to
from agentotel_eval.collector.config_sinks import SinkConfig
from agentotel_eval.demo.agents import run_all
from tests.support.collector_harness import running_collector, wait_until
from tests.support.lake_servers import free_port

SCORED = (
    "SELECT r.service_name, r.agent_name, e.metric, CASE WHEN e.status = 'error' THEN 'error' "
    "WHEN e.success THEN 'pass' ELSE 'fail' END, count(*) FROM evaluations e JOIN agent_runs r "
    "ON r.trace_id = e.trace_id AND r.span_id = e.run_span_id WHERE e.status IN ('ok', 'error') GROUP BY ALL"
)
FOUND = (
    "SELECT r.agent_name, f->>'type', count(*) FROM evaluations e JOIN agent_runs r ON r.trace_id = "
    "e.trace_id AND r.span_id = e.run_span_id, unnest(CAST(e.details->'detectors' AS JSON[])) AS u(f) "
    "WHERE e.metric = 'tool_errors_detectors' AND NOT CAST(f->>'uncertain' AS BOOLEAN) GROUP BY ALL"
)


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _run_demo_until_scored(collector) -> int:
    """Export the demo agents' runs to ``collector`` and wait until each has its detectors'
    score; the run count."""
    provider = _export_to(collector)
    runs = run_all()
    provider.force_flush()
    wait_until(
        lambda: (
            collector.query(
                "SELECT count(DISTINCT run_span_id) FROM evaluations WHERE metric = 'tool_errors_detectors'"
            )["rows"][0][0]
            == runs
        ),
        timeout=30,
    )
    return runs


def test_every_sink_down_costs_no_run_and_metrics_match_the_table(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTOTEL_TEST_LF_PUBLIC", "pk-lf-test")
    monkeypatch.setenv("AGENTOTEL_TEST_LF_SECRET", "sk-lf-test")
    nowhere = f"http://127.0.0.1:{free_port()}"
    quick = {"max_retries": 1, "initial_backoff": 0.05, "max_backoff": 0.1, "timeout": 1.0}
    sinks = (
        SinkConfig(kind="phoenix", url=nowhere, **quick),
        SinkConfig(kind="mlflow", url=nowhere, experiment="agents", **quick),
        SinkConfig(
            kind="langfuse",
            url=nowhere,
            public_key_env="AGENTOTEL_TEST_LF_PUBLIC",
            secret_key_env="AGENTOTEL_TEST_LF_SECRET",
            **quick,
        ),
    )
    with running_collector(tmp_path / "db.duckdb", sinks=sinks) as collector:
        runs = _run_demo_until_scored(collector)
        scored = collector.query(SCORED)["rows"]
        found = collector.query(FOUND)["rows"]
        assert found, "the demo has a run with a detector finding"
        wait_until(
            lambda: all(w.stats.dropped > 0 and w.stats.queued == 0 for w in collector.sinks.workers),
            timeout=30,
        )
        assert all(w.stats.sent == 0 for w in collector.sinks.workers)

        def scrape() -> str:
            with urllib.request.urlopen(collector.http_endpoint + "/metrics", timeout=10) as answer:
                return answer.read().decode()

        wait_until(lambda: collector.sinks.feed.stats.evaluations == sum(r[-1] for r in scored), timeout=10)
        text = scrape()
        for service, agent, metric, result, n in scored:
            assert (
                _sample(
                    text,
                    "agentotel_evaluations_total",
                    service=service,
                    agent=agent,
                    metric=metric,
                    result=result,
                )
                == n
            ), (agent, metric, result)
        for agent, kind, n in found:
            assert _sample(text, "agentotel_tool_errors_total", agent=agent, type=kind) == n
        for worker in collector.sinks.workers:
            assert _sample(text, "agentotel_sink_dropped_total", sink=worker.name) == worker.stats.dropped > 0
        assert collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0] == runs


def test_a_sink_gets_the_spans_as_received(tmp_path) -> None:
    """Every stored span reaches the sink's OTLP endpoint once, unscored (the scores travel as the tool's own
    objects), whether the request went on as its body or, with redaction, as re-encoded records."""
    from agentotel_eval.redaction import RedactionSettings
    from tests.support.otlp_sink import OtlpSink

    for redaction in (RedactionSettings(), RedactionSettings.from_dict({"enabled": True})):
        with OtlpSink() as otlp:
            sink = SinkConfig(kind="phoenix", url=otlp.http_endpoint, max_retries=0, timeout=1.0)
            with running_collector(
                tmp_path / f"{redaction.enabled}.duckdb", sinks=(sink,), redaction=redaction
            ) as collector:
                provider = _export_to(collector)
                run_all()
                provider.force_flush()
                stored = {r[0] for r in collector.query("SELECT span_id FROM spans")["rows"]}
                otlp.wait_for(lambda s, stored=stored: {x.span_id for x in s.spans} >= stored, timeout=15)
                assert len(otlp.spans) == len(stored)  # each once
                assert not any(k.endswith(".score") for x in otlp.spans for k in x.attributes)


def test_agents_past_the_configured_bound_are_counted_as_other(tmp_path) -> None:
    """``[metrics] max_agents`` from the file: with 1, the first agent keeps its name and the others'
    evaluations are all under ``agent="other"``, nothing lost (the totals per metric and result
    equal the table's)."""
    from agentotel_eval.collector.config import load_config

    path = tmp_path / "agentotel.toml"
    path.write_text("[metrics]\nmax_agents = 1\n")
    bound = load_config(path).validate().metrics
    assert bound.max_agents == 1
    with running_collector(tmp_path / "db.duckdb", metrics=bound) as collector:
        _run_demo_until_scored(collector)
        scored = collector.query(SCORED)["rows"]
        assert len({agent for _s, agent, *_ in scored}) > 1, "the demo has several agents"
        wait_until(lambda: collector.sinks.feed.stats.evaluations == sum(r[-1] for r in scored), timeout=10)
        with urllib.request.urlopen(collector.http_endpoint + "/metrics", timeout=10) as answer:
            lines = [
                line
                for line in answer.read().decode().splitlines()
                if line.startswith("agentotel_evaluations_total{")
            ]
    named = {line.split('agent="', 1)[1].split('"', 1)[0] for line in lines}
    assert len(named - {"other"}) == 1 and "other" in named
    totals: dict[tuple[str, str], float] = {}
    for *_sa, metric, result, n in scored:
        totals[(metric, result)] = totals.get((metric, result), 0) + n
    for (metric, result), n in totals.items():
        served = sum(
            float(line.rsplit(" ", 1)[1])
            for line in lines
            if f'metric="{metric}"' in line and f'result="{result}"' in line
        )
        assert served == n, (metric, result)
