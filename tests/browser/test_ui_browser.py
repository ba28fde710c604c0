"""The web UI in a real headless Chromium against a real collector holding the demo's runs and every fixture
trace: pages load with no console error, charts render, a filter narrows the runs, a run's timeline marks its
missing call, new runs appear without a reload, and the report file renders offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.collector_harness import post_otlp, wait_until
from tests.support.fixture_traces import fixtures
from tests.support.ui_data import cli, with_new_trace_ids

pytestmark = pytest.mark.timeout(300)


def console_problems(browser: Any) -> list[dict[str, Any]]:
    """Console messages of level SEVERE (errors, failed loads, CSP violations) since the last call."""
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def load(browser: Any, url: str) -> None:
    browser.get(url)
    wait_until(lambda: browser.execute_script("return document.readyState") == "complete", what=url)


def run_url(collector: Any, text: str) -> str:
    [(trace_id, span_id)] = collector.query(
        "SELECT trace_id, span_id FROM agent_runs WHERE input = ?", params=[text]
    )["rows"]
    return f"{collector.http_endpoint}/runs/{trace_id}/{span_id}"


def test_every_page_loads_without_a_console_error(browser: Any, ui_collector: Any) -> None:
    base = ui_collector.http_endpoint
    console_problems(browser)
    urls = [
        f"{base}/",
        f"{base}/?since=all",
        f"{base}/runs?since=all",
        f"{base}/runs?since=all&result=fail",
        run_url(ui_collector, "Find me a flight and a hotel in Oslo, and book it."),
        run_url(ui_collector, "What's the weather in Atlantis?"),
    ]
    for url in urls:
        load(browser, url)
        assert browser.find_element("css selector", "main").text.strip(), url
        assert console_problems(browser) == [], url
        # the stylesheet applied (the header is sticky only through it)
        assert (
            browser.execute_script("return getComputedStyle(document.querySelector('header')).position")
            == "sticky"
        )


def test_the_overview_charts_render(browser: Any, ui_collector: Any) -> None:
    load(browser, f"{ui_collector.http_endpoint}/?since=all")
    charts = browser.find_elements("css selector", "svg.chart")
    assert len(charts) >= 7  # one per busiest agent, and the departures
    for chart in charts:
        size = chart.size
        assert size["width"] > 100 and size["height"] > 20
    drawn = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.chart')).map("
        "s => s.querySelectorAll('rect.runs-bar, .dot, rect[class^=kind-]').length)"
    )
    assert all(n > 0 for n in drawn), drawn
    missing = browser.find_elements("css selector", "svg.chart rect.kind-missing")
    assert missing and missing[0].size["width"] > 0
    # the bars are coloured by the stylesheet, not left black
    colour = browser.execute_script("return getComputedStyle(arguments[0]).fill", missing[0])
    assert colour not in ("", "rgb(0, 0, 0)")


def test_a_filter_narrows_the_runs_table(browser: Any, ui_collector: Any) -> None:
    from selenium.webdriver.support.ui import Select

    load(browser, f"{ui_collector.http_endpoint}/runs?since=all")
    total = int(browser.find_element("id", "runs-count").get_attribute("data-total"))
    Select(browser.find_element("name", "agent")).select_by_value("trip_planner")  # submits on change
    wait_until(lambda: "agent=trip_planner" in browser.current_url, what="the filtered page")
    load(browser, browser.current_url)
    narrowed = int(browser.find_element("id", "runs-count").get_attribute("data-total"))
    assert 3 <= narrowed < total
    agents = [
        row.find_element("css selector", "td").text.split()[0]
        for row in browser.find_elements("css selector", "table.runs tbody tr")
    ]
    assert agents and set(agents) == {"trip_planner"}
    box = browser.find_element("name", "q")
    box.send_keys("Oslo\n")
    wait_until(lambda: "q=Oslo" in browser.current_url, what="the text filter")
    load(browser, browser.current_url)
    rows = browser.find_elements("css selector", "table.runs tbody tr")
    assert len(rows) == 1 and "Oslo" in rows[0].text
    assert console_problems(browser) == []


def test_a_run_page_marks_the_missing_call(browser: Any, ui_collector: Any) -> None:
    load(browser, run_url(ui_collector, "Find me a flight and a hotel in Oslo, and book it."))
    missing = browser.find_element("css selector", "svg.alignment g.cell.missing[data-row=expected]")
    assert missing.is_displayed()
    assert missing.get_attribute("data-tool") == "book_hotel"
    assert "missing" in missing.text and "book_hotel" in missing.text
    matched = browser.find_elements("css selector", "svg.alignment line.link.matched")
    assert len(matched) == 2
    # the missing cell sits on the top row, after the matched pairs
    first = browser.find_element("css selector", "svg.alignment g.cell.matched[data-row=expected]")
    assert missing.location["x"] > first.location["x"]
    dash = browser.execute_script(
        "return getComputedStyle(arguments[0].querySelector('rect')).strokeDasharray", missing
    )
    assert dash not in ("", "none")
    button = browser.find_element("css selector", "button.copy")
    button.click()
    wait_until(lambda: button.text == "copied", what="the copy button's answer")


def test_new_runs_appear_without_a_reload(browser: Any, ui_collector: Any) -> None:
    load(browser, f"{ui_collector.http_endpoint}/runs?since=all")
    before = int(browser.find_element("id", "runs-count").get_attribute("data-total"))
    browser.execute_script("window.stillTheSamePage = true; document.activeElement.blur();")
    fx = next(f for f in fixtures() if f.name == "pydantic-ai__native-v5__sequence")
    assert (
        post_otlp(ui_collector.http_endpoint, "traces", with_new_trace_ids(fx.body("protobuf"))).status == 200
    )

    def grown() -> bool:  # read in the page: the poller replaces the element while we look
        total = browser.execute_script(
            "const e = document.getElementById('runs-count'); return e ? Number(e.dataset.total) : -1"
        )
        return total > before

    wait_until(grown, timeout=30, interval=0.25, what="the runs table to show the new run")
    assert browser.execute_script("return window.stillTheSamePage === true")
    assert int(browser.execute_script("return document.body.dataset.refreshed")) >= 1
    assert console_problems(browser) == []


def test_the_report_renders_offline(browser: Any, demo_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = cli("report", "--db", str(demo_db), "--since", "all", "--out", str(out))
    assert done.returncode == 0, done.stderr
    console_problems(browser)
    load(browser, out.as_uri())
    assert console_problems(browser) == []
    assert browser.find_elements("css selector", "svg.chart")
    failing = cli(
        "query",
        "SELECT count(DISTINCT (trace_id, run_span_id)) AS n FROM latest_evaluations "
        "WHERE status = 'ok' AND NOT success",
        "--db",
        str(demo_db),
        "--format",
        "csv",
    )
    timelines = browser.find_elements("css selector", "article.run svg.alignment")
    assert len(timelines) == int(failing.stdout.split()[-1]) >= 4
    assert browser.find_elements("css selector", "g.cell.missing")
    # in-file links: a worst run's row leads to its section
    link = browser.find_element("css selector", "#worst table.runs tbody tr a")
    target = link.get_attribute("href").split("#", 1)[1]
    link.click()
    wait_until(
        lambda: browser.execute_script("return location.hash") == "#" + target,
        timeout=5,
        what="the link to be followed",
    )
    assert browser.find_element("id", target).is_displayed()
