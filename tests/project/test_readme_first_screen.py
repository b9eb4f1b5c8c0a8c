"""The README's first screen says what the project is and shows one decision, exactly as the command prints it,
before any set-up; its pre-commit example names a release as the project tags them."""

from __future__ import annotations

import re

import pytest
import yaml

from cleo_rules import load_pack
from cleo_rules.cli import main
from cleo_rules.reading.load import display
from cleo_rules.resources import rules_dir

from helpers import ROOT
from helpers.readme import INSTALLED, README, expected, first_example


def test_the_first_screen_shows_a_decision_before_any_set_up():
    head = README[:README.index("\n## ")]
    intro, _, rest = head.partition("```console")
    assert "cleo-rules decides" in intro and "before retrieval" in intro  # what it is, in a paragraph
    assert "make demo" not in intro and "make demo" in rest  # set-up after the decision
    assert len(head[:head.index("make demo")].splitlines()) <= 30  # all of it on one screen
    argv, lines = first_example()
    assert argv[0] == "classify" and lines[0].startswith("kind:")
    assert lines[-1] == f"pack:    cleo-en {load_pack().version} (…) at {INSTALLED} (bundled)"


def test_the_first_example_is_what_the_command_prints(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no ./rules here: the bundled pack, as after `pip install cleo-rules`
    monkeypatch.delenv("CLEO_RULES_PACK", raising=False)
    argv, lines = first_example()
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_.value.code == 0 and err == ""
    # this checkout's pack is not installed, so the command names its directory (tests/project/test_packaging.py runs
    # the example from the wheel, where the line reads exactly as the README shows it)
    assert out == expected(lines, display(rules_dir()))


def version() -> str:
    return re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M).group(1)


def test_pre_commit_rev_names_the_release_tag_of_this_version():
    tag = f"v{version()}"
    revs = re.findall(r"^\s+rev: (\S+)", README, re.M)
    assert revs == [tag]
    assert f"`{tag}` for {version()}" in README  # how releases are tagged, said in words too
    hooks_text = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert re.findall(r"^#\s+rev: (\S+)", hooks_text, re.M) == [tag]
    ids = {hook["id"] for hook in yaml.safe_load(hooks_text)}
    config = re.search(r"```yaml\n# \.pre-commit-config\.yaml\n(.*?)```", README, re.S).group(1)
    (repo,) = yaml.safe_load(config)["repos"]
    assert repo["rev"] == tag and {h["id"] for h in repo["hooks"]} == ids == {"cleo-rules-check",
                                                                              "cleo-rules-corpus-build"}


def test_the_changelog_keeps_an_unreleased_section_first():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert sections[0] == "Unreleased"
    assert "keepachangelog.com" in text
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", s) for s in sections[1:])  # a released section is named by its version
