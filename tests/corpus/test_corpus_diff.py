"""`corpus diff OLD NEW`: what a rule change does to the corpus and to real traffic, side by side."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from cleo_rules import load_pack
from cleo_rules.cli import cli
from cleo_rules.corpus import diff_packs
from cleo_rules.resources import rules_dir

RULES = rules_dir()
CORPUS = RULES.parent / "corpus"
WIDEN = ("      - '\\bbeen there,? done that\\b'\n",
         "      - '\\bbeen there,? done that\\b'\n      - '\\btry (?:that|this|it)\\b'\n")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def widened(tmp_path):
    """A copy of the pack whose already-tried correction also catches 'try that'."""
    shutil.copytree(RULES, tmp_path / "new")
    path = tmp_path / "new" / "corrections.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count(WIDEN[0]) == 1
    path.write_text(text.replace(*WIDEN), encoding="utf-8")
    return tmp_path / "new"


def test_same_pack_no_changes():
    result = run("corpus", "diff", RULES, RULES)
    assert result.exit_code == 0
    assert result.output.splitlines()[-1].startswith("no changes: ")


def test_widened_correction_shows_broken_cases_side_by_side(widened):
    result = run("corpus", "diff", RULES, widened, "--corpus", CORPUS)
    assert result.exit_code == 0
    out = result.output
    assert out.splitlines()[0].startswith("corpus diff: cleo-en ")
    broken = [line for line in out.splitlines() if line.startswith("BROKEN  ")]
    assert broken and all("/" in line.split()[1] for line in broken)
    block = out[out.index(broken[0]):].split("\n\n")[0].splitlines()
    assert block[1].strip().startswith(("history", "expected"))
    assert any(line.split()[:2] == ["old", "new"] for line in block)
    kind = next(line for line in block if line.startswith("! kind"))
    assert kind.split()[2:] == ["follow_up", "correction"]
    rule = next(line for line in block if line.startswith("! rule"))
    assert rule.split()[-1] == "correction.already-tried"
    summary = out.splitlines()[-1]
    assert f"{len(broken)} broken" in summary and "change" in summary


def test_exit_code_flag(widened):
    assert run("corpus", "diff", RULES, widened, "--exit-code").exit_code == 1
    assert run("corpus", "diff", RULES, RULES, "--exit-code").exit_code == 0


def test_jsonl_messages_are_compared(widened, tmp_path):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text("\n".join([
        json.dumps({"message": "Could we try this one instead?", "history": ["Which van insurer should we use?"]}),
        json.dumps("What is the excess on the Zego policy?"),
        "",
    ]), encoding="utf-8")
    report = diff_packs(load_pack(RULES), load_pack(widened, check_examples=False), corpus_dir=CORPUS,
                        jsonl=[traffic])
    mine = [c for c in report.changes if c.case.source.startswith(str(traffic))]
    assert len(mine) == 1
    change = mine[0]
    assert change.verdict == "changed" and not change.expected
    assert change.old.kind == "follow_up" and change.new.kind == "correction"
    assert change.old.query == "Which van insurer should we use?\nCould we try this one instead?"
    assert change.new.query == "Could we try this one instead?"
    assert report.from_files == {str(traffic): 2}


def test_jsonl_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"message": "ok"}\n{"msg": 1}\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["corpus", "diff", str(RULES), str(RULES), "--jsonl", str(bad)])
    assert result.exit_code != 0
    assert f"{bad}:2: each line must be a JSON string or an object with a \"message\" string" in str(result.exception)


def test_fixed_when_the_new_pack_repairs_what_the_old_broke(widened):
    report = diff_packs(load_pack(widened, check_examples=False), load_pack(RULES), corpus_dir=CORPUS)
    assert report.changes and {c.verdict for c in report.changes} == {"fixed"}
    assert report.counts()["fixed"] == len(report.changes)


def test_json_document(widened):
    doc = json.loads(run("corpus", "diff", RULES, widened, "--json").output)
    assert {"old", "new", "compared", "summary", "changes", "rule_changes"} <= set(doc)
    first = doc["changes"][0]
    assert first["verdict"] == "broken"
    assert {"id", "message", "old", "new", "expected", "source"} <= set(first)
    assert first["new"]["rule"] == "correction.already-tried"


def test_old_pack_from_git(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    shutil.copytree(RULES, repo / "rules")
    shutil.copytree(CORPUS, repo / "corpus")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["-C", str(repo), "add", "."], check=True)
    subprocess.run(git + ["-C", str(repo), "commit", "-q", "-m", "pack"], check=True)
    path = repo / "rules" / "corrections.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(*WIDEN), encoding="utf-8")
    monkeypatch.chdir(repo)
    result = run("corpus", "diff", "HEAD:rules", "rules")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].split("  ->  ")[0].endswith(" HEAD:rules")
    assert "BROKEN  correction.already-tried/r-" in result.output
    bad = CliRunner().invoke(cli, ["corpus", "diff", "nosuchrev:rules", "rules"])
    assert bad.exit_code != 0 and "'nosuchrev' is not a revision of the git repository" in str(bad.exception)
