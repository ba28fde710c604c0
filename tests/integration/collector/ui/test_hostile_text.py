"""Text an agent sent is shown as text: markup in an agent's name, a tool's name, a tool argument, a tool
result and an input (a script, quotes, a closing </pre>) is escaped on every page a real collector serves and
in the report file, and shows there exactly as it was sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentotel_eval.metrics.registry import METRICS
from agentotel_eval.pages.markup import asset
from agentotel_eval.tracing import traced
from tests.support.collector_harness import http_request, running_collector, wait_until
from tests.support.ui_data import cli

HOSTILE = """</pre></td><script>alert("x")</script><img src=x onerror='alert(1)'> & "double" 'single' &amp;"""
AGENT = "agent " + HOSTILE
TOOL = "lookup " + HOSTILE
INPUT = "Find " + HOSTILE
#: what must never reach a page as markup
RAW = ("<script>alert", "<img", "</pre></td><script")


class Parsed(HTMLParser):
    """Every start tag with its attributes, and the text of every element (entities decoded)."""

    VOID = frozenset({"meta", "link", "input", "br", "img", "rect", "line", "circle", "polyline"})

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.elements: list[tuple[str, list[str]]] = []  # (tag, its text pieces), in document order
        self._open: list[tuple[str, list[str]]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        if tag not in self.VOID:
            element: tuple[str, list[str]] = (tag, [])
            self.elements.append(element)
            self._open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if any(open_tag == tag for open_tag, _ in self._open):
            while self._open.pop()[0] != tag:
                pass

    def handle_data(self, data: str) -> None:
        for _, pieces in self._open:
            pieces.append(data)

    def text_in(self, tag: str) -> list[str]:
        """The text of each ``tag`` element, nested elements' text included."""
        return ["".join(pieces) for element_tag, pieces in self.elements if element_tag == tag]

    def attribute(self, name: str) -> list[str]:
        return [attrs[name] for _, attrs in self.tags if name in attrs]

    def all_text(self) -> str:
        return "".join(self.text_in("html"))


