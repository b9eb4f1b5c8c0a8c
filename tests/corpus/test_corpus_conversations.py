"""Corpus cases with role-tagged history and referents: read, written, run, generated, compared."""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest
from click.testing import CliRunner

from cleo_rules import load_pack
from cleo_rules.cli import cli
from cleo_rules.corpus import generate, run_corpus
from cleo_rules.corpus.diff import read_jsonl
from cleo_rules.corpus.files import case_line, read_dir
from cleo_rules.corpus.model import Case, CaseTurn, history_item
from cleo_rules.corpus.judge import Evaluator
from cleo_rules.corpus.run import find_contradictions, tally
from cleo_rules.corpus.template import Grammar, TemplateError, split_joint
from cleo_rules.errors import UsageError
from cleo_rules.resources import rules_dir

RULES = rules_dir()
CORPUS = RULES.parent / "corpus"
QUOTES = ("Compare the two van insurance quotes",
          {"role": "assistant", "content": "Hadley quotes 2,140 a year; Cresswell quotes 1,865 a year."})


@pytest.fixture(scope="module")
def pack():
    return load_pack()


def turns(*items):
    return tuple(history_item(i) for i in items)


# -- the case's history and referent ----------------------------------------------


def test_history_items_are_strings_or_turns():
    assert history_item("hi there") == "hi there"
    t = history_item({"role": "assistant", "content": "Hello"})
    assert t == CaseTurn("assistant", "Hello") and dict(t) == {"role": "assistant", "content": "Hello"}
    hash(Case(id="a", message="m", expect="follow_up", history=(t,)))  # a case stays hashable
    for bad in ({"role": "system", "content": "x"}, {"role": "user", "content": 3}, {"role": "user"}, 4,
                {"role": "user", "content": "x", "name": "n"}):
        with pytest.raises(ValueError):
            history_item(bad)


def test_a_case_line_round_trips_history_and_referent(tmp_path):
    case = Case(id="referent.position/e-1", message="Yes, the second one.", expect="follow_up",
                rule="referent.position", history=turns(*QUOTES), referent="Cresswell", has_referent=True)
    none = Case(id="referent.position/x-1", message="Yes, the second one.", expect=None,
                not_rules=("referent.position",), history=turns(QUOTES[0]), has_referent=True)
    gdir = tmp_path / "generated"
    gdir.mkdir()
    body = "\n".join(["kind: corpus", "generated:", "  rule: referent.position", "  hash: x", "cases:",
                      case_line(case), case_line(none)])
    (gdir / "referent.position.yaml").write_text(body + "\n", encoding="utf-8")
    line = json.loads(case_line(none)[4:])
    assert line["referent"] is None and "expect" not in line
    _, gen, problems = read_dir(tmp_path)
    assert not problems
    got = gen[0].cases
    assert got[0].history == case.history and got[0].referent == "Cresswell" and got[0].has_referent
    assert got[1].referent is None and got[1].has_referent and got[1].expect is None


def test_hand_written_cases_take_role_tagged_history_and_referents(tmp_path):
    good = textwrap.dedent("""\
        kind: corpus
        cases:
          - id: regression/second-quote
            message: "Yes, go with the second one."
            expect: follow_up
            rule: referent.position
            history:
              - "Compare the two van insurance quotes"
              - {role: assistant, content: "Hadley quotes 2,140 a year; Cresswell quotes 1,865 a year."}
            referent: Cresswell
        """)
    (tmp_path / "regressions.yaml").write_text(good, encoding="utf-8")
    hand, _, problems = read_dir(tmp_path)
    assert not problems
    (case,) = hand[0].cases
    assert case.history == turns(*QUOTES[:1], {"role": "assistant", "content": "Hadley quotes 2,140 a year; "
                                                                            "Cresswell quotes 1,865 a year."})
    assert case.referent == "Cresswell" and case.rule == "referent.position"
    report = run_corpus(load_pack(), tmp_path)
    assert not report.failed
    bad = good + ("  - id: regression/bad-role\n"
                  "    message: \"Yes, go with the second one.\"\n"
                  "    expect: follow_up\n"
                  "    history: [{role: system, content: \"be brief\"}]\n")
    (tmp_path / "regressions.yaml").write_text(bad, encoding="utf-8")
    hand, _, problems = read_dir(tmp_path)
    assert [(p.code, p.pointer, p.line) for p in problems] == [("E120", "/cases/1/history/0", 14)]
    assert not hand  # a file with a schema problem is not half read


