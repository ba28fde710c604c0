"""A real headless Chromium (Debian's chromium and chromium-driver) driven through Selenium. Where neither can
be had, every browser test is skipped with the reason; the pages' HTML is still tested
in tests/integration."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = (
    os.environ.get("AGENTOTEL_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
)
DRIVER = os.environ.get("AGENTOTEL_CHROMEDRIVER") or shutil.which("chromedriver")


def _missing() -> str | None:
    if not CHROMIUM or not DRIVER:
        return (
            "no headless browser: install Debian's chromium and chromium-driver packages "
            "(apt-get install chromium chromium-driver; .ci/run does this when it runs as root)"
        )
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="agentotel-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM  # type: ignore[assignment]
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        # no connection may leave the machine: Chromium's own background traffic is switched off
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(autouse=True)
def _blank_page_after(request: pytest.FixtureRequest) -> Iterator[None]:
    """The browser is shared by the session's tests: each test's last page is closed after it (it would go on
    polling its collector, stopped by then) and the console messages it left are not the next test's."""
    yield
    driver = request.node.funcargs.get("browser")
    if driver is not None:
        driver.get("about:blank")
        driver.get_log("browser")
