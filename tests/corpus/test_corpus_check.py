"""`corpus build` / `corpus check` / `check`: the corpus passes, and the checker can fail.

Each failure test edits a copy of the bundled pack and its corpus, the way a
designer would, and asserts that the check exits non-zero naming the rule and
the cases.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cleo_rules import load_pack
from cleo_rules.cli import cli
from cleo_rules.corpus import build_corpus, run_corpus
from cleo_rules.corpus.judge import Evaluator
from cleo_rules.corpus.model import Case
from cleo_rules.resources import rules_dir

RULES = rules_dir()
CORPUS = RULES.parent / "corpus"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def pack_copy(tmp_path):
    """A copy of rules/ and corpus/ side by side: returns the pack directory."""
    shutil.copytree(RULES, tmp_path / "rules")
    shutil.copytree(CORPUS, tmp_path / "corpus")
    return tmp_path / "rules"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} not found once in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


# -- the default pack's corpus ---------------------------------------------------


@pytest.fixture(scope="module")
def report():
    return run_corpus(load_pack())


def test_default_corpus_passes(report):
    assert report.ok, report.format()
    assert not report.stale and not report.problems


def test_every_rule_is_covered_both_ways_with_twenty_cases_on_average(report):
    for r in report.rules:
        assert r.positives > 0 and r.negatives > 0, r.rule
        assert r.tp > 0, r.rule
    n = len(report.rules)
    assert sum(r.positives for r in report.rules) / n >= 20
    assert sum(r.negatives for r in report.rules) / n >= 20


def test_every_correction_has_request_forms_that_are_no_corrections(report):
    corrections = [r.id for r in load_pack().corrections]
    requests = {c.group for c in (o.case for o in report.outcomes)
                if (c.not_kind == "correction" or c.expect == "follow_up" and c.history) and c.not_rules
                and c.id.split("/")[1].startswith("r-")}
    assert set(corrections) <= requests


def test_cross_rule_cases_share_words_with_corrections(report):
    cross = [o.case.message.lower() for o in report.outcomes if o.case.id.startswith("cross/s-")]
    assert any("tried" in m for m in cross) and any("said no" in m for m in cross)


def test_check_runs_the_corpus():
    result = run("check")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].startswith("pack: cleo-en ")
    assert lines[1].startswith("ok: ") and "corrections" in lines[1]
    assert lines[2].startswith("corpus ok: ") and "all covered both ways; corpus up to date" in lines[2]


def test_check_json_carries_the_corpus_and_the_pack_used():
    doc = json.loads(run("check", "--json").output)
    assert doc["ok"] is True and doc["corpus"]["ok"] is True
    assert doc["corpus"]["summary"]["failed"] == 0
    assert {"pack", "corrections", "follow_ups", "vocabulary_sets"} <= set(doc)
    pack = load_pack()
    assert doc["pack"]["name"] == "cleo-en" and doc["pack"]["version"] == pack.version
    assert doc["pack"]["hash"] == pack.content_hash
    assert {"path", "found_by"} <= set(doc["pack"])


def test_corpus_check_prints_the_table_and_summary():
    result = run("corpus", "check")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].startswith("pack: cleo-en ")
    assert lines[1].startswith("corpus check: cleo-en ")
    assert lines[3].split() == ["rule", "pos", "neg", "TP", "FN", "TN", "FP"]
    assert any(line.startswith("correction.already-tried ") for line in lines)
    assert lines[-1].startswith("ok: ") and "FP 0 FN 0" in lines[-1]


def test_corpus_check_json_is_one_document():
    doc = json.loads(run("corpus", "check", "--json").output)
    assert doc["ok"] is True
    assert {"pack", "corpus", "summary", "rules", "groups", "stale", "problems"} <= set(doc)
    first = doc["rules"][0]
    assert {"rule", "file", "line", "positives", "negatives", "tp", "fn", "tn", "fp", "failures"} <= set(first)


# -- the checker fails, naming the rule and the cases ----------------------------------


def delete_line(path: Path, fragment: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if fragment in line]
    assert len(hits) == 1, f"{fragment!r} is on {len(hits)} lines of {path}"
    del lines[hits[0]]
    path.write_text("".join(lines), encoding="utf-8")


def test_deleting_a_pattern_fails(pack_copy):
    delete_line(pack_copy / "corrections.yaml", "(?:tried|tested|done) (?:that|this|it|those|these)(?: one| ones)? already")
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    out = result.output
    assert "FAIL correction.already-tried" in out
    fn = [line for line in out.splitlines() if line.startswith("  FN    correction.already-tried/p-")]
    assert fn, out
    assert "already" in fn[0].lower() and "expected correction by correction.already-tried" in out
    assert out.rstrip().splitlines()[-1].startswith("FAILED: ")


def test_widening_a_correction_to_catch_try_that_one_fails(pack_copy):
    edit(pack_copy / "corrections.yaml", "      - '\\bbeen there,? done that\\b'\n",
         "      - '\\bbeen there,? done that\\b'\n      - '\\btry (?:that|this|it)\\b'\n")
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    out = result.output
    # the rule file's own request forms, placed
    assert "error[E136] correction.already-tried at /rules/0/request_forms/0" in out
    # and the generated request forms, each named, with the rule that took it
    fps = [line for line in out.splitlines() if line.startswith("  FP    correction.already-tried/r-")]
    assert len(fps) >= 5, out
    assert "expected any kind but correction, got correction by correction.already-tried on" in out
    assert any("try that one" in line.lower() for line in fps)


def test_widening_fails_check_too(pack_copy):
    edit(pack_copy / "corrections.yaml", "      - '\\bbeen there,? done that\\b'\n",
         "      - '\\bbeen there,? done that\\b'\n      - '\\btry (?:that|this|it)\\b'\n")
    result = run("check", pack_copy)
    assert result.exit_code == 1
    assert "FP    correction.already-tried/r-" in result.output
    assert "corpus FAILED: " in result.output


NEW_RULE = """
  - id: correction.not-needed
    description: The user no longer needs it.
    pattern: '\\bwe (?:no longer|don''t) need (?:that|it)\\b'