def test_a_referent_case_passes_when_its_rule_finds_that_referent(pack):
    ev = Evaluator(pack)
    good = Case(id="t/1", message="Yes, go with the second one.", expect="follow_up", rule="referent.position",
                history=turns(*QUOTES), referent="Cresswell", has_referent=True)
    out = ev.run(good)
    assert out.ok, out.reasons
    # the option's phrase in the reply, which the expected name opens
    assert out.referent == "Cresswell quotes 1,865 a year" and out.referent_rule == "referent.position"
    wrong = Case(id="t/2", message="Yes, go with the second one.", expect="follow_up", rule="referent.position",
                 history=turns(*QUOTES), referent="Hadley", has_referent=True)
    assert ev.run(wrong).reasons == ('referent is "Cresswell quotes 1,865 a year", expected "Hadley"',)
    other_rule = Case(id="t/3", message="Yes, go with the second one.", expect="follow_up", rule="referent.least",
                      history=turns(*QUOTES), referent="Cresswell", has_referent=True)
    out = ev.run(other_rule)
    assert out.reasons == ("referent.least did not fire",) and out.culprit == "referent.position"


def test_a_referent_negative_fails_when_its_rule_finds_one(pack):
    ev = Evaluator(pack)
    found = Case(id="t/4", message="Yes, go with the second one.", expect=None, not_rules=("referent.position",),
                 history=turns(*QUOTES), has_referent=True)
    out = ev.run(found)
    assert out.reasons == ("referent.position fired",) and out.culprit == "referent.position"
    nothing = Case(id="t/5", message="Yes, go with the second one.", expect=None, not_rules=("referent.position",),
                   history=turns(QUOTES[0]), has_referent=True)
    assert ev.run(nothing).ok
    # without a referent rule in `not`, referent: null means no rule finds one; the reply excerpt is not found
    excerpt = Case(id="t/6", message="Tell me more about that.", expect="follow_up",
                   history=turns({"role": "assistant", "content": "the van is booked for friday."}),
                   has_referent=True)
    out = ev.run(excerpt)
    assert out.ok, out.reasons
    assert out.referent == "the van is booked for friday." and out.referent_rule is None


def test_role_tagged_queries_are_checked_against_their_parts(pack):
    ev = Evaluator(pack)
    case = Case(id="t/7", message="Yes, go with the second one.", expect="follow_up", history=turns(*QUOTES))
    out = ev.run(case)
    assert out.ok, out.reasons
    # an information-seeking conversation ("Compare ..."): the referent qualifies the subject
    assert out.query == "Compare the two van insurance quotes\nCresswell quotes 1,865 a year\nYes, go with the second one."
    wrong = Case(id="t/8", message="Yes, go with the second one.", expect="follow_up", history=turns(*QUOTES),
                 anchor="Which van insurer?")
    assert ev.run(wrong).reasons[0] == ('query combined with "Compare the two van insurance quotes", '
                                        'expected "Which van insurer?"')


def test_referent_rules_are_tallied_both_ways(pack):
    ev = Evaluator(pack)
    cases = [Case(id="t/1", message="Yes, go with the second one.", expect="follow_up", rule="referent.position",
                  history=turns(*QUOTES), referent="Cresswell", has_referent=True),
             Case(id="t/2", message="Yes, go with the second one.", expect=None, not_rules=("referent.position",),
                  history=turns(*QUOTES), has_referent=True)]
    stats, _ = tally(pack, [ev.run(c) for c in cases])
    row = next(s for s in stats if s.rule == "referent.position")
    assert (row.positives, row.negatives, row.tp, row.fn, row.tn, row.fp) == (1, 1, 1, 0, 0, 1)
    assert row.kind == "referent" and [label for label, _ in row.failures] == ["FP"]


