"""The overview: per agent, runs and pass rate per metric over time; the tools most often missing, extra and
out of order; tool-call error rates; the judge's findings and cost. What each part shows is decided here;
``templates/overview_body.html`` lays it out."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple
from urllib.parse import urlencode

from markupsafe import Markup

from agentotel_eval.access.filters import RANGES, Filters
from agentotel_eval.access.queries import Overview
from agentotel_eval.metrics.registry import (
    TOOL_CORRECTNESS,
    TOOL_ERRORS,
    TOOL_ERRORS_DETECTORS,
    MetricLabel,
    metric_label,
)
from agentotel_eval.pages.charts import legend, pass_rate_chart, stacked_bars
from agentotel_eval.pages.markup import Links, fmt_pct, or_blank
from agentotel_eval.pages.templating import macro

DEPARTURE_KINDS = ("missing", "extra", "out of order")


class RangeLink(NamedTuple):
    label: str
    href: str
    current: bool


class AgentRow(NamedTuple):
    name: str
    href: str | None  # the agent's runs; None in the report
    runs: int
    failed_runs: int  # runs that ended in error (their span's status): not a score
    rates: list[Markup]  # a ``rate_cell`` per metric of the table
    last_run: datetime | None


class AgentChart(NamedTuple):
    name: str
    step: str  # "6 hours"
    chart: Markup
    legend: Markup


class ToolErrors(NamedTuple):
    tool: str
    calls: int
    errors: int
    rate: float


class FindingRow(NamedTuple):
    error_type: str
    found_by: str  # judge | detectors
    runs: int


class JudgeRow(NamedTuple):
    status: str
    evaluations: int
    cost: str  # "$0.0123"
    models: str


@dataclass(frozen=True, slots=True)
class OverviewView:
    filters: Filters
    static: bool  # the report: what the range is, said in words, instead of the picker and the agent filter
    since_words: str  # "the last 7d"
    now: datetime
    ranges: list[RangeLink]
    agent_names: list[str]
    tiles: list[tuple[str, str]]  # (value, label)
    metrics: list[str]
    labels: list[MetricLabel]  # the metrics' names for people, direction and meaning, in ``metrics``' order
    agents: list[AgentRow]
    charts: list[AgentChart]
    more_agents: int  # agents in the table without a chart
    departures: Markup
    departures_source: str
    tool_errors: list[ToolErrors]
    findings: list[FindingRow]
    judge: list[JudgeRow]
    judge_total: str


def range_links(
    current: str, href: Callable[[str], str], extra: dict[str, str] | None = None
) -> list[RangeLink]:
    links = []
    for value in RANGES:
        query = {k: v for k, v in {**(extra or {}), "since": value}.items() if v}
        label = "all time" if value == "all" else f"last {value}"
        links.append(RangeLink(label, href("?" + urlencode(query)), value == current))
    return links


def _tiles(ov: Overview) -> list[tuple[str, str]]:
    scored = passed = 0
    for a in ov.agents:
        n, p = a.metrics.get(TOOL_CORRECTNESS.name, (0, 0))
        scored, passed = scored + n, passed + p
    failed_runs = sum(a.failed_runs for a in ov.agents)
    cost = sum(float(row.get("cost_usd") or 0) for row in ov.judge)
    return [
        (f"{ov.total_runs:,}", "runs"),
        (f"{len(ov.agents):,}", "agents"),
        (fmt_pct(passed, scored), f"{TOOL_CORRECTNESS.label} pass rate ↑"),
        (f"{failed_runs:,}", "runs that ended in error"),
        (f"${cost:.4f}", "judge cost"),
    ]


def _metrics_of(ov: Overview) -> list[str]:
    return sorted({m for a in ov.agents for m in a.metrics})


@functools.lru_cache(maxsize=4096)
def rate_cell(passed: int, scored: int) -> Markup:
    """A pass rate's cell (``cells.html``). It is made of these two numbers alone, and they repeat (every run
    passed, ...): each cell is rendered once."""
    if not scored:
        return macro("cells.html", "rate_cell")(fmt_pct(passed, scored), "not scored", "")
    rate = passed / scored
    grade = "good" if rate >= 0.9 else "warn" if rate >= 0.5 else "bad"
    return macro("cells.html", "rate_cell")(
        fmt_pct(passed, scored), f"{passed} of {scored} scored runs passed", grade
    )


def _agent_rows(ov: Overview, metrics: list[str], links: Links) -> list[AgentRow]:
    rows = []
    for a in ov.agents:
        href = None if links.static else links.runs("?" + _q(agent=a.name, since=ov.filters.since))
        rates = [rate_cell(p, n) for n, p in (a.metrics.get(m, (0, 0)) for m in metrics)]
        rows.append(AgentRow(a.name, href, a.runs, a.failed_runs, rates, a.last_run))
    return rows


def _q(**values: str) -> str:
    return urlencode({k: v for k, v in values.items() if v})


def _agent_charts(ov: Overview, metrics: list[str]) -> list[AgentChart]:
    fine = ov.bucket_seconds < 86400
    step = _step_label(timedelta(seconds=ov.bucket_seconds))
    colours = {metric: k for k, metric in enumerate(metrics)}
    labels = {metric: metric_label(metric).label for metric in metrics}
    return [
        AgentChart(
            a.name,
            step,
            pass_rate_chart(
                a.buckets,
                a.runs_per_bucket,
                a.rates,
                title=f"{a.name}: runs and pass rate",
                fine=fine,
                colours=colours,
                labels=labels,
            ),
            legend(list(a.rates), colours, labels, _latest(a.rates)),
        )
        for a in ov.agents
        if a.buckets
    ]


def _latest(rates: dict[str, list[float | None]]) -> dict[str, str]:
    """Each metric's pass rate in its latest scored bucket, as the legend shows it ("latest 80% passed")."""
    notes = {}
    for metric, values in rates.items():
        scored = [v for v in values if v is not None]
        if scored:
            notes[metric] = f"latest {scored[-1]:.0%} passed"
    return notes


