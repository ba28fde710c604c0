"""Whole documents: the three pages the collector serves, a page for errors, and the report file. Each is a
template of ``templates/`` over the plain data its view module makes of what ``data`` read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

from agentotel_eval.access.queries import Overview, RunDetail, RunsPage
from agentotel_eval.pages.markup import Links, asset, fmt_time
from agentotel_eval.pages.overview_view import overview_view
from agentotel_eval.pages.run_view import run_view
from agentotel_eval.pages.runs_view import run_rows, runs_view
from agentotel_eval.pages.templating import render

__all__ = ["message_page", "overview_page", "report_document", "run_page", "runs_page", "version_text"]


def version_text(version: dict[str, Any]) -> str:
    """The poller's token for ``data.latest_version``: it changes when runs or scores are written."""
    return json.dumps(version, sort_keys=True, default=str)


def _nav_query(since: str, agent: str) -> str:
    values = {k: v for k, v in (("since", since if since != "7d" else ""), ("agent", agent)) if v}
    return ("?" + urlencode(values)) if values else ""


def _frame(
    links: Links, title: str, *, active: str = "", version: str = "", nav_query: str = "", generated: str = ""
) -> dict[str, Any]:
    """What ``layout.html`` needs; a file holds its stylesheet and script."""
    # our own stylesheet and script, shipped in the package: inserted as they are (escaping would break them)
    inline = {"style": Markup(asset("style.css")), "script": Markup(asset("app.js"))} if links.static else {}
    nav = {"overview": links.overview(nav_query), "runs": links.runs(nav_query)}
    return {
        "static": links.static,
        "nav": nav,
        "title": title,
        "active": active,
        "version": version,
        "generated": generated,
        "inline": inline,
    }


def overview_page(ov: Overview, links: Links, version: str = "") -> str:
    return render(
        "overview.html",
        view=overview_view(ov, links),
        **_frame(
            links,
            "Overview",
            active="overview",
            version=version,
            nav_query=_nav_query(ov.filters.since, ov.filters.agent),
        ),
    )


def runs_page(rp: RunsPage, links: Links, version: str = "") -> str:
    return render(
        "runs.html",
        view=runs_view(rp, links),
        **_frame(
            links,
            "Runs",
            active="runs",
            version=version,
            nav_query=_nav_query(rp.filters.since, rp.filters.agent),
        ),
    )


def run_page(detail: RunDetail, links: Links, version: str = "") -> str:
    title = f"{detail.run.get('agent_name') or '(unnamed)'} run {detail.run['span_id']}"
    return render(
        "run.html", view=run_view(detail, links), **_frame(links, title, active="run", version=version)
    )


def message_page(title: str, message: str, links: Links) -> str:
    return render("message.html", message=message, **_frame(links, title))


def report_document(
    ov: Overview, worst: Sequence[RunDetail], worst_rows: Sequence[dict[str, Any]], source: str
) -> str:
    """The overview and the worst runs, with their timelines, in one file that needs nothing else."""
    anchors = {(d.run["trace_id"], d.run["span_id"]) for d in worst}

    def run_href(trace_id: str, span_id: str) -> str:
        return f"#run-{trace_id}-{span_id}" if (trace_id, span_id) in anchors else ""

    links = Links(overview=lambda q: "#overview", runs=lambda q: "#worst", run=run_href, static=True)
    return render(
        "report.html",
        overview=overview_view(ov, links),
        worst_rows=run_rows(worst_rows, links),
        worst=[run_view(d, links) for d in worst],
        **_frame(links, "Report", generated=f"report of {source}, made {fmt_time(ov.now)} UTC"),
    )
