"""No rule pattern, example, counterexample, lexicon entry or corpus case is a message of the evaluation sets.

The evaluation data (``../shared/eval``) guides the rules; it is not copied
into them. It is not in the repository, so the check reads the hashes
``scripts/dev_message_hashes.py`` wrote from it (``tests/data/dev_message_hashes.txt``;
the dialogue sets, SGD, TREC CAsT and the business-register cases, whose
user turns before the message count too):
a text matches a message when their keys (case-folded, inner white space
collapsed, punctuation and white space stripped at both ends) hash alike. The
project's own evaluation set (``cleo_rules/data/eval/dialogues.yaml``, the
dialogues ``bench/eval_retrieval.py`` replays) is held to the same rule: its
user messages are read from the file and hashed the same way.

Two kinds of text are no copy even when they match, and are passed over: one
the pack skips for its length ("Yes.", "Thanks!"), which no rule reads, and a
stock phrase every word of which is in the pack's vocabulary ("No, thank
you.", "That sounds great."): it carries no topic word, and the corpus of
nods and closings cannot leave out the commonest of them. Any text with a
word of its own ("Moderately priced.", "Did the band tour?") must not match.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
import yaml

from cleo_rules import load_pack
from cleo_rules.kinds import DecisionKind
from cleo_rules.text import WORD, normalize

from helpers import DATA, ROOT

HASHES = DATA / "dev_message_hashes.txt"
PACKS = (ROOT / "rules", ROOT / "cleo_rules" / "starter" / "rules")
CORPUS = ROOT / "corpus"
OWN_DIALOGUES = ROOT / "cleo_rules" / "data" / "eval" / "dialogues.yaml"
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _script():
    spec = importlib.util.spec_from_file_location("dev_message_hashes", ROOT / "scripts" / "dev_message_hashes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


def _known() -> frozenset[str]:
    return frozenset(HASHES.read_text(encoding="utf-8").split())


def own_messages(path: Path = OWN_DIALOGUES) -> list[str]:
    """The user messages of the project's own evaluation dialogues, in order."""
    doc = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
    return [turn["message"] for dialogue in doc["dialogues"] for turn in dialogue["turns"]]


def _own_known() -> frozenset[str]:
    return frozenset(SCRIPT.digest(m) for m in own_messages())


def _texts_of_conversation(item, where: str):
    """A message, or a ``{message, history}`` conversation: its message and every turn of its history."""
    if isinstance(item, str):
        yield where, item
    elif isinstance(item, dict):
        if isinstance(item.get("message"), str):
            yield where, item["message"]
        for j, turn in enumerate(item.get("history") or ()):
            if isinstance(turn, str):
                yield f"{where} history[{j}]", turn
            elif isinstance(turn, dict) and isinstance(turn.get("content"), str):
                yield f"{where} history[{j}]", turn["content"]


def rule_texts(pack_dir: Path):
    """``(where, text)`` for every pattern, example, counterexample and request form of a pack's rule files."""
    manifest = yaml.load((pack_dir / "pack.yaml").read_text(encoding="utf-8"), Loader=Loader)
    for name in manifest["files"]:
        doc = yaml.load((pack_dir / name).read_text(encoding="utf-8"), Loader=Loader)
        if doc.get("kind") in ("lexicon", "slots"):
            continue
        for item in doc.get("rules") or doc.get("sets") or ():
            rid = item.get("id", "?")
            patterns = item.get("pattern")
            for j, pattern in enumerate(patterns if isinstance(patterns, list) else [patterns]):
                if isinstance(pattern, str):
                    yield f"{pack_dir.name}/{name} {rid} pattern[{j}]", pattern
            for field in ("examples", "counterexamples", "request_forms"):
                for j, example in enumerate(item.get(field) or ()):
                    yield from _texts_of_conversation(example, f"{pack_dir.name}/{name} {rid} {field}[{j}]")


