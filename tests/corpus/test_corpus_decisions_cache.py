"""The decisions a corpus run made are kept in the cache by what decides them (``corpus/decisions_cache.py``).

Another process, or this one once its memos are emptied, judges the corpus of a
pack deciding alike from the decisions stored: the same report, each decision
read back equal to the one classifying gives now (with the identity of the pack
being judged), and no message classified again. A change to anything that
decides is another key; a change to what does not (a description, the pack's
name) is the same key. A damaged entry, a row of another shape, a decision cut
short by a time limit and a cache turned off each mean classifying, as without
a cache.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import pytest

from cleo_rules.corpus import corpus_dir_of, decisions_cache
from cleo_rules.corpus.judge import decision_key
from cleo_rules.corpus.run import run_corpus
from cleo_rules.incremental import clear_memos
from cleo_rules.pack import cache
from cleo_rules.pack.compile import compile_pack
from cleo_rules.pack.model import Pack
from cleo_rules.resources import rules_dir

from helpers.packs import entry_reads


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A copy of the bundled pack and its corpus, judged once from nothing: the cache holding its decisions, and
    what the run reported."""
    root = tmp_path_factory.mktemp("stored")
    shutil.copytree(rules_dir(), root / "rules")
    shutil.copytree(corpus_dir_of(rules_dir()), root / "corpus")
    with pytest.MonkeyPatch.context() as m:
        m.setenv(cache.ENV, str(root / "cache"))
        report = run_corpus(fresh(root / "rules"))
        cache.flush()
    clear_memos()
    assert len(list((root / "cache").glob("decisions-*.json"))) == 1
    return root, summary(report), report.ok


@pytest.fixture
def pack_dir(tmp_path, monkeypatch, stored):
    """This test's own copy of the pack, and of the cache holding its decisions."""
    root, _, _ = stored
    for name in ("rules", "corpus", "cache"):
        shutil.copytree(root / name, tmp_path / name)
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    clear_memos()  # what this process remembers is not what the cache stores
    yield tmp_path / "rules"
    clear_memos()


@pytest.fixture
def classified(monkeypatch):
    """Every message classified (not read back) while the corpus is judged."""
    done: list[str] = []
    real = Pack.classify

    def spy(self, message, history=()):
        done.append(message)
        return real(self, message, history)

    monkeypatch.setattr(Pack, "classify", spy)
    return done


def entries(pack_dir):
    return sorted((pack_dir.parent / "cache").glob("decisions-*.json"))


def summary(report):
    return [(o.case.id, o.kind, o.rule, o.query, o.reasons) for o in report.outcomes + report.open]


def fresh(pack_dir):
    clear_memos()
    return compile_pack(pack_dir, check_examples=False)


def test_the_decisions_are_read_back_and_judged_as_made(pack_dir, classified, stored):
    _, first, ok = stored
    again = run_corpus(fresh(pack_dir))
    assert classified == []  # every decision read back
    assert summary(again) == first and again.ok == ok
    assert len(entries(pack_dir)) == 1  # nothing new to store


def test_a_run_whose_decisions_the_process_remembers_reads_no_entry(pack_dir, classified, monkeypatch):
    pack = fresh(pack_dir)
    run_corpus(pack)  # read back from the entry
    reads = entry_reads(monkeypatch)
    again = run_corpus(pack)
    assert classified == [] and "decisions" not in reads and again.outcomes


def test_each_decision_read_back_is_the_one_classifying_gives(pack_dir):
    pack = fresh(pack_dir)
    kept = decisions_cache.kept_for(pack)
    assert kept is not None
    stored = kept.stored()
    assert len(stored) > 5000
    for message, history in list(stored)[::7]:  # a seventh of them, every kind among them
        back = kept.get(message, history)
        assert back == pack.classify(message, json.loads(history)), message
        assert back.to_dict() == pack.classify(message, json.loads(history)).to_dict()


def test_an_edit_that_decides_is_another_key_one_that_does_not_is_the_same(pack_dir, classified):
    # the pack's name and description never decide: the decisions are read back, with the new pack's identity
    manifest = pack_dir / "pack.yaml"
    text = manifest.read_text(encoding="utf-8")
    assert text.count("pack: cleo-en\n") == 1 and text.count("  Default English pack") == 1
    manifest.write_text(text.replace("pack: cleo-en\n", "pack: cleo-en-renamed\n")
                        .replace("  Default English pack", "  The default English pack"), encoding="utf-8")
    classified.clear()
    renamed = fresh(pack_dir)
    run_corpus(renamed)
    assert classified == [] and len(entries(pack_dir)) == 1
    kept = decisions_cache.kept_for(renamed)
    assert kept is not None
    message, history = next(iter(kept.stored()))
    back = kept.get(message, history)
    assert (back.pack, back.pack_version, back.pack_hash) == ("cleo-en-renamed", renamed.version, renamed.content_hash)
    # a setting decides: another key, and every message is classified again
    text = manifest.read_text(encoding="utf-8")
    assert text.count("  max_follow_up_words: 12 ") == 1
    manifest.write_text(text.replace("  max_follow_up_words: 12 ", "  max_follow_up_words: 11 "), encoding="utf-8")
    changed = fresh(pack_dir)
    assert decision_key(changed) != decision_key(renamed)
    classified.clear()
    run_corpus(changed)
    assert len(classified) > 5000 and len(entries(pack_dir)) == 2


