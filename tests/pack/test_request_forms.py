"""A correction's request forms: requests that use its words but reject nothing ("try that one").

Such a request must not be a correction (no correction rule may fire on it), judged with no conversation before
it; whether it is then a follow-up or substantive is the rest of the pack's business, so a natural request
("Check the other branch.") passes. Given with a history (``{message, history}``), it must also be a follow-up
after it. The corpus's generated request cases (``generate: request:``) are judged the same way.
"""

from __future__ import annotations

import pytest

from cleo_rules import load_pack
from cleo_rules.corpus import build_corpus, run_corpus
from cleo_rules.errors import PackError
from cleo_rules.pack.compile import compile_pack
from cleo_rules.pack_check import check_compiled

MANIFEST = """\
pack: t
version: 1.0.0
locale: en
files: [vocabulary.yaml, corrections.yaml]
"""

VOCAB = """\
kind: vocabulary
sets:
  - id: vocab.request
    role: request
    description: requests
    words: [try, that, one, first, let's, could, check]
    examples: ["Could we try that one?"]
    counterexamples: ["We tried a loyalty scheme in 2023"]
  - id: vocab.filler
    role: filler
    description: function words
    words: [we, the, a]
    examples: ["Let's try the first one."]
    counterexamples: ["the the the the the"]
"""

CORR = """\
kind: corrections
rules:
  - id: correction.wrong-branch
    description: The user says the branch was the wrong one.
    pattern: '\\b(?:that|it) was the wrong branch\\b'
    examples: ["That was the wrong branch."]
    counterexamples: ["Which branch was the wrong one last week?"]
    request_forms:
      - "Check the other branch."
      - {message: "Let's try the first one.", history: ["Compare the Leeds and York branches"]}
"""


def make(tmp_path, corr=CORR):
    d = tmp_path / "p"
    d.mkdir()
    (d / "pack.yaml").write_text(MANIFEST)
    (d / "vocabulary.yaml").write_text(VOCAB)
    (d / "corrections.yaml").write_text(corr)
    return d


def problems(path):
    with pytest.raises(PackError) as info:
        load_pack(path)
    return [p for p in info.value.problems if p.code == "E136"]


def test_a_natural_request_form_passes_though_it_is_substantive(tmp_path):
    pack = load_pack(make(tmp_path))
    assert pack.classify("Check the other branch.").kind == "substantive"
    assert pack.classify("Let's try the first one.", ["Compare the Leeds and York branches"]).kind == "follow_up"


def test_a_request_form_that_is_a_correction_fails_at_its_place(tmp_path):
    corr = CORR.replace("'\\b(?:that|it) was the wrong branch\\b'",
                        "'\\b(?:that|it) was the wrong branch\\b|\\bcheck the other\\b'")
    assert corr != CORR
    (p,) = problems(make(tmp_path, corr))
    assert (p.line, p.pointer, p.rule) == (9, "/rules/0/request_forms/0", "correction.wrong-branch")
    assert p.message == "request form 'Check the other branch.' is a correction: it is classified correction by " \
                        "correction.wrong-branch on 'Check the other'"


def test_a_request_form_that_another_correction_takes_fails(tmp_path):
    other = """\
  - id: correction.other
    description: Another correction.
    pattern: '\\bcheck the other branch\\b'
    examples: ["Check the other branch, not this one."]
    counterexamples: ["Which branch?"]
    request_forms: ["Try that one, please."]
"""
    (p,) = problems(make(tmp_path, CORR + other))
    assert p.pointer == "/rules/0/request_forms/0" and "by correction.other" in p.message


def test_a_request_form_given_a_history_must_follow_it_up(tmp_path):
    corr = CORR.replace("{message: \"Let's try the first one.\"", "{message: \"Check the other branch.\"")
    (p,) = problems(make(tmp_path, corr))
    assert (p.line, p.pointer) == (10, "/rules/0/request_forms/1")
    assert p.message == "request form 'Check the other branch.' is no follow-up after its history: it is " \
                        "classified substantive"


GENERATE = """\
    generate:
      positive: ["{That|It} was the wrong branch{.|!}"]
      negative: ["Which branch was the wrong one {last week|in March}?"]
      request:
        - "Check the other {branch|shop|one}{.|, please.}"
        - {message: "{Let's try|Could we try} the first one.", history: ["Compare the Leeds and York branches"]}
"""


def test_generated_request_cases_may_be_any_kind_but_a_correction(tmp_path):
    pack_dir = make(tmp_path, CORR + GENERATE)
    pack = compile_pack(pack_dir)
    build_corpus(pack, tmp_path / "corpus")
    report = run_corpus(pack, tmp_path / "corpus")
    requests = [o for o in report.outcomes if "/r-" in o.case.id]
    plain = [o for o in requests if not o.case.history or o.case.expect is None]
    assert {o.kind for o in plain} >= {"substantive"} and all(o.ok for o in requests), \
        [(o.case.message, o.reasons) for o in requests if not o.ok]
    assert all(o.case.not_kind == "correction" for o in plain)
    told = [o for o in requests if o.case.expect == "follow_up"]
    assert told and all(o.case.history == ("Compare the Leeds and York branches",) for o in told)
    verdict = check_compiled(pack, tmp_path / "corpus")
    assert verdict.corpus_report is not None and not verdict.corpus_report.failed


def test_a_generated_request_case_that_is_a_correction_fails(tmp_path):
    pack_dir = make(tmp_path, CORR + GENERATE)
    build_corpus(compile_pack(pack_dir), tmp_path / "corpus")
    widened = (CORR + GENERATE).replace("'\\b(?:that|it) was the wrong branch\\b'",
                                        "'\\b(?:that|it) was the wrong branch\\b|\\bother shop\\b'")
    (pack_dir / "corrections.yaml").write_text(widened.replace('      - "Check the other branch."\n', ""))
    report = run_corpus(compile_pack(pack_dir, check_examples=False), tmp_path / "corpus")
    failed = [o for o in report.failed if "/r-" in o.case.id]
    assert failed and all("other shop" in o.case.message.lower() for o in failed)
    assert failed[0].reasons[0] == "kind is correction, expected any kind but correction"
    assert failed[0].expected() == "expected any kind but correction"


def test_a_generated_request_case_given_a_history_must_follow_it_up(tmp_path):
    corr = (CORR + GENERATE).replace('{message: "{Let\'s try|Could we try} the first one."',
                                     '{message: "Check the {first|second} branch."')
    pack_dir = make(tmp_path, corr)
    pack = compile_pack(pack_dir, check_examples=False)
    build_corpus(pack, tmp_path / "corpus")
    report = run_corpus(pack, tmp_path / "corpus")
    failed = [o for o in report.failed if "/r-" in o.case.id]
    assert failed and {o.case.message.lower() for o in failed} <= {"check the first branch.",
                                                                   "check the second branch."}
    assert all(o.reasons[0] == "kind is substantive, expected follow_up" for o in failed)
