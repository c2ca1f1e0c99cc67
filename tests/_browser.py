"""Headless Chromium for the page tests (Selenium + Debian's chromium-driver).

``browser()`` yields a Selenium driver, or skips the test with the reason
(no chromium, no chromedriver, no selenium).  The driver records the
browser console, read with :func:`console_errors`.
"""

from __future__ import annotations

import contextlib
import os
import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def skip_reason():
    if CHROMIUM is None:
        return "needs chromium (apt-get install chromium chromium-driver)"
    if CHROMEDRIVER is None:
        return "needs chromedriver (apt-get install chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs selenium (pip install -e .[test])"
    return None


@contextlib.contextmanager
def browser(width=1300, height=1800):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver):
    """Console messages at level SEVERE (uncaught errors, failed loads)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def wait_for(driver, script, timeout=20):
    """Wait until the JavaScript expression ``script`` is truthy; return its value.

    A script error counts as "not yet" until the timeout (then the wait fails as usual):
    right after ``driver.refresh()`` the page may still be loading and ``getElementById``
    return null.
    """
    from selenium.common.exceptions import JavascriptException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, ignored_exceptions=(JavascriptException,)).until(
        lambda d: d.execute_script(f"return {script}"))


def save_screenshot(driver, name):
    """With DOLDA_SCREENSHOTS=DIR set, save a PNG of the page there (for docs/)."""
    target = os.environ.get("DOLDA_SCREENSHOTS")
    if target:
        os.makedirs(target, exist_ok=True)
        driver.save_screenshot(os.path.join(target, name))
