"""explain's near misses and its brief output: what stopped each rule the prefilter named, for every stop reason
the walk has, each from a real message; the brief for a follow-up, a correction, a skip and a substantive turn;
``--all`` as the walk was printed before the brief existed.

``tests/data/explain-walk.json`` was recorded with ``explain`` as it printed every rule (the code before the brief
view), without its last line (the pack, whose path depends on where the checkout is). When the bundled pack's rules
change, record it again from ``--all``: ``PYTHONPATH=tests .venv/bin/python tests/test_explain_brief.py --write``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import sys
from pathlib import Path

import pytest
import regex
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_rules import load_pack
from cleo_rules.cli import cli, main
from cleo_rules.explain import REASONS, NearMiss
from cleo_rules.families.patterns import PatternLane
from cleo_rules.kinds import DecisionKind
from cleo_rules.matcher import Matcher
from cleo_rules.reading.load import display
from cleo_rules.pack.model import Pack, PatternRule, VocabSet
from cleo_rules.pack.discovery import find_pack
from cleo_rules.prefilter import words_of_tokens
from cleo_rules.resources import rules_dir
from cleo_rules.text import normalize, word_pattern

from helpers import DATA, PACKS, ROOT

PACK = load_pack()
MINI = load_pack(PACKS / "mini-1.0")
RECORD = DATA / "explain-walk.json"
VANS = ["Which van insurer covers tools left in the van overnight?",
        {"role": "assistant", "content": "Two do: Brightline Commercial and Zego Van. Brightline is cheaper."}]
#: what a near miss whose pattern does not match lacks
NO_FORM = "a match: words the pattern looks for are in the message, but not in the form it takes"

#: the messages the walk's record was taken on: `explain` arguments
WALK_CASES = [
    ("Not that one, the other one.", "-H", "Which van insurer should we use?"),
    ("How should we price the new sourdough loaf at the Leeds shop?",),
    ("What about the smaller one?", "-H", "How should we price the new sourdough loaf at the Leeds shop?",
     "-H", "assistant: Most bakeries there charge 4 to 5 pounds for a large sourdough."),
    ("Yes, go with the second one.", "-H", "Which van insurer covers tools left in the van overnight?",
     "-H", "assistant: Two do: Brightline Commercial and Zego Van. Brightline is cheaper."),
    ("yes, yes, yes, yes, yes, yes, yes, yes, yes, yes, yes, yes, yes",),
    ("When was the album released?",),
    ("  ok  ",),
    ("   \uff2e\uff4f\uff54 that one, the other one.",),
]


def miss(ex, rule) -> NearMiss:
    (found,) = [n for n in ex.near_misses if n.rule == rule]
    return found


def run(*args):
    return CliRunner().invoke(cli, ["explain", *args], catch_exceptions=False)


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Run from a directory with no pack of its own, so the commands use the bundled pack."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- one near miss for each stop reason ------------------------------------------------------------


@pytest.mark.parametrize("message, history, rule, reason, setting, matched", [
    # the prefilter's words are in it ("when"), the pattern is not
    ("When was the album released?", [], "follow_up.person-question", "no_match", None, None),
    # a rule that takes the pack's max_follow_up_words (12), on 13 words
    ("Is the new one any good for tools left in the van overnight?", [], "follow_up.reference", "word_cap",
     "max_follow_up_words", "the"),
    # a rule with its own max_words (16) on 17 words
    ("Where can I find a cheap accountant in Leeds for my bakery and the shop in York?", [], "follow_up.definite",
     "word_cap", "max_words", "the shop in"),
    # the guards, each named
    ("How should we price the new sourdough loaf at the Leeds shop?", [], "follow_up.definite", "guard", "head_in",
     "the Leeds"),
    ("What is the capital of France?", [], "follow_up.definite", "guard", "unless_name", "the capital of"),
    ("How did Aretha Franklin get her first record deal?", [], "follow_up.person-question", "guard",
     "unless_name_before", "her"),
    # requires_antecedent: nothing before it, or nothing before it that mentions the band
    ("When was the album released?", [], "follow_up.definite", "no_antecedent", "requires_antecedent", "the album"),
    ("Did the band split up after the tour?", ["Tell me about Portishead"], "follow_up.definite", "no_antecedent",
     "requires_antecedent", "the band"),
    # the topic-word bounds, each named
    ("Yes, go with the second one.", VANS, "follow_up.stick-with", "topic_words", "min_content_words",
     "Yes, go with"),
    ("And the one with the lower excess, Brightline?", VANS, "follow_up.reference", "topic_words",
     "max_content_words", "the"),
    ("I meant to ask about the York venue, how did it go?", [], "follow_up.reference", "topic_words",
     "max_content_before", "it"),
    # referent rules: one whose selector finds nothing in the conversation, one whose guard refuses the message
    ("What about the smaller one?", VANS, "referent.least", "no_referent", "select", "the smaller one"),
    ("What about the one Priya liked?", VANS, "referent.description", "guard", "unless_name", None),
])
def test_a_near_miss_names_what_stopped_the_rule(message, history, rule, reason, setting, matched):
    ex = PACK.explain(message, history)
    found = miss(ex, rule)
    assert (found.reason, found.setting, found.matched) == (reason, setting, matched)
    assert found.reason in REASONS
    if matched is not None:
        assert found.span is not None and message[found.span[0]:found.span[1]] == matched
    attempt = next(a for a in ex.attempts if a.rule == rule)
    assert not attempt.fired and attempt.tried
    if reason != "no_match":
        assert found.detail == attempt.note  # the walk's own words, as --all prints them
    if reason == "guard" and rule.startswith("follow_up."):
        assert getattr(PACK.rule(rule), setting)  # the guard named is the rule's own
    # in a designer's words: what the rule needs (naming the key or setting at work), what the message lacks
    assert found.needs and found.lacks
    if setting is not None:
        assert f"({setting}" in found.needs
    whole_message = {("word_cap", "max_words"), ("word_cap", "max_follow_up_words"), ("guard", "unless_name"),
                     ("guard", "unless_name_before")}  # what these lack is the message's, not the span's
    if matched is not None and found.span is not None and (reason, setting) not in whole_message:
        assert f"{matched!r} ({found.span[0]}..{found.span[1]})" in found.lacks  # the span the rule tested


def test_a_guard_s_near_miss_says_what_the_rule_needs_and_the_span_it_tested(elsewhere):
    """The designer meant "the new numbers"; the rule tested "the new": the near miss names that span, what the rule
    needs of it and what it lacks, in the pack's terms (the lexicon's set, the rule's key), not the walk's."""
    message = "Again, with the new numbers"
    found = miss(PACK.explain(message), "follow_up.definite")
    assert (found.reason, found.setting, found.matched, found.span) == ("guard", "head_in", "the new", (12, 19))
    assert found.needs == "the phrase it matches to end on a word of the lexicon's 'nouns' set (head_in: nouns)"
    assert found.lacks == "such a word at the end of 'the new' (12..19), the phrase the pattern took: 'new' is not one"
    out = run(message).output
    assert ("  follow_up.definite       needs the phrase it matches to end on a word of the lexicon's 'nouns' set "
            "(head_in: nouns)\n"
            "                           lacks such a word at the end of 'the new' (12..19), the phrase the pattern "
            "took: 'new' is not one\n") in out
    # the walk's words stay in --all and --json, not in the brief
    assert "does not end on a word of the lexicon's nouns" not in out and "guard (head_in)" not in out
    assert "the pattern does not match" not in out and "no_match" not in out


def test_a_correction_lists_no_referent_rule_it_did_not_seek(elsewhere):
    """A correction after an offer asks the referent rules whether it picks its replacement; "we tried that one
    already" picks none, and no referent rule is a near miss of it."""
    history = VANS
    ex = PACK.explain("No, we tried that one already.", history)
    assert ex.decision.kind == "correction"
    assert [n for n in ex.near_misses if n.stage == "referent"] == []
    assert any(a.stage == "referent" for a in ex.attempts)  # they were asked: --all still lists them
    out = run("No, we tried that one already.", "-H", VANS[0], "-H", f"assistant: {VANS[1]['content']}").output
    assert "referent." not in out
    # one that picks its replacement from the offer has it as its referent; one whose selector finds none lists
    # that rule, the referent it sought
    picked = PACK.explain("Not that one, the second one.", history)
    assert picked.decision.kind == "correction" and any(p.name == "referent" for p in picked.decision.parts)
    sought = PACK.explain("No, not that one, the cheaper one.", history)
    assert [(n.rule, n.reason) for n in sought.near_misses if n.stage == "referent"] == [
        ("referent.least", "no_referent")]