"""
NEW_RULE_EXAMPLES = """    examples: ["We no longer need that."]
    counterexamples: ["Do we need that?"]
    request_forms: ["We need that one, please."]
"""


def test_adding_a_rule_without_examples_fails(pack_copy):
    with open(pack_copy / "corrections.yaml", "a", encoding="utf-8") as fh:
        fh.write(NEW_RULE)
    result = subprocess.run([sys.executable, "-m", "cleo_rules", "corpus", "check", str(pack_copy)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    index = len(load_pack().corrections)  # the new rule is appended after the bundled ones
    assert f"error[E122] correction.not-needed at /rules/{index}: missing required key 'examples'" in result.stderr


def test_adding_a_rule_without_cases_fails(pack_copy):
    with open(pack_copy / "corrections.yaml", "a", encoding="utf-8") as fh:
        fh.write(NEW_RULE + NEW_RULE_EXAMPLES)
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    assert "error[E220] correction.not-needed" in result.output
    assert "no positive and no negative case in the corpus" in result.output
    pack = load_pack()
    assert f"{len(pack.rules) + len(pack.referent_rules)} covered both ways, 1 not" in result.output


def test_adding_templates_without_building_is_stale_then_build_fixes_it(pack_copy):
    with open(pack_copy / "corrections.yaml", "a", encoding="utf-8") as fh:
        fh.write(NEW_RULE + NEW_RULE_EXAMPLES + """    generate:
      positive: ["We no longer need {that|it}{end?}", "We don't need {that|it} {|anymore}{end?}"]
      negative: ["We no longer need {topic} for {place}, can you cancel the order?"]
      request: ["Do we need {that_one}?", "We need {that_one}{pls?}{end?}"]
