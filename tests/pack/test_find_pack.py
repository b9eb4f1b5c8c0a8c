"""Which pack a command uses when none is given, and that every command says so.

Order: --pack or the argument; CLEO_RULES_PACK; [tool.cleo-rules] pack in the
nearest pyproject.toml; ./rules when it holds a pack.yaml; the bundled pack.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cleo_rules.cli import cli
from cleo_rules.errors import PackNotFound, UsageError
from cleo_rules.pack.discovery import find_pack
from cleo_rules.resources import rules_dir

from helpers import PACKS


def run(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A team repository: its own pack in rules/ (mini 1.0) and a subdirectory; the tests run inside it."""
    root = tmp_path / "repo"
    shutil.copytree(PACKS / "mini-1.0", root / "rules")
    (root / "src" / "app").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def test_outside_any_repository_the_bundled_pack(tmp_path):
    found = find_pack(cwd=tmp_path, environ={})
    assert (found.path, found.found_by) == (rules_dir(), "bundled")


def test_rules_directory_with_a_manifest(repo):
    found = find_pack(environ={})
    assert (found.path, found.found_by) == (Path("rules"), "./rules")
    (repo / "rules" / "pack.yaml").rename(repo / "rules" / "manifest.yaml")
    assert find_pack(environ={}).found_by == "bundled"  # ./rules without pack.yaml is not a pack


def test_rules_is_looked_for_in_the_working_directory_only(repo):
    assert find_pack(cwd=repo / "src", environ={}).found_by == "bundled"


def test_pyproject_names_the_pack_relative_to_itself(repo):
    shutil.copytree(PACKS / "mini-2.0", repo / "packs" / "en")
    (repo / "pyproject.toml").write_text('[project]\nname = "app"\n\n[tool.cleo-rules]\npack = "packs/en"\n')
    for where in (repo, repo / "src" / "app"):  # the nearest pyproject.toml, from a subdirectory too
        found = find_pack(cwd=where, environ={})
        assert found.found_by == "pyproject.toml" and found.path.resolve() == (repo / "packs" / "en").resolve()
        assert found.config == repo / "pyproject.toml"
    # it wins over ./rules
    assert find_pack(environ={}).found_by == "pyproject.toml"


def test_pyproject_without_the_table_falls_through(repo):
    (repo / "pyproject.toml").write_text('[project]\nname = "app"\n')
    assert find_pack(environ={}).found_by == "./rules"


