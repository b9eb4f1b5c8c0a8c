"""`cleo-rules init` starts a team pack that `check` passes: by default one built on cleo-en, with --standalone one of
its own; `cleo-rules schemas` exports the schemas."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cleo_rules import load_pack
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
    """The standalone starter: a pack of its own."""
    monkeypatch.chdir(tmp_path)
    result = run("init", "--standalone", "team")
    assert result.exit_code == 0, result.output
    return tmp_path / "team"


@pytest.fixture
def extending(tmp_path, monkeypatch):
    """What `init` writes by default: a pack built on cleo-en."""
    monkeypatch.chdir(tmp_path)
    result = run("init", "acme")
    assert result.exit_code == 0, result.output
    assert "built " not in result.output  # nothing of its own to generate yet
    return tmp_path / "acme"


def test_init_extends_cleo_en_by_default_with_empty_rule_files_and_corpus(extending):
    assert sorted(p.name for p in (extending / "rules").iterdir()) == ["corrections.yaml", "follow_ups.yaml",
                                                                         "pack.yaml"]
    assert sorted(p.name for p in (extending / "corpus").iterdir()) == ["regressions.yaml"]
    pack = compile_pack(extending / "rules")  # its examples are judged too
    (base,) = pack.composition.bases
    assert (pack.name, base.name, base.spec, base.origin) == ("acme", "cleo-en", "cleo-en", "bundled")
    assert not pack.composition.disabled and not pack.composition.replaced
    assert [r for r in pack.rules if pack.owns(r)] == []
    assert [src.data["kind"] for src in pack.sources.values()] == ["corrections", "follow_ups"]
    assert len(pack.rules) == len(compile_pack().rules)  # every cleo-en rule applies
    bundled = compile_pack()
    assert re.search(rf'(?m)^    version: "\^{bundled.version.split(".")[0]}\.{bundled.version.split(".")[1]}"',
                     (extending / "rules" / "pack.yaml").read_text())


def test_the_extending_pack_checks_with_its_own_corpus_and_cleo_en_s(extending, monkeypatch):
    monkeypatch.chdir(extending)
    result = run("check")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("pack: acme 0.1.0 (") and " at rules (./rules), on cleo-en " in lines[0]
    assert lines[1].startswith("built on: cleo-en ")
    assert any(line.startswith("corpus ok: 0 cases") for line in lines)
    assert any(line.startswith("corpus of cleo-en ok: ") and " skipped" not in line for line in lines)


def test_a_correction_added_to_the_extending_pack_checks_once_its_corpus_is_built(extending, monkeypatch):
    """The commented example in the team's file is a rule that works: uncommented, built, it checks."""
    monkeypatch.chdir(extending)
    path = Path("rules/corrections.yaml")
    text = path.read_text()
    example = [line[4:] for line in text.splitlines() if line.startswith("#   ")]
    assert example[0] == "- id: correction.out-of-stock"
    path.write_text(text.replace("rules: []", "rules:\n" + "\n".join("  " + line for line in example)))
    assert run("corpus", "build").exit_code == 0
    result = run("check")
    assert result.exit_code == 0, result.output
    assert "1 rules, all covered both ways" in result.output
    assert compile_pack("rules").classify("That one is out of stock.").rule == "correction.out-of-stock"


def _uncomment_example(path: Path, first: str) -> None:
    """Put the commented example rule of a starter rule file in place of its empty ``rules: []``."""
    text = path.read_text()
    example = [line[4:] for line in text.splitlines() if line.startswith("#   ")]
    assert example[0] == first
    path.write_text(text.replace("rules: []", "rules:\n" + "\n".join("  " + line for line in example)))


def test_a_follow_up_added_to_the_extending_pack_checks_once_its_corpus_is_built(extending, monkeypatch):
    """init writes the team's follow-up file, listed in the manifest, with a commented example rule that works:
    uncommented and built, it checks both ways, against the team's corpus and cleo-en's."""
    monkeypatch.chdir(extending)
    assert "  - follow_ups.yaml" in Path("rules/pack.yaml").read_text()
    _uncomment_example(Path("rules/follow_ups.yaml"), "- id: follow_up.walk-through")
    built = run("corpus", "build")
    assert built.exit_code == 0, built.output
    assert "40 positive, 16 negative" in built.output
    result = run("check")
    assert result.exit_code == 0, result.output
    assert f"{len(load_pack().follow_ups) + 1} follow-up patterns" in result.output  # cleo-en's and the team's
    assert "1 rules, all covered both ways" in result.output
    assert re.search(r"(?m)^corpus of cleo-en ok: .* FP 0 FN 0;", result.output)
    pack = compile_pack("rules")
    history = ["Compare the two van insurance quotes from Brightline and Zego"]
    decision = pack.classify("Can you walk us through them, please?", history)
    assert (decision.kind, decision.rule) == ("follow_up", "follow_up.walk-through")
    assert pack.origin(pack.rule("follow_up.walk-through")) == "acme"
    assert pack.classify("Walk me through the staff rota for the Leeds branch over Christmas").kind == "substantive"


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


@pytest.mark.parametrize("which, count", [("team", 10), ("extending", 4)])
def test_schema_lines_resolve_inside_the_repository(which, count, request):
    team = request.getfixturevalue(which)
    files = list((team / "rules").glob("*.yaml")) + list((team / "corpus").rglob("*.yaml"))
    assert len(files) == count
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


@pytest.mark.parametrize("which", ["team", "extending"])
def test_no_file_names_a_machine_path(which, tmp_path, request):
    team = request.getfixturevalue(which)
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
