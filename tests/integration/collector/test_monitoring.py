"""deploy/prometheus/alerts.yml and deploy/grafana/agentotel.json: the rules pass ``promtool check rules`` and
their ``promtool test rules`` cases fire as written (Debian's ``prometheus`` package has promtool; .ci/run
installs it), the dashboard is valid JSON that Grafana can import, and every metric a rule or a panel queries
is one a real collector serves on /metrics (the shared lake's, which need a lake, from its
metrics collector)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from agentotel_eval.collector.config import LakeConfig
from agentotel_eval.collector.config_scoring import JudgeSettings
from agentotel_eval.collector.config_sinks import SinkConfig
from agentotel_eval.collector.lake.flusher import LakeFlusher
from agentotel_eval.collector.lake.telemetry import LakeTelemetry
from tests.support.collector_harness import running_collector
from tests.support.lake_servers import free_port

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
RULES = DEPLOY / "prometheus" / "alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "agentotel.json"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is missing (Debian's prometheus package; .ci/run installs it)"
)
_NAME = re.compile(r"\bagentotel_[a-z_]+\b")


@needs_promtool
def test_the_rules_check_and_their_tests_fire() -> None:
    for command in (["check", "rules", "alerts.yml"], ["test", "rules", "alerts_test.yml"]):
        done = subprocess.run(
            [PROMTOOL, *command], cwd=RULES.parent, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr
    tested = {
        t["alertname"]
        for case in yaml.safe_load((RULES.parent / "alerts_test.yml").read_text())["tests"]
        for t in case["alert_rule_test"]
    }
    assert {
        "AgentPassRateLow",
        "ToolUseErrorsRising",
        "IngestRefusals",
        "LakeLagHigh",
        "JudgeCostHigh",
    } <= tested


def _queried() -> set[str]:
    rules = yaml.safe_load(RULES.read_text())
    exprs = [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    dashboard = json.loads(DASHBOARD.read_text())
    exprs += [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    exprs += [
        v["query"]["query"] for v in dashboard["templating"]["list"] if isinstance(v.get("query"), dict)
    ]
    return {name for expr in exprs for name in _NAME.findall(expr)}


def test_the_dashboard_imports_and_queries_what_exists(tmp_path, monkeypatch) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["panels"]
    assert all(p["targets"] and p["datasource"]["uid"] == "${datasource}" for p in dashboard["panels"])
    judge = JudgeSettings(
        model="openai/gpt-4o-mini", api_base=f"http://127.0.0.1:{free_port()}", api_key="sk-test"
    )
    sink = SinkConfig(kind="phoenix", url=f"http://127.0.0.1:{free_port()}")
    with (
        running_collector(tmp_path / "db.duckdb", judge=judge, sinks=(sink,)) as collector,
        urllib.request.urlopen(collector.http_endpoint + "/metrics", timeout=10) as answer,
    ):
        served = answer.read().decode()
    registry = CollectorRegistry()  # the lake's families, as a node with [lake] serves them
    settings = LakeConfig(catalog=str(tmp_path / "catalog.ducklake"), data=str(tmp_path / "data")).settings()
    registry.register(LakeTelemetry(LakeFlusher(settings, "node-1", lambda: None, 5.0), None, None))
    served += generate_latest(registry).decode()
    exposed = {line.split()[2] for line in served.splitlines() if line.startswith("# TYPE")}
    exposed |= {f"{name}_total" for name in exposed}  # a counter's samples end in _total
    assert _queried() - exposed == set()
    assert {"agentotel_evaluations_total", "agentotel_tool_errors_total"} <= _queried()
