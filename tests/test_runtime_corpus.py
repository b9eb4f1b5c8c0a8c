"""The acceptance gate runs the pack's own checked-in corpus (``corpus/`` beside the pack).

Each test works on a copy of the bundled pack and its corpus, so a rule or a
case can be broken without touching the real ones.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import regex

from cleo_rules.errors import PackError
from cleo_rules.resources import rules_dir
from cleo_rules.corpus import corpus_dir_of
from cleo_rules.runtime import PackManager, load_checked

from helpers.runtime import WRONG_CASE

CORPUS = corpus_dir_of(rules_dir())


def test_the_bundled_pack_has_a_checked_in_corpus():
    assert (CORPUS / "regressions.yaml").is_file()
    assert any((CORPUS / "generated").glob("*.yaml"))


def greedy_rule() -> tuple[str, str]:
    """A correction that takes one follow-up of the corpus, and no example of the pack.

    Its pattern is that one message, exactly; the pack's examples still pass,
    so only the corpus can catch the mistake. Returns ``(rule yaml, message)``.
    """
    from cleo_rules import load_pack
    from cleo_rules.corpus.run import load_cases
    from cleo_rules.pack.examples import example_case
    from cleo_rules.text import normalize

    pack = load_pack()
    known = {normalize(example_case(t)[0]) for r in pack.rules
             for t in r.examples + r.counterexamples + tuple(getattr(r, "request_forms", ()))}
    cases, *_ = load_cases(CORPUS)
    message = next(c.message for c in cases
                   if c.expect == "follow_up" and normalize(c.message) not in known and "'" not in c.message)
    pattern = "^" + regex.escape(normalize(message), special_only=True) + "$"
    rule = f"""
  - id: correction.test-greedy
    description: A correction that swallows a follow-up (a mistake the corpus must catch).
    pattern: '{pattern}'
    examples: [{json.dumps(message)}]
    counterexamples: ["Sounds fine to me."]
    request_forms: ["Try that one."]
"""
    return rule, message


@pytest.fixture
def pack_dir(tmp_path):
    shutil.copytree(rules_dir(), tmp_path / "rules")
    shutil.copytree(CORPUS, tmp_path / "corpus")
    return tmp_path / "rules"


def test_the_corpus_beside_the_pack_is_found(pack_dir):
    assert corpus_dir_of(pack_dir) == (pack_dir.parent / "corpus").resolve()


def test_the_bundled_pack_passes_its_corpus(pack_dir):
    assert load_checked(pack_dir).name == "cleo-en"


def test_a_failing_case_rejects_the_pack_and_names_the_case(pack_dir):
    regressions = pack_dir.parent / "corpus" / "regressions.yaml"
    line = len(regressions.read_text().splitlines()) + 2
    with open(regressions, "a") as fh:
        fh.write(WRONG_CASE)
    with pytest.raises(PackError) as info:
        load_checked(pack_dir)
    failing = [p for p in info.value.problems if p.code == "E230"]
    assert len(failing) == 1
    p = failing[0]
    assert p.file.endswith("corpus/regressions.yaml") and p.line == line
    assert p.message == ('corpus case regression/test-wrong-expectation "We tried that one already.": '
                         "expected follow_up, got correction by correction.already-tried on \"We tried that\"")


def test_a_rule_change_that_breaks_the_corpus_is_rejected_and_the_old_pack_serves(pack_dir, caplog):
    rule, message = greedy_rule()
    m = PackManager(pack_dir)
    before = m.pack
    answer = m.classify(message, ["Which van insurer should we use?"])
    assert answer.kind == "follow_up"
    text = (pack_dir / "corrections.yaml").read_text()
    (pack_dir / "corrections.yaml").write_text(text.rstrip("\n") + "\n" + rule)
    (pack_dir / "pack.yaml").write_text((pack_dir / "pack.yaml").read_text().replace("version: 1.0.0",
                                                                                    "version: 1.1.0"))
    assert m.reload() is False
    assert m.pack is before
    assert m.classify(message, ["Which van insurer should we use?"]) == answer
    problems = m.last_error.problems
    assert not [p for p in problems if p.code.startswith("E13")]  # the pack's own examples pass
    assert any(p.code == "E230" and "got correction by correction.test-greedy" in p.message for p in problems)
    assert "rejected; still serving cleo-en 1.0.0" in caplog.text


def test_fixing_the_corpus_is_noticed_by_the_watcher(pack_dir):
    m = PackManager(pack_dir)
    regressions = pack_dir.parent / "corpus" / "regressions.yaml"
    good = regressions.read_text()
    regressions.write_text(good + WRONG_CASE)
    assert m.reload() is False and m.rejections == 1
    assert m.poll() is False and m.poll() is False  # the refused state is not tried again
    assert m.rejections == 1
    regressions.write_text(good)  # back to what is serving: nothing to load, nothing wrong
    assert m.poll() is False
    assert m.last_error is None and m.rejections == 1 and m.reloads == 0