def test_a_message_longer_than_any_follow_up_takes_names_the_rules_it_was_not_tried_on():
    message = ("Tell me more about how the two insurers compare on price, excess, tools cover, courtesy vans, "
               "breakdown cover and claims handling for a small bakery business with two vans")
    ex = PACK.explain(message)
    found = miss(ex, "follow_up.tell-me-more")
    assert (found.reason, found.setting, found.span) == ("too_long", "max_follow_up_words", None)
    assert found.detail == "not tried: 29 words; follow-ups have at most 12"
    assert (found.needs, found.lacks) == ("a message of at most 12 words (max_follow_up_words)",
                                          "a message that short: it has 29 words")
    over = PACK.explain("Tell me more. " + "x" * PACK.settings.max_scan_chars)
    found = miss(over, "follow_up.tell-me-more")
    assert (found.reason, found.setting) == ("too_long", "max_scan_chars")
    assert found.needs == f"a message of at most {PACK.settings.max_scan_chars} characters (max_scan_chars)"
    assert found.lacks == f"a message that short: it has {PACK.settings.max_scan_chars + 14} characters"


def test_the_vocabulary_test_is_a_near_miss_of_its_own():
    ex = PACK.explain("Which is cheaper for Harlow?")
    (test,) = [n for n in ex.near_misses if n.stage == "vocabulary"]
    assert (test.rule, test.reason, test.setting) == (None, "test", None)
    assert test.detail == "word not in the vocabulary: harlow (the test stops at the first)"
    assert test.needs == "every word of the message in the pack's vocabulary (its vocabulary sets)"
    assert test.lacks == "'harlow' in the vocabulary (the first word outside it: the test stops there)"


