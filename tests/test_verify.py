"""The one verdict on a compiled pack (cleo_rules.verify): its own examples, then its corpus.

`check`, `corpus check`, `packs --check` and the serving gate all take it;
here it is judged directly, on copies of the small test pack.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cleo_rules.pack.compile import load_pack
from cleo_rules.verify import Verdict, verify

MINI = Path(__file__).parent / "packs" / "mini-1.0"
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
    verdict = verify(load_pack(pack_dir, check_examples=False))
    assert verdict == Verdict((), None) and verdict.ok and verdict.errors() == []
    assert verdict.corpus_view() is None


def test_a_failing_example_is_a_problem_placed_in_its_file(pack_dir):
    path = pack_dir / "vocabulary.yaml"
    path.write_text(path.read_text().replace('"Go with the other one."]', '"Go with the other one.", "Pick a card."]'))
    verdict = verify(load_pack(pack_dir, check_examples=False))
    assert not verdict.ok
    (p,) = verdict.problems
    assert (p.code, p.rule, Path(p.file).name) == ("E134", "vocab.choice", "vocabulary.yaml") and p.line > 0
    assert verdict.errors() == [p]


def test_the_corpus_beside_the_pack_is_run_and_a_failing_case_fails_the_pack(pack_dir):
    where = corpus(pack_dir, RIGHT, WRONG)
    verdict = verify(load_pack(pack_dir, check_examples=False))
    report = verdict.corpus_report
    assert report is not None and report.corpus_dir == where and not report.ok and not verdict.ok
    assert [o.case.id for o in report.failed] == ["regression/wrong"]
    failing = [p for p in verdict.errors() if p.code == "E230"]
    assert [(Path(p.file).name, p.line, p.rule) for p in failing] == [("regressions.yaml", 6, "vocab.choice")]


def test_a_passing_corpus_passes(pack_dir):
    corpus(pack_dir, RIGHT)
    verdict = verify(load_pack(pack_dir, check_examples=False))
    assert verdict.corpus_report is not None and not verdict.corpus_report.failed
    # a hand-written corpus of one case leaves rules untested both ways: those are corpus problems
    assert verdict.ok == verdict.corpus_report.ok
    assert {p.code for p in verdict.errors()} <= {"E220", "E221"}


def test_corpus_false_judges_the_examples_only(pack_dir):
    corpus(pack_dir, WRONG)
    assert verify(load_pack(pack_dir, check_examples=False), corpus=False) == Verdict((), None)


def test_a_corpus_named_but_missing_is_a_problem(pack_dir, tmp_path):
    verdict = verify(load_pack(pack_dir, check_examples=False), tmp_path / "nowhere")
    assert verdict.corpus_report is not None and not verdict.ok
    assert "E203" in [p.code for p in verdict.errors()]


def test_the_corpus_view_lists_the_packs_own_problems_first(pack_dir):
    path = pack_dir / "vocabulary.yaml"
    path.write_text(path.read_text().replace('"Go with the other one."]', '"Go with the other one.", "Pick a card."]'))
    corpus(pack_dir, WRONG)
    verdict = verify(load_pack(pack_dir, check_examples=False))
    view = verdict.corpus_view()
    assert view is not None and view.problems[: len(verdict.problems)] == list(verdict.problems)
    assert verdict.corpus_report is not None and verdict.corpus_report.problems == view.problems[len(verdict.problems):]


def test_failing_cases_beyond_the_limit_are_counted(pack_dir):
    many = "".join(WRONG.replace("regression/wrong", f"regression/wrong-{n}") for n in range(4))
    corpus(pack_dir, many)
    verdict = verify(load_pack(pack_dir, check_examples=False))
    listed = [p for p in verdict.errors(max_cases=2) if p.code == "E230"]
    assert len(listed) == 3 and listed[-1].message.startswith("corpus case … and 2 more")
