"""The assembler process: the default home of assembly and scoring, restarted if it dies, losing no run."""

from __future__ import annotations

import os
import signal
import time

from agentotel_eval.otlp.encode import encode_traces
from agentotel_eval.otlp.records import SpanRecord
from tests.support.collector_harness import metric_samples, post_otlp, running_collector, wait_until


def agent_trace(n: int, t0: int) -> list[SpanRecord]:
    trace_id = f"{n:032x}"
    root = SpanRecord(
        trace_id,
        f"{n:08x}{0:08x}",
        None,
        "invoke_agent a",
        start_ns=t0,
        end_ns=t0 + 3000,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "a",
            "agentotel.eval.expected_tools": ["t"],
        },
    )
    tool = SpanRecord(
        trace_id,
        f"{n:08x}{1:08x}",
        root.span_id,
        "execute_tool t",
        start_ns=t0 + 1000,
        end_ns=t0 + 2000,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
    )
    return [tool, root]


def rows(collector, sql: str) -> list[list]:
    return collector.query(sql)["rows"]


def test_runs_are_assembled_and_scored_in_a_second_process(tmp_path):
    with running_collector(tmp_path / "p.duckdb") as collector:
        assert not collector.in_process and collector.assembler.pid not in (None, os.getpid())
        assert (
            post_otlp(
                collector.http_endpoint,
                "traces",
                encode_traces(agent_trace(1, time.time_ns())).SerializeToString(),
            ).status
            == 200
        )
        wait_until(
            lambda: (
                rows(collector, "SELECT count(*) FROM evaluations WHERE metric = 'tool_correctness'") == [[1]]
            ),
            what="the run's score",
        )
        assert rows(collector, "SELECT tool_name FROM tool_calls") == [["t"]]
        # the counters of the other process reach this one (and its /metrics)
        wait_until(
            lambda: collector.assembler.snapshot().assembler.runs_completed == 1, what="the worker's counters"
        )
        assert collector.assembler.snapshot().scoring.runs_scored == 1
        metrics = collector.metrics_text()
        assert (
            metric_samples(metrics)["agentotel_runs_completed_total"] == 1
            and metric_samples(metrics)["agentotel_runs_scored_total"] == 1
        )


def web_trace(n: int, t0: int) -> list[SpanRecord]:
    """A web service's own trace, exported to the same endpoint: an HTTP request and its database query."""
    trace_id = f"{n:032x}"
    root = SpanRecord(
        trace_id,
        f"{n:08x}{0:08x}",
        None,
        "GET /orders",
        kind=2,
        start_ns=t0,
        end_ns=t0 + 3000,
        attributes={"http.request.method": "GET", "url.path": "/orders", "http.response.status_code": 200},
    )
    query = SpanRecord(
        trace_id,
        f"{n:08x}{1:08x}",
        root.span_id,
        "SELECT orders",
        kind=3,
        start_ns=t0 + 1000,
        end_ns=t0 + 2000,
        attributes={"db.system.name": "postgresql", "db.query.text": "SELECT 1"},
    )
    return [query, root]


def test_a_trace_with_no_agent_span_is_stored_and_not_assembled(tmp_path):
    with running_collector(tmp_path / "w.duckdb", assembler={"grace_period": 0.5}) as collector:
        now = time.time_ns()
        body = encode_traces(web_trace(1, now) + agent_trace(2, now)).SerializeToString()
        assert post_otlp(collector.http_endpoint, "traces", body).status == 200
        wait_until(
            lambda: collector.assembler.snapshot().assembler.traces_without_evidence == 1,
            what="the web trace's decision",
        )
        wait_until(
            lambda: rows(collector, "SELECT count(*) FROM agent_runs") == [[1]], what="the agent's run"
        )
        assert rows(collector, "SELECT trace_id, count(*) FROM spans GROUP BY 1 ORDER BY 1") == [
            [f"{1:032x}", 2],
            [f"{2:032x}", 2],
        ]
        assert rows(collector, "SELECT DISTINCT trace_id FROM agent_runs") == [[f"{2:032x}"]]
        assert metric_samples(collector.metrics_text())["agentotel_traces_without_evidence_total"] == 1


def test_a_killed_assembler_process_is_replaced_and_its_open_traces_are_recovered(tmp_path):
    with running_collector(tmp_path / "k.duckdb", assembler={"grace_period": 1.5}) as collector:
        first = collector.assembler.pid
        assert (
            post_otlp(
                collector.http_endpoint,
                "traces",
                encode_traces(agent_trace(1, time.time_ns())).SerializeToString(),
            ).status
            == 200
        )
        wait_until(lambda: collector.assembler.open_traces == 1, what="the trace to be buffered")
        os.kill(first, signal.SIGKILL)  # the trace dies with it, before its grace period is over
        wait_until(
            lambda: collector.assembler.pid != first and collector.assembler.restarts == 1,
            what="a new assembler process",
        )
        # the committed spans are re-read by the new process's recovery: the run is written once
        wait_until(
            lambda: rows(collector, "SELECT count(*) FROM agent_runs") == [[1]],
            timeout=15,
            what="the recovered run",
        )
        assert rows(collector, "SELECT tool_name FROM tool_calls") == [["t"]]
        # and it goes on assembling new traces
        assert (
            post_otlp(
                collector.http_endpoint,
                "traces",
                encode_traces(agent_trace(2, time.time_ns())).SerializeToString(),
            ).status
            == 200
        )
        wait_until(lambda: rows(collector, "SELECT count(*) FROM agent_runs") == [[2]], what="the next run")
        wait_until(
            lambda: collector.assembler.snapshot().assembler.traces_recovered >= 1,
            timeout=5,
            what="the recovery counter",
        )
        metrics = collector.metrics_text()
        assert metric_samples(metrics)['agentotel_helper_restarts_total{helper="assembler"}'] == 1
        assert metric_samples(metrics)['agentotel_helper_up{helper="assembler"}'] == 1
        assert metric_samples(metrics)['agentotel_helper_restarts_total{helper="decode-0"}'] == 0
    # stopped cleanly: the worker is gone too
    assert collector.assembler.pid is not None
    assert not os.path.exists(f"/proc/{collector.assembler.pid}") or _is_zombie(collector.assembler.pid)