class _Flaky:
    """A compiled pattern whose searches all run out of time."""

    def __init__(self, pattern):
        self._rx = regex.compile(pattern)
        self.pattern = pattern

    def search(self, text, timeout=None):
        raise TimeoutError("regex timed out")


def _with(pack, *, corrections=(), follow_ups=(), vocab_sets=()):
    return Pack(name=pack.name, version=pack.version, locale=pack.locale, description="", path=pack.path,
                content_hash="test", settings=pack.settings, vocab_sets=tuple(vocab_sets) + pack.vocab_sets,
                follow_ups=tuple(follow_ups) + pack.follow_ups, corrections=tuple(corrections) + pack.corrections,
                context=pack.context, slots=pack.slots, slots_seed=pack.slots_seed)


def _rule(rid, kind, pattern, compiled=None):
    return PatternRule(id=rid, kind=kind, description="", pattern=pattern, examples=(), counterexamples=(),
                       file="test", line=1, compiled=compiled or regex.compile(pattern))


def test_a_search_out_of_time_is_a_near_miss():
    pack = _with(MINI, corrections=[_rule("correction.flaky", "correction", r"\bflaky\b", _Flaky(r"\bflaky\b"))])
    ex = pack.explain("That one is flaky again.")
    assert ex.decision.note == "timeout in correction.flaky"
    found = miss(ex, "correction.flaky")
    assert (found.reason, found.setting) == ("timeout", "timeout_ms")
    assert found.needs == f"its search to finish within {MINI.settings.timeout_ms:g} ms (timeout_ms)"
    assert [n.rule for n in ex.near_misses] == ["correction.flaky"]  # the walk stopped there: nothing after it


def test_topic_words_that_cannot_be_counted_in_time_are_a_near_miss():
    slow = VocabSet(id="vocab.slow", role="choice", description="", words=(), token_patterns=("(?:a|aa)+z",),
                    examples=(), counterexamples=(), file="test", line=1)
    bounded = dataclasses.replace(_rule("follow_up.bounded", "follow_up", r"\bthat works\b"), max_content_words=2)
    pack = _with(MINI, follow_ups=[bounded], vocab_sets=[slow])
    ex = pack.explain("Yes, that works " + "a" * 48)
    found = miss(ex, "follow_up.bounded")
    assert (found.reason, found.setting, found.matched) == ("timeout", "timeout_ms", "that works")


class _Picky(PatternLane):
    """A lane of a family from outside the package that refuses every match for a reason of its own."""

    def accept(self, rule, match, walk):
        if walk.recorder is not None:
            walk.recorder.judged(rule, False, "matched, but this lane takes nothing on a test day")
        return False


