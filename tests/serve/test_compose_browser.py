"""The playground shows a composed pack: headless Chromium on the page served for the team pack of issue 24 (it
extends cleo-en, disables one rule, changes a setting and adds a correction). The page says what the pack is built
on, which pack each rule comes from, the rule it leaves out, and each turn's decision is the library's."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from cleo_rules.pack.compile import compile_pack

from helpers import browser
from helpers.compose import HISTORY, TWELVE, write_team
from helpers.netguard import loopback_only
from helpers.service import Service

pytestmark = pytest.mark.browser

CONVERSATION = [HISTORY[0], "That one is out of stock.", "Scratch that, the other one.", TWELVE]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("composed")
    rules = write_team(root)
    with loopback_only() as attempts:
        svc = Service("--pack", rules, "--watch-interval", "0.2", command="playground", log_path=root / "pg.log")
        driver = None
        try:
            svc.wait_ready(90)
            driver = browser.start(root / "profile")
            yield {"driver": driver, "url": svc.url, "pack": compile_pack(rules)}
        finally:
            if driver is not None:
                driver.quit()
            svc.stop()
    assert attempts == [], f"something reached for the network: {attempts}"


def wait(driver, predicate, timeout: float = 30.0):
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(predicate)


def text(element) -> str:
    return element.get_attribute("textContent")


def test_the_page_shows_what_the_pack_is_built_on_and_where_each_rule_comes_from(page):
    driver, pack = page["driver"], page["pack"]
    driver.get(page["url"] + "/?poll=0.2")
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "true")
    editor = driver.find_element(By.ID, "conversation")
    editor.clear()
    editor.send_keys("\n".join(f"User: {m}" for m in CONVERSATION))
    before = int(driver.execute_script("return Number(document.body.dataset.runs || 0)"))
    driver.find_element(By.ID, "run").click()
    wait(driver, lambda d: int(d.execute_script("return Number(document.body.dataset.runs || 0)")) > before)

    (base,) = pack.composition.bases
    assert f"pack: team 0.1.0 ({pack.content_hash}) on cleo-en {base.version}" in text(driver.find_element(By.ID,
                                                                                                          "pack"))
    section = driver.find_element(By.ID, "composition")
    assert section.is_displayed()
    packs = section.find_elements(By.CSS_SELECTOR, "li.composition-pack")
    assert [p.get_attribute("data-pack") for p in packs] == ["cleo-en", "team"]
    own = sum(pack.owns(r) for r in pack.rules + pack.referent_rules)
    assert text(packs[0]).endswith(f"{len(pack.rules) + len(pack.referent_rules) - own} rules")
    assert f"{own} rules of its own" in text(packs[1])
    (left_out,) = packs[1].find_elements(By.CSS_SELECTOR, ".left-out")
    assert text(left_out) == "correction.change-of-mind of cleo-en: disabled by team"

    turns = driver.find_elements(By.CSS_SELECTOR, "#turns li.turn-user")
    expected = [pack.classify(m, CONVERSATION[:i]) for i, m in enumerate(CONVERSATION)]
    assert [(li.get_attribute("data-kind"), li.get_attribute("data-rule") or None) for li in turns] == [
        (d.kind, d.rule) for d in expected]
    assert expected[1].rule == "correction.out-of-stock" and expected[2].kind != "correction"
    assert expected[3].kind == "substantive"  # twelve words: over the team's max_follow_up_words
    for li, d in zip(turns, expected):
        if d.rule:
            li.find_element(By.TAG_NAME, "summary").click()
            origin = li.find_element(By.CSS_SELECTOR, ".rule-row .rule-pack")
            assert text(origin) == f", from {pack.origin(pack.rule(d.rule))}"
    assert browser.console(driver) == []
