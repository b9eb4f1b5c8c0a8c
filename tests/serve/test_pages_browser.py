"""The service's pages in a real browser (headless Chromium through Selenium, see tests/helpers/browser.py): the
playground's near misses of a turn, and the OpenAPI document's page. One service for the module, on a copy of
the bundled pack; outbound connections are refused throughout, and the console must stay free of errors."""

from __future__ import annotations

import shutil

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from cleo_rules import load_pack
from cleo_rules.resources import rules_dir

from helpers import browser
from helpers.browser import chrome, guard  # noqa: F401  (the module's browser fixtures)
from helpers.service import Service

pytestmark = pytest.mark.browser

CONVERSATION = "\n".join([
    "User: How should we price the new sourdough loaf at the Leeds shop?",
    "Assistant: Most bakeries there charge 4 to 5 pounds for a large sourdough.",
    "User: What about the smaller one?",
    "User: Thanks!",
])


@pytest.fixture(scope="module")
def site(tmp_path_factory, guard):
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(rules_dir(), root / "pack")
    with Service("--pack", root / "pack", command="playground", log_path=root / "service.log") as svc:
        yield {"svc": svc, "pack": load_pack(root / "pack")}


@pytest.fixture(autouse=True)
def no_console_errors(chrome):
    yield
    errors = browser.console(chrome)
    chrome.get("about:blank")  # leave the page: the service is not polled after the module
    assert errors == [], f"console errors: {errors}"


def wait(driver, predicate, timeout: float = 30.0):
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(predicate)


def text(element) -> str:
    return element.get_attribute("textContent")


def test_the_playground_shows_a_turn_s_near_misses_as_explain_names_them(chrome, site):
    chrome.get(site["svc"].url + "/?poll=5")
    wait(chrome, lambda d: d.execute_script("return document.body.dataset.ready") == "true")
    editor = chrome.find_element(By.ID, "conversation")
    editor.clear()
    editor.send_keys(CONVERSATION)
    before = int(chrome.execute_script("return Number(document.body.dataset.runs || 0)"))
    chrome.find_element(By.ID, "run").click()
    wait(chrome, lambda d: int(d.execute_script("return Number(document.body.dataset.runs || 0)")) > before)
    turns = chrome.find_elements(By.CSS_SELECTOR, "#turns li.turn-user")
    assert [li.get_attribute("data-kind") for li in turns] == ["substantive", "follow_up", "skip"]
    pack = site["pack"]
    history = ["How should we price the new sourdough loaf at the Leeds shop?",
               {"role": "assistant", "content": "Most bakeries there charge 4 to 5 pounds for a large sourdough."}]
    for li, (message, before_it) in zip(turns[:2], [(history[0], []), ("What about the smaller one?", history)]):
        box = li.find_element(By.CSS_SELECTOR, ".near-misses")
        assert box.get_attribute("data-state") == "waiting"  # asked for only when the turn is opened
        li.find_element(By.TAG_NAME, "summary").click()
        wait(chrome, lambda d: box.get_attribute("data-state") == "done")
        shown = [(item.get_attribute("data-rule") or None, item.get_attribute("data-reason"),
                  item.get_attribute("data-setting") or None, text(item.find_element(By.CSS_SELECTOR, ".nm-needs")),
                  text(item.find_element(By.CSS_SELECTOR, ".nm-lacks")))
                 for item in box.find_elements(By.CSS_SELECTOR, "li.near-miss")]
        expected = pack.explain(message, before_it).near_misses
        assert shown == [(n.rule, n.reason, n.setting, f"needs {n.needs}", f"lacks {n.lacks}") for n in expected], \
            message
        assert shown  # each of these turns has some
        # no jargon of the walk's: what the rule needs and what the message lacks, as explain prints them
        assert not any("lexicon's nouns" in needs or "the pattern does not match" in lacks
                       for *_, needs, lacks in shown)
    # the substantive turn: the guard that refused follow_up.definite is named, with the span it tested and what
    # that span lacks
    first = turns[0].find_element(By.CSS_SELECTOR, 'li.near-miss[data-rule="follow_up.definite"]')
    assert text(first.find_element(By.CSS_SELECTOR, ".nm-matched")) == "the Leeds"
    assert text(first.find_element(By.CSS_SELECTOR, ".nm-needs")) == \
        "needs the phrase it matches to end on a word of the lexicon's 'nouns' set (head_in: nouns)"
    assert "'Leeds' is not one" in text(first.find_element(By.CSS_SELECTOR, ".nm-lacks"))
    assert first.get_attribute("title").startswith("guard (head_in): ")  # the walk's own words, on hover
    assert text(turns[0].find_element(By.CSS_SELECTOR, ".near-misses h4")).startswith("Near misses:")
    # a skipped turn has none to show
    assert turns[2].find_elements(By.CSS_SELECTOR, ".near-misses") == []


