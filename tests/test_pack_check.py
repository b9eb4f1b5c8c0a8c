"""The one verdict on a compiled pack (cleo_rules.pack_check): its own examples, then its corpus.

`check`, `corpus check`, `packs --check` and the serving gate all take it;
here it is judged directly, on copies of the small test pack.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cleo_rules.pack.compile import load_pack
from cleo_rules.pack_check import Verdict, check_compiled

from helpers import MINI

WRONG = """\
  - id: regression/wrong
    message: "Go with the other one."
    expect: substantive
"""
RIGHT = """\
  - id: regression/right
    message: "We tried that one already."
    expect: correction
"""


@pytest.fixture
def pack_dir(tmp_path) -> Path:
    d = tmp_path / "mini"
    shutil.copytree(MINI, d)
    return d


def corpus(pack_dir: Path, *cases: str) -> Path:
    where = pack_dir.parent / "corpus"
    where.mkdir(exist_ok=True)
    (where / "regressions.yaml").write_text("kind: corpus\ncases:\n" + "".join(cases), encoding="utf-8")
    return where


def test_a_pack_without_a_corpus_is_judged_by_its_examples(pack_dir):
    verdict = check_compiled(load_pack(pack_dir, check_examples=False))
    assert verdict == Verdict((), None) and verdict.ok and verdict.errors() == []
    assert verdict.corpus_view() is None


def test_a_failing_example_is_a_problem_placed_in_its_file(pack_dir):
    path = pack_dir / "vocabulary.yaml"
    path.write_text(path.read_text().replace('"Go with the other one."]', '"Go with the other one.", "Pick a card."]'))
    verdict = check_compiled(load_pack(pack_dir, check_examples=False))
    assert not verdict.ok
    (p,) = verdict.problems
    assert (p.code, p.rule, Path(p.file).name) == ("E134", "vocab.choice", "vocabulary.yaml") and p.line > 0
    assert verdict.errors() == [p]


def test_the_corpus_beside_the_pack_is_run_and_a_failing_case_fails_the_pack(pack_dir):
    where = corpus(pack_dir, RIGHT, WRONG)
    verdict = check_compiled(load_pack(pack_dir, check_examples=False))
    report = verdict.corpus_report
    assert report is not None and report.corpus_dir == where and not report.ok and not verdict.ok
    assert [o.case.id for o in report.failed] == ["regression/wrong"]
    failing = [p for p in verdict.errors() if p.code == "E230"]
    assert [(Path(p.file).name, p.line, p.rule) for p in failing] == [("regressions.yaml", 6, "vocab.choice")]


def test_a_passing_corpus_passes(pack_dir):
    corpus(pack_dir, RIGHT)
    verdict = check_compiled(load_pack(pack_dir, check_examples=False))
    assert verdict.corpus_report is not None and not verdict.corpus_report.failed
    # a hand-written corpus of one case leaves rules untested both ways: those are corpus problems
    assert verdict.ok == verdict.corpus_report.ok
    assert {p.code for p in verdict.errors()} <= {"E220", "E221"}


def test_corpus_false_judges_the_examples_only(pack_dir):
    corpus(pack_dir, WRONG)
    assert check_compiled(load_pack(pack_dir, check_examples=False), corpus=False) == Verdict((), None)


def test_a_corpus_named_but_missing_is_a_problem(pack_dir, tmp_path):
    verdict = check_compiled(load_pack(pack_dir, check_examples=False), tmp_path / "nowhere")
    assert verdict.corpus_report is not None and not verdict.ok
    assert "E203" in [p.code for p in verdict.errors()]


def test_the_corpus_view_lists_the_packs_own_problems_first(pack_dir):
    path = pack_dir / "vocabulary.yaml"
    path.write_text(path.read_text().replace('"Go with the other one."]', '"Go with the other one.", "Pick a card."]'))
    corpus(pack_dir, WRONG)
    verdict = check_compiled(load_pack(pack_dir, check_examples=False))
    view = verdict.corpus_view()
    assert view is not None and view.problems[: len(verdict.problems)] == list(verdict.problems)
    assert verdict.corpus_report is not None and verdict.corpus_report.problems == view.problems[len(verdict.problems):]


def test_failing_cases_beyond_the_limit_are_counted(pack_dir):
    many = "".join(WRONG.replace("regression/wrong", f"regression/wrong-{n}") for n in range(4))
    corpus(pack_dir, many)
    verdict = check_compiled(load_pack(pack_dir, check_examples=False))
    listed = [p for p in verdict.errors(max_cases=2) if p.code == "E230"]
    assert len(listed) == 3 and listed[-1].message.startswith("corpus case … and 2 more")


# -- check: the whole run in one call, shown by check, corpus check and packs --check ------------------------


def test_check_finds_compiles_and_judges_in_one_call(pack_dir):
    from cleo_rules.pack.discovery import FoundPack
    from cleo_rules.pack_check import check

    corpus(pack_dir, RIGHT, WRONG)
    result = check(pack_dir)
    assert isinstance(result.found, FoundPack) and result.found.path == pack_dir and result.found.found_by == "argument"
    assert result.pack is not None and result.error is None and not result.ok
    assert result.verdict == check_compiled(result.pack)
    assert result.errors() == result.verdict.errors() and result.as_error() is not None
    doc = result.to_dict()
    assert (doc["ok"], doc["pack"]["name"], doc["pack"]["hash"]) == (False, "mini", result.pack.content_hash)
    assert doc["corpus"] == result.verdict.corpus_report.to_dict()
    assert result.corpus_dict()["pack"] == doc["pack"] and result.corpus_dict()["ok"] is False
    findings = result.findings()
    assert findings.command == "check" and not findings.ok and findings.corpus_ran
    assert {f.code for f in findings.findings} == {p.code for p in result.errors()}


def test_check_says_why_no_corpus_ran(pack_dir):
    from cleo_rules.pack_check import check

    result = check(pack_dir)
    assert result.ok and result.as_error() is None and result.verdict == Verdict((), None)
    assert result.skipped is not None and result.skipped.startswith(f"no corpus at {pack_dir.parent / 'corpus'}")
    assert result.to_dict()["corpus"] == {"skipped": result.skipped}
    not_asked = check(pack_dir, corpus=False)
    assert not_asked.skipped is None and not_asked.to_dict()["corpus"] == {"skipped": "--no-corpus"}
    required = check(pack_dir, corpus_required=True)  # as corpus check: a missing corpus is a finding
    assert not required.ok and required.errors()[0].code == "E203"


def test_a_pack_that_does_not_compile_is_a_result_not_an_exception(pack_dir):
    from cleo_rules.errors import PackError
    from cleo_rules.pack_check import check

    path = pack_dir / "corrections.yaml"
    path.write_text(path.read_text().replace("kind:", "kind: [", 1))
    result = check(pack_dir)
    assert isinstance(result.error, PackError) and result.pack is None and result.verdict is None and not result.ok
    assert result.as_error() is result.error and result.errors() == [p for p in result.error.problems
                                                                     if p.severity == "error"]
    doc = result.to_dict()
    assert doc == {"ok": False, "pack": {"name": "mini", "version": "1.0.0", "hash": None, **result.found.to_dict()},
                   "problems": [p.to_dict() for p in result.error.problems]}
    assert result.corpus_dict() == doc
    assert result.findings().summary == f"cleo-rules check: {len(result.errors())} error" + (
        "s" if len(result.errors()) != 1 else "") + " in the pack"
    assert result.findings("corpus check").summary == "cleo-rules corpus check: the pack does not compile"


def test_a_version_outside_the_range_required_is_the_results_error(pack_dir):
    from cleo_rules.errors import PackNotFound, PackVersionError
    from cleo_rules.pack_check import check

    result = check(pack_dir, require=">=2")
    assert isinstance(result.error, PackVersionError) and not result.ok
    assert check(pack_dir, require="^1").ok
    with pytest.raises(PackNotFound):
        check(pack_dir / "missing")


#: a corpus covering every rule of the small test pack both ways, passing
MINI_CORPUS = """\
kind: corpus
cases:
  - {id: p/tried, message: "We tried that one already.", expect: correction, rule: correction.already-tried}
  - {id: n/tried, message: "Have you tried the Leeds office?", expect: substantive, not: correction.already-tried}
  - {id: p/more, message: "Tell me more about that.", expect: follow_up, rule: follow_up.tell-me-more}
  - {id: n/more, message: "Tell me about the staff rota for December", expect: substantive, not: follow_up.tell-me-more}
  - {id: p/nod, message: "Yes, that works.", expect: follow_up, rule: vocab.nod}
  - {id: n/nod, message: "Yes, and book the van for Friday", expect: substantive, not: vocab.nod}
  - {id: p/choice, message: "The second one, please.", expect: follow_up, rule: vocab.choice}
  - {id: n/choice, message: "The second invoice is overdue", expect: substantive, not: vocab.choice}
  - {id: p/request, message: "Could you show me, please?", expect: follow_up, rule: vocab.request}
  - {id: n/request, message: "Could you show me the rota?", expect: substantive, not: vocab.request}
  - {id: p/anaphor, message: "That is it, and this.", expect: follow_up, rule: vocab.anaphor}
  - {id: n/anaphor, message: "This invoice is overdue", expect: substantive, not: vocab.anaphor}
  - {id: p/filler, message: "Sounds good to me, and that is it.", expect: follow_up, rule: vocab.filler}
  - {id: n/filler, message: "The invoice is overdue", expect: substantive, not: vocab.filler}
