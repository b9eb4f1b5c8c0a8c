"""Corpus templates: syntax, expansion by index, tidying, and errors that say how to fix them."""

from __future__ import annotations

import pytest

from cleo_rules.corpus.template import Grammar, TemplateError, clean

SLOTS = {
    "we": ["we", "I"],
    "already": ["already", "just"],
    "ordinal": ["first", "second"],
    "choice": ["the {ordinal} one", "option {b|c}"],
    "end": [".", "!"],
}


def expand_all(template, slots=SLOTS):
    return [clean(x) for x in Grammar(slots).compile(template).all()]


@pytest.mark.parametrize("template, expected", [
    ("plain text", ["plain text"]),
    ("{we} tried", ["we tried", "I tried"]),
    ("{we} {already?} tried", ["we tried", "we already tried", "we just tried",
                               "I tried", "I already tried", "I just tried"]),
    ("{yes|sure}, {choice}", ["yes, the first one", "yes, the second one", "yes, option b", "yes, option c",
                              "sure, the first one", "sure, the second one", "sure, option b", "sure, option c"]),
    ("try it{|, please}", ["try it", "try it, please"]),
    ("{{literal}} braces", ["{literal} braces"]),
])
def test_expansions(template, expected):
    assert expand_all(template) == expected


def test_count_and_index_agree_with_listing():
    node = Grammar(SLOTS).compile("{we} {already?} tried {choice}{end?}")
    assert node.n == 2 * 3 * 4 * 3 == len(node.all())
    assert [node.expand(i) for i in range(node.n)] == node.all()


def test_huge_templates_are_counted_without_listing():
    slots = {f"s{i}": [str(j) for j in range(10)] for i in range(12)}
    node = Grammar(slots).compile(" ".join(f"{{s{i}}}" for i in range(12)))
    assert node.n == 10 ** 12
    assert clean(node.expand(10 ** 12 - 1)) == " ".join(["9"] * 12)


@pytest.mark.parametrize("raw, tidy", [
    ("  we   tried  that ", "we tried that"),
    ("yes , that one .", "yes, that one."),
    (", no , not that", "no, not that"),
    ("ok,, thanks", "ok, thanks"),
])
def test_clean(raw, tidy):
    assert clean(raw) == tidy


@pytest.mark.parametrize("template, message, help_part", [
    ("{nope} x", "unknown slot {nope}", "slots: already, choice, end, ordinal, we"),
    ("{ordinals}", "unknown slot {ordinals}", "did you mean {ordinal}?"),
    ("{we", "unclosed '{' at position 0", "write {{ for a literal brace"),
    ("we}", "unmatched '}' at position 2", "write }} for a literal brace"),
    ("{}", "{} at position 0", "a choice separates alternatives with |"),
    ("{We}", "{We} at position 0", "slot names are lower case"),
])
def test_errors_say_what_and_how(template, message, help_part):
    with pytest.raises(TemplateError) as info:
        Grammar(SLOTS).compile(template)
    assert message in str(info.value)
    assert help_part in info.value.help


def test_slot_cycles_are_refused():
    with pytest.raises(TemplateError, match=r"slot \{a\} refers back to itself \(a -> b -> a\)"):
        Grammar({"a": ["x {b}"], "b": ["{a}"]}).compile("{a}")


def test_bad_filler_names_its_slot():
    with pytest.raises(TemplateError, match=r"in a filler of slot \{choice\}: unknown slot \{letter\}"):
        Grammar({"choice": ["option {letter}"]}).compile("{choice}")


def test_slots_used_follows_fillers():
    assert Grammar(SLOTS).slots_used("{we} said no to {choice}") == ["choice", "ordinal", "we"]
