"""The designer's loop: lints that name the real mistake, E134 help that names the real cause,
and explain/classify that still work on a pack whose own examples fail (check stays strict)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cleo_rules.cli import cli
from cleo_rules.errors import PackError
from cleo_rules.pack.compile import compile_pack, compile_with_examples

from helpers import MINI


@pytest.fixture
def pack(tmp_path):
    d = tmp_path / "rules"
    shutil.copytree(MINI, d)
    return d


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} not once in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def refused(path) -> PackError:
    with pytest.raises(PackError) as info:
        compile_pack(path)
    return info.value


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


# -- lints ----------------------------------------------------------------------------


def test_double_quoted_backslash_b_is_a_backspace(pack):
    edit(pack / "follow_ups.yaml", r"pattern: '\btell (?:me|us) more\b'", r'pattern: "\btell (?:me|us) more"')
    err = refused(pack)
    lead = err.problems[0]
    assert lead.code == "E140" and lead.rule == "follow_up.tell-me-more"
    assert lead.message == 'pattern holds a backspace ("\\b" in double quotes, so not a word boundary) at position 0'
    assert (lead.file.endswith("follow_ups.yaml"), lead.line, lead.pointer) == (True, 5, "/rules/0/pattern")
    assert "single quotes ('\\bwhy')" in lead.help


def test_control_character_in_one_alternative_is_reported_once(pack):
    edit(pack / "follow_ups.yaml", r"pattern: '\btell (?:me|us) more\b'",
         'pattern:\n      - \'\\btell (?:me|us) more\\b\'\n      - "\\bwhy"')
    found = [p for p in refused(pack).problems if p.code == "E140"]
    assert len(found) == 1 and found[0].pointer == "/rules/0/pattern/1" and found[0].line == 7


def test_other_control_characters_are_named(pack):
    edit(pack / "follow_ups.yaml", r"pattern: '\btell (?:me|us) more\b'", 'pattern: "tell me\\x01 more"')
    lead = refused(pack).problems[0]
    assert lead.code == "E140" and "the control character U+0001 at position 7" in lead.message


def test_tabs_and_newlines_of_a_verbose_pattern_are_allowed(pack):
    edit(pack / "follow_ups.yaml", r"pattern: '\btell (?:me|us) more\b'",
         "pattern: |-\n      (?x) \\btell \\s (?:me|us)\n      \\s more\\b")
    assert compile_pack(pack).rule("follow_up.tell-me-more")


def test_min_content_words_above_max(pack):
    edit(pack / "follow_ups.yaml", "max_content_words: 3", "max_content_words: 3\n    min_content_words: 5")
    found = [p for p in refused(pack).problems if p.code == "E141"]
    assert len(found) == 1
    p = found[0]
    assert p.message == "min_content_words (5) is above max_content_words (3): no message can fire this rule"
    assert (p.pointer, p.line, p.rule) == ("/rules/0/min_content_words", 7, "follow_up.tell-me-more")
    assert p.help.startswith("lower min_content_words or raise max_content_words")


def test_entry_without_a_word_has_its_own_code(pack):
    edit(pack / "vocabulary.yaml", "words: [the, a, to,", "words: [the, '...', a, to,")
    p = [p for p in refused(pack).problems if p.code == "E142"][0]
    assert p.message == "vocabulary entry '...' has no word in it" and p.pointer == "/sets/4/words/1"


# -- E134 names the real cause ------------------------------------------------------------


def e134(pack_dir) -> list:
    return [p for p in refused(pack_dir).problems if p.code == "E134"]


def test_example_taken_by_an_earlier_rule(pack):
    edit(pack / "follow_ups.yaml", '"Could you tell me more?"', '"We tried it, tell me more."')
    (p,) = e134(pack)
    assert p.help.startswith("correction.already-tried (a correction, earlier in the order) takes it: "
                             "corrections are tried before follow-ups")


def test_example_taken_by_a_later_rule_when_the_pattern_does_not_match(pack):
    edit(pack / "corrections.yaml", '"I already tried it."', '"Sure, that works."')
    (p,) = e134(pack)
    assert p.help.startswith("this rule's pattern does not match it and vocab.nod (the vocabulary test, later "
                             "in the order) takes it; widen the pattern")


def test_example_stopped_by_max_content_words(pack):
    edit(pack / "follow_ups.yaml", '"Could you tell me more?"', '"Tell me more about the rota for Leeds staff."')
    (p,) = e134(pack)
    assert p.help.startswith("the pattern matches 'Tell me more' but a bound stops it: max_content_words (3) allows "
                             "at most that many topic words outside the match, it has 5")


def test_example_stopped_by_min_content_words(pack):
    edit(pack / "follow_ups.yaml", "max_content_words: 3", "max_content_words: 3\n    min_content_words: 2")
    problems = e134(pack)
    assert problems and all("min_content_words (2) wants at least that many topic words" in p.help
                            for p in problems)


def test_example_over_max_follow_up_words(pack):
    edit(pack / "pack.yaml", "max_follow_up_words: 12", "max_follow_up_words: 4")
    found = {p.message: p.help for p in e134(pack)}
    key = "example 'Sounds good to me, and that is it.' should be a follow-up thanks to these words, but it is " \
          "classified substantive"
    assert found[key].startswith("it has 8 words, over max_follow_up_words (4), so no follow-up pattern or "
                                 "vocabulary test applies")


def test_example_under_min_chars(pack):
    edit(pack / "vocabulary.yaml", '"Sounds good to me."', '"Sure."')
    (p,) = e134(pack)
    assert p.help.startswith("it is under min_chars (10) characters, so it is skipped before any rule is tried")


def test_example_named_by_another_vocabulary_set(pack):
    edit(pack / "vocabulary.yaml", '["Yes, that works.", "Sounds good to me."]',
         '["Yes, that works.", "Yes, the second one."]')
    (p,) = e134(pack)
    assert p.help.startswith("the vocabulary test names vocab.choice: its role 'choice' outranks this set's 'nod'")


def test_example_with_words_outside_the_vocabulary(pack):
    edit(pack / "vocabulary.yaml", '"Sounds good to me."', '"Sounds good to me, Dana."')
    (p,) = e134(pack)
    assert p.help.startswith("the vocabulary test does not hold: word not in the vocabulary: dana")


# -- explain and classify work on such a pack; check stays strict --------------------------------


@pytest.fixture
def failing(pack):
    edit(pack / "corrections.yaml", '"I already tried it."', '"Sure, that works."')
    return pack


def test_library_gives_the_pack_and_its_failing_examples(failing):
    pack, problems = compile_with_examples(failing)
    assert [p.code for p in problems] == ["E134"]
    assert pack.classify("We tried that one already.").kind == "correction"


def test_explain_works_and_warns(failing):
    result = run("explain", "Sure, that works.", "--pack", failing)
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("Warning: 1 of the pack's own examples fails (`cleo-rules check` refuses the pack")
    assert "corrections.yaml:6:" in result.stderr and "correction.already-tried: example 'Sure, that works.'" in result.stderr
    assert "\nkind:    follow_up\nrule:    vocab.nod  (" in result.stdout


def test_explain_json_lists_the_failing_examples(failing):
    result = run("explain", "Sure, that works.", "--pack", failing, "--json")
    doc = json.loads(result.stdout)
    assert [p["code"] for p in doc["failing_examples"]] == ["E134"]


def test_classify_works_and_warns(failing):
    result = run("classify", "We tried that one already.", "--pack", failing)
    assert result.exit_code == 0
    assert result.stdout.startswith("kind:    correction\n")
    assert "Warning: 1 of the pack's own examples fails" in result.stderr


def test_check_stays_strict(failing):
    result = run("check", failing)
    assert result.exit_code == 1
    assert "error[E134] correction.already-tried at /rules/0/examples/1" in result.stderr
