"""The runs table: filters by agent, service, metric, pass / fail, time range and input text; 50 runs a page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentotel_eval.access.filters import PAGE_SIZE, RANGES
from agentotel_eval.access.queries import RunsPage
from agentotel_eval.pages.markup import Links, esc, fmt_score, fmt_time


def _select(name: str, label: str, options: Sequence[str], current: str, everything: str) -> str:
    items = "".join(f'<option value="{esc(o)}"{" selected" if o == current else ""}>{esc(o)}</option>'
                    for o in options)
    if current and current not in options:  # a value typed into the URL still shows as chosen
        items += f'<option value="{esc(current)}" selected>{esc(current)}</option>'
    return (f'<label>{label} <select name="{name}" data-autosubmit><option value="">{everything}</option>'
            f"{items}</select></label>")


def filter_form(page: RunsPage) -> str:
    f = page.filters
    ranges = "".join(f'<option value="{r}"{" selected" if r == f.since else ""}>'
                     f'{"all time" if r == "all" else "last " + r}</option>' for r in RANGES)
    if f.since not in RANGES:
        ranges += f'<option value="{esc(f.since)}" selected>last {esc(f.since)}</option>'
    results = "".join(f'<option value="{r}"{" selected" if r == f.result else ""}>{r}</option>'
                      for r in ("pass", "fail"))
    return (
        '<form class="filters" method="get" action="/runs" role="search">'
        f'{_select("agent", "agent", page.agents, f.agent, "all agents")}'
        f'{_select("service", "service", page.services, f.service, "all services")}'
        f'{_select("metric", "metric", page.metrics, f.metric, "any metric")}'
        f'<label>result <select name="result" data-autosubmit><option value="">pass or fail</option>{results}'
        f'</select></label><label>time <select name="since" data-autosubmit>{ranges}</select></label>'
        f'<label>input <input type="search" name="q" value="{esc(f.q)}" placeholder="text in the input"></label>'
        '<button type="submit">Filter</button></form>'
    )


def _tools(names: Sequence[str] | None) -> str:
    if names is None:
        return '<span class="muted">-</span>'
    if not names:
        return '<span class="muted">none</span>'
    return " ".join(f'<code class="tool">{esc(n)}</code>' for n in names)


def _scores(scores: Sequence[dict[str, Any]]) -> str:
    chips = []
    for s in scores:
        if s["status"] != "ok":
            chips.append(f'<span class="chip muted" title="{esc(s["metric"])}: {esc(s["status"])}">'
                         f'{esc(_short_metric(s["metric"]))} {esc(s["status"])}</span>')
            continue
        cls = "pass" if s["success"] else "fail"
        # an error metric's score is how sure it is that there are errors: say what it found instead
        value = ("none" if s["success"] else "found") if s["metric"].startswith("tool_errors") else \
            fmt_score(s["score"])
        chips.append(f'<span class="chip {cls}" data-metric="{esc(s["metric"])}" title="{esc(s["metric"])}: '
                     f'{fmt_score(s["score"])}">{esc(_short_metric(s["metric"]))} {value}</span>')
    return " ".join(chips) or '<span class="muted">not scored</span>'


def _short_metric(metric: str) -> str:
    return metric.replace("tool_correctness", "tc").replace("tool_errors", "errors")


def expected_of(run: dict[str, Any]) -> list[str] | None:
    """The expected tools shown for a run: its own, else those its tool-correctness score used."""
    if run.get("expected_tools") is not None:
        return list(run["expected_tools"])
    for s in run.get("scores") or ():
        if s["metric"].startswith("tool_correctness") and s.get("expected") is not None:
            return list(s["expected"])
    return None


def runs_table(runs: Sequence[dict[str, Any]], links: Links) -> str:
    rows = []
    for run in runs:
        agent = esc(run.get("agent_name") or "(unnamed)")
        if links.run is not None:
            agent = f'<a href="{esc(links.run(run["trace_id"], run["span_id"]))}">{agent}</a>'
        status = run.get("status") or "ok"
        text = (run.get("input") or "").strip()
        failed = ' <span class="chip fail">run error</span>' if status == "error" else ""
        rows.append(
            f'<tr data-trace="{esc(run["trace_id"])}" data-span="{esc(run["span_id"])}"><td>{agent}'
            f'{" <span class=chip>nested</span>" if run.get("parent_run_span_id") else ""}</td>'
            f"<td class=nowrap>{esc(run.get('service_name') or '-')}</td><td class=nowrap>{esc(fmt_time(run.get('start_time')))}"
            f'</td><td class="input" title="{esc(text)}">{esc(text[:120])}</td>'
            f"<td>{_tools(run.get('tools_called'))}{failed}</td>"
            f"<td>{_tools(expected_of(run))}</td><td>{_scores(run.get('scores') or ())}</td></tr>")
    return ('<table class="data runs"><thead><tr><th>agent</th><th>service</th><th>start (UTC)</th><th>input</th>'
            "<th>tools called</th><th>expected tools</th><th>scores</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def runs_body(page: RunsPage, links: Links) -> str:
    f = page.filters
    first = (f.page - 1) * PAGE_SIZE + 1
    last = first + len(page.runs) - 1
    count = (f"runs {first:,}–{last:,} of {page.total:,}" if page.runs
             else "no runs match" if page.total == 0 else f"page {f.page} is past the last run")
    pager = []
    if f.page > 1:
        pager.append(f'<a rel="prev" href="{esc(links.runs(f.query_string(page=f.page - 1)))}">← newer</a>')
    if page.has_next:
        pager.append(f'<a rel="next" href="{esc(links.runs(f.query_string(page=f.page + 1)))}">older →</a>')
    table = runs_table(page.runs, links) if page.runs else (
        '<p class="empty">No runs match these filters.</p>')
    return (f'<div class="toolbar"><h1>Runs</h1>{filter_form(page)}</div>'
            f'<p class="muted" id="runs-count" data-total="{page.total}">{count}</p>{table}'
            f'<nav class="pager">{"".join(pager)}</nav>')
