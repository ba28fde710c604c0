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


def start_chromium(profile: str, *flags: str, logging_prefs: dict[str, str] | None = None) -> Any:
    """Headless Chromium through ChromeDriver, with its profile in ``profile`` and ``flags`` added to the ones
    every use needs: no sandbox or GPU, and none of Chromium's own background traffic (no connection may
    leave the machine)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM and DRIVER, "install chromium and chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *flags,
    ):
        options.add_argument(flag)
    if logging_prefs is not None:
        options.set_capability("goog:loggingPrefs", logging_prefs)
    return webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    profile = tempfile.mkdtemp(prefix="agentotel-chromium-")
    driver = start_chromium(
        profile,
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--window-size=1400,1000",
        logging_prefs={"browser": "ALL"},
    )
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
