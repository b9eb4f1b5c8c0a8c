"""The generator: bounded, seeded and reproducible; stable under small edits; problems placed."""

from __future__ import annotations

import os
import textwrap

import pytest

from cleo_rules import load_pack
from cleo_rules.corpus import CorpusError, generate
from cleo_rules.corpus.generate import surface
from cleo_rules.corpus.model import CROSS

MANIFEST = """\
pack: tiny
version: 0.1.0
locale: en
files: [vocabulary.yaml, corrections.yaml, slots.yaml]
"""
VOCAB = """\
kind: vocabulary
sets:
  - id: vocab.request
    role: request
    description: requests
    words: [try, please, let's, could, can, we, i, that, one, it, this]
    examples: ["Let's try that one, please."]
    counterexamples: ["Try the loyalty card at the Leeds shop"]
    generate:
      positive: ["{let's|please|could we} try {that_one}{end?}"]
      negative: ["Try {topic} at the Leeds shop"]
"""
CORR = """\
kind: corrections
rules:
  - id: correction.already-tried
    description: tried already
    pattern: '\\b(?:we|i)(?:''ve| have)? (?:already )?tried (?:that|this|it)\\b'
    examples: ["We tried that one already."]
    counterexamples: ["We tried a loyalty scheme in 2023, what were the results?"]
    request_forms: ["Try that one, please."]
    generate:
      positive: ["{we}{|'ve| have} {|already} tried {that_one}{|, sorry}{end?}"]
      negative: ["{we} tried {topic} in {year}, what were the results?"]
      request: ["{let's|please|could we} try {that_one}{end?}"]
      limit: 12
"""
SLOTS = """\
kind: slots
seed: 7
limit: 30
slots:
  we: [We, I]
  that_one: [that, that one, this, it]
  end: [".", "!"]
  topic: [a loyalty scheme, the card machine, the new till]
  year: ["2022", "2023"]
  history: ["Compare the two van insurance quotes from Brightline and Zego"]
cross:
  substantive: ["What did {topic} cost in {year}?"]
  skip: ["{ok|yes|sure}{!|}"]
"""


def make_pack(root, *, corr=CORR, slots=SLOTS, vocab=VOCAB):
    root.mkdir(parents=True, exist_ok=True)
    for name, text in (("pack.yaml", MANIFEST), ("vocabulary.yaml", vocab), ("corrections.yaml", corr),
                       ("slots.yaml", slots)):
        (root / name).write_text(text, encoding="utf-8")
    return load_pack(root)


def snapshot(groups):
    return [(g.name, g.hash, [(c.id, c.message, c.expect, c.rule, c.not_rules, c.history) for c in g.cases])
            for g in groups]


def test_same_pack_same_corpus_wherever_it_is_run(tmp_path, monkeypatch):
    a = snapshot(generate(make_pack(tmp_path / "a")))
    monkeypatch.chdir(tmp_path)
    b = snapshot(generate(make_pack(tmp_path / "b")))
    assert a == b
    assert [name for name, _, _ in a] == ["correction.already-tried", "vocab.request", CROSS]


def test_cases_are_bounded_by_the_limits(tmp_path):
    groups = {g.name: g for g in generate(make_pack(tmp_path))}
    tried = groups["correction.already-tried"].cases
    for letter in "pnr":
        assert 0 < sum(1 for c in tried if c.id.split("/")[1].startswith(letter + "-")) <= 12
    request = groups["vocab.request"].cases
    assert sum(1 for c in request if c.rule) <= 30


def test_expectations_follow_the_list(tmp_path):
    groups = {g.name: g for g in generate(make_pack(tmp_path))}
    by_letter = {}
    for c in groups["correction.already-tried"].cases:
        by_letter.setdefault(c.id.split("/")[1][0], set()).add((c.expect, c.rule, c.not_rules, c.not_kind))
    assert by_letter["p"] == {("correction", "correction.already-tried", (), None)}
    assert by_letter["n"] == {("substantive", None, ("correction.already-tried",), None)}
    # a correction's request forms: any kind but a correction
    assert by_letter["r"] == {(None, None, ("correction.already-tried",), "correction")}
    cross = groups[CROSS].cases
    assert {c.expect for c in cross} == {"substantive", "skip"}
    assert all(len(c.message) < 10 for c in cross if c.expect == "skip")


