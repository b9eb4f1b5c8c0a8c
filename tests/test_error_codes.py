"""One registry of error codes: every code raised is registered, every registered code is raised.

Codes are recorded as problems and errors are made (cleo_rules.codes.seen). The
two ``test_suite_*`` tests run after every other test of the session (see
conftest.py) and judge what the whole suite raised (with pytest-xdist, in every
worker: the ``suite_codes`` fixture).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cleo_rules import codes
from cleo_rules.codes import CATEGORIES, CODES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cleo_rules"
CODE_LITERAL = re.compile(r"""["'](E\d{3})["']""")


def source_codes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "codes.py":
            continue
        for m in CODE_LITERAL.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(m.group(1), []).append(str(path.relative_to(ROOT)))
    return found


def test_every_code_in_the_source_is_registered():
    unregistered = {code: where for code, where in source_codes().items() if code not in CODES}
    assert not unregistered, f"codes used but not in cleo_rules/codes.py: {unregistered}"


def test_every_registered_code_appears_in_the_source():
    used = source_codes()
    assert not [code for code in CODES if code not in used]


def test_each_code_has_one_meaning_a_template_help_and_a_category():
    meanings = [c.meaning for c in CODES.values()]
    assert len(set(meanings)) == len(meanings)
    for c in CODES.values():
        assert re.fullmatch(r"E\d{3}", c.code) and c.meaning and c.template and c.help
        assert c.category in CATEGORIES
    assert {c.exit_code for c in CODES.values()} == {1, 2, 3}
    assert codes.exit_code("E134") == 1 and codes.exit_code("E101") == 2 and codes.exit_code("E002") == 2
    assert codes.exit_code("E999") == 3


def test_docs_errors_md_is_generated_from_the_registry():
    doc = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert doc == codes.markdown(), "docs/errors.md is stale: run `make docs`"
    for code in CODES:
        assert f"| {code} |" in doc


def test_templates_match_messages():
    assert CODES["E134"].matches("example 'ok then fine' does not fire this rule: it is classified substantive")
    assert not CODES["E134"].matches("counterexample 'x' fires this rule")
    assert CODES["E113"].matches("duplicate key 'id' (first at line 4)")


# -- judged over the whole suite (these two run last) -------------------------------------------


def _whole_suite(config) -> bool:
    """Whether this session runs every test: no -k, -m, --deselect, and the default test paths."""
    if config.getoption("keyword") or config.getoption("markexpr") or config.getoption("deselect"):
        return False
    testpaths = {(config.rootpath / p).resolve() for p in config.getini("testpaths")}
    args = {Path(a.split("::")[0]).resolve() for a in config.args}
    return args == testpaths or args == {config.rootpath.resolve()}


def test_suite_raises_only_registered_codes_with_their_templates(suite_codes):
    seen = suite_codes
    assert seen, "no code was recorded"
    unregistered = sorted(code for code in seen if code not in CODES)
    assert not unregistered, f"raised but not registered: {unregistered}"
    wrong = {code: sorted(m for m in messages if not CODES[code].matches(m))[:3]
             for code, messages in seen.items() if any(not CODES[code].matches(m) for m in messages)}
    assert not wrong, f"messages that do not fit their code's template: {wrong}"


def test_suite_raises_every_registered_code(request, suite_codes):
    if not _whole_suite(request.config):
        pytest.skip("judges the whole suite; this run selects part of it")
    never = sorted(set(CODES) - set(suite_codes))
    assert not never, f"registered but never raised in the tests: {never}"


def test_the_help_states_the_registry_exit_codes():
    from cleo_rules.cli.common import EXIT_CODES_HELP

    for category, words in (("pack", "findings in the pack or corpus"), ("usage", "usage, input or environment"),
                            ("internal", "internal error")):
        assert f"{CATEGORIES[category][0]} {words}" in EXIT_CODES_HELP
    assert CATEGORIES["corpus"][0] == CATEGORIES["pack"][0] and CATEGORIES["environment"][0] == CATEGORIES["usage"][0]
