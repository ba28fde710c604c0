"""The web UI of a collector that requires a token, in a real headless Chromium: the sign-in form is shown and
styled, a wrong token is told, the right one leads to the page asked for, whose polling then works with the
cookie (HttpOnly, SameSite=Strict, not the token)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.collector_harness import post_otlp, running_collector, wait_until
from tests.support.fixture_traces import fixtures
from tests.support.ui_data import with_new_trace_ids

pytestmark = pytest.mark.timeout(300)

TOKEN = "browser-sign-in-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with running_collector(
        tmp_path_factory.mktemp("signin") / "signin.duckdb", auth={"token": TOKEN}
    ) as collector:
        fx = next(f for f in fixtures() if f.name == "pydantic-ai__native-v5__sequence")
        assert post_otlp(collector.http_endpoint, "traces", fx.body("protobuf"), headers=BEARER).status == 200
        wait_until(
            lambda: collector.query("SELECT count(*) FROM agent_runs")["rows"][0][0] == 1, what="the run"
        )
        yield collector


def load(browser: Any, url: str) -> None:
    browser.get(url)
    wait_until(lambda: browser.execute_script("return document.readyState") == "complete", what=url)


def problems(browser: Any) -> list[str]:
    """SEVERE console messages other than the 401 of the page that asks to sign in (that
    status is its point)."""
    return [
        entry["message"]
        for entry in browser.get_log("browser")
        if entry["level"] == "SEVERE" and "status of 401" not in entry["message"]
    ]


def test_signing_in_through_the_form_shows_the_overview(browser: Any, guarded: Any, tmp_path: Path) -> None:
    base = guarded.http_endpoint
    browser.delete_all_cookies()
    problems(browser)
    load(browser, f"{base}/?since=all")
    assert browser.title.startswith("Sign in")
    # the inline stylesheet applied (allowed by its hash): the header is sticky only through it
    assert (
        browser.execute_script("return getComputedStyle(document.querySelector('header')).position")
        == "sticky"
    )
    assert problems(browser) == []  # no CSP violation, no asset fetched

    browser.find_element("id", "token").send_keys("wrong-token\n")
    wait_until(lambda: browser.find_elements("css selector", "p.error-text"), what="the error")
    assert "not this collector's token" in browser.find_element("css selector", "p.error-text").text
    assert browser.get_cookies() == []

    browser.find_element("id", "token").send_keys(TOKEN + "\n")
    wait_until(lambda: browser.find_elements("css selector", "svg.chart"), what="the overview")
    assert browser.current_url == f"{base}/?since=all"  # the page first asked for
    assert "Sign in" not in browser.title
    (cookie,) = browser.get_cookies()
    assert cookie["name"] == "agentotel_session" and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert TOKEN not in cookie["value"]
    assert (
        browser.execute_script("return document.cookie") == ""
    )  # HttpOnly: out of the page's scripts' reach
    assert problems(browser) == []

    # the poller's fetches carry the cookie: a new run appears without a reload
    load(browser, f"{base}/runs?since=all")
    before = int(browser.find_element("id", "runs-count").get_attribute("data-total"))
    browser.execute_script("window.stillTheSamePage = true; document.activeElement.blur();")
    fx = next(f for f in fixtures() if f.name == "pydantic-ai__native-v5__sequence")
    assert (
        post_otlp(
            guarded.http_endpoint, "traces", with_new_trace_ids(fx.body("protobuf")), headers=BEARER
        ).status
        == 200
    )

    def grown() -> bool:
        total = browser.execute_script(
            "const e = document.getElementById('runs-count'); return e ? Number(e.dataset.total) : -1"
        )
        return total > before

    wait_until(grown, timeout=30, interval=0.25, what="the runs table to show the new run")
    assert browser.execute_script("return window.stillTheSamePage === true")
    assert problems(browser) == []

    # signing out: the next page asks to sign in again
    load(browser, f"{base}/logout")
    assert browser.title.startswith("Sign in")
    browser.delete_all_cookies()
