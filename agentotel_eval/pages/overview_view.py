"""The overview: per agent, runs and pass rate per metric over time; the tools most often missing, extra and out
of order; tool-call error rates; the judge's findings and cost."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from urllib.parse import urlencode

from agentotel_eval.access.filters import RANGES
from agentotel_eval.access.queries import Overview
from agentotel_eval.pages.charts import legend, pass_rate_chart, stacked_bars
from agentotel_eval.pages.markup import Links, esc, fmt_pct, fmt_time

DEPARTURE_KINDS = ("missing", "extra", "out of order")


def range_picker(current: str, href: Callable[[str], str], extra: dict[str, str] | None = None) -> str:
    items = []
    for value in RANGES:
        query = {**(extra or {}), "since": value}
        query = {k: v for k, v in query.items() if v}
        label = "all time" if value == "all" else f"last {value}"
        current_attr = ' aria-current="true"' if value == current else ""
        items.append(f'<a class="range"{current_attr} href="{esc(href("?" + urlencode(query)))}">{label}</a>')
    return f'<div class="ranges" role="group" aria-label="time range">{"".join(items)}</div>'


def overview_body(ov: Overview, links: Links) -> str:
    f = ov.filters
    parts = ['<div class="toolbar"><h1>Overview</h1>']
    if links.static:
        label = "all time" if f.since == "all" else f"the last {f.since}"
        parts.append(f'<p class="muted">Runs of {label} up to {esc(fmt_time(ov.now))} UTC'
                     f'{" for agent " + esc(f.agent) if f.agent else ""}.</p>')
    else:
        parts.append(range_picker(f.since, links.overview, {"agent": f.agent}))
        options = "".join(f'<option value="{esc(n)}"{" selected" if n == f.agent else ""}>{esc(n)}</option>'
                          for n in ov.agent_names)
        parts.append(f'<form class="filters" method="get" action=""><input type="hidden" name="since" '
                     f'value="{esc(f.since)}"><label>agent <select name="agent" data-autosubmit>'
                     f'<option value="">all agents</option>{options}</select></label></form>')
    parts.append("</div>")
    parts.append(_tiles(ov))
    parts.append(_agents_table(ov, links))
    parts.append(_agent_charts(ov, links))
    parts.append('<div class="grid2">')
    parts.append(_departures(ov))
    parts.append(_tool_errors(ov))
    parts.append("</div><div class=\"grid2\">")
    parts.append(_findings(ov))
    parts.append(_judge(ov))
    parts.append("</div>")
    return "".join(parts)


def _tiles(ov: Overview) -> str:
    scored = passed = 0
    for a in ov.agents:
        n, p = a.metrics.get("tool_correctness", (0, 0))
        scored, passed = scored + n, passed + p
    failed_runs = sum(a.failed_runs for a in ov.agents)
    cost = sum(float(row.get("cost_usd") or 0) for row in ov.judge)
    tiles = (
        ("runs", f"{ov.total_runs:,}"),
        ("agents", f"{len(ov.agents):,}"),
        ("tool correctness pass rate", fmt_pct(passed, scored)),
        ("runs that ended in error", f"{failed_runs:,}"),
        ("judge cost", f"${cost:.4f}"),
    )
    return '<div class="tiles">' + "".join(
        f'<div class="tile"><div class="tile-value">{esc(v)}</div><div class="tile-label">{esc(k)}</div></div>'
        for k, v in tiles) + "</div>"


def _metrics_of(ov: Overview) -> list[str]:
    return sorted({m for a in ov.agents for m in a.metrics})


def _agents_table(ov: Overview, links: Links) -> str:
    metrics = _metrics_of(ov)
    if not ov.agents:
        return ('<section><h2>Agents</h2><p class="empty">No agent runs in this range yet. Point an OpenTelemetry '
                "exporter at this collector (OTEL_EXPORTER_OTLP_ENDPOINT) and runs appear here.</p></section>")
    head = "".join(f"<th>{esc(m)}</th>" for m in metrics)
    rows = []
    for a in ov.agents:
        cells = []
        for m in metrics:
            n, p = a.metrics.get(m, (0, 0))
            rate = p / n if n else None
            cls = "" if rate is None else ("good" if rate >= 0.9 else "warn" if rate >= 0.5 else "bad")
            title = f"{p} of {n} scored runs passed" if n else "not scored"
            cells.append(f'<td class="rate {cls}" title="{esc(title)}">{fmt_pct(p, n)}</td>')
        name = esc(a.name)
        if not links.static:
            name = f'<a href="{esc(links.runs("?" + _q(agent=a.name, since=ov.filters.since)))}">{name}</a>'
        rows.append(f"<tr><td>{name}</td><td class=num>{a.runs:,}</td><td class=num>{a.failed_runs:,}</td>"
                    f"{''.join(cells)}<td>{esc(fmt_time(a.last_run))}</td></tr>")
    return (f'<section><h2>Agents</h2><table class="data"><thead><tr><th>agent</th><th>runs</th>'
            f"<th>failed runs</th>{head}<th>last run</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            "<p class=muted>Pass rate: the share of scored runs whose score reached its threshold.</p></section>")


def _q(**values: str) -> str:
    return urlencode({k: v for k, v in values.items() if v})


def _agent_charts(ov: Overview, links: Links) -> str:
    charted = [a for a in ov.agents if a.buckets]
    if not charted:
        return ""
    fine = ov.bucket_seconds < 86400
    step = timedelta(seconds=ov.bucket_seconds)
    colours = {metric: k for k, metric in enumerate(_metrics_of(ov))}
    cards = []
    for a in charted:
        chart = pass_rate_chart(a.buckets, a.runs_per_bucket, a.rates, title=f"{a.name}: runs and pass rate",
                                fine=fine, colours=colours)
        cards.append(f'<figure class="card"><figcaption>{esc(a.name)} <span class="muted">· runs per '
                     f'{_step_label(step)}, pass rate per metric</span></figcaption>{chart}{legend(list(a.rates), colours)}'
                     "</figure>")
    more = len(ov.agents) - len(charted)
    note = f'<p class="muted">{more} more agent(s) in the table above.</p>' if more > 0 else ""
    return f'<section><h2>Over time</h2><div class="cards">{"".join(cards)}</div>{note}</section>'


def _step_label(step: timedelta) -> str:
    seconds = int(step.total_seconds())
    if seconds % 86400 == 0:
        return "day" if seconds == 86400 else f"{seconds // 86400} days"
    if seconds % 3600 == 0:
        return "hour" if seconds == 3600 else f"{seconds // 3600} hours"
    return f"{seconds // 60} minutes"


def _departures(ov: Overview) -> str:
    chart = stacked_bars(ov.departures, DEPARTURE_KINDS, title="tools most often missing, extra or out of order")
    source = (f"from {esc(ov.departures_metric)}" if ov.departures_metric
              else "no tool-correctness scores in this range")
    return (f'<section><h2>Where tool use departs from the expectation</h2><p class="muted">Calls per tool, '
            f"{source}.</p>{chart}</section>")


def _tool_errors(ov: Overview) -> str:
    if not ov.tool_errors:
        return '<section><h2>Tool-call errors</h2><p class="empty">No tool calls in this range.</p></section>'
    rows = []
    for row in ov.tool_errors:
        rate = float(row["error_rate"] or 0)
        rows.append(f"<tr><td>{esc(row['tool_name'])}</td><td class=num>{row['calls']:,}</td>"
                    f"<td class=num>{row['errors']:,}</td><td>{_meter(rate)} {rate:.1%}</td></tr>")
    return ('<section><h2>Tool-call errors</h2><table class="data"><thead><tr><th>tool</th><th>calls</th>'
            f"<th>errors</th><th>error rate</th></tr></thead><tbody>{''.join(rows)}</tbody></table></section>")


def _meter(rate: float) -> str:
    """A share as a small bar, in SVG (no inline style, which the pages' policy forbids)."""
    return (f'<svg class="meter" width="80" height="8" role="img" aria-label="{rate:.1%}"><rect class="meter-back" '
            f'width="80" height="8" rx="4"/><rect class="meter-fill" width="{80 * rate:.1f}" height="8" rx="4"/></svg>')


def _findings(ov: Overview) -> str:
    if not ov.findings:
        return ('<section><h2>Tool-use errors found</h2><p class="empty">No findings in this range (the '
                "detectors found nothing, or the judge is off).</p></section>")
    rows = "".join(f"<tr><td>{esc(r['error_type'])}</td><td>{esc(_who(r['metric']))}</td>"
                   f"<td class=num>{r['runs']:,}</td></tr>" for r in ov.findings)
    return ('<section><h2>Tool-use errors found</h2><table class="data"><thead><tr><th>error type</th>'
            f"<th>found by</th><th>runs</th></tr></thead><tbody>{rows}</tbody></table></section>")


def _who(metric: str) -> str:
    return "judge" if metric == "tool_errors" else "detectors" if metric == "tool_errors_detectors" else metric


def _judge(ov: Overview) -> str:
    if not ov.judge:
        return ('<section><h2>Judge</h2><p class="empty">The LLM judge scored no run in this range ([judge] in the '
                "config turns it on).</p></section>")
    rows = "".join(f"<tr><td>{esc(r['status'])}</td><td class=num>{r['evaluations']:,}</td>"
                   f"<td class=num>${float(r['cost_usd'] or 0):.4f}</td><td>{esc(r['models'] or '-')}</td></tr>"
                   for r in ov.judge)
    total = sum(float(r["cost_usd"] or 0) for r in ov.judge)
    return ('<section><h2>Judge</h2><table class="data"><thead><tr><th>status</th><th>evaluations</th>'
            f"<th>cost</th><th>models</th></tr></thead><tbody>{rows}</tbody><tfoot><tr><td>total</td><td></td>"
            f"<td class=num>${total:.4f}</td><td></td></tr></tfoot></table></section>")
