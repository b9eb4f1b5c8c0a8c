"""A designer's first edits in the playground, in a real browser (headless Chromium through Selenium, see
tests/helpers/browser.py): a key typo offers the key it meant (not a corpus build), a written edit says which turns it
changed where the designer is editing, a rule file opens at its first rule with its long lines wrapped, and a rule of an
installed pack is named from that pack, never by a path into site-packages. Each test runs its own playground
on a pack of its own; outbound connections are refused and the console must stay free of errors."""

from __future__ import annotations

import shutil

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from cleo_rules import load_pack
from cleo_rules.resources import corpus_dir, rules_dir

from helpers import browser
from helpers.browser import chrome, guard  # noqa: F401  (the module's browser fixtures)
from helpers.browser import type_in_rules
from helpers.service import Service

pytestmark = pytest.mark.browser

FOLLOW_UPS = "rules/follow_ups.yaml"
TEAM_CONVERSATION = ["Which flour supplier do we use for the Leeds shop?", "Could you bring me more?"]


def playground(root, pack: str, cwd):
    svc = Service("--pack", pack, "--writable-pack", "--watch-interval", "0.1", command="playground",
                  log_path=root / "playground.log", cwd=cwd)
    svc.wait_ready(90)
    return svc


@pytest.fixture
def serve(tmp_path, guard, chrome):
    """Start a playground (``serve(pack, cwd)``); after the test, check the console, leave the page, stop it."""
    started = []

    def start(pack: str, cwd):
        started.append(playground(tmp_path, pack, cwd))
        return started[-1]

    yield start
    try:
        errors = browser.console(chrome)
        chrome.get("about:blank")  # leave the page: the service is not polled after it stops
        assert errors == [], f"console errors: {errors}"
    finally:
        for svc in started:
            svc.stop()


def team(tmp_path, *, standalone: bool = True):
    from cleo_rules.starter import init_pack

    init_pack(tmp_path / "team", standalone=standalone)
    return tmp_path / "team"


def wait(driver, predicate, timeout: float = 30.0):
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(predicate)


def text(element) -> str:
    return element.get_attribute("textContent")


def runs(driver) -> int:
    return int(driver.execute_script("return Number(document.body.dataset.runs || 0)"))


def edit_state(driver) -> str:
    return driver.execute_script("return document.body.dataset.editState || ''")


def area_value(driver) -> str:
    return driver.execute_script("return document.getElementById('rule-text').value")


def open_page(driver, url) -> None:
    driver.get(url + "/?poll=0.2")
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == "true")


def enter(driver, lines) -> None:
    editor = driver.find_element(By.ID, "conversation")
    editor.clear()
    editor.send_keys("\n".join(f"User: {m}" for m in lines))
    before = runs(driver)
    driver.find_element(By.ID, "run").click()
    wait(driver, lambda d: runs(d) > before)


def open_file(driver, name: str, text_: str) -> None:
    Select(driver.find_element(By.ID, "rule-file")).select_by_value(name)
    wait(driver, lambda d: area_value(d) == text_)


def in_view(driver, element) -> bool:
    return driver.execute_script("""
        const r = arguments[0].getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight;""", element)


