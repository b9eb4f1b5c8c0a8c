"""Rule families (``cleo_rules.families``): one module and one schema each, registered in one table.

A toy family defined here, outside the package, is added through the
registry (the experimental interface): its files compile with their problems
placed, its lane classifies in the walk, ``explain`` and the pack's own
example checks see it, its rules are in the corpus, the findings, ``check``'s
counts, ``/v1/pack/rules`` and the OpenAPI document, and its packs are cached
like a bundled family's; taken away again, its files are an unknown kind,
placed at their ``kind:``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from cleo_rules import families, findings, load_pack
from cleo_rules.corpus.run import run_corpus
from cleo_rules.errors import PackError
from cleo_rules.explain import Attempt
from cleo_rules.families import Family
from cleo_rules.kinds import DecisionKind, FileKind, RuleKind
from cleo_rules.pack import cache, cache_key
from cleo_rules.pack import compile as compile_module
from cleo_rules.pack.compile import compile_pack
from cleo_rules.resources import schemas_dir
from cleo_rules.serve import ServeSettings, create_app
from cleo_rules.pack_check import check
from cleo_rules.walk import Lane, LaneOrder, WalkResult

from helpers import MINI

HISTORY = ["Which van insurer should we use?"]

GREETINGS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["kind", "rules"],
    "properties": {
        "kind": {"const": "greetings"},
        "rules": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["id", "description", "words", "examples", "counterexamples"],
            "properties": {
                "id": {"type": "string", "pattern": "^greeting\\.[a-z-]+$"},
                "description": {"type": "string"},
                "words": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "examples": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "counterexamples": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            },
        }},
    },
}

GREETINGS = """\
kind: greetings
rules:
  - id: greeting.hello
    description: A greeting on its own carries nothing to search for.
    words: [hello, hi, hey]
    examples: ["Hello there, how are you today?", "hi again, everyone"]
    counterexamples: ["Say hello to the new van insurer for me, please."]