""")
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    assert "stale: the corpus is stale: run `cleo-rules corpus build`" in result.output
    assert "correction.not-needed: no generated file yet" in result.output
    existing = len(list((pack_copy.parent / "corpus" / "generated").glob("*.yaml")))
    built = run("corpus", "build", pack_copy)
    assert built.exit_code == 0 and f"1 file written, {existing} unchanged, 0 removed" in built.output
    again = run("corpus", "check", pack_copy)
    assert again.exit_code == 0, again.output
    assert "correction.not-needed " in again.output


def test_changing_a_template_makes_only_its_rule_stale(pack_copy):
    edit(pack_copy / "corrections.yaml", '"Been there, done that{end?}"', '"Been there, done that, mate{end?}"')
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    stale = [line for line in result.output.splitlines() if "changed since the file was built" in line]
    assert len(stale) == 1 and stale[0].strip().startswith("correction.already-tried:")


def test_changing_a_pattern_does_not_make_the_corpus_stale(pack_copy):
    edit(pack_copy / "corrections.yaml", "      - '\\bbeen there,? done that\\b'",
         "      - '\\bbeen there,? done (?:that|it)\\b'")
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 0, result.output


def test_editing_a_generated_file_is_reported(pack_copy):
    path = pack_copy.parent / "corpus" / "generated" / "vocab.nod.yaml"
    text = path.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("  - {"))
    path.write_text(text.replace(line, line.replace('"message": "', '"message": "Well, '), 1), encoding="utf-8")
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    assert "vocab.nod: the generated file was edited by hand" in result.output


def remove_rule(path: Path, rule_id: str) -> None:
    text = path.read_text(encoding="utf-8")
    start = text.index(f"  - id: {rule_id}\n")
    end = text.find("\n  - id: ", start + 1)
    path.write_text(text[:start] + (text[end + 1:] if end != -1 else ""), encoding="utf-8")


def test_removing_a_rule_leaves_an_orphan_that_build_removes(pack_copy):
    remove_rule(pack_copy / "follow_ups.yaml", "follow_up.thanks-for")
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    assert "rule follow_up.thanks-for is not in the pack or has no templates any more" in result.output
    built = run("corpus", "build", pack_copy)
    assert "  removed " in built.output and "follow_up.thanks-for.yaml" in built.output
    assert not (pack_copy.parent / "corpus" / "generated" / "follow_up.thanks-for.yaml").exists()
    assert run("corpus", "check", pack_copy).exit_code == 0


def test_removing_a_rule_that_hand_written_cases_name(pack_copy):
    remove_rule(pack_copy / "follow_ups.yaml", "follow_up.nod-plus")
    run("corpus", "build", pack_copy)
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    assert "error[E213] follow_up.nod-plus: case regression/long-nod-with-topic names rule follow_up.nod-plus, " \
           "which is not in pack cleo-en" in result.output


def test_template_problems_are_placed(pack_copy):
    edit(pack_copy / "corrections.yaml", '"Been there, done that{end?}"', '"Been there, done {thatt}{end?}"')
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    assert "error[E201] correction.already-tried at /rules/0/generate/positive/3" in result.output
    assert "unknown slot {thatt}" in result.output and "did you mean {that}?" in result.output


# -- build -----------------------------------------------------------------------------


def test_build_is_deterministic_and_leaves_hand_written_files_alone(tmp_path):
    pack = load_pack()
    a, b = tmp_path / "a", tmp_path / "b"
    b.mkdir()
    (b / "regressions.yaml").write_text("kind: corpus\ncases: []\n", encoding="utf-8")
    build_corpus(pack, a)
    build_corpus(pack, b)
    files_a = sorted(p.name for p in (a / "generated").iterdir())
    assert files_a == sorted(p.name for p in (b / "generated").iterdir())
    for name in files_a:
        assert (a / "generated" / name).read_bytes() == (b / "generated" / name).read_bytes()
    assert (b / "regressions.yaml").read_text(encoding="utf-8") == "kind: corpus\ncases: []\n"
    again = build_corpus(pack, a)
    assert not again.written and len(again.unchanged) == len(files_a)


def test_checked_in_corpus_matches_a_fresh_build(tmp_path):
    pack = load_pack()
    build_corpus(pack, tmp_path)
    for path in sorted((tmp_path / "generated").iterdir()):
        fresh = path.read_text(encoding="utf-8").split("\n", 1)[1]  # the first line names the schema's path
        assert fresh == (CORPUS / "generated" / path.name).read_text(encoding="utf-8").split("\n", 1)[1]


# -- hand-written cases ------------------------------------------------------------------


def test_hand_written_case_naming_an_unknown_rule(pack_copy):
    with open(pack_copy.parent / "corpus" / "regressions.yaml", "a", encoding="utf-8") as fh:
        fh.write('  - {id: regression/typo, message: "Tried it.", expect: correction, rule: correction.alredy-tried}\n')
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    assert "error[E213] correction.alredy-tried: case regression/typo names rule correction.alredy-tried" in result.output


def test_hand_written_case_that_contradicts_a_generated_one(pack_copy):
    with open(pack_copy.parent / "corpus" / "regressions.yaml", "a", encoding="utf-8") as fh:
        fh.write('  - {id: regression/clash, message: "Been there, done that!", expect: substantive}\n')
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    assert "error[E223] correction.already-tried: case correction.already-tried/p-" in result.output
    assert "(\"Been there, done that!\") expects correction, but regression/clash expects substantive" in result.output


def test_hand_written_file_is_schema_checked_with_positions(pack_copy):
    with open(pack_copy.parent / "corpus" / "regressions.yaml", "a", encoding="utf-8") as fh:
        fh.write('  - {id: regression/bad, message: "Tell me more.", expect: followup}\n')
    result = run("corpus", "check", pack_copy)
    assert result.exit_code == 1
    assert "regressions.yaml" in result.output and "error[E124]" in result.output
    assert "'followup' is not one of" in result.output


def test_queries_are_checked_when_there_is_a_history():
    pack = load_pack()
    ev = Evaluator(pack)
    history = ("Compare the two van insurance quotes",)
    good = Case(id="t/1", message="Yes, the second one.", expect="follow_up", history=history)
    assert ev.run(good).ok
    wrong_anchor = Case(id="t/2", message="Yes, the second one.", expect="follow_up",
                        history=history + ("Tell me more",), anchor="Which van insurer?")
    out = ev.run(wrong_anchor)
    assert out.reasons == ("query combined with \"Compare the two van insurance quotes\", "
                           "expected \"Which van insurer?\"",)
    no_anchor = Case(id="t/3", message="Yes, the second one.", expect="follow_up", history=("ok",))
    assert ev.run(no_anchor).reasons[0].startswith("query not combined: no earlier message was taken as substantive")
    exact = Case(id="t/4", message="We tried that one already.", expect="correction",
                 history=history, query="We tried that one already.")
    assert ev.run(exact).ok


def test_rule_text_lists_the_failing_cases_for_pytest(pack_copy):
    edit(pack_copy / "corrections.yaml", "      - '\\bbeen there,? done that\\b'\n",
         "      - '\\bbeen there,? done that\\b'\n      - '\\btry (?:that|this|it)\\b'\n")
    rep = run_corpus(load_pack(pack_copy, check_examples=False))
    text = rep.rule_text("correction.already-tried")
    assert text.startswith("correction.already-tried (")
    assert "FP    correction.already-tried/r-" in text
    assert rep.rule_text("follow_up.why-that") == ""


def test_a_rule_that_fires_on_none_of_its_positives_is_dead(pack_copy):
    path = pack_copy / "follow_ups.yaml"
    line = next(x for x in path.read_text(encoding="utf-8").splitlines()
                if x.startswith("    pattern: '^(?:\\w+[,.!]? ){0,2}(?:thanks|thank you|"))
    edit(path, line, "    pattern: '\\bzzqxj\\b'")
    report = run_corpus(load_pack(pack_copy, check_examples=False))
    (p,) = [p for p in report.problems if p.code == "E221"]
    assert p.rule == "follow_up.thanks-for" and p.message.startswith("fires on none of its ")


def test_unreadable_generated_file(pack_copy):
    path = pack_copy.parent / "corpus" / "generated" / "vocab.nod.yaml"
    path.write_text("kind: [corpus\n", encoding="utf-8")
    report = run_corpus(load_pack(pack_copy))
    (p,) = [p for p in report.problems if p.code == "E210"]
    assert p.file.endswith("vocab.nod.yaml") and p.message.startswith("generated corpus file cannot be read")


def test_generated_case_without_an_id(pack_copy):
    path = pack_copy.parent / "corpus" / "generated" / "vocab.nod.yaml"
    text = path.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith('  - {"id": '))
    path.write_text(text.replace(line, '  - {"message": "Yes, that works.", "expect": "follow_up"}', 1),
                    encoding="utf-8")
    report = run_corpus(load_pack(pack_copy))
    (p,) = [p for p in report.problems if p.code == "E211"]
    assert p.message.startswith("case #") and "lacks `id` (a string)" in p.message


def test_two_cases_with_one_id(pack_copy):
    path = pack_copy.parent / "corpus" / "regressions.yaml"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('  - id: regression/loyalty-scheme-2023\n    message: "Which loyalty scheme did we run?"\n'
                 '    expect: substantive\n')
    report = run_corpus(load_pack(pack_copy))
    found = [p for p in report.problems if p.code == "E212"]
    assert found and "case id 'regression/loyalty-scheme-2023' is used twice" in found[0].message


def test_corpus_build_never_writes_into_the_package(capsys):
    """The checkout's package directory stands in for an installed one (tests/project/test_packaging.py installs a
    wheel)."""
    from cleo_rules.cli import main
    from cleo_rules.resources import package_dir

    target = package_dir() / "_data" / "corpus"
    with pytest.raises(SystemExit) as stop:
        main(["corpus", "build", str(RULES), "--out", str(target)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "corpus build never writes into the installed package; give --out DIR" in err
    assert not (package_dir() / "_data").exists()


@pytest.mark.parametrize("setting, template", [
    ("combine", "{message}\n{anchor}\n{referent}\n{reply}\n{topic}"),
    ("combine_resolved", "{message}\n{referent}"),
    ("combine_resolved", "{referent} {anchor} {message}"),
])
def test_the_corpus_judges_each_follow_up_by_the_template_it_used(pack_copy, setting, template):
    """Every documented query template may be changed: the corpus, judged by the template each decision used
    over its own parts, still passes, but for a hand-written case that writes out its query (a judge that rendered
    ``combine`` for every follow-up failed hundreds of generated ones)."""
    manifest = pack_copy / "pack.yaml"
    text = manifest.read_text(encoding="utf-8")
    line = next(l for l in text.splitlines() if l.lstrip().startswith(f"{setting}:"))
    manifest.write_text(text.replace(line, f"  {setting}: {json.dumps(template)}"), encoding="utf-8")
    pack = load_pack(pack_copy)
    assert getattr(pack.settings, setting) == template
    report = run_corpus(pack)
    failed = [o for o in report.outcomes if o.reasons]
    # only a hand-written case that spells out its expected query may fail: it names the old template's result
    assert all(not o.case.generated and o.case.query is not None for o in failed), report.format()[:3000]
    assert report.generated > 4000 and not report.problems and not report.stale