def test_contradictions_are_judged_per_conversation():
    a = Case(id="a", message="Did the band tour?", expect="follow_up", history=turns({"role": "assistant",
                                                                                       "content": "Elbow played."}))
    b = Case(id="b", message="Did the band tour?", expect="substantive", history=())
    c = Case(id="c", message="Did the band tour?", expect="substantive",
             history=turns({"role": "assistant", "content": "Elbow played."}))
    assert find_contradictions([a, b]) == []  # another conversation may rightly decide otherwise
    assert [p.code for p in find_contradictions([a, c])] == ["E223"]


# -- conversation templates ---------------------------------------------------------


def test_a_slot_named_in_two_parts_is_bound():
    g = Grammar({"band": ["Elbow", "the Kinks"], "verb": ["tour", "split"]})
    node = g.compile_joint(["Did they {verb}?", "{band} played {band?}", "{band}"])
    parts = [split_joint(r) for r in node.all()]
    assert all(p[2] in p[1] for p in parts)  # the referent is the band the history names
    assert {p[0] for p in parts} == {"Did they tour?", "Did they split?"}
    assert {p[2] for p in parts} == {"Elbow", "the Kinks"}
    with pytest.raises(TemplateError):
        g.compile_joint(["{nope}", "x"])


REFERENTS = """\
kind: referents
rules:
  - id: referent.person
    description: a pronoun for a person
    pattern: '\\b(?:he|she|him|her)\\b'
    select: person
    examples:
      - message: "Where was she born?"
        history:
          - "Who wrote the song?"
          - {role: assistant, content: "It was written by Carole King in 1971."}
        referent: "Carole King"
    counterexamples:
      - message: "Where was she born?"
        history: [{role: assistant, content: "it was written in 1971."}]
    generate:
      positive:
        - message: "Where was {she|he} born?"
          history:
            - "Who wrote {song}?"
            - {role: assistant, content: "It was written by {writer} in {year}."}
          referent: "{writer}"
      negative:
        - message: "Where was {she|he} born?"
          history: [{role: assistant, content: "it was written in {year}."}]
"""
FOLLOW_UPS = """\
kind: follow_ups
rules:
  - id: follow_up.pronoun
    description: a question about a person just named
    pattern: '\\b(?:he|she|him|her)\\b'
    examples:
      - message: "Where was she born?"
        history: [{role: assistant, content: "It was written by Carole King in 1971."}]
    counterexamples:
      - "Where was Carole King born?"
      - message: "Where was Carole King born?"
        history: [{role: assistant, content: "It was written in 1971."}]
    generate:
      positive: ["Where was {she|he} born?"]
      negative: ["Where was {writer} born?"]
"""
SLOTS = """\
kind: slots
seed: 3
slots:
  song: ["the song", "that tune", "the anthem"]
  writer: ["Carole King", "Paul Simon", "Joni Mitchell"]
  year: ["1971", "1968"]
"""


@pytest.fixture
def mini(tmp_path):
    root = tmp_path / "rules"
    root.mkdir()
    (root / "pack.yaml").write_text("pack: mini\nversion: 0.1.0\nlocale: en\nsettings:\n"
                                    "  combine: \"{anchor}\\n{referent}\\n{message}\"\n"
                                    "files: [follow_ups.yaml, referents.yaml, lexicon.yaml, slots.yaml]\n", encoding="utf-8")
    shutil.copy(RULES / "lexicon.yaml", root / "lexicon.yaml")
    (root / "follow_ups.yaml").write_text(FOLLOW_UPS, encoding="utf-8")
    (root / "referents.yaml").write_text(REFERENTS, encoding="utf-8")
    (root / "slots.yaml").write_text(SLOTS, encoding="utf-8")
    return root