def test_a_damaged_entry_or_row_is_classified_again(pack_dir, classified):
    entry, = entries(pack_dir)
    entry.write_bytes(entry.read_bytes()[:-10])  # the signature no longer holds
    classified.clear()
    first = run_corpus(fresh(pack_dir))
    assert len(classified) > 5000
    # a row of another shape (written under the secret, so only its shape is wrong): that message is classified
    pack = fresh(pack_dir)
    store = cache.Store.open()
    key = decisions_cache.entry_key(pack)
    doc = store.read(key, kind="decisions")
    doc["decisions"][0][2] = ["follow_up", None, [1, "two"], None, None, None, []]
    store.write(key, doc, kind="decisions")
    classified.clear()
    again = run_corpus(pack)
    assert classified == [doc["decisions"][0][0]]
    assert summary(again) == summary(first)


def test_a_decision_cut_short_is_never_stored(pack_dir, monkeypatch):
    for entry in entries(pack_dir):
        entry.unlink()
    pack = fresh(pack_dir)
    real = Pack.classify
    cut = []

    def timing_out(self, message, history=()):  # the first message runs out of time whenever it is classified
        d = real(self, message, history)
        if not cut or cut[0] == message:
            cut.append(message)
            return dataclasses.replace(d, note="timeout in a rule")
        return d

    monkeypatch.setattr(Pack, "classify", timing_out)
    run_corpus(pack)
    kept = decisions_cache.kept_for(pack)
    assert kept is not None and len(kept.stored()) > 5000
    assert all(message != cut[0] for message, _ in kept.stored())


def test_without_a_cache_nothing_is_read_or_stored(pack_dir, classified, monkeypatch):
    monkeypatch.setenv(cache.ENV, "off")
    before = [(p.name, p.read_bytes()) for p in sorted((pack_dir.parent / "cache").iterdir())]
    run_corpus(fresh(pack_dir))
    assert len(classified) > 5000
    assert [(p.name, p.read_bytes()) for p in sorted((pack_dir.parent / "cache").iterdir())] == before


def test_at_most_a_few_decision_entries_are_kept(tmp_path, monkeypatch):
    store = cache.Store.open(tmp_path / "cache")
    assert store is not None
    for n in range(cache.MAX_DECISION_ENTRIES + 3):
        store.write(f"{n:064x}", {"format": 1, "decisions": []}, kind="decisions")
        os.utime(store.path(f"{n:064x}", "decisions"), (n, n))
    store.write("f" * 64, {"format": 1}, kind="pack")
    kept = sorted(p.name for p in (tmp_path / "cache").glob("decisions-*.json"))
    assert len(kept) == cache.MAX_DECISION_ENTRIES
    assert len(list((tmp_path / "cache").glob("pack-*.json"))) == 1


CHECK = """
import sys
from cleo_rules.corpus import decisions_cache

made = []
real = decisions_cache.Kept.add


def add(self, message, history, decision, *, classified):
    if classified:
        made.append(message)
    return real(self, message, history, decision, classified=classified)


decisions_cache.Kept.add = add
from cleo_rules.cli import main

try:
    main(["check", sys.argv[1]])
finally:
    sys.stderr.write(f"classified: {len(made)}\\n")
"""


def test_check_in_another_process_classifies_no_corpus_message_again(pack_dir):
    env = dict(os.environ, **{cache.ENV: str(pack_dir.parent / "empty-cache")})  # the first process decides
    runs = [subprocess.run([sys.executable, "-c", CHECK, str(pack_dir)], env=env, capture_output=True, text=True,
                           timeout=120) for _ in range(2)]
    for res in runs:
        assert res.returncode == 0, res.stdout + res.stderr
    made = [int(res.stderr.rsplit("classified: ", 1)[1].split()[0]) for res in runs]
    assert made[0] > 5000 and made[1] == 0
    assert runs[1].stdout == runs[0].stdout