def test_nearest_pyproject_only(repo):
    (repo / "pyproject.toml").write_text('[tool.cleo-rules]\npack = "rules"\n')
    (repo / "src" / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    assert find_pack(cwd=repo / "src", environ={}).found_by == "bundled"
    assert find_pack(cwd=repo / "src" / "app", environ={}).found_by == "bundled"


def test_pyproject_may_name_an_installed_pack(repo):
    (repo / "pyproject.toml").write_text('[tool.cleo-rules]\npack = "cleo-en"\n')
    found = find_pack(environ={})
    assert found.found_by == "pyproject.toml" and found.path.resolve() == rules_dir().resolve()


def test_environment_variable_wins_over_pyproject(repo):
    (repo / "pyproject.toml").write_text('[tool.cleo-rules]\npack = "rules"\n')
    found = find_pack(environ={"CLEO_RULES_PACK": str(PACKS / "mini-1.1")})
    assert (found.path, found.found_by) == (PACKS / "mini-1.1", "CLEO_RULES_PACK")
    # relative to the working directory
    shutil.copytree(PACKS / "mini-2.0", repo / "other")
    assert find_pack(environ={"CLEO_RULES_PACK": "other"}).path == Path("other")


def test_argument_wins_over_everything(repo):
    found = find_pack(str(PACKS / "mini-2.0"), environ={"CLEO_RULES_PACK": str(PACKS / "mini-1.1")})
    assert (found.path, found.found_by) == (PACKS / "mini-2.0", "argument")


@pytest.mark.parametrize("text, message", [
    ('[tool.cleo-rules]\npack = "missing"\n', "[tool.cleo-rules] pack in pyproject.toml names 'missing'"),
    ('[tool.cleo-rules]\npack = 3\n', "[tool.cleo-rules] pack must be a directory or a pack's name"),
    ("[tool.cleo-rules\n", "cannot read pyproject.toml while looking for [tool.cleo-rules]"),
])
def test_bad_configuration_is_named(repo, text, message):
    (repo / "pyproject.toml").write_text(text)
    with pytest.raises((PackNotFound, UsageError), match=message.replace("[", r"\[").replace("]", r"\]")):
        find_pack(environ={})


def test_missing_environment_pack_is_named(repo):
    with pytest.raises(PackNotFound, match="CLEO_RULES_PACK names 'nowhere/'"):
        find_pack(environ={"CLEO_RULES_PACK": "nowhere/"})


# -- every command uses it and names it ---------------------------------------------------


def test_check_checks_the_team_pack_not_the_bundled_one(repo):
    """The walk-through's bug: in a repository whose rules/ has errors, `check` printed ok for the bundled pack."""
    text = (repo / "rules" / "corrections.yaml").read_text()
    (repo / "rules" / "corrections.yaml").write_text(text.replace("examples:", "exmaples:"))
    result = CliRunner().invoke(cli, ["check"])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "pack: mini 1.0.0 at rules (./rules)"
    assert "rules/corrections.yaml:6:5: error[E121]" in result.stderr


def test_check_names_the_pack_found(repo):
    result = run("check")
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("pack: mini 1.0.0 (") and first.endswith(") at rules (./rules)")


@pytest.mark.parametrize("argv", [
    ["classify", "Tell me more about that."],
    ["explain", "Tell me more about that."],
])
def test_rule_commands_name_the_pack(repo, argv):
    result = run(*argv)
    assert result.exit_code == 0, result.output
    pack_lines = [line for line in result.output.splitlines() if line.startswith("pack:")]
    assert len(pack_lines) == 1 and pack_lines[0].endswith(" at rules (./rules)") and " mini 1.0.0 (" in pack_lines[0]


def test_environment_variable_is_named(repo):
    result = run("classify", "Tell me more about that.", env={"CLEO_RULES_PACK": str(PACKS / "mini-2.0")})
    line = [x for x in result.output.splitlines() if x.startswith("pack:")][0]
    assert " mini 2.0.0 (" in line and line.endswith(f" at {PACKS / 'mini-2.0'} (CLEO_RULES_PACK)")


def test_pyproject_is_named(repo):
    (repo / "pyproject.toml").write_text('[tool.cleo-rules]\npack = "rules"\n')
    result = run("classify", "Tell me more about that.")
    line = [x for x in result.output.splitlines() if x.startswith("pack:")][0]
    assert line.endswith(" at rules ([tool.cleo-rules] in pyproject.toml)")


def test_json_carries_the_pack_used(repo):
    record = json.loads(run("classify", "Tell me more about that.", "--json").output)
    assert (record["pack"], record["pack_path"], record["pack_found_by"]) == ("mini", "rules", "./rules")
    doc = json.loads(run("check", "--json").output)
    assert doc["pack"]["name"] == "mini" and doc["pack"]["path"] == "rules" and doc["pack"]["found_by"] == "./rules"
    doc = json.loads(run("explain", "Tell me more about that.", "--json").output)
    assert doc["pack"]["found_by"] == "./rules" and doc["pack"]["version"] == "1.0.0"
    lines = run("classify", "--jsonl", env=None).output  # no input: nothing out
    assert lines == ""


def test_corpus_commands_use_the_found_pack(repo):
    result = run("corpus", "build")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith("pack: mini 1.0.0 (")
    assert (repo / "corpus" / "generated").is_dir() is False  # mini has no templates: nothing to write
    assert "no templates" in result.output
    check = run("corpus", "check", "--json")
    assert json.loads(check.output)["pack"]["found_by"] == "./rules"


def test_corpus_diff_compares_against_the_found_pack(repo):
    result = run("corpus", "diff", str(PACKS / "mini-1.1"))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].endswith("rules (./rules)")