def test_a_lane_that_refuses_for_its_own_reason_is_a_near_miss():
    picky = _Picky([_rule("picky.flaky", "follow_up", r"\bflaky\b")], stage="picky",
                   decides=DecisionKind.FOLLOW_UP, order=5, timeout=0.05)
    base = MINI.matcher
    matcher = Matcher(MINI.settings, [picky, *base.lanes], ("mini", "1", "test"), context=base.context)
    ex = matcher.explain("That one is flaky again.")
    found = miss(ex, "picky.flaky")
    assert (found.stage, found.reason, found.setting, found.matched) == ("picky", "refused", None, "flaky")
    assert found.detail == "matched, but this lane takes nothing on a test day"
    assert found.lacks == "what its stage asks, for 'flaky' (12..17): this lane takes nothing on a test day"


def test_the_rule_that_decided_and_the_rules_after_it_are_no_near_misses():
    ex = PACK.explain("Not that one, the other one.", ["Which van insurer should we use?"])
    assert [(n.rule, n.reason) for n in ex.near_misses] == [("correction.not-what-i-meant", "no_match")]
    assert PACK.explain("  ok  ").near_misses == ()


def test_near_misses_are_json():
    ex = PACK.explain("When was the album released?")
    doc = json.loads(json.dumps(ex.to_dict()))
    assert doc["near_misses"] == [n.to_dict() for n in ex.near_misses]
    assert doc["near_misses"][-1] == {"rule": "follow_up.definite", "stage": "follow_up", "reason": "no_antecedent",
                                      "setting": "requires_antecedent",
                                      "detail": "matched, but there is no conversation before it",
                                      "span": [9, 18], "matched": "the album",
                                      "needs": "an earlier turn that mentions what its match names "
                                               "(requires_antecedent)",
                                      "lacks": "such a turn, for 'the album' (9..18): there is no conversation "
                                               "before it"}


VOCAB = sorted({w for s in PACK.vocab_sets for w in s.words})
WORD = st.sampled_from(VOCAB + ["van", "insurance", "Brightline", "quote", "tried", "meant", "not", "wrong", "the",
                                "band", "album", "when", "what", "about", "Priya", "it", "tell", "more"])
SEP = st.sampled_from([" ", ", ", ". ", "? ", "\u2019"])
CHAT = st.lists(st.tuples(WORD, SEP), min_size=1, max_size=30).map(lambda ws: "".join(w + s for w, s in ws))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CHAT, st.lists(st.one_of(CHAT, CHAT.map(lambda t: {"role": "assistant", "content": t})), max_size=2))
def test_every_rule_the_prefilter_names_for_a_turn_no_rule_took_is_a_near_miss(message, history):
    ex = PACK.explain(message, history)
    assert all(n.reason in REASONS for n in ex.near_misses)
    if ex.decision.kind == "skip":
        assert ex.near_misses == ()
        return
    text = normalize(message[: PACK.settings.max_scan_chars])
    tokens = word_pattern(text).findall(text)
    searched = [r for lane in PACK.matcher.lanes for r in lane.patterns]
    found = PACK.matcher._index.candidates(text, words_of_tokens(tokens, text), len(tokens))
    named = {searched[i].id for i in found if i < len(searched)}
    # a rule with no required words is named for every message: only a match of it that was refused is a near miss
    unconditional = {searched[i].id for i in PACK.matcher.unconditional if i < len(searched)}
    rules = [n.rule for n in ex.near_misses if n.stage not in ("vocabulary", "referent")]
    assert set(rules) <= named and len(rules) == len(set(rules))
    assert all(n.span is not None for n in ex.near_misses if n.rule in unconditional)
    if ex.decision.rule is None and ex.decision.note is None:
        assert set(rules) - unconditional == named - unconditional  # every rule the prefilter named is accounted for
    for n in ex.near_misses:
        if n.span is not None:
            assert message[n.span[0]:n.span[1]] == n.matched
        assert n.needs and n.lacks
    # referent rules only where one was sought (a follow-up after a reply, a correction after an offer), and only
    # those the prefilter named
    start = len(searched)
    named_referents = {PACK.matcher.referents.rules[i - start].id for i in found if i >= start}
    referents = [n for n in ex.near_misses if n.stage == "referent"]
    assert {n.rule for n in referents} <= named_referents
    if ex.decision.kind not in ("follow_up", "correction") or not any(
            isinstance(h, dict) and h.get("role") == "assistant" for h in history):
        assert referents == []
    if ex.decision.kind == "correction":
        assert [n for n in referents if n.reason == "no_match"] == []