def test_a_key_typo_offers_the_key_it_meant_and_no_corpus_build(chrome, serve, tmp_path):
    root = team(tmp_path)
    path = root / FOLLOW_UPS
    original = path.read_text(encoding="utf-8")
    svc = serve("rules", root)
    open_page(chrome, svc.url)
    open_file(chrome, FOLLOW_UPS, original)
    type_in_rules(chrome, "    descript", Keys.DELETE, replace=1)  # description: descripton
    wait(chrome, lambda d: edit_state(d) == "rejected")
    assert path.read_text(encoding="utf-8") == original
    typo = original.index("    description:") + 4
    line, col = original[:typo].count("\n") + 1, typo - original.rfind("\n", 0, typo)
    items = [text(li) for li in chrome.find_elements(By.CSS_SELECTOR, "#edit-problem-list li")]
    assert items[0].startswith(f"{FOLLOW_UPS}:{line}:{col} error[E121]") and "unknown key 'descripton'" in items[0]
    # the action offered is the one that fixes what was found: the key it meant, not a corpus build
    assert not chrome.find_element(By.ID, "edit-rebuild").is_displayed()
    fix = chrome.find_element(By.ID, "edit-fix")
    assert fix.is_displayed() and text(fix) == f"Replace 'descripton' with 'description' (line {line})"
    fix.click()
    wait(chrome, lambda d: edit_state(d) == "unchanged")
    assert area_value(chrome) == original and path.read_text(encoding="utf-8") == original
    assert not chrome.find_element(By.ID, "edit-problems").is_displayed()
    assert not chrome.find_element(By.ID, "edit-fix").is_displayed()

    # an error with no key to offer: its line, and its help, is the action
    type_in_rules(chrome, "max_content_words: ", "lots", replace=1)
    wait(chrome, lambda d: edit_state(d) == "rejected")
    assert not chrome.find_element(By.ID, "edit-rebuild").is_displayed()
    bad = area_value(chrome)
    at = bad.index("lots")
    line = bad[:at].count("\n") + 1
    assert text(fix).startswith(f"Go to line {line}")
    assert text(chrome.find_element(By.ID, "edit-fix-help")).startswith(f"{FOLLOW_UPS}:{line}:")
    fix.click()
    start = chrome.execute_script("return document.getElementById('rule-text').selectionStart")
    assert bad[:start].count("\n") + 1 == line


def test_a_written_edit_says_which_turns_it_changed_where_the_designer_edits(chrome, serve, tmp_path):
    root = team(tmp_path)
    path = root / FOLLOW_UPS
    svc = serve("rules", root)
    open_page(chrome, svc.url)
    enter(chrome, TEAM_CONVERSATION)
    assert chrome.find_element(By.ID, "edit-changes").get_attribute("hidden") is not None
    open_file(chrome, FOLLOW_UPS, path.read_text(encoding="utf-8"))
    before = runs(chrome)
    type_in_rules(chrome, "(?:tell|show|give", "|bring")
    wait(chrome, lambda d: edit_state(d) == "written" and runs(d) > before)
    edited = load_pack(root / "rules")
    box = chrome.find_element(By.ID, "edit-changes")
    assert box.is_displayed()
    assert text(chrome.find_element(By.ID, "edit-changes-title")) == \
        f"With the new pack ({edited.content_hash}), 1 turn changed:"
    (item,) = box.find_elements(By.CSS_SELECTOR, "li.change")
    decision = edited.classify(TEAM_CONVERSATION[1], TEAM_CONVERSATION[:1])
    assert decision.rule == "follow_up.tell-me-more"
    assert text(item) == f"User turn 2: kind substantive → follow_up; rule — → {decision.rule}; query changed"
    # the summary is beside the editor; the turn itself, below it, is one click away
    chrome.find_element(By.ID, "rule-text").location_once_scrolled_into_view
    assert in_view(chrome, box)
    item.find_element(By.CSS_SELECTOR, "button.goto-turn").click()
    turn = chrome.find_element(By.CSS_SELECTOR, f'#turns li.turn-user[data-index="{item.get_attribute("data-index")}"]')
    assert turn.get_attribute("data-rule") == decision.rule
    wait(chrome, lambda d: in_view(d, turn.find_element(By.TAG_NAME, "summary")))
    assert chrome.execute_script("return document.activeElement") == turn.find_element(By.TAG_NAME, "summary")

    # an edit that changes no turn says so
    before = runs(chrome)
    type_in_rules(chrome, "(?:tell|show|give|bring", "|hand")
    wait(chrome, lambda d: edit_state(d) == "written" and runs(d) > before)
    again = load_pack(root / "rules")
    wait(chrome, lambda d: text(d.find_element(By.ID, "edit-changes-title"))
         == f"With the new pack ({again.content_hash}), no turn of the conversation changed.")
    assert box.find_elements(By.CSS_SELECTOR, "li.change") == []


