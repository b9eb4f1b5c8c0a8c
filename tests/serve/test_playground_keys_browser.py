"""The keyed playground in a real browser (issue 30, item 5): the page asks for the key once, asks again after a
wrong one, and keeps it for the tab. Headless Chromium through Selenium (tests/helpers/browser.py); the playground
runs for real on loopback (``cleo-rules playground --keys FILE``) and is stopped by pid.
"""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from cleo_rules.serve.keys import KeyRing

from helpers import browser
from helpers.netguard import loopback_only
from helpers.service import Service

pytestmark = pytest.mark.browser

FIRST = "This playground was started with --keys: enter your key to use it."
AGAIN = "The key was not accepted (the key is not valid for this service). Enter the key again."


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    from cleo_rules.starter import init_pack

    root = tmp_path_factory.mktemp("keyed-page")
    init_pack(root / "team", standalone=True)
    keys = root / "keys.txt"
    key = KeyRing.append(keys, "*")
    with loopback_only() as attempts:
        svc = Service("--pack", "rules", "--keys", keys, "--watch-interval", "0.2", command="playground",
                      log_path=root / "playground.log", cwd=root / "team")
        driver = None
        try:
            svc.wait_ready(90)
            driver = browser.start(root / "profile")
            yield {"svc": svc, "key": key, "driver": driver}
        finally:
            if driver is not None:
                driver.quit()
            svc.stop()
    assert attempts == [], f"something reached for the network: {attempts}"


def wait(driver, predicate, timeout: float = 30.0):
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(predicate)


def asked(driver) -> str | None:
    """The message of the key form when it shows, else None."""
    box = driver.find_element(By.ID, "key-ask")
    return box.find_element(By.ID, "key-ask-message").text if box.is_displayed() else None


def answer(driver, key: str) -> None:
    field = driver.find_element(By.ID, "key-ask-input")
    assert driver.switch_to.active_element == field  # the form takes the focus when it asks
    field.send_keys(key)
    driver.find_element(By.ID, "key-ask-use").click()


def unexpected_errors(driver) -> list[dict]:
    """Console errors but the browser's own line for each refused request (401), which the page answers."""
    return [e for e in browser.console(driver) if "status of 401" not in e["message"]]


def test_issue30_item5_the_page_asks_for_the_key_once_and_again_after_a_wrong_one(keyed):
    driver, svc, key = keyed["driver"], keyed["svc"], keyed["key"]
    driver.get(svc.url + "/?poll=0.2")
    wait(driver, lambda d: asked(d) == FIRST)
    assert driver.execute_script("return document.body.dataset.ready") is None  # nothing ran without a key
    answer(driver, "cleo_not-the-key")
    wait(driver, lambda d: asked(d) == AGAIN)
    assert driver.find_element(By.ID, "key-ask-message").get_attribute("role") == "alert"
    answer(driver, key)
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "true")
    assert asked(driver) is None
    assert driver.find_elements(By.CSS_SELECTOR, "#turns li.turn-user")  # the conversation was classified
    assert driver.find_element(By.ID, "pack").text.startswith("pack: team ")
    assert driver.execute_script("return sessionStorage.getItem('cleo-key')") == key
    # kept for the tab: the page loaded again does not ask
    driver.refresh()
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "true")
    assert asked(driver) is None
    assert unexpected_errors(driver) == []
    driver.get("about:blank")