def _strings(value):
    """Every string in a YAML value: itself, or those of its lists and mappings' values, depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def lexicon_texts(pack_dir: Path):
    """``(where, text)`` for every entry of a pack's word lists: its lexicon's and vocabulary's words, its slots'
    fillers."""
    manifest = yaml.load((pack_dir / "pack.yaml").read_text(encoding="utf-8"), Loader=Loader)
    for name in manifest["files"]:
        doc = yaml.load((pack_dir / name).read_text(encoding="utf-8"), Loader=Loader)
        if doc.get("kind") == "lexicon":
            for set_name, item in (doc.get("sets") or {}).items():
                for j, word in enumerate(_strings(item.get("words"))):
                    yield f"{pack_dir.name}/{name} {set_name} words[{j}]", word
        elif doc.get("kind") == "vocabulary":
            for item in doc.get("sets") or ():
                for j, word in enumerate(_strings(item.get("words"))):
                    yield f"{pack_dir.name}/{name} {item.get('id', '?')} words[{j}]", word
        elif doc.get("kind") == "slots":
            for slot, fillers in (doc.get("slots") or {}).items():
                for j, filler in enumerate(_strings(fillers)):
                    yield f"{pack_dir.name}/{name} {slot}[{j}]", filler


def corpus_texts(corpus_dir: Path):
    """``(where, text)`` for every case of the corpus, generated or written by hand: its message and history."""
    for path in sorted(corpus_dir.rglob("*.yaml")):
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
        for case in doc.get("cases") or ():
            yield from _texts_of_conversation(case, f"{path.relative_to(corpus_dir.parent)} {case.get('id', '?')}")


def stock(pack, text: str) -> bool:
    """Whether ``text`` is too short for the pack to read, or made only of its vocabulary's words."""
    if pack.classify(text).kind == DecisionKind.SKIP:
        return True
    tokens = WORD.findall(normalize(text))
    _, covered, _ = pack.matcher.context.vocabulary.cover(tokens)
    return bool(tokens) and all(covered)


def copied(texts, known, pack) -> list[str]:
    """``where: text`` for each text whose key hashes as a known message's, stock phrases passed over."""
    return [f"{where}: {text!r}" for where, text in texts
            if SCRIPT.key(text) and SCRIPT.digest(text) in known and not stock(pack, text)]


def test_the_hash_file_is_sorted_distinct_hashes_of_every_evaluation_set():
    lines = HASHES.read_text(encoding="utf-8").splitlines()
    assert lines == sorted(set(lines))
    assert all(re.fullmatch(f"[0-9a-f]{{{SCRIPT.DIGITS}}}", h) for h in lines)
    assert len(lines) > 9000  # the five files hold over 9,000 distinct messages
    # what the script hashes: the message fields of the five files
    assert {name for name, _ in SCRIPT.SOURCES} == {"dialogue/canard.jsonl", "dialogue/gecor_camrest.jsonl",
                                                    "sgd_user_turns.jsonl", "cast_turns.jsonl",
                                                    "business/cases.jsonl"}
    assert SCRIPT.WITH_HISTORY == {"business/cases.jsonl"}