def test_conversations_become_cases_of_their_rule(mini):
    pack = load_pack(mini)
    groups = {g.name: g for g in generate(pack)}
    person = groups["referent.person"].cases
    positives = [c for c in person if c.rule == "referent.person"]
    negatives = [c for c in person if c.not_rules == ("referent.person",)]
    assert {c.id.split("/")[1][0] for c in positives} == {"p", "e"}
    assert {c.id.split("/")[1][0] for c in negatives} == {"n", "x"}
    for c in positives:
        assert c.expect == "follow_up" and c.has_referent and c.referent in c.history[-1].content
    assert all(c.has_referent and c.referent is None and c.expect is None for c in negatives)
    assert {c.referent for c in positives if c.id.split("/")[1][0] == "p"} == {"Carole King", "Paul Simon",
                                                                             "Joni Mitchell"}
    pronoun = groups["follow_up.pronoun"].cases
    examples = [c for c in pronoun if "/e-" in c.id]
    counter = [c for c in pronoun if "/x-" in c.id]
    reply = CaseTurn("assistant", "It was written by Carole King in 1971.")
    assert len(examples) == 1 and examples[0].history == (reply,)
    assert len(counter) == 1 and counter[0].not_rules == ("follow_up.pronoun",) and counter[0].expect is None
    assert not any(c.message == "Where was Carole King born?" and not c.history for c in counter)


def test_built_conversation_corpus_checks_and_covers_referent_rules(mini):
    pack = load_pack(mini)
    result = CliRunner().invoke(cli, ["corpus", "build", str(mini)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = (mini.parent / "corpus" / "generated" / "referent.person.yaml").read_text(encoding="utf-8")
    assert '"role": "assistant"' in text and '"referent": null' in text
    report = run_corpus(pack)
    assert report.ok, report.format()
    row = next(r for r in report.rules if r.rule == "referent.person")
    assert row.tp == row.positives > 3 and row.tn == row.negatives > 1


def test_a_positive_referent_conversation_needs_its_referent(mini):
    path = mini / "referents.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace('          referent: "{writer}"\n', ""),
                    encoding="utf-8")
    result = CliRunner().invoke(cli, ["check", str(mini)], catch_exceptions=False)
    assert result.exit_code == 1
    assert "error[E122] referent.person at /rules/0/generate/positive/0: missing required key 'referent'" \
        in result.output


def test_the_bundled_referent_rules_are_covered_both_ways():
    report = run_corpus(load_pack())
    for r in report.rules:
        if r.rule.startswith("referent."):
            assert r.positives and r.negatives and r.tp, r


# -- corpus diff takes role-tagged JSON Lines ---------------------------------------


def test_corpus_diff_reads_role_tagged_history(tmp_path):
    path = tmp_path / "traffic.jsonl"
    path.write_text(json.dumps({"message": "Yes, go with the second one.", "history": list(QUOTES)}) + "\n",
                    encoding="utf-8")
    (case,) = read_jsonl(path)
    assert case.history == turns(*QUOTES)
    path.write_text(json.dumps({"message": "Yes.", "history": [{"role": "robot", "content": "x"}]}) + "\n",
                    encoding="utf-8")
    with pytest.raises(UsageError, match=r"traffic.jsonl:1: history\[0\]: role must be"):
        read_jsonl(path)


def test_corpus_diff_runs_over_conversations(tmp_path):
    shutil.copytree(RULES, tmp_path / "rules")
    shutil.copytree(CORPUS, tmp_path / "corpus")
    path = tmp_path / "traffic.jsonl"
    path.write_text(json.dumps({"message": "Yes, go with the second one.", "history": list(QUOTES)}) + "\n",
                    encoding="utf-8")
    result = CliRunner().invoke(cli, ["corpus", "diff", str(RULES), str(tmp_path / "rules"), "--jsonl", str(path)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "no changes" in result.output
