"""Whole documents: the three pages the collector serves, a page for errors, and the report file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentotel_eval.access.queries import Overview, RunDetail, RunsPage
from agentotel_eval.pages.markup import Links, Page, esc, fmt_time, frame
from agentotel_eval.pages.overview_view import overview_body
from agentotel_eval.pages.run_view import run_body
from agentotel_eval.pages.runs_view import runs_table

__all__ = ["message_page", "overview_page", "report_document", "run_page", "runs_page", "version_text"]


def version_text(version: dict[str, Any]) -> str:
    """The poller's token for ``data.latest_version``: it changes when runs or scores are written."""
    return json.dumps(version, sort_keys=True, default=str)


def _nav_query(since: str, agent: str) -> str:
    from urllib.parse import urlencode

    values = {k: v for k, v in (("since", since if since != "7d" else ""), ("agent", agent)) if v}
    return ("?" + urlencode(values)) if values else ""


def overview_page(ov: Overview, links: Links, version: str = "") -> str:
    page = Page("Overview", overview_body(ov, links), "overview", version)
    return frame(page, links, nav_query=_nav_query(ov.filters.since, ov.filters.agent))


def runs_page(rp: RunsPage, links: Links, version: str = "") -> str:
    from agentotel_eval.pages.runs_view import runs_body

    page = Page("Runs", runs_body(rp, links), "runs", version)
    return frame(page, links, nav_query=_nav_query(rp.filters.since, rp.filters.agent))


def run_page(detail: RunDetail, links: Links, version: str = "") -> str:
    title = f"{detail.run.get('agent_name') or '(unnamed)'} run {detail.run['span_id']}"
    return frame(Page(title, run_body(detail, links), "run", version), links)


def message_page(title: str, message: str, links: Links) -> str:
    return frame(Page(title, f'<h1>{esc(title)}</h1><p class="empty">{esc(message)}</p>'), links)


def report_document(ov: Overview, worst: Sequence[RunDetail], worst_rows: Sequence[dict[str, Any]],
                    source: str) -> str:
    """The overview and the worst runs, with their timelines, in one file that needs nothing else."""
    anchors = {(d.run["trace_id"], d.run["span_id"]) for d in worst}

    def run_href(trace_id: str, span_id: str) -> str:
        return f"#run-{trace_id}-{span_id}" if (trace_id, span_id) in anchors else ""

    links = Links(overview=lambda q: "#overview", runs=lambda q: "#worst", run=run_href, static=True)
    sections = [f'<section id="overview">{overview_body(ov, links)}</section>']
    if worst:
        sections.append(f'<section id="worst"><h1>Worst runs</h1><p class="muted">The {len(worst)} runs with the '
                        "lowest scores in this range (failed runs first), each with its timeline below.</p>"
                        f"{runs_table(worst_rows, links)}</section>")
        for detail in worst:
            run = detail.run
            sections.append(f'<article class="run" id="run-{esc(run["trace_id"])}-{esc(run["span_id"])}">'
                            f"{run_body(detail, links)}</article>")
    else:
        sections.append('<section id="worst"><h1>Worst runs</h1><p class="empty">No run failed a metric in this '
                        "range.</p></section>")
    generated = f"report of {source}, made {fmt_time(ov.now)} UTC"
    return frame(Page("Report", "".join(sections)), links, generated=generated)