def _step_label(step: timedelta) -> str:
    seconds = int(step.total_seconds())
    if seconds % 86400 == 0:
        return "day" if seconds == 86400 else f"{seconds // 86400} days"
    if seconds % 3600 == 0:
        return "hour" if seconds == 3600 else f"{seconds // 3600} hours"
    return f"{seconds // 60} minutes"


def _who(metric: str) -> str:
    return (
        "judge"
        if metric == TOOL_ERRORS.name
        else "detectors"
        if metric == TOOL_ERRORS_DETECTORS.name
        else metric
    )


def overview_view(ov: Overview, links: Links) -> OverviewView:
    f = ov.filters
    metrics = _metrics_of(ov)
    charts = _agent_charts(ov, metrics)
    departures = stacked_bars(
        ov.departures, DEPARTURE_KINDS, title="tools most often missing, extra or out of order"
    )
    return OverviewView(
        filters=f,
        static=links.static,
        since_words="all time" if f.since == "all" else f"the last {f.since}",
        now=ov.now,
        ranges=range_links(f.since, links.overview, {"agent": f.agent}),
        agent_names=ov.agent_names,
        tiles=_tiles(ov),
        metrics=metrics,
        labels=[metric_label(m) for m in metrics],
        agents=_agent_rows(ov, metrics, links),
        charts=charts,
        more_agents=len(ov.agents) - len(charts),
        departures=departures,
        departures_source=(
            f"from {metric_label(ov.departures_metric).label} ({ov.departures_metric})"
            if ov.departures_metric
            else "no tool-correctness scores in this range"
        ),
        tool_errors=[
            ToolErrors(or_blank(r["tool_name"]), r["calls"], r["errors"], float(r["error_rate"] or 0))
            for r in ov.tool_errors
        ],
        findings=[
            FindingRow(or_blank(r["error_type"]), or_blank(_who(r["metric"])), r["runs"]) for r in ov.findings
        ],
        judge=[
            JudgeRow(
                or_blank(r["status"]),
                r["evaluations"],
                f"${float(r['cost_usd'] or 0):.4f}",
                r["models"] or "-",
            )
            for r in ov.judge
        ],
        judge_total=f"${sum(float(r['cost_usd'] or 0) for r in ov.judge):.4f}",
    )