"""


def judged_pack(pack_dir: Path, how: str) -> Path:
    """The small test pack with a corpus beside it, as version 9.0.0 (so ``packs --require ^9`` lists it alone):
    passing, failing (an example and a corpus case) or not compiling."""
    where = pack_dir.parent / "corpus"
    where.mkdir()
    (where / "regressions.yaml").write_text(MINI_CORPUS, encoding="utf-8")
    manifest = pack_dir / "pack.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1.0.0", "version: 9.0.0", 1))
    if how == "fails":
        vocab = pack_dir / "vocabulary.yaml"
        vocab.write_text(vocab.read_text().replace('"Go with the other one."]',
                                                   '"Go with the other one.", "Pick a card."]'))
        (where / "regressions.yaml").write_text(MINI_CORPUS.replace("expect: correction,", "expect: substantive,"))
    elif how == "does not compile":
        path = pack_dir / "corrections.yaml"
        path.write_text(path.read_text().replace("kind:", "kind: [", 1))
    return pack_dir


@pytest.mark.parametrize("how", ["passes", "fails", "does not compile"])
def test_check_corpus_check_and_packs_check_give_one_verdict_through_one_call(how, pack_dir, monkeypatch, capsys):
    import json

    import cleo_rules.pack_check
    from cleo_rules.cli import main

    pack = judged_pack(pack_dir, how)
    calls = []
    real = cleo_rules.pack_check.check

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        calls.append(result)
        return result

    monkeypatch.setattr(cleo_rules.pack_check, "check", spy)
    runs = {}
    for name, argv in {"check": ["check", str(pack), "--json"],
                       "corpus check": ["corpus", "check", str(pack), "--json"],
                       "packs --check": ["packs", str(pack), "--check", "--require", "^9", "--json"]}.items():
        with pytest.raises(SystemExit) as exc:
            main(argv)
        runs[name] = (exc.value.code, json.loads(capsys.readouterr().out))
    assert len(calls) == 3 and all(r.found.path == pack for r in calls)
    ok = how == "passes"
    assert [r.ok for r in calls] == [ok] * 3
    errors = [[p.to_dict() for p in r.errors()] for r in calls]
    assert errors[0] == errors[1] == errors[2] and bool(errors[0]) != ok
    assert {code for code, _ in runs.values()} == {0 if ok else 1}
    (listed,) = runs["packs --check"][1]["packs"]
    assert runs["check"][1]["ok"] == runs["corpus check"][1]["ok"] == listed["ok"] == ok
    if ok:
        assert listed["status"] == f"ok ({calls[0].pack.content_hash})"
    else:
        error = calls[2].as_error()
        assert error is not None
        lead = error.problems[0].format().split("\n")[0]
        assert listed["status"].startswith(f"error: {lead}")
        if how == "fails":
            assert {p["code"] for p in errors[0]} == {"E134", "E230"}


@pytest.mark.parametrize("broken", ["a file's rule", "a file's kind", "the version"])
def test_the_findings_of_a_pack_that_is_refused_read_no_file_again(pack_dir, monkeypatch, broken):
    """What the compiler read of a pack is what its findings' outline is made of: each file is read once."""
    import cleo_rules.reading.load as load
    from cleo_rules.pack_check import check

    if broken == "a file's rule":
        (pack_dir / "corrections.yaml").write_text(
            (pack_dir / "corrections.yaml").read_text(encoding="utf-8").replace("description:", "descripton:", 1),
            encoding="utf-8")
    elif broken == "a file's kind":
        (pack_dir / "follow_ups.yaml").write_text("kind: greetings\nrules: []\n", encoding="utf-8")
    opened: list[str] = []

    def counted(path, *args, **kwargs):
        opened.append(Path(path).name)
        return open(path, *args, **kwargs)

    monkeypatch.setattr(load, "open", counted, raising=False)
    result = check(pack_dir, corpus=False, require=">=2" if broken == "the version" else None)
    assert result.error is not None
    findings = result.findings()
    assert {f.name for f in findings.files} == {"vocabulary.yaml", "corrections.yaml", "follow_ups.yaml"}
    assert [r.id for r in findings.rules] != []
    assert sorted(set(opened)) == sorted(opened)  # none twice
    if broken != "the version":  # a pack that compiles may come from the compiled-pack cache, reading none
        assert sorted(opened) == ["corrections.yaml", "follow_ups.yaml", "pack.yaml", "vocabulary.yaml"]