def test_a_late_span_sent_while_the_assembler_process_restarts_still_rebuilds_its_run(tmp_path):
    # The new process's recovery only re-opens traces without runs: the late span's marks, which could not be
    # sent to the dead process, must wait for the new one instead of being dropped.
    with running_collector(tmp_path / "l.duckdb") as collector:
        t0 = time.time_ns()
        first = collector.assembler.pid
        assert (
            post_otlp(
                collector.http_endpoint, "traces", encode_traces(agent_trace(1, t0)).SerializeToString()
            ).status
            == 200
        )
        wait_until(lambda: rows(collector, "SELECT count(*) FROM tool_calls") == [[1]], what="the first run")
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: collector.assembler.alive is False, what="the death to be seen")
        root_id = f"{1:08x}{0:08x}"
        late = SpanRecord(
            f"{1:032x}",
            f"{1:08x}{2:08x}",
            root_id,
            "execute_tool u",
            start_ns=t0 + 2500,
            end_ns=t0 + 2600,
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "u"},
        )
        assert (
            post_otlp(collector.http_endpoint, "traces", encode_traces([late]).SerializeToString()).status
            == 200
        )
        wait_until(
            lambda: collector.assembler.pid != first and collector.assembler.restarts == 1,
            what="a new assembler process",
        )
        wait_until(
            lambda: rows(collector, "SELECT tool_name FROM tool_calls ORDER BY start_time") == [["t"], ["u"]],
            timeout=15,
            what="the run rebuilt with the late span",
        )
        assert rows(collector, "SELECT count(*) FROM agent_runs") == [[1]]


def test_deaths_far_apart_do_not_add_up_to_giving_up(tmp_path, monkeypatch):
    import agentotel_eval.collector.pipeline.helper_proxy as assembler_process

    monkeypatch.setattr(assembler_process, "MAX_RESTARTS", 1)
    monkeypatch.setattr(
        assembler_process, "STABLE_SECONDS", 0.0
    )  # every worker counts as having run long enough
    with running_collector(tmp_path / "s.duckdb") as collector:
        for death in (1, 2):
            pid = collector.assembler.pid
            os.kill(pid, signal.SIGKILL)
            wait_until(
                lambda pid=pid, death=death: (
                    collector.assembler.pid != pid
                    and collector.assembler.alive
                    and collector.assembler.restarts == death
                ),
                what="a new assembler process",
            )
        assert (
            post_otlp(
                collector.http_endpoint,
                "traces",
                encode_traces(agent_trace(1, time.time_ns())).SerializeToString(),
            ).status
            == 200
        )
        wait_until(
            lambda: rows(collector, "SELECT count(*) FROM agent_runs") == [[1]],
            timeout=15,
            what="assembly still on after two deaths",
        )


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_when_the_assembler_process_is_given_up_on_ingest_goes_on(tmp_path, monkeypatch):
    import agentotel_eval.collector.pipeline.helper_proxy as assembler_process

    monkeypatch.setattr(assembler_process, "MAX_RESTARTS", 0)  # the first death is the last
    with running_collector(tmp_path / "g.duckdb") as collector:
        os.kill(collector.assembler.pid, signal.SIGKILL)
        wait_until(lambda: collector.assembler.supervisor.gave_up, what="the worker to be given up on")
        for n in range(1, 4):  # accepted and stored, nothing held for an assembler that is gone
            assert (
                post_otlp(
                    collector.http_endpoint,
                    "traces",
                    encode_traces(agent_trace(n, time.time_ns())).SerializeToString(),
                ).status
                == 200
            )
        assert collector.assembler.backlog == 0
        assert rows(collector, "SELECT count(*) FROM spans") == [[6]]
        metrics = collector.metrics_text()
        assert metric_samples(metrics)['agentotel_helper_given_up{helper="assembler"}'] == 1
        assert metric_samples(metrics)['agentotel_helper_up{helper="assembler"}'] == 0
    # the next start recovers their runs from the stored spans
    with running_collector(tmp_path / "g.duckdb") as collector:
        wait_until(
            lambda: rows(collector, "SELECT count(*) FROM agent_runs") == [[3]],
            timeout=15,
            what="the runs recovered at the next start",
        )


def test_an_assembler_process_that_dies_while_the_collector_stops_is_not_replaced(tmp_path):
    """From the start of a shutdown on, a death is not restarted (the next start's recovery rebuilds what the
    process held), and the shutdown still ends promptly."""
    with running_collector(tmp_path / "d.duckdb") as collector:
        first = collector.assembler.pid
        collector.assembler.supervisor.stop_restarting()  # what shutdown does first
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: not collector.assembler.alive, what="the death to be seen")
        time.sleep(0.5)  # a restart would start at once (first delay 0.2 s)
        assert collector.assembler.pid == first and collector.assembler.restarts == 0
        assert collector.assembler.supervisor.finished.is_set()
        started = time.monotonic()
    assert time.monotonic() - started < 15