def test_the_business_cases_give_their_message_and_their_user_turns_before_it(tmp_path):
    """Of a business case, the message and each user turn of its history are hashed; the assistant's replies not."""
    for name, field in SCRIPT.SOURCES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(json.dumps({field: f"a message of {name}", "history": ["not this one"]}) + "\n",
                                     encoding="utf-8")
    case = {"id": "b1", "message": "Put him on it from Wednesday", "label": "follow_up",
            "history": ["Is Ryan free for the fit-out?", {"role": "assistant", "content": "Ryan is free Wednesday."},
                        {"role": "user", "content": "And Kev?"}, {"role": "assistant", "content": "Kev is away."}]}
    (tmp_path / "business" / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    found = list(SCRIPT.messages(tmp_path))
    assert found[-3:] == ["Put him on it from Wednesday", "Is Ryan free for the fit-out?", "And Kev?"]
    assert "not this one" not in found and not any("away" in m or "is free" in m for m in found)
    assert sorted(found[:4]) == sorted(f"a message of {name}" for name, _ in SCRIPT.SOURCES[:4])


@pytest.mark.parametrize("a, b", [("Same for Leeds!", "same for leeds"), ("  What about York?  ", "WHAT ABOUT YORK"),
                                  ("“Thanks,  that’s all.”", "thanks, that’s all"), ("ok\tthen...", "Ok then")])
def test_texts_that_differ_only_in_case_spacing_and_end_punctuation_share_a_hash(a, b):
    assert SCRIPT.key(a) == SCRIPT.key(b) and SCRIPT.digest(a) == SCRIPT.digest(b)


@pytest.mark.parametrize("a, b", [("Same for Leeds", "Same for York"), ("what about york", "what about, york"),
                                  ("it's fine", "its fine")])
def test_texts_that_differ_inside_do_not(a, b):
    assert SCRIPT.digest(a) != SCRIPT.digest(b)


def test_short_messages_and_stock_phrases_are_passed_over_and_nothing_else(default_pack):
    for text in ("Yes.", "Thanks!", "No, thank you.", "That sounds great.", "Thank you so much for your help."):
        assert stock(default_pack, text), text
    for text in ("Moderately priced.", "Did the band tour?", "Which states?", "Any other options at the depot?"):
        assert not stock(default_pack, text), text


def test_the_check_finds_a_copied_message_in_a_pack_and_a_corpus(tmp_path, default_pack):
    """The same reading as the tests below, over a pack and a corpus holding a known message in each place."""
    known = frozenset({SCRIPT.digest("Can you book it for Friday?"), SCRIPT.digest("Any bakeries open late?"),
                       SCRIPT.digest("No, thank you.")})
    pack = tmp_path / "rules"
    pack.mkdir()
    (pack / "pack.yaml").write_text("pack: t\nfiles: [follow_ups.yaml]\n", encoding="utf-8")
    (pack / "follow_ups.yaml").write_text(yaml.safe_dump({"kind": "follow_ups", "rules": [
        {"id": "follow_up.a", "pattern": ["any bakeries open late", "x"], "examples": ["can you book it for friday"],
         "counterexamples": [{"message": "No, thank you.", "history": ["ANY BAKERIES OPEN LATE!"]}]}]}),
        encoding="utf-8")
    found = copied(rule_texts(pack), known, default_pack)
    assert [f.split(":")[0] for f in found] == ["rules/follow_ups.yaml follow_up.a pattern[0]",
                                                "rules/follow_ups.yaml follow_up.a examples[0]",
                                                "rules/follow_ups.yaml follow_up.a counterexamples[0] history[0]"]
    corpus = tmp_path / "corpus"
    (corpus / "generated").mkdir(parents=True)
    (corpus / "generated" / "r.yaml").write_text(
        'kind: corpus\ncases:\n  - {"id": "r/p-1", "message": "Can you book it for Friday"}\n'
        '  - {"id": "r/p-2", "message": "Book it.", "history": [{"role": "assistant", "content": "Any bakeries open '
        'late?"}]}\n', encoding="utf-8")
    assert len(copied(corpus_texts(corpus), known, default_pack)) == 2


@pytest.mark.parametrize("pack_dir", PACKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_rule_pattern_example_or_counterexample_is_an_evaluation_message(pack_dir):
    texts = list(rule_texts(pack_dir))
    assert len(texts) > 10  # the pack was read
    found = copied(texts, _known(), load_pack(pack_dir))
    assert not found, "rule texts equal to a message of the evaluation sets:\n" + "\n".join(found)


def test_no_corpus_case_is_an_evaluation_message(default_pack):
    texts = list(corpus_texts(CORPUS))
    assert len(texts) > 4000  # generated and hand-written cases were read
    found = copied(texts, _known(), default_pack)
    assert not found, "corpus cases equal to a message of the evaluation sets:\n" + "\n".join(found)


def test_the_own_evaluation_set_is_read_whole():
    messages = own_messages()
    assert len(messages) > 100  # every dialogue's every turn
    assert all(isinstance(m, str) and m.strip() for m in messages)
    doc = yaml.load(OWN_DIALOGUES.read_text(encoding="utf-8"), Loader=Loader)
    assert len(messages) == sum(len(d["turns"]) for d in doc["dialogues"])


def test_the_own_set_check_finds_a_message_copied_into_a_rule(tmp_path, default_pack):
    """A rule example equal to an own-set message (up to case and end punctuation) is found, a rephrased one is not."""
    message = next(m for m in own_messages() if not stock(default_pack, m))
    pack = tmp_path / "rules"
    pack.mkdir()
    (pack / "pack.yaml").write_text("pack: t\nfiles: [follow_ups.yaml]\n", encoding="utf-8")
    (pack / "follow_ups.yaml").write_text(yaml.safe_dump({"kind": "follow_ups", "rules": [
        {"id": "follow_up.a", "pattern": ["x"], "examples": [message.upper().rstrip(".?!") + "!!",
                                                            message + " for the Leeds shop"]}]}), encoding="utf-8")
    found = copied(rule_texts(pack), _own_known(), default_pack)
    assert [f.split(":")[0] for f in found] == ["rules/follow_ups.yaml follow_up.a examples[0]"]


def test_the_check_reads_every_word_list_entry(tmp_path, default_pack):
    """A known message as a lexicon word, a vocabulary phrase or a slot filler is found; its neighbours are not."""
    known = frozenset({SCRIPT.digest("Any word on that purchase order")})
    pack = tmp_path / "rules"
    pack.mkdir()
    (pack / "pack.yaml").write_text("pack: t\nfiles: [vocabulary.yaml, lexicon.yaml, slots.yaml]\n", encoding="utf-8")
    (pack / "vocabulary.yaml").write_text(yaml.safe_dump({"kind": "vocabulary", "sets": [
        {"id": "vocab.a", "words": ["yes", "any word on that purchase order?"]}]}), encoding="utf-8")
    (pack / "lexicon.yaml").write_text(yaml.safe_dump({"kind": "lexicon", "sets": {
        "common": {"words": ["order", "Any word on that purchase order!"]}}}), encoding="utf-8")
    slots = {"that": ["that", "ANY WORD ON THAT PURCHASE ORDER"],
             "history": [{"x": ["any word on that purchase order"]}]}
    (pack / "slots.yaml").write_text(yaml.safe_dump({"kind": "slots", "slots": slots}, sort_keys=False),
                                     encoding="utf-8")
    found = copied(lexicon_texts(pack), known, default_pack)
    assert [f.split(":")[0] for f in found] == ["rules/vocabulary.yaml vocab.a words[1]",
                                                "rules/lexicon.yaml common words[1]", "rules/slots.yaml that[1]",
                                                "rules/slots.yaml history[0]"]


@pytest.mark.parametrize("pack_dir", PACKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_lexicon_vocabulary_or_slot_entry_is_an_evaluation_message(pack_dir):
    texts = list(lexicon_texts(pack_dir))
    assert len(texts) > 50  # the word lists were read
    pack = load_pack(pack_dir)
    found = copied(texts, _known() | _own_known(), pack)
    assert not found, "word list entries equal to a message of the evaluation sets:\n" + "\n".join(found)


@pytest.mark.parametrize("pack_dir", PACKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_rule_pattern_example_or_counterexample_is_an_own_evaluation_message(pack_dir):
    found = copied(list(rule_texts(pack_dir)), _own_known(), load_pack(pack_dir))
    assert not found, "rule texts equal to a message of the own evaluation set:\n" + "\n".join(found)


def test_no_corpus_case_is_an_own_evaluation_message(default_pack):
    found = copied(list(corpus_texts(CORPUS)), _own_known(), default_pack)
    assert not found, "corpus cases equal to a message of the own evaluation set:\n" + "\n".join(found)