"""


@dataclass(frozen=True)
class Greeting:
    """A toy rule: a message that opens with one of its words is a greeting."""

    id: str
    kind: str
    description: str
    words: frozenset
    examples: tuple
    counterexamples: tuple
    file: str
    line: int
    pointer: str = ""
    generate: Mapping | None = None


class GreetingLane(Lane):
    """Tried after the corrections: a short message opening with a greeting word is not searched."""

    stage = "greeting"
    decides = DecisionKind.SKIP
    order = (LaneOrder.CORRECTIONS + LaneOrder.FOLLOW_UPS) / 2
    longest = 6

    def __init__(self, rules):
        self.rules = tuple(rules)

    def search(self, walk, candidates):
        first = walk.tokens[0] if walk.tokens else ""
        for slot, rule in enumerate(self.rules):
            hit = first in rule.words
            if walk.recorder is not None:
                walk.recorder.attempt(self, slot, Attempt(self.stage, rule.id, hit,
                                                          note=f"opens with {first!r}" if hit else "no greeting"))
            if hit:
                return rule.id, walk.word_spans()[0]
        return None


class Greetings(Family):
    kind = "greetings"
    schema = GREETINGS_SCHEMA
    rule_kind = "greeting"
    decides = DecisionKind.SKIP
    listed = 3
    noun = "a greeting"
    rule_class = Greeting

    def build(self, item, at):
        given = item.get("words")
        words: list = given if isinstance(given, list) else []
        for j, word in enumerate(words):
            if isinstance(word, str) and " " in word.strip():
                at.problem("E120", f"greeting word {word!r} is more than one word", at.at("words", j), rank=6,
                           help="list single words; a greeting is told by the message's first word")
        if not at.claimed or at.id is None:
            return None
        return Greeting(id=at.id, kind=self.rule_kind, description=item.get("description", ""),
                        words=frozenset(w.casefold() for w in words if isinstance(w, str)),
                        examples=tuple(item.get("examples") or ()),
                        counterexamples=tuple(item.get("counterexamples") or ()), file=at.src.display,
                        line=at.line, pointer=at.pointer)

    def lanes(self, rules, context):
        return [GreetingLane(rules)]


class Farewells(Greetings):
    """The toy family with its rules apart from those that classify (``listed = None``, as referent rules)."""

    listed = None


@pytest.fixture
def greetings():
    """The toy family, registered for the test only."""
    family = families.register(Greetings())
    try:
        yield family
    finally:
        families.unregister(family.kind)


@pytest.fixture(params=[Greetings, Farewells], ids=["listed", "apart"])
def toy(request):
    """The toy family, its rules among those that classify or apart from them, registered for the test only."""
    family = families.register(request.param())
    try:
        yield family
    finally:
        families.unregister(family.kind)


def pack_with_greetings(tmp_path: Path, text: str = GREETINGS) -> Path:
    """A copy of the mini pack that also lists ``greetings.yaml``."""
    pack_dir = tmp_path / "pack"
    shutil.copytree(MINI, pack_dir)
    (pack_dir / "greetings.yaml").write_text(text, encoding="utf-8")
    manifest = pack_dir / "pack.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(
        "files: [vocabulary.yaml, corrections.yaml, follow_ups.yaml]",
        "files: [vocabulary.yaml, corrections.yaml, follow_ups.yaml, greetings.yaml]"), encoding="utf-8")
    assert "greetings.yaml" in manifest.read_text(encoding="utf-8")
    return pack_dir


def refused(path) -> PackError:
    with pytest.raises(PackError) as info:
        compile_pack(path)
    return info.value


# -- a family from outside the package --------------------------------------------------------------------------

def test_a_registered_family_classifies_in_its_lane(greetings, tmp_path):
    pack = compile_pack(pack_with_greetings(tmp_path))  # its examples and counterexamples hold
    rule = pack.rule("greeting.hello")
    assert isinstance(rule, Greeting) and pack.family_rules["greetings"] == (rule,)
    assert pack.rules[-1] is rule and rule not in pack.referent_rules
    assert rule.file.endswith("greetings.yaml") and (rule.line, rule.pointer) == (3, "/rules/0")
    assert pack.source(rule).display == rule.file
    assert [lane.stage for lane in pack.matcher.lanes] == ["correction", "greeting", "follow_up", "vocabulary",
                                                          "follow_up"]
    d = pack.classify("Hello there, how are you today?", HISTORY)
    assert (d.kind, d.rule, d.span, d.matched, d.query) == ("skip", "greeting.hello", (0, 5), "Hello", None)
    # corrections come first; a longer message is more than a greeting; the pack decides the rest as before
    assert pack.classify("Hi, we tried that one already.", HISTORY).rule == "correction.already-tried"
    long = "Hello, I need a quote for the blue van."  # 9 words: more than a greeting takes
    assert pack.classify(long, HISTORY).kind == "substantive"
    base = load_pack(MINI)
    for message in ("Tell me more about that.", "Yes, that one.", "We tried that one already.", long):
        assert pack.classify(message, HISTORY).rule == base.classify(message, HISTORY).rule


def test_explain_lists_the_family_s_attempts_in_walk_order(greetings, tmp_path):
    pack = compile_pack(pack_with_greetings(tmp_path))
    message = "hi again, everyone"
    ex = pack.explain(message)
    assert ex.decision == pack.classify(message)
    stages = [a.stage for a in ex.attempts]
    corrections = len(pack.corrections)
    assert stages[: corrections + 2] == ["length"] + ["correction"] * corrections + ["greeting"]
    greeting = ex.attempts[corrections + 1]
    assert (greeting.rule, greeting.fired, greeting.span, greeting.matched) == ("greeting.hello", True, (0, 2), "hi")
    assert all(not a.tried and a.note == "not tried: greeting.hello decided first"
               for a in ex.attempts[corrections + 2:])
    long = pack.explain("Hello, I need a quote for the blue van.")
    greeting = next(a for a in long.attempts if a.stage == "greeting")
    assert not greeting.tried and greeting.note == "not tried: the message has 9 words, over the 6 this lane takes"
    # over max_follow_up_words and every follow-up's cap, the walk stops before the first lane with a bound
    longer = pack.explain("Hello, I need a quote for the van insurance on the blue van please, today.")
    assert longer.decision.kind == "substantive"
    assert [a.note for a in longer.attempts if a.stage == "greeting"] == [
        "not tried: 15 words; follow-ups have at most 12"]


def test_the_family_s_examples_are_judged_and_its_problems_placed(greetings, tmp_path):
    text = GREETINGS.replace("counterexamples: [", 'counterexamples: ["Hey, what did the insurer say?", ') \
        .replace("words: [hello, hi, hey]", "words: [hello, hi, hey, good morning]") \
        .replace("    examples:", "    exampels: []\n    examples:")
    error = refused(pack_with_greetings(tmp_path, text))
    found = {p.code: p for p in error.problems}
    assert set(found) == {"E120", "E121"}  # the builder's problem and the family's schema, each placed
    assert (found["E120"].line, found["E120"].rule) == (5, "greeting.hello") and "more than one word" in \
        found["E120"].message
    assert found["E121"].file.endswith("greetings.yaml") and (found["E121"].line, found["E121"].col) == (6, 5)
    error = refused(pack_with_greetings(tmp_path / "counter", GREETINGS.replace(
        "counterexamples: [", 'counterexamples: ["Hey, what did the insurer say?", ')))
    problem, = error.problems
    assert (problem.code, problem.rule, problem.line) == ("E135", "greeting.hello", 7)
    assert problem.file.endswith("greetings.yaml") and "fires this rule" in problem.message


def test_a_family_of_its_own_is_cached_like_a_bundled_one(greetings, tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV, str(where))
    pack_dir = pack_with_greetings(tmp_path)
    first = compile_pack(pack_dir, check_examples=False)
    entry, = where.glob("pack-*.json")  # its rules stored, signed as a bundled family's
    assert cache.key_of(first) == cache_key.key(pack_dir, pack_dir / "pack.yaml") == entry.name[5:-5]

    def no_compile(path):
        raise AssertionError("compiled again")

    monkeypatch.setattr(compile_module, "_compile", no_compile)
    again = compile_pack(pack_dir, check_examples=False)  # read back from the entry
    assert again is not first and again.rule("greeting.hello") == first.rule("greeting.hello")
    assert type(again.rule("greeting.hello")) is Greeting and again.family_rules == first.family_rules
    message = "Hello there, how are you today?"
    assert again.classify(message, HISTORY) == first.classify(message, HISTORY)
    monkeypatch.undo()
    # its code is in the key: the family changed, the key is another
    key = cache_key.key(pack_dir, pack_dir / "pack.yaml")
    monkeypatch.setattr(greetings, "listed", 4)
    assert cache_key.key(pack_dir, pack_dir / "pack.yaml") not in (None, key)


def test_a_family_whose_rules_cannot_be_stored_is_compiled_anew_and_says_why(greetings, tmp_path, monkeypatch,
                                                                            caplog):
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV, str(where))
    monkeypatch.setattr(greetings, "rule_class", None)
    with caplog.at_level(logging.INFO, logger="cleo_rules"):
        compile_pack(pack_with_greetings(tmp_path), check_examples=False)
    assert not list(where.glob("pack-*.json"))
    assert "the rule family 'greetings' names no dataclass as its rule_class" in caplog.text


def test_a_registered_family_is_everywhere_a_bundled_one_is(toy, tmp_path, monkeypatch):
    """Its rules in the corpus, the findings, ``check``'s counts, ``/v1/pack/rules`` and the OpenAPI document,
    whether they classify or are apart (``listed = None``)."""
    pack_dir = pack_with_greetings(tmp_path)
    pack = compile_pack(pack_dir)
    rule = pack.rule("greeting.hello")
    assert pack.all_rules()[-1] is rule and (rule in pack.rules) == (toy.listed is not None)
    assert "greeting.hello" in {r.rule for r in run_corpus(pack).rules}
    assert "greeting.hello" in {r.id for r in findings.rule_refs(pack)}
    doc = check(pack_dir, corpus=False).to_dict()
    assert doc["ok"] and (doc.get("greetings") == 1) == (toy.listed is not None)
    assert {k: doc[k] for k in ("corrections", "follow_ups", "vocabulary_sets")} == {
        "corrections": len(pack.corrections), "follow_ups": len(pack.follow_ups),
        "vocabulary_sets": len(pack.vocab_sets)}
    monkeypatch.setenv(cache.ENV, "off")
    with TestClient(create_app(ServeSettings(pack=str(pack_dir), watch_interval=0)),
                    base_url="http://127.0.0.1") as http:
        deadline = time.monotonic() + 60
        while (ready := http.get("/readyz")).status_code != 200:  # the pack loads after start-up
            assert time.monotonic() < deadline and ready.status_code == 503, ready.text
            time.sleep(0.05)
        got = http.get("/v1/pack/rules")
        assert got.status_code == 200, got.text
        rules = {r["id"]: r for r in got.json()["rules"]}
        kinds = http.get("/openapi.json").json()["components"]["schemas"]["PackRules"]["properties"]["rules"][
            "items"]["properties"]["kind"]["enum"]
    assert rules["greeting.hello"]["kind"] == "greeting" and "greeting" in kinds
    assert set(kinds) == set(RuleKind) | {"greeting"}


def test_a_file_of_an_unregistered_kind_is_placed_at_its_kind(tmp_path):
    assert "greetings" not in families.kinds()
    error = refused(pack_with_greetings(tmp_path))
    problem, = error.problems
    assert (problem.code, problem.line, problem.col, problem.pointer) == ("E124", 1, 7, "/kind")
    assert problem.file.endswith("greetings.yaml") and problem.message == "unknown file kind 'greetings'"
    assert problem.help == ("did you mean 'corrections'? kinds: vocabulary, follow_ups, corrections, referents, "
                            "lexicon, slots")


def test_a_misspelt_kind_names_the_nearest_registered_one(greetings, tmp_path):
    error = refused(pack_with_greetings(tmp_path, GREETINGS.replace("kind: greetings", "kind: greeting")))
    problem, = error.problems
    assert (problem.code, problem.line, problem.col) == ("E124", 1, 7)
    assert problem.help == ("did you mean 'greetings'? kinds: vocabulary, follow_ups, corrections, referents, "
                            "lexicon, slots, greetings")


# -- the registry ------------------------------------------------------------------------------------------------

def test_the_bundled_families_are_the_file_kinds_in_order():
    assert families.kinds() == tuple(FileKind) and families.outside() == ()
    assert [f.kind for f in families.BUILTIN] == list(FileKind)
    assert {f.rule_kind for f in families.BUILTIN if f.items is not None} == set(RuleKind)
    assert all(f.rule_class is not None for f in families.BUILTIN if f.items is not None)  # each storable
    for family in families.BUILTIN:  # one schema each, bundled, which `starter` writes out
        assert (schemas_dir() / f"{family.schema_source}.schema.json").is_file()
        assert json.loads((schemas_dir() / f"{family.kind}.schema.json").read_text(encoding="utf-8"))[
            "properties"]["kind"] == {"const": family.kind}


def test_register_refuses_what_would_clash(greetings):
    with pytest.raises(ValueError, match="taken by Greetings"):
        families.register(Greetings())
    with pytest.raises(ValueError, match="cannot"):
        families.unregister("corrections")
    clash = Greetings()
    clash.kind = "corrections"
    with pytest.raises(ValueError, match="taken by Corrections"):
        families.register(clash, replace=True)  # a bundled family is never replaced
    other = Greetings()
    other.kind = "salutations"
    with pytest.raises(ValueError, match="rule kind 'greeting' is taken"):
        families.register(other)
    with pytest.raises(TypeError):
        families.register(object())  # pyright: ignore[reportArgumentType]
    replaced = families.register(Greetings(), replace=True)
    assert families.family("greetings") is replaced and replaced is not greetings
    families.register(greetings, replace=True)


def test_unregister_takes_a_family_away_entirely():
    family = families.register(Greetings())
    families.unregister("greetings")
    assert "greetings" not in families.kinds() and families.outside() == ()
    with pytest.raises(KeyError):
        families.family_of(Greeting("greeting.x", "greeting", "", frozenset(), (), (), "f", 1))
    with pytest.raises(KeyError):
        families.unregister("greetings")
    assert families.register(family) is family
    families.unregister("greetings")


# -- the walk ----------------------------------------------------------------------------------------------------

def test_the_matcher_is_built_from_the_families_lanes_in_order(default_pack):
    lanes = default_pack.matcher.lanes
    assert [(lane.stage, lane.order) for lane in lanes] == [("correction", 10), ("follow_up", 20),
                                                           ("vocabulary", 30), ("follow_up", 40)]
    assert lanes[0].rules == default_pack.corrections and lanes[2].rules == default_pack.vocab_sets
    assert lanes[1].rules + lanes[3].rules == default_pack.follow_ups
    assert all(r.after_vocabulary for r in lanes[3].rules) and not any(r.after_vocabulary for r in lanes[1].rules)
    assert [lane.patterns == lane.rules for lane in lanes] == [True, True, False, True]


@pytest.mark.parametrize("message, history", [
    ("Yes, go with the second one.", ["Compare the two van insurance quotes"]),
    ("We tried that one already.", []),
    ("What is the weather in Leeds tomorrow?", []),
    ("ok", []),
])
def test_the_walk_returns_a_frozen_result_the_decision_is_made_of(default_pack, message, history):
    result = default_pack.matcher.walk(message)
    assert isinstance(result, WalkResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.kind = DecisionKind.SKIP  # pyright: ignore[reportAttributeAccessIssue]
    d = default_pack.classify(message, history)
    assert (result.kind, result.rule) == (d.kind, d.rule)
    assert result == WalkResult(result.kind, result.rule, result.span, result.text, result.note, result.referents,
                                result.lane)
    if result.lane is not None:
        lane = default_pack.matcher.lanes[result.lane]
        assert lane.decides == d.kind and d.rule in {r.id for r in lane.rules}
    else:
        assert d.rule is None


def test_a_lexicon_whose_sets_are_a_list_is_a_located_error(tmp_path):
    """The lexicon family reads its sets only from a mapping: a list is the schema's finding, not a crash."""
    pack_dir = tmp_path / "pack"
    shutil.copytree(MINI, pack_dir)
    (pack_dir / "lexicon.yaml").write_text("kind: lexicon\nsets: [nouns, people]\n", encoding="utf-8")
    manifest = pack_dir / "pack.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace("follow_ups.yaml]", "follow_ups.yaml, lexicon.yaml]"), encoding="utf-8")
    problem = next(p for p in refused(pack_dir).problems if p.pointer == "/sets")
    assert (problem.code, problem.line, problem.col) == ("E123", 2, 7) and problem.file.endswith("lexicon.yaml")