def test_history_is_given_to_a_share_of_cases(tmp_path):
    cases = [c for g in generate(make_pack(tmp_path)) for c in g.cases]
    with_history = [c for c in cases if c.history]
    assert 0 < len(with_history) < len(cases)
    assert {c.history for c in with_history} == {("Compare the two van insurance quotes from Brightline and Zego",)}


def test_changing_the_seed_redraws_the_sample(tmp_path):
    a = snapshot(generate(make_pack(tmp_path / "a")))
    b = snapshot(generate(make_pack(tmp_path / "b", slots=SLOTS.replace("seed: 7", "seed: 8"))))
    assert a != b
    assert a[0][1] != b[0][1]  # and the hash that marks the corpus stale changes


def test_adding_a_filler_keeps_most_cases(tmp_path):
    before = {c.message for g in generate(make_pack(tmp_path / "a")) for c in g.cases}
    more = SLOTS.replace("that_one: [that, that one, this, it]", "that_one: [that, that one, this, it, those]")
    after = {c.message for g in generate(make_pack(tmp_path / "b", slots=more)) for c in g.cases}
    assert len(before & after) >= 0.6 * len(before)


def test_only_the_changed_rule_gets_a_new_hash(tmp_path):
    a = {name: h for name, h, _ in snapshot(generate(make_pack(tmp_path / "a")))}
    corr = CORR.replace("what were the results?", "how did it go?")
    b = {name: h for name, h, _ in snapshot(generate(make_pack(tmp_path / "b", corr=corr)))}
    assert a["correction.already-tried"] != b["correction.already-tried"]
    assert a["vocab.request"] == b["vocab.request"] and a[CROSS] == b[CROSS]


def test_patterns_do_not_change_the_hash(tmp_path):
    a = snapshot(generate(make_pack(tmp_path / "a")))
    corr = CORR.replace("(?:that|this|it)\\b'", "(?:that|this|it|those)\\b'")
    assert corr != CORR
    b = snapshot(generate(make_pack(tmp_path / "b", corr=corr)))
    assert a == b


def test_short_expansions_are_dropped(tmp_path):
    corr = CORR.replace('request: ["{let\'s|please|could we} try {that_one}{end?}"]',
                        'request: ["{let\'s|please|could we} try {that_one}{end?}", "try it"]')
    assert corr != CORR
    with pytest.raises(CorpusError) as info:
        generate(make_pack(tmp_path, corr=corr))
    p = info.value.problems[0]
    assert p.code == "E201" and p.rule == "correction.already-tried"
    assert p.pointer == "/rules/0/generate/request/1"
    assert "yields no case: every expansion is under 10 characters" in p.message
    assert p.line == 12 and os.path.basename(p.file) == "corrections.yaml"


def test_a_message_both_positive_and_negative_is_refused(tmp_path):
    # with a limit above the positives' count every positive is chosen, so the clash is seen
    corr = CORR.replace('negative: ["{we} tried', 'negative: ["{we} tried {that_one}.", "{we} tried')
    corr = corr.replace("limit: 12", "limit: 400")
    with pytest.raises(CorpusError) as info:
        generate(make_pack(tmp_path, corr=corr))
    msgs = [p.message for p in info.value.problems]
    assert any("which template 0 of `positive` also yields" in m for m in msgs), msgs


def test_unknown_slot_in_cross_templates_is_placed_in_the_slots_file(tmp_path):
    slots = SLOTS.replace('substantive: ["What did {topic} cost in {year}?"]',
                          'substantive: ["What did {topics} cost in {year}?"]')
    with pytest.raises(CorpusError) as info:
        generate(make_pack(tmp_path, slots=slots))
    p = info.value.problems[0]
    assert p.pointer == "/cross/substantive/0" and "unknown slot {topics}" in p.message
    assert os.path.basename(p.file) == "slots.yaml" and p.line == 12


@pytest.mark.parametrize("digest_byte, text, expected", [
    (0, "we tried it", "We tried it"),
    (6, "We tried it", "we tried it"),
    (8, "We tried it", "WE TRIED IT"),
    (9, "we've tried it", "We\u2019ve tried it"),
])
def test_surface_variants(digest_byte, text, expected):
    assert surface(text, bytes([digest_byte])) == expected


def test_bundled_slots_file_is_documented():
    text = (load_pack().path / "slots.yaml").read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=../schemas/slots.schema.json")
    assert textwrap.dedent("""\
        #   {name}     one filler of the slot `name` below (fillers may use slots too)""") in text
