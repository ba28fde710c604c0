"""The pages read well with little data and on a laptop's window, in a real headless Chromium: an "over time"
chart of one or two buckets marks its points on an axis with their time and runs (no bar as wide as the
chart), every metric's point stays visible where rates are equal, each chart's legend names every metric it
draws, and at 800 and 1400 px wide neither the runs table nor any page scrolls sideways."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_ui_browser import console_problems, load, run_url
from tests.support.collector_harness import running_collector
from tests.support.ui_data import copy_database

pytestmark = pytest.mark.timeout(300)

#: in the page: each chart's points, their boxes, and whether each is the element found at its own centre
POINTS_JS = """
return Array.from(document.querySelectorAll('figure.card')).map(card => {
  const dots = Array.from(card.querySelectorAll('svg.chart .dot'));
  return {
    agent: card.querySelector('figcaption').firstChild.textContent.trim(),
    bars: card.querySelectorAll('svg.chart rect.runs-bar').length,
    axes: card.querySelectorAll('svg.chart line.axis-line').length,
    ticks: card.querySelectorAll('svg.chart line.tick').length,
    axisText: Array.from(card.querySelectorAll('svg.chart text.axis')).map(t => t.textContent),
    legend: Array.from(card.querySelectorAll('ul.legend li')).map(li => li.dataset.metric),
    dots: dots.map(d => {
      d.scrollIntoView({block: 'center'});
      const r = d.getBoundingClientRect();
      const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
      return {metric: d.dataset.metric, tag: d.tagName, x: r.x + window.scrollX, y: r.y + window.scrollY,
              w: r.width, h: r.height, visible: top === d || d.contains(top),
              top: top ? top.tagName + '.' + top.getAttribute('class') : null};
    }),
  };
});
"""


@pytest.fixture(scope="module")
def few_points(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The demo's runs, all in one time bucket, but for one of trip_planner's runs, made half a day older:
    charts of two buckets, one of them with points in both."""
    import duckdb

    db = copy_database(demo_db, tmp_path_factory.mktemp("few"))
    with duckdb.connect(str(db)) as con:
        con.execute(
            "UPDATE agent_runs SET start_time = start_time - INTERVAL 12 HOUR WHERE span_id = (SELECT "
            "min(span_id) FROM agent_runs WHERE agent_name = 'trip_planner')"
        )
    with running_collector(db, http="127.0.0.1:0") as collector:
        yield collector


@pytest.fixture
def window(browser: Any) -> Iterator[Any]:
    """Resize the shared browser's window (``window(800)``); it is put back to 1400 x 1000 after the test."""

    def resize(width: int) -> None:
        browser.set_window_size(width, 1000)

    yield resize
    browser.set_window_size(1400, 1000)


def overflow(browser: Any) -> tuple[int, int]:
    """The page's width and the window's: a page that scrolls sideways is wider."""
    return tuple(
        browser.execute_script(  # type: ignore[return-value]
            "return [document.scrollingElement.scrollWidth, window.innerWidth]"
        )
    )


def test_a_chart_of_one_or_two_points_marks_them_on_an_axis(
    browser: Any, window: Any, few_points: Any
) -> None:
    window(1400)
    load(browser, f"{few_points.http_endpoint}/?since=7d")
    charts = {chart["agent"]: chart for chart in browser.execute_script(POINTS_JS)}
    assert set(charts) == {"trip_planner", "weather_assistant", "currency_assistant"}
    for agent, chart in charts.items():  # the charts share their buckets: two each
        assert chart["bars"] == 0, agent  # no grey bar across the chart
        assert chart["axes"] == 2 and chart["ticks"] == 2, agent
        assert {"0%", "50%", "100%"} <= set(chart["axisText"]), agent
        assert sum(text.endswith(("run", "runs")) for text in chart["axisText"]) == 2, agent
    assert (
        "1 run" in charts["trip_planner"]["axisText"] and "0 runs" in charts["weather_assistant"]["axisText"]
    )
    xs = sorted({round(d["x"]) for d in charts["trip_planner"]["dots"]})
    assert xs[-1] - xs[0] > 100  # its two buckets' points, apart on the time axis
    assert console_problems(browser) == []


def test_equal_rates_do_not_hide_each_others_points(browser: Any, window: Any, few_points: Any) -> None:
    for width in (1400, 800):
        window(width)
        load(browser, f"{few_points.http_endpoint}/?since=7d")
        for chart in browser.execute_script(POINTS_JS):
            dots = chart["dots"]
            metrics = {d["metric"] for d in dots}
            assert metrics >= {"tool_correctness", "tool_correctness_exact", "tool_errors_detectors"}, chart
            assert set(chart["legend"]) == metrics  # the legend names every metric drawn
            # the demo's trip_planner passes three metrics in every run: equal rates, three
            # points all the same
            for d in dots:
                assert d["visible"], (width, chart["agent"], d)  # nothing drawn over it
            boxes = [(round(d["x"]), round(d["y"])) for d in dots]
            assert len(set(boxes)) == len(boxes), (width, chart["agent"])
            for a in dots:
                for b in dots:
                    if a is not b and abs(a["y"] - b["y"]) < 1:  # equal rates: side by side, apart
                        assert abs(a["x"] - b["x"]) >= 4, (width, chart["agent"], a, b)
            assert len({d["tag"] for d in dots}) >= 3  # a marker's shape tells its metric too


@pytest.mark.parametrize("width", [800, 1400])
def test_the_runs_table_fits_the_window(browser: Any, window: Any, ui_collector: Any, width: int) -> None:
    window(width)
    for query in ("since=all", "since=all&result=fail", "since=all&agent=trip_planner"):
        load(browser, f"{ui_collector.http_endpoint}/runs?{query}")
        page_width, inner = overflow(browser)
        assert page_width <= inner, (width, query, page_width, inner)
        right = browser.execute_script(
            "return document.querySelector('table.runs').getBoundingClientRect().right"
        )
        assert right <= inner, (width, query)
        headers = browser.execute_script(
            "return Array.from(document.querySelectorAll('table.runs th')).filter(th => th.offsetParent !== "
            "null).map(th => [th.textContent, th.getBoundingClientRect().right])"
        )
        shown = [text for text, _ in headers]
        assert {"tools called", "scores"} <= set(shown) and all(r <= inner for _, r in headers), headers
        if width == 800:  # the service goes, the expected tools move under the called ones
            assert "service" not in shown and "expected tools" not in shown
            assert browser.execute_script(
                "return Array.from(document.querySelectorAll('.expected-inline')).some(e => e.offsetParent)"
            )
        else:
            assert {"service", "expected tools"} <= set(shown)
    assert console_problems(browser) == []


@pytest.mark.parametrize("width", [800, 1400])
def test_no_page_scrolls_sideways(browser: Any, window: Any, ui_collector: Any, width: int) -> None:
    window(width)
    for url in (
        f"{ui_collector.http_endpoint}/?since=all",
        f"{ui_collector.http_endpoint}/?since=7d",
        run_url(ui_collector, "Find me a flight and a hotel in Oslo, and book it."),
    ):
        load(browser, url)
        page_width, inner = overflow(browser)
        assert page_width <= inner, (width, url, page_width, inner)
