"""`cleo-rules rules` lists every rule id of a pack and of the packs it is built on, with its kind, the pack it
comes from and its description; rules a `disable:` leaves out are listed too, marked, so a designer finds the id to
disable or to replace."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cleo_rules.cli import cli
from cleo_rules.pack.compile import compile_pack
from cleo_rules.resources import rules_dir
from cleo_rules.rule_list import list_rules

TEAM_CORRECTION = """
  - id: correction.out-of-stock
    description: The user reports that what was offered is out of stock.
    pattern: '\\b(?:that|this|it)(?: one)? (?:is|was|went) out of stock\\b'
    examples: ["That one is out of stock."]
    counterexamples: ["Which suppliers have the winter tyres out of stock this week?"]
    request_forms: ["Show me the second one, please."]
  - id: correction.said-no
    description: The team's own way of saying no to an option.
    pattern: '\\bwe said no to (?:that|it)\\b'
    examples: ["We said no to that already."]
    counterexamples: ["Have we said no to the Leeds supplier before, and why?"]
    request_forms: ["Show me the second one, please."]
"""


def _line_of(path: Path, text: str) -> int:
    (number,) = [n for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip() == text]
    return number


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def acme(tmp_path, monkeypatch):
    """A pack built on cleo-en, as init writes it, with two corrections of its own (one replacing cleo-en's
    correction.said-no) and two cleo-en rules disabled."""
    monkeypatch.chdir(tmp_path)
    assert run("init", "acme").exit_code == 0
    monkeypatch.chdir(tmp_path / "acme")
    manifest = Path("rules/pack.yaml")
    manifest.write_text(manifest.read_text().replace(
        "disable: []", "disable: [correction.change-of-mind, follow_up.what-about]"))
    corrections = Path("rules/corrections.yaml")
    corrections.write_text(corrections.read_text().replace("rules: []", "rules:" + TEAM_CORRECTION))
    return tmp_path / "acme"


def test_the_listing_names_every_rule_with_its_pack_and_marks_the_disabled_and_replaced(acme):
    result = run("rules")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("pack: acme 0.1.0 (") and ", on cleo-en " in lines[0]
    assert any(line.startswith("disabled: correction.change-of-mind of cleo-en (by acme)") for line in lines)
    header = next(i for i, line in enumerate(lines) if line.startswith("ID "))
    assert lines[header].split() == ["ID", "KIND", "PACK", "STATUS", "DESCRIPTION"]
    rows = {line.split()[0]: line.split(maxsplit=4) for line in lines[header + 1:-1]}
    assert rows["correction.out-of-stock"][1:3] == ["correction", "acme"]
    assert rows["correction.out-of-stock"][4] == "The user reports that what was offered is out of stock."
    assert rows["correction.said-no"][1:4] == ["correction", "acme", "replaces"]
    assert rows["follow_up.tell-me-more"][1:4] == ["follow_up", "cleo-en", "-"]
    assert rows["vocab.nod"][1:3] == ["vocabulary", "cleo-en"]
    assert rows["referent.other"][1:3] == ["referent", "cleo-en"]
    for rid in ("correction.change-of-mind", "follow_up.what-about"):
        assert rows[rid][2:4] == ["cleo-en", "disabled"] and rows[rid][4].startswith("by acme  "), rows[rid]
    assert "what about the other one?" in rows["follow_up.what-about"][4]
    # the disabled rules come last, after every rule that applies
    order = list(rows)
    assert order[-2:] == ["correction.change-of-mind", "follow_up.what-about"]
    bundled = compile_pack()
    every = {r.id for r in (*bundled.rules, *bundled.referent_rules)} | {"correction.out-of-stock"}
    assert set(rows) == every
    assert lines[-1] == f"{len(every) - 2} rules apply, 2 disabled"


def test_json_lists_the_same_rules_with_files_and_lines(acme):
    result = run("rules", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["pack"]["name"] == "acme" and [b["name"] for b in doc["pack"]["bases"]] == ["cleo-en"]
    by_id = {r["id"]: r for r in doc["rules"]}
    mine = by_id["correction.out-of-stock"]
    assert (mine["kind"], mine["pack"], mine["disabled"], mine["replaces"]) == ("correction", "acme", False, None)
    assert Path(mine["file"]).resolve() == (acme / "rules" / "corrections.yaml").resolve()
    assert mine["line"] == _line_of(acme / "rules" / "corrections.yaml", "- id: correction.out-of-stock")
    assert by_id["correction.said-no"]["replaces"] == "cleo-en"
    gone = by_id["correction.change-of-mind"]
    assert (gone["kind"], gone["pack"], gone["disabled"], gone["disabled_by"]) == ("correction", "cleo-en", True,
                                                                                    "acme")
    text = (rules_dir() / "corrections.yaml").read_text().splitlines()
    assert Path(gone["file"]).resolve() == (rules_dir() / "corrections.yaml").resolve()
    assert text[gone["line"] - 1].strip() == "- id: correction.change-of-mind"
    assert [r["id"] for r in doc["rules"]] == [r.id for r in list_rules(compile_pack("rules"))]


def test_where_names_an_installed_pack_as_the_other_commands_do(acme, monkeypatch):
    """A base in an installed distribution is `<installed pack cleo-en>`, never a path into site-packages."""
    import cleo_rules.resources as resources

    bundled = rules_dir().resolve()
    monkeypatch.setattr(resources, "in_installed_distribution",
                        lambda path: Path(path).resolve() == bundled or bundled in Path(path).resolve().parents)
    result = run("rules", "--where")
    assert result.exit_code == 0, result.output
    assert " at <installed pack cleo-en>" in result.output and str(bundled) not in result.output
    row = next(line for line in result.output.splitlines() if line.startswith("follow_up.what-about "))
    assert re.search(r" <installed pack cleo-en>/follow_ups\.yaml:\d+ ", row), row
    mine = next(line for line in result.output.splitlines() if line.startswith("correction.out-of-stock "))
    line = _line_of(acme / "rules" / "corrections.yaml", "- id: correction.out-of-stock")
    assert f" rules/corrections.yaml:{line} " in mine


def test_a_pack_of_its_own_lists_its_rules_and_nothing_disabled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("init", "--standalone", "team").exit_code == 0
    result = run("rules", "team/rules", "--json")
    doc = json.loads(result.output)
    assert [(r["id"], r["kind"], r["pack"], r["disabled"]) for r in doc["rules"]] == [
        ("correction.already-tried", "correction", "team", False), ("vocab.nod", "vocabulary", "team", False),
        ("follow_up.tell-me-more", "follow_up", "team", False)]
    assert run("rules", "team/rules").output.splitlines()[-1] == "3 rules apply, 0 disabled"
