"""A real browser for the tests: Debian's Chromium, headless, driven by Selenium through /usr/bin/chromedriver.

The driver and the browser are named explicitly, so Selenium Manager is never asked for either
(it would reach for the network); ``start`` makes sure of it. Each browser gets a fresh profile.
"""

from __future__ import annotations

import base64
import os
import struct
from pathlib import Path

import pytest

from helpers import ROOT

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--force-device-scale-factor=1", "--window-size=1280,800")
SIZES = {"wide": (1280, 800), "narrow": (390, 844)}
OUT = ROOT / "out"


def start(profile: Path):
    """A headless Chromium with a fresh profile in ``profile``; its console is kept for :func:`console`."""
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.fail("the browser tests need Debian's Chromium and its driver: apt-get install -y chromium "
                    "chromium-driver (.ci/run installs them)")
    os.environ["SE_AVOID_STATS"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common import selenium_manager

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})

    def refuse(*args, **kwargs):
        raise AssertionError("Selenium Manager was asked for a driver or a browser")

    asked = selenium_manager.SeleniumManager.binary_paths
    selenium_manager.SeleniumManager.binary_paths = refuse
    try:
        driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    finally:
        selenium_manager.SeleniumManager.binary_paths = asked
    resize(driver, "wide")
    return driver


def resize(driver, size: str) -> None:
    """Make the viewport exactly ``SIZES[size]`` CSS pixels (a phone's for ``narrow``)."""
    width, height = SIZES[size]
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": size == "narrow"})


def console(driver, level: str = "SEVERE") -> list[dict]:
    """The console entries at ``level`` since the last call (reading clears the browser's log)."""
    return [entry for entry in driver.get_log("browser") if entry["level"] == level]


def screenshot(driver, name: str) -> Path:
    """Save the viewport as ``out/<name>.png``; returns the path."""
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{name}.png"
    data = base64.b64decode(driver.get_screenshot_as_base64())
    path.write_bytes(data)
    return path


def png_size(path: Path) -> tuple[int, int]:
    """``(width, height)`` of a PNG, from its IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def guard():
    """Nothing but loopback is reached while a module's browser tests run (checked when they end)."""
    from helpers.netguard import loopback_only

    with loopback_only() as attempts:
        yield attempts
    assert attempts == [], f"something reached for the network: {attempts}"


@pytest.fixture(scope="module")
def chrome(tmp_path_factory, guard):
    """One Chromium for a module's browser tests, under :func:`guard`."""
    driver = start(tmp_path_factory.mktemp("profile"))
    try:
        yield driver
    finally:
        driver.quit()


def type_in_rules(driver, after: str, keys: str, *, replace: int = 0) -> None:
    """Put the caret after the first ``after`` in the rule file (selecting the ``replace`` characters that follow),
    then type ``keys`` as a person would."""
    found = driver.execute_script("""
        const area = document.getElementById('rule-text');
        const at = area.value.indexOf(arguments[0]);
        if (at < 0) return -1;
        area.focus();
        area.setSelectionRange(at + arguments[0].length, at + arguments[0].length + arguments[1]);
        return at;""", after, replace)
    assert found >= 0, f"{after!r} is not in the file shown"
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(keys).perform()