def test_a_rule_file_opens_at_its_first_rule_with_its_long_lines_wrapped(chrome, serve, tmp_path):
    # a pack built on cleo-en: its rule files are a comment header (an example rule's long lines in it) over
    # `rules: []`
    root = team(tmp_path, standalone=False)
    corrections = (root / "rules" / "corrections.yaml").read_text(encoding="utf-8")
    follow_ups = root / FOLLOW_UPS
    assert max(map(len, follow_ups.read_text("utf-8").splitlines())) > 100
    svc = serve("rules", root)
    open_page(chrome, svc.url)
    focused = chrome.execute_script("return document.activeElement.id")
    for name, shown in (("rules/corrections.yaml", corrections), (FOLLOW_UPS, follow_ups.read_text("utf-8"))):
        open_file(chrome, name, shown)
        lines = shown.splitlines()
        first = next((i for i, line in enumerate(lines) if line.lstrip().startswith("- id:")),
                     next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")))
        start = chrome.execute_script("return document.getElementById('rule-text').selectionStart")
        assert shown[:start].count("\n") == first, name  # the caret on the first rule (or the first key)
        area = chrome.find_element(By.ID, "rule-text")
        # the comment header above it scrolled past: the line is in the text area's view
        top, height = chrome.execute_script(
            "const a = arguments[0]; return [a.scrollTop, a.clientHeight];", area)
        line_height = float(chrome.execute_script("return parseFloat(getComputedStyle(arguments[0]).lineHeight)",
                                                  area))
        if first * line_height > height:
            assert top > 0, name
        # long lines wrap: nothing to scroll sideways
        assert chrome.execute_script("return getComputedStyle(arguments[0]).whiteSpace", area) == "pre-wrap"
        assert chrome.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", area), name
    # opening a file leaves the focus where it was
    assert chrome.execute_script("return document.activeElement.id") != "rule-text" or focused == "rule-text"


def test_a_rule_of_an_installed_pack_is_named_from_that_pack(chrome, serve, tmp_path):
    # cleo-en as pip installs a pack: in a site-packages directory
    installed = tmp_path / "venv" / "lib" / "site-packages" / "cleo_en_pack"
    shutil.copytree(rules_dir(), installed / "rules")
    shutil.copytree(corpus_dir(), installed / "corpus")
    (tmp_path / "team" / "rules").mkdir(parents=True)
    (tmp_path / "team" / "rules" / "pack.yaml").write_text(
        "pack: team\nversion: 0.1.0\nlocale: en\ndescription: A team's pack on an installed cleo-en.\n"
        "extends: [../../venv/lib/site-packages/cleo_en_pack/rules]\n", encoding="utf-8")
    svc = serve("rules", tmp_path / "team")
    open_page(chrome, svc.url)
    conversation = ["Which van insurer covers tools left in the van overnight?",
                    "Assistant: Two do: Brightline Commercial and Zego Van. Brightline is cheaper.",
                    "Yes, go with the second one."]
    editor = chrome.find_element(By.ID, "conversation")
    editor.clear()
    editor.send_keys("\n".join(line if line.startswith("Assistant:") else f"User: {line}" for line in conversation))
    before = runs(chrome)
    chrome.find_element(By.ID, "run").click()
    wait(chrome, lambda d: runs(d) > before)
    pack = load_pack(tmp_path / "team" / "rules")
    turn = chrome.find_elements(By.CSS_SELECTOR, "#turns li.turn-user")[1]
    rule = pack.rule(turn.get_attribute("data-rule"))
    assert pack.origin(rule) == "cleo-en"
    turn.find_element(By.TAG_NAME, "summary").click()
    link = turn.find_element(By.CSS_SELECTOR, "a.rule-link")
    name = rule.file.rsplit("/", 1)[-1]
    assert text(link) == f"<installed pack cleo-en>/{name}:{rule.line}"
    assert "site-packages" not in text(turn.find_element(By.CSS_SELECTOR, ".rule-row"))
    # the link still opens the rule's lines
    link.click()
    source = wait(chrome, lambda d: turn.find_element(By.CSS_SELECTOR, ".source-box pre.source"))
    assert source.get_attribute("aria-label").startswith(f"<installed pack cleo-en>/{name} lines {rule.line}")