def check_no_markup_let_through(html: str, page: Parsed, *, report: bool = False) -> None:
    for raw in RAW:
        assert raw not in html, raw
    assert not [t for t, _ in page.tags if t == "img"]
    assert not page.attribute("onerror")
    scripts = [attrs for tag, attrs in page.tags if tag == "script"]
    if report:  # the report holds our script, and nothing else is one
        assert scripts == [{}] and page.text_in("script") == [asset("app.js")]
    else:
        assert scripts == [{"src": "/static/app.js", "defer": ""}] and page.text_in("script") == [""]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A collector holding one run whose agent, tool, argument, result and input are all hostile text."""
    with running_collector(
        tmp_path_factory.mktemp("hostile") / "hostile.duckdb", http="127.0.0.1:0"
    ) as collector:
        provider = TracerProvider(resource=Resource.create({"service.name": "hostile-bot"}))
        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=collector.grpc_endpoint, insecure=True))
        )

        @traced(kind="tool", name=TOOL, tracer_provider=provider)
        def lookup(city: str) -> dict[str, str]:
            return {"note": HOSTILE, "city": city}

        @traced(kind="agent", name=AGENT, expected_tools=["book_hotel"], tracer_provider=provider)
        def agent(question: str) -> str:
            lookup(HOSTILE)
            return "done"

        agent(INPUT)
        assert provider.force_flush(10_000)
        provider.shutdown()
        wait_until(
            lambda: (
                collector.query("SELECT count(*) FROM evaluations WHERE metric = 'tool_errors_detectors'")[
                    "rows"
                ][0][0]
                == 1
            ),
            timeout=30,
            what="the run, scored",
        )
        yield collector


def get(collector: Any, path: str, status: int = 200) -> tuple[str, Parsed]:
    answer = http_request(collector.http_endpoint, "GET", path)
    assert answer.status == status, answer.body[:300]
    html = answer.body.decode()
    return html, Parsed(html)


def test_the_overview_shows_hostile_names_as_text(hostile: Any) -> None:
    html, page = get(hostile, "/?since=all")
    check_no_markup_let_through(html, page)
    assert AGENT in page.text_in("td")  # the agents table
    assert AGENT in page.attribute("value") and AGENT in page.text_in("option")  # the agent filter
    assert f"{AGENT}: runs and pass rate" in page.attribute("aria-label")  # its chart
    assert any(text.startswith(AGENT + " ") for text in page.text_in("figcaption"))
    assert f"{TOOL}: 1 extra" in page.text_in("title")  # the departures chart

    html, page = get(hostile, "/?" + urlencode({"since": "all", "agent": AGENT}))
    check_no_markup_let_through(html, page)
    assert [a["value"] for t, a in page.tags if t == "option" and "selected" in a] == [AGENT]
    assert "/?" + urlencode({"agent": AGENT, "since": "1h"}) in page.attribute("href")


def test_the_runs_table_shows_hostile_text_as_text(hostile: Any) -> None:
    html, page = get(hostile, "/runs?" + urlencode({"since": "all", "agent": AGENT, "q": HOSTILE}))
    check_no_markup_let_through(html, page)
    assert len([a for t, a in page.tags if t == "tr" and "data-trace" in a]) == 1  # the one run, and no other
    assert AGENT in page.text_in("a")  # the run's link
    assert INPUT in page.attribute("title") and INPUT in page.text_in("td")  # the input, whole and shown
    # tools called, expected (under the called ones for a narrow window, and in its own column); the legend's
    # metric names aside
    assert [c for c in page.text_in("code") if c not in METRICS] == [TOOL, "book_hotel", "book_hotel"]
    assert HOSTILE in page.attribute("value")  # the text searched for, in its box
    assert [a["value"] for t, a in page.tags if t == "option" and "selected" in a] == [AGENT, "all"]


def test_the_run_page_shows_hostile_text_as_text(hostile: Any) -> None:
    [(trace_id, span_id)] = hostile.query("SELECT trace_id, span_id FROM agent_runs")["rows"]
    html, page = get(hostile, f"/runs/{trace_id}/{span_id}")
    check_no_markup_let_through(html, page)
    assert page.text_in("title")[0] == f"{AGENT} run {span_id} · agentotel-eval"
    assert page.text_in("h1")[0].startswith(AGENT + " ")
    check_run(page)


def check_run(page: Parsed) -> None:
    """A run's body: the input, the call's arguments and result, its tool on the timeline
    and in the span tree."""
    values = page.text_in("pre")
    assert values[0] == INPUT
    assert json.loads(values[2]) == {"city": HOSTILE}  # the arguments, whole: the text did not end the <pre>
    assert json.loads(values[3]) == {"note": HOSTILE, "city": HOSTILE}
    assert [a["data-tool"] for t, a in page.tags if t == "g" and a.get("data-row") == "called"] == [TOOL]
    assert TOOL in page.text_in("code")  # the call's heading
    assert f"execute_tool {TOOL}" in page.text_in("td") and any(
        text.startswith(f"invoke_agent {AGENT}") for text in page.text_in("td")
    )  # the span tree


def test_the_report_shows_hostile_text_as_text(hostile: Any, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = cli("report", "--db", str(hostile.db_path), "--since", "all", "--out", str(out))
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    page = Parsed(html)
    check_no_markup_let_through(html, page, report=True)
    assert AGENT in page.text_in("td") and f"{AGENT}: runs and pass rate" in page.attribute("aria-label")
    assert INPUT in page.attribute("title")  # the worst runs table
    check_run(page)


def test_an_error_page_shows_what_was_asked_as_text(hostile: Any) -> None:
    html, page = get(hostile, "/?since=" + quote(HOSTILE), status=400)
    check_no_markup_let_through(html, page)
    assert f"unknown time range {HOSTILE!r}" in page.all_text()