def test_the_api_page_renders_every_path_of_the_document(chrome, site):
    """/docs is Swagger UI on the service's own document: every operation in the document's order with its summary,
    an operation opened shows its parameters and responses, and every schema is listed."""
    import httpx

    doc = httpx.get(site["svc"].url + "/openapi.json", timeout=10).json()
    chrome.get(site["svc"].url + "/docs")
    wait(chrome, lambda d: d.execute_script("return document.body.dataset.ready") == "true")
    assert text(chrome.find_element(By.CSS_SELECTOR, ".info .title")).startswith(doc["info"]["title"])
    operations = chrome.find_elements(By.CSS_SELECTOR, ".opblock")
    expected = [(path, method) for path, item in doc["paths"].items() for method in item]
    shown = [(op.find_element(By.CSS_SELECTOR, ".opblock-summary-path").get_attribute("data-path"),
              text(op.find_element(By.CSS_SELECTOR, ".opblock-summary-method")).lower()) for op in operations]
    assert shown == expected
    for op, (path, method) in zip(operations, expected):
        summary = text(op.find_element(By.CSS_SELECTOR, ".opblock-summary-description"))
        assert summary == doc["paths"][path][method]["summary"], (path, method)
    for path, method in [("/v1/explain", "post"), ("/v1/tenants/{tenant}/memory", "post")]:
        op = operations[expected.index((path, method))]
        op.find_element(By.CSS_SELECTOR, ".opblock-summary-control").click()
        wait(chrome, lambda d: op.find_elements(By.CSS_SELECTOR, "tr.response"))
        operation = doc["paths"][path][method]
        assert [r.get_attribute("data-code") for r in op.find_elements(By.CSS_SELECTOR, "tr.response")] == \
            list(operation["responses"]), path
        assert [r.get_attribute("data-param-name") for r in op.find_elements(By.CSS_SELECTOR, "tr[data-param-name]")] \
            == [p["name"] for p in operation.get("parameters", [])], path
    assert chrome.execute_script("return location.hash") == "#/default/post_v1_tenants__tenant__memory"
    models = chrome.find_element(By.CSS_SELECTOR, "section.models")
    wait(chrome, lambda d: all(name in text(models) for name in doc["components"]["schemas"]))


def test_the_api_page_fits_a_phone(chrome, site):
    chrome.get(site["svc"].url + "/docs")
    wait(chrome, lambda d: d.execute_script("return document.body.dataset.ready") == "true")
    try:
        for size, (width, height) in browser.SIZES.items():
            browser.resize(chrome, size)
            wait(chrome, lambda d: d.execute_script("return window.innerWidth") == width)
            overflow = chrome.execute_script(
                "const e = document.documentElement; return [e.scrollWidth, e.clientWidth];")
            assert overflow[0] <= overflow[1], (size, overflow)
            path = browser.screenshot(chrome, f"api-page-{width}x{height}")
            assert browser.png_size(path) == (width, height)
    finally:
        browser.resize(chrome, "wide")