# -- the brief ------------------------------------------------------------------------------------


def _rule_at(rule_id: str) -> str:
    """Where the command names the rule, from a directory other than the checkout."""
    rule = PACK.rule(rule_id)
    return f"{display(rules_dir() / Path(rule.file).name)}:{rule.line}"


def _pack_line() -> str:
    found = find_pack(None)
    return f"pack:    {PACK.name} {PACK.version} ({PACK.content_hash}) at {found.path} ({found.describe()})"


def test_the_brief_of_a_correction(elsewhere):
    result = run("Not that one, the other one.", "-H", "Which van insurer should we use?")
    assert result.exit_code == 0
    assert result.output == (
        "message: 'Not that one, the other one.'\n"
        "kind:    correction\n"
        f"rule:    correction.no-not-that-one  ({_rule_at('correction.no-not-that-one')})\n"
        "matched: 'Not that one,' at 0..13 of the message\n"
        "query:   Not that one, the other one.\n"
        "parts:   message  from the message: 'Not that one, the other one.'\n"
        "near misses (rules whose words are in the message: what each needs, what the message lacks):\n"
        "  correction.not-what-i-meant  needs a match of its pattern (the user meant something else)\n"
        "                               lacks a match: words the pattern looks for are in the message, but not in "
        "the form it takes\n"
        f"{_pack_line()}\n")


def test_the_brief_of_a_follow_up_names_where_each_part_came_from(elsewhere):
    result = run("What about the smaller one?", "-H", "How should we price the new sourdough loaf?",
                 "-H", "assistant: Most bakeries there charge 4 to 5 pounds for a large sourdough.")
    assert result.exit_code == 0
    assert result.output == (
        "message: 'What about the smaller one?'\n"
        "kind:    follow_up\n"
        f"rule:    follow_up.what-about  ({_rule_at('follow_up.what-about')})\n"
        "matched: 'What about' at 0..10 of the message\n"
        "query:   How should we price the new sourdough loaf?\n"
        "         What about the smaller one?\n"
        "         Most bakeries there charge 4 to 5 pounds for a large sourdough.\n"
        "parts:   anchor   from user turn 1, 0..43: 'How should we price the new sourdough loaf?'\n"
        "         message  from the message: 'What about the smaller one?'\n"
        "         reply    from assistant turn 1, 0..63: "
        "'Most bakeries there charge 4 to 5 pounds for a large sourdough.'\n"
        "near misses (rules whose words are in the message: what each needs, what the message lacks):\n"
        "  referent.least        needs an option in the conversation's recent turns for its selector to pick "
        "(select: least)\n"
        "                        lacks such an option: its selector (least) found none for 'the smaller one' "
        "(11..26)\n"
        "  referent.description  needs a match of its pattern (a definite description points at the thing just "
        "named)\n"
        "                        lacks a match: words the pattern looks for are in the message, but not in the "
        "form it takes\n"
        f"{_pack_line()}\n")


def test_the_brief_of_a_follow_up_reads_every_part_of_the_decision(elsewhere):
    """The parts are the decision's own, whatever their names: each is listed with where it came from."""
    message, history = "Yes, go with the second one.", VANS
    d = PACK.classify(message, history)
    result = run(message, "-H", VANS[0], "-H", f"assistant: {VANS[1]['content']}")
    lines = result.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("parts:"))
    shown = lines[start:start + len(d.parts)]
    assert len(d.parts) == 3  # the subject, the option chosen, the message
    for line, part in zip(shown, d.parts):
        assert line[9:].startswith(part.name) and f"from {part.where}" in line and line.endswith(repr(part.text))


def test_the_brief_of_a_skip(elsewhere):
    result = run("  ok  ")
    assert result.output == (
        "message: '  ok  '\n"
        "kind:    skip  (2 visible characters (format characters removed, ends stripped); under 10 is skipped)\n"
        "query:   (none: not searched)\n"
        "parts:   (none)\n"
        f"{_pack_line()}\n")


