"""Trajectory specs end to end: real agents traced with the OpenTelemetry SDK export over gRPC to a running
collector, which finds each run's spec (a config rule written in TOML, or JSON on the run span) and stores the
``trajectory`` evaluation as a row, as run-span attributes and as a ``gen_ai.evaluation.result`` event."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentotel_eval import semconv as sc
from agentotel_eval.collector.config import load_config
from agentotel_eval.tracing import traced
from tests.support.collector_harness import running_collector, wait_until
from tests.support.ui_data import cli

# the rule exactly as a user writes it in the collector's config file
# the last step is one TOML line, continued in the string by a backslash
REFUND_FLOW = """
[[expectations]]
name = "refund-flow"
agent = "support-*"

[expectations.trajectory]
extra = "ignore"                 # calls the spec does not match: "ignore" | "penalize" | "forbid"
max_calls = 12                   # more calls than this: a violation
forbid = [{ tool = "delete_account" }, { tool = "issue_refund", args = { amount = { "$gt" = 500 } } }]
steps = [
  { id = "who", tool = "find_user", args = { zip = { "$regex" = "\\\\d{5}" } } },
  { any_of = [ { tool = "get_user_details", args = { user_id = { "$ref" = "who.result.user_id" } } },
               { tool = "search_users" } ] },
  { parallel = [ { tool = "get_order" }, { tool = "get_product", optional = true } ] },
  { tool = "check_policy", count = { min = 0, max = 1 }, weight = 0.5 },
  { unordered = [ { tool = "notify_customer" }, { tool = "log_case" } ] },
  { tool = "issue_refund", args = { order_id = { "$ref" = "get_order.args.order_id" }, \
amount = { "$approx" = 120.0, rel = 0.01 }, method = { "$in" = ["paypal", "card"] } } },
]
"""


def _rows(collector: Any, sql: str, params: list | None = None) -> list[tuple]:
    with collector._cursor() as cursor:
        return cursor.execute(sql, params or []).fetchall()


def _provider(collector: Any, service: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=collector.grpc_endpoint, insecure=True))
    )
    return provider


def _support_tools(provider: TracerProvider) -> dict[str, Callable[..., Any]]:
    @traced(kind="tool", tracer_provider=provider)
    def find_user(zip: str) -> dict:
        return {"user_id": "u-7731", "zip": zip}

    @traced(kind="tool", tracer_provider=provider)
    def get_user_details(user_id: str) -> dict:
        return {"user_id": user_id, "tier": "gold"}

    @traced(kind="tool", tracer_provider=provider)
    def get_order(order_id: str) -> dict:
        return {"order_id": order_id, "total": 120.0}

    @traced(kind="tool", tracer_provider=provider)
    def notify_customer(user_id: str) -> str:
        return "sent"

    @traced(kind="tool", tracer_provider=provider)
    def log_case(order_id: str) -> str:
        return "logged"

    @traced(kind="tool", tracer_provider=provider)
    def issue_refund(order_id: str, amount: float, method: str) -> dict:
        return {"refund": "R-1", "amount": amount}

    @traced(kind="tool", tracer_provider=provider)
    def delete_account(user_id: str) -> str:
        return "deleted"

    return {
        f.__name__: f
        for f in (
            find_user,
            get_user_details,
            get_order,
            notify_customer,
            log_case,
            issue_refund,
            delete_account,
        )
    }


def _trajectory(collector: Any, trace_id: str) -> tuple[Any, ...]:
    (row,) = _rows(
        collector,
        "SELECT score, success, status, reason, details FROM evaluations "
        "WHERE trace_id = ? AND metric = 'trajectory'",
        [trace_id],
    )
    return row


def _trace_of(collector: Any, agent: str) -> str:
    rows = _rows(collector, "SELECT trace_id FROM agent_runs WHERE agent_name = ?", [agent])
    return rows[0][0]


def test_the_toml_rule_scores_runs_of_matching_agents(tmp_path: Path) -> None:
    config_file = tmp_path / "agentotel.toml"
    config_file.write_text(REFUND_FLOW)
    rules = load_config(config_file).expectations
    with running_collector(tmp_path / "rules.duckdb", expectations=rules) as collector:
        provider = _provider(collector, "support-desk")
        tools = _support_tools(provider)

        @traced(kind="agent", name="support-refunds", tracer_provider=provider)
        def good_agent() -> str:
            who = tools["find_user"]("94110")
            tools["get_user_details"](who["user_id"])
            tools["get_order"]("A-1042")
            tools["log_case"]("A-1042")  # the unordered pair in the other order
            tools["notify_customer"](who["user_id"])
            tools["issue_refund"]("A-1042", 120.9, "card")  # within 1% of 120
            return "Refunded 120.90 to your card."

        @traced(kind="agent", name="support-cleanup", tracer_provider=provider)
        def bad_agent() -> str:
            who = tools["find_user"]("9411")  # four digits: the regex fails
            tools["get_user_details"]("u-0000")  # not the id find_user returned
            tools["get_order"]("A-1042")
            tools["issue_refund"]("A-9999", 120.0, "cash")
            tools["delete_account"](who["user_id"])
            return "Done."

        @traced(kind="agent", name="billing-bot", tracer_provider=provider)
        def other_agent() -> str:
            tools["find_user"]("94110")
            return "Found."

        good_agent()
        bad_agent()
        other_agent()
        assert provider.force_flush(10_000)
        wait_until(
            lambda: (
                _rows(collector, "SELECT count(*) FROM evaluations WHERE metric = 'tool_errors_detectors'")[
                    0
                ][0]
                == 3
            ),
            what="every run scored",
        )
        good, bad, other = (
            _trace_of(collector, a) for a in ("support-refunds", "support-cleanup", "billing-bot")
        )

        score, success, status, reason, details = _trajectory(collector, good)
        assert (score, success, status) == (1.0, True, "ok")
        details = json.loads(details)
        assert details["expectation"] == "rule:refund-flow"
        steps = {row["path"]: row for row in details["steps"]}
        assert steps["steps[1]"]["chosen"] == 0 and steps["steps[1].any_of[1]"]["status"] == "not_taken"
        assert steps["steps[2].parallel[1]"]["status"] == "skipped"  # optional get_product
        assert steps["steps[4]"]["calls"] == [3, 4]  # log_case then notify_customer: unordered
        assert [c["ok"] for c in steps["steps[5]"]["checks"]["5"]] == [True, True, True]

        score, success, status, reason, details = _trajectory(collector, bad)
        details = json.loads(details)
        assert success is False and status == "ok" and "delete_account" in reason
        assert [v["type"] for v in details["violations"]] == ["forbidden"]
        assert "delete_account" in details["violations"][0]["message"]
        steps = {row["path"]: row for row in details["steps"]}
        assert steps["steps[0]"]["status"] == "missing"
        (near,) = steps["steps[0]"]["near_misses"]
        assert near["checks"][0]["key"] == "zip" and near["checks"][0]["ok"] is False
        assert "'cash'" in json.dumps(steps["steps[5]"]["near_misses"])
        assert score is not None and score < 0.5

        # the agent the rule does not name is not scored on a trajectory (nor scored 0)
        assert not _rows(
            collector, "SELECT 1 FROM evaluations WHERE trace_id = ? AND metric = 'trajectory'", [other]
        )

        # the run span carries the result as attributes and as an evaluation event
        ((attrs, events),) = _rows(
            collector,
            "SELECT s.attributes, s.events FROM spans s JOIN agent_runs r "
            "ON s.trace_id = r.trace_id AND s.span_id = r.span_id WHERE r.trace_id = ?",
            [bad],
        )
        attrs = json.loads(attrs)
        assert attrs["agentotel.eval.trajectory.score"] == score
        assert attrs["agentotel.eval.trajectory.success"] is False
        (event,) = [
            e["attributes"]
            for e in json.loads(events)
            if e["name"] == sc.EVENT_EVALUATION_RESULT
            and e["attributes"][sc.GEN_AI_EVALUATION_NAME] == "trajectory"
        ]
        assert event[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "fail"
        provider.shutdown()
        stored = {t: _trajectory(collector, t)[:2] for t in (good, bad)}

    # export-cases writes the spec each run was scored against; eval scores the cases as the collector did
    cases = tmp_path / "cases.jsonl"
    done = cli("export-cases", "--db", str(tmp_path / "rules.duckdb"), "-o", str(cases))
    assert done.returncode == 0, done.stderr
    exported = [json.loads(line) for line in cases.read_text().splitlines()]
    specs = [c.get("expected_trajectory") for c in exported]
    assert (
        specs.count(tomllib.loads(REFUND_FLOW)["expectations"][0]["trajectory"]) == 2
        and specs.count(None) == 1
    )
    scored = cli("eval", str(cases), "--metric", "trajectory", "--format", "json", "--exit-zero")
    document = json.loads(scored.stdout)
    again = {
        c["name"].split()[-1].split("/")[0]: (c["metrics"][0]["score"], c["metrics"][0]["success"])
        for c in document["cases"]
        if c["metrics"][0]["status"] == "ok"
    }
    assert again == stored

    # rescore with an edited rule: cash refunds allowed, deleting accounts no longer forbidden
    edited = tmp_path / "edited.toml"
    edited.write_text(
        REFUND_FLOW.replace('["paypal", "card"]', '["paypal", "card", "cash"]').replace(
            '{ tool = "delete_account" }, ', ""
        )
    )
    done = cli("rescore", "--db", str(tmp_path / "rules.duckdb"), "--config", str(edited))
    assert done.returncode == 0, done.stderr
    con = duckdb.connect(str(tmp_path / "rules.duckdb"), read_only=True)
    (row,) = con.execute(
        "SELECT success, details FROM evaluations WHERE trace_id = ? AND metric = 'trajectory'", [bad]
    ).fetchall()
    con.close()
    details = json.loads(row[1])
    assert details["violations"] == []
    assert {s["path"]: s["status"] for s in details["steps"]}[
        "steps[5]"
    ] == "missing"  # A-9999: not get_order's


def test_a_spec_on_the_run_span_wins_and_a_bad_one_is_an_error_row(tmp_path: Path) -> None:
    config_file = tmp_path / "agentotel.toml"
    config_file.write_text(REFUND_FLOW)
    rules = load_config(config_file).expectations
    with running_collector(tmp_path / "span.duckdb", expectations=rules) as collector:
        provider = _provider(collector, "support-desk")
        tools = _support_tools(provider)
        spec = {
            "extra": "forbid",
            "steps": [
                {"id": "who", "tool": "find_user"},
                {"tool": "notify_customer", "args": {"user_id": {"$ref": "who.result.user_id"}}},
            ],
        }

        @traced(kind="agent", name="support-notify", expected_trajectory=spec, tracer_provider=provider)
        def notifier() -> str:
            who = tools["find_user"]("94110")
            tools["notify_customer"](who["user_id"])
            return "Told them."

        tracer = provider.get_tracer("hand-written")
        notifier()
        # another instrumentation's run span, carrying JSON that is no spec: the run is
        # still stored and scored
        with tracer.start_as_current_span(
            "invoke_agent support-legacy",
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
                sc.GEN_AI_AGENT_NAME: "support-legacy",
                sc.AGENTOTEL_EXPECTED_TRAJECTORY: json.dumps(
                    {"steps": [{"tool": "a", "count": {"min": 3, "max": 1}}]}
                ),
            },
        ):
            tools["find_user"]("94110")
        assert provider.force_flush(10_000)
        wait_until(
            lambda: (
                _rows(collector, "SELECT count(*) FROM evaluations WHERE metric = 'trajectory'")[0][0] == 2
            ),
            what="both runs' trajectory rows",
        )

        score, success, status, _reason, details = _trajectory(
            collector, _trace_of(collector, "support-notify")
        )
        assert (score, success, status) == (1.0, True, "ok")
        details = json.loads(details)
        assert details["expectation"] == "span_attribute"  # not the support-* rule
        assert details["spec"] == spec and details["extra_mode"] == "forbid"

        score, success, status, reason, _details = _trajectory(
            collector, _trace_of(collector, "support-legacy")
        )
        assert (score, success, status) == (None, None, "error")
        assert "count" in reason and "steps[0]" in reason
        # the detectors still ran on it
        assert (
            _rows(collector, "SELECT count(*) FROM evaluations WHERE metric = 'tool_errors_detectors'")[0][0]
            == 2
        )
        provider.shutdown()
