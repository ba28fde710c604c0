"""The runs table: filters by agent, service, metric, pass / fail, time range and input text; 50 runs a page.
What each row and the filter form show is decided here; ``templates/runs.html`` lays it out."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from markupsafe import Markup

from agentotel_eval.access.filters import PAGE_SIZE, RANGES, RESULTS, Filters
from agentotel_eval.access.queries import RunsPage, agent_shown
from agentotel_eval.metrics.registry import TOOL_CORRECTNESS, MetricLabel, family, metric_label
from agentotel_eval.pages.markup import Links, fmt_score
from agentotel_eval.pages.templating import macro

#: the tool-correctness scores, whose logs carry the expected tools they compared with
_CORRECTNESS = frozenset(d.name for d in family(TOOL_CORRECTNESS))


class RunRow(NamedTuple):
    """A row of the runs table (``runs_table.html`` unpacks it: its fields in this order)."""

    trace_id: str
    span_id: str
    agent: str
    href: str | None  # the run's page; None where the run is not in the document
    nested: bool
    service: str
    start: datetime | str | None
    input: str
    called: list[str] | None
    failed: bool
    expected: list[str] | None
    scores: list[Markup]  # ``score_chip``s


class Choice(NamedTuple):
    """A <select> of the filter form."""

    name: str  # the parameter, and the label
    everything: str  # the first option's text: no filter
    values: Sequence[str]
    current: str
    typed: (
        bool  # ``current`` is not among ``values`` (typed into the URL): it is shown as chosen all the same
    )
    texts: dict[str, str]  # an option's text, where it is not its value (a metric's label)


class Range(NamedTuple):
    value: str
    label: str


@dataclass(frozen=True, slots=True)
class RunsView:
    filters: Filters
    choices: list[Choice]
    ranges: list[Range]  # the time ranges offered, the current one among them
    total: int
    count: str  # "runs 51–100 of 1,234"
    rows: list[RunRow]
    legend: list[MetricLabel]  # the metrics to choose from: what each score means
    newer: str | None  # the previous page's href
    older: str | None


def score_chips(scores: Sequence[dict[str, Any]]) -> list[Markup]:
    return [score_chip(s["metric"], s["status"], bool(s["success"]), s["score"]) for s in scores]


@functools.lru_cache(maxsize=4096)
def score_chip(metric: str, status: str, success: bool, score: float | None) -> Markup:
    """A score's chip (``cells.html``): the metric's full label, its score and direction (↑ higher is better,
    ↓ lower is better), what it means in its title. It is made of these four values alone, and they repeat
    from run to run: each chip is rendered once (a page of 50 runs then renders in four
    fifths of the time)."""
    label = metric_label(metric)
    chip = macro("cells.html", "score_chip")
    if status != "ok":
        return chip(metric, False, False, f"{label.description} Not scored: {status}.", label.label, status)
    shown = fmt_score(score)
    title = f"{label.description} Score {shown}: {'passed' if success else 'failed'}."
    # an error metric's score is how sure it is that there are errors: say what it found instead
    if label.verdicts is not None:
        return chip(
            metric, True, success, title, label.label, label.verdicts[0] if success else label.verdicts[1]
        )
    return chip(metric, True, success, title, label.label, f"{shown} {label.arrow}".rstrip())


def expected_of(run: dict[str, Any]) -> list[str] | None:
    """The expected tools shown for a run: its own, else those its tool-correctness score used."""
    if run.get("expected_tools") is not None:
        return list(run["expected_tools"])
    for s in run.get("scores") or ():
        if s["metric"] in _CORRECTNESS and s.get("expected") is not None:
            return list(s["expected"])
    return None


def run_rows(runs: Sequence[dict[str, Any]], links: Links) -> list[RunRow]:
    rows = []
    for run in runs:
        trace_id, span_id = run["trace_id"], run["span_id"]
        rows.append(
            RunRow(
                trace_id,
                span_id,
                agent_shown(run),
                links.run(trace_id, span_id) if links.run is not None else None,
                bool(run.get("parent_run_span_id")),
                run.get("service_name") or "-",
                run.get("start_time"),
                (run.get("input") or "").strip(),
                run.get("tools_called"),
                (run.get("status") or "ok") == "error",
                expected_of(run),
                score_chips(run.get("scores") or ()),
            )
        )
    return rows


def _count(page: RunsPage) -> str:
    first = (page.filters.page - 1) * PAGE_SIZE + 1
    last = first + len(page.runs) - 1
    if page.runs:
        return f"runs {first:,}–{last:,} of {page.total:,}"
    return "no runs match" if page.total == 0 else f"page {page.filters.page} is past the last run"


def runs_view(page: RunsPage, links: Links) -> RunsView:
    f = page.filters
    texts = {"metric": {m: metric_label(m).label for m in page.metrics}}
    choices = [
        Choice(
            name, everything, values, current, bool(current) and current not in values, texts.get(name, {})
        )
        for name, everything, values, current in (
            ("agent", "all agents", page.agents, f.agent),
            ("service", "all services", page.services, f.service),
            ("metric", "any metric", page.metrics, f.metric),
            ("result", "pass or fail", RESULTS, f.result),
        )
    ]
    ranges = [Range(r, "all time" if r == "all" else "last " + r) for r in RANGES]
    if f.since not in RANGES:
        ranges.append(Range(f.since, "last " + f.since))
    return RunsView(
        f,
        choices,
        ranges,
        page.total,
        _count(page),
        run_rows(page.runs, links),
        [metric_label(m) for m in page.metrics],
        links.runs(f.query_string(page=f.page - 1)) if f.page > 1 else None,
        links.runs(f.query_string(page=f.page + 1)) if page.has_next else None,
    )