def test_the_brief_of_a_substantive_turn_lists_its_near_misses(elsewhere):
    result = run("How should we price the new sourdough loaf at the Leeds shop?")
    assert result.output == (
        "message: 'How should we price the new sourdough loaf at the Leeds shop?'\n"
        "kind:    substantive  (no rule took it: the message is searched as typed)\n"
        "query:   How should we price the new sourdough loaf at the Leeds shop?\n"
        "parts:   message  from the message: 'How should we price the new sourdough loaf at the Leeds shop?'\n"
        "near misses (rules whose words are in the message: what each needs, what the message lacks):\n"
        "  follow_up.person-question  needs a match of its pattern (a short question about a person an earlier "
        "turn named, by a personal pronoun)\n"
        f"                             lacks {NO_FORM}\n"
        "  follow_up.bare-question    needs a match of its pattern (a short question about what we, you or I did "
        "or should do, with nothing it is done to or about)\n"
        f"                             lacks {NO_FORM}\n"
        "  (vocabulary test)          needs every word of the message in the pack's vocabulary (its vocabulary "
        "sets)\n"
        "                             lacks 'price' in the vocabulary (the first word outside it: the test stops "
        "there)\n"
        "  follow_up.definite         needs the phrase it matches to end on a word of the lexicon's 'nouns' set "
        "(head_in: nouns)\n"
        "                             lacks such a word at the end of 'the Leeds' (46..55), the phrase the pattern "
        "took: 'Leeds' is not one\n"
        "  follow_up.fragment         needs a match of its pattern (a fragment with no verb that answers or "
        "narrows the last turn)\n"
        f"                             lacks {NO_FORM}\n"
        f"{_pack_line()}\n")


def test_a_substantive_turn_the_prefilter_named_no_rule_for_says_so(elsewhere):
    # too long for the vocabulary test (16 words), and no rule's words are in it
    message = ("Quarterly VAT return for Brightline Commercial Insurance Limited covering April, May and June plus "
               "two vans")
    assert PACK.explain(message).near_misses == ()
    result = run(message)
    assert "\nnear misses: none (the prefilter named no rule)\n" in result.output


def test_the_brief_is_far_shorter_than_the_walk(elsewhere):
    brief = run("How should we price the new sourdough loaf at the Leeds shop?").output.splitlines()
    walk = run("How should we price the new sourdough loaf at the Leeds shop?", "--all").output.splitlines()
    # two lines a near miss (what the rule needs, what the message lacks) and six for the rest
    assert len(brief) <= 6 + 2 * 5 and len(walk) >= 40 and len(walk) >= 4 * len(brief)


def test_json_carries_the_near_misses(elsewhere):
    doc = json.loads(run("When was the album released?", "--json").output)
    assert doc["near_misses"] == [n.to_dict() for n in PACK.explain("When was the album released?").near_misses]
    assert doc["attempts"] and doc["decision"]["kind"] == "substantive"


# -- the README's example ---------------------------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALLED = "<installed pack cleo-en>"


def test_the_readme_shows_what_explain_prints(elsewhere, capsys):
    (block,) = [b for b in re.findall(r"```console\n(.*?)```", README, re.S) if b.startswith("$ cleo-rules explain")]
    command, *lines = block.splitlines()
    argv = shlex.split(command.removeprefix("$ "))[1:]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    out, err = capsys.readouterr()
    assert exit_.value.code == 0 and err == ""
    # `(…)` is the pack's content hash; an installed cleo-rules names its pack `<installed pack cleo-en>`, this
    # checkout names its directory (tests/project/test_packaging.py runs the wheel)
    expected = "\n".join(lines).replace("(…)", f"({PACK.content_hash})").replace(INSTALLED, display(rules_dir()))
    assert out == expected + "\n"
    assert "near misses" in out and "no rule took it" in out


def test_the_readme_names_every_reason():
    section = README[README.index("**See why a rule did not fire.**"):README.index("## The playground")]
    assert "cleo_rules.explain.REASONS" in section
    assert [r for r in REASONS if f"`{r}`" not in section] == []


# -- --all: the walk, as it was printed ------------------------------------------------------------


def _walk_output(args) -> str:
    result = run(*args, "--all")
    assert result.exit_code == 0
    lines = result.output.splitlines(keepends=True)
    assert lines[-1] == _pack_line() + "\n"
    return "".join(lines[:-1])


@pytest.mark.parametrize("case", range(len(WALK_CASES)))
def test_all_prints_the_walk_as_before(elsewhere, case):
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    assert [tuple(r["args"]) for r in recorded] == WALK_CASES
    assert _walk_output(WALK_CASES[case]) == recorded[case]["output"]


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORD.write_text(json.dumps([{"args": list(args), "output": _walk_output(args)} for args in WALK_CASES],
                                 indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {RECORD}")
