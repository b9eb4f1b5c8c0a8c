"""`cleo-rules init` starts a team pack that `check` passes; `cleo-rules schemas` exports the schemas."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cleo_rules.cli import cli, main
from cleo_rules.errors import UsageError
from cleo_rules.pack.compile import compile_pack
from cleo_rules.resources import schemas_dir
from cleo_rules.starter import init_pack, pack_name_for

SCHEMA_LINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.M)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def team(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("init", "team")
    assert result.exit_code == 0, result.output
    return tmp_path / "team"


def test_init_writes_a_pack_corpus_and_schemas(team):
    assert sorted(p.name for p in (team / "rules").iterdir()) == [
        "corrections.yaml", "follow_ups.yaml", "pack.yaml", "slots.yaml", "vocabulary.yaml"]
    assert sorted(p.name for p in (team / "schemas").iterdir()) == sorted(p.name for p in schemas_dir().iterdir()
                                                                         if p.name.endswith(".schema.json"))
    assert (team / "corpus" / "regressions.yaml").is_file()
    generated = sorted(p.name for p in (team / "corpus" / "generated").iterdir())
    assert generated == ["_cross-rule.yaml", "correction.already-tried.yaml", "follow_up.tell-me-more.yaml",
                         "vocab.nod.yaml"]


def test_the_pack_has_one_rule_of_each_kind_tested_both_ways(team):
    pack = compile_pack(team / "rules")  # examples are checked: this raises if any fails
    assert pack.name == "team" and pack.version == "0.1.0"
    assert (len(pack.vocab_sets), len(pack.follow_ups), len(pack.corrections)) == (1, 1, 1)
    for rule in pack.rules:
        assert rule.examples and rule.counterexamples and rule.generate, rule.id
    assert pack.corrections[0].request_forms


def test_check_passes_straight_away_from_inside(team, monkeypatch):
    monkeypatch.chdir(team)
    result = run("check")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("pack: team 0.1.0 (") and lines[0].endswith(" at rules (./rules)")
    assert lines[2].startswith("corpus ok: ") and "3 rules, all covered both ways; corpus up to date" in lines[2]


def test_schema_lines_resolve_inside_the_repository(team):
    files = list((team / "rules").glob("*.yaml")) + list((team / "corpus").rglob("*.yaml"))
    assert len(files) == 10
    for path in files:
        text = path.read_text(encoding="utf-8")
        m = SCHEMA_LINE.search(text)
        assert m, f"{path} has no schema line"
        ref = m.group(1)
        assert not ref.startswith(("/", "file:")), ref
        target = (path.parent / ref).resolve()
        assert target.is_file() and team.resolve() in target.parents, (path, ref)
        kind = re.search(r"(?m)^kind: (\w+)", text)
        name = "pack" if path.name == "pack.yaml" else ("corpus" if "corpus" in path.parts else kind.group(1))
        assert target.name == f"{name}.schema.json"


def test_no_file_names_a_machine_path(team, tmp_path):
    for path in team.rglob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        assert str(tmp_path) not in text and "site-packages" not in text and "file://" not in text, path


def test_init_refuses_to_overwrite(team, capsys):
    before = (team / "rules" / "pack.yaml").read_text()
    with pytest.raises(SystemExit) as stop:
        main(["init", "team"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: team already holds a rule pack (team/rules/corrections.yaml, ")
    assert "overwrites nothing" in err
    with pytest.raises(UsageError, match="already holds a rule pack"):
        init_pack(team)
    assert (team / "rules" / "pack.yaml").read_text() == before


def test_init_in_the_current_directory_with_a_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("init", "--name", "acme-en")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "next: cleo-rules check"
    assert compile_pack(tmp_path / "rules").name == "acme-en"


@pytest.mark.parametrize("dirname, name", [("Team Rules", "team-rules"), ("acme_en", "acme_en"), ("---", "team-pack")])
def test_pack_name_from_the_directory(tmp_path, dirname, name):
    assert pack_name_for(tmp_path / dirname) == name


def test_schemas_out(tmp_path):
    result = run("schemas", "--out", tmp_path / "s")
    assert result.exit_code == 0
    written = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert written == sorted(p.name for p in schemas_dir().glob("*.schema.json"))
    for name in written:
        assert json.loads((tmp_path / "s" / name).read_text()) == json.loads((schemas_dir() / name).read_text())
    assert f"wrote {len(written)} schemas to " in result.output


def test_rebuilding_the_started_corpus_changes_nothing(team, monkeypatch):
    monkeypatch.chdir(team)
    before = {p: p.read_text() for p in (team / "corpus").rglob("*.yaml")}
    result = run("corpus", "build")
    assert "0 files written, 4 unchanged, 0 removed" in result.output
    assert {p: p.read_text() for p in (team / "corpus").rglob("*.yaml")} == before


def test_a_broken_rule_fails_check_naming_the_file(team, monkeypatch):
    monkeypatch.chdir(team)
    path = Path("rules/follow_ups.yaml")
    path.write_text(path.read_text().replace("max_content_words: 3", "max_content_words: lots"))
    result = CliRunner().invoke(cli, ["check"])
    assert result.exit_code == 1
    assert "rules/follow_ups.yaml:" in result.stderr and "error[E123]" in result.stderr
