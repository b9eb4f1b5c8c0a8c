"""The corpus a pack's templates generate is kept beside the pack in the cache (``corpus/cases_cache.py``).

For the very same pack the generated cases are read back, equal to what the
generator gives; whether ``corpus/generated/`` is stale is still judged
against them every time (a file edited by hand is found); any change to the
pack is another key and generates again; a pack the cache does not know is
always generated; templates with problems raise and store nothing.
"""

from __future__ import annotations

import shutil

import pytest

from cleo_rules.corpus import cases_cache, corpus_dir_of
from cleo_rules.corpus.generate import generate
from cleo_rules.corpus.model import CorpusError
from cleo_rules.corpus.run import run_corpus
from cleo_rules.pack import cache
from cleo_rules.pack.compile import compile_pack
from cleo_rules.resources import rules_dir

from helpers.packs import entry_reads


@pytest.fixture
def pack_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    shutil.copytree(rules_dir(), tmp_path / "rules")
    shutil.copytree(corpus_dir_of(rules_dir()), tmp_path / "corpus")
    return tmp_path / "rules"


@pytest.fixture
def generations(monkeypatch):
    """Every pack whose corpus was generated from its templates (not read back)."""
    done: list = []
    real = cases_cache.generate

    def spy(pack):
        done.append(pack.name)
        return real(pack)

    monkeypatch.setattr(cases_cache, "generate", spy)
    return done


def corpus_entries(pack_dir):
    return sorted((pack_dir.parent / "cache").glob("corpus-*.json"))


def test_the_generated_corpus_is_read_back_for_the_same_pack(pack_dir, generations):
    first = run_corpus(compile_pack(pack_dir, check_examples=False))
    assert generations == ["cleo-en"] and len(corpus_entries(pack_dir)) == 1
    pack = compile_pack(pack_dir, check_examples=False)  # read back from the cache, in this process
    groups = cases_cache.generated(pack)
    assert generations == ["cleo-en"]
    assert groups == generate(pack)  # every case equal, in order
    again = run_corpus(pack)
    assert generations == ["cleo-en"]
    assert again.ok and first.ok and again.stale == first.stale == []
    assert [o.reasons for o in again.outcomes] == [o.reasons for o in first.outcomes]


def test_a_generated_file_edited_by_hand_is_still_stale(pack_dir, generations):
    run_corpus(compile_pack(pack_dir, check_examples=False))
    path = pack_dir.parent / "corpus" / "generated" / "vocab.nod.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"message": "Fair enough"', '"message": "Fair enough!!"', 1), encoding="utf-8")
    report = run_corpus(compile_pack(pack_dir, check_examples=False))
    assert generations == ["cleo-en"]  # the cases were read back, and the file compared with them
    assert [s.group for s in report.stale] == ["vocab.nod"] and "edited by hand" in report.stale[0].reason


def test_a_template_changed_by_one_byte_generates_again(pack_dir, generations):
    run_corpus(compile_pack(pack_dir, check_examples=False))
    text = (pack_dir / "follow_ups.yaml").read_text(encoding="utf-8")
    old = "Who else {played in the band"
    assert text.count(old) == 1
    (pack_dir / "follow_ups.yaml").write_text(text.replace(old, "Who else {plaued in the band"), encoding="utf-8")
    report = run_corpus(compile_pack(pack_dir, check_examples=False))
    assert generations == ["cleo-en", "cleo-en"] and len(corpus_entries(pack_dir)) == 2
    assert [s.group for s in report.stale] == ["follow_up.else-other"]  # the new templates give other cases


def test_a_pack_the_cache_does_not_know_is_generated_every_time(pack_dir, generations, monkeypatch):
    monkeypatch.setenv(cache.ENV, "off")
    pack = compile_pack(pack_dir, check_examples=False)
    assert cache.key_of(pack) is None
    cases_cache.generated(pack)
    cases_cache.generated(pack)
    assert generations == ["cleo-en", "cleo-en"]


def test_a_damaged_entry_is_generated_again(pack_dir, generations):
    pack = compile_pack(pack_dir, check_examples=False)
    cases_cache.generated(pack)
    entry, = corpus_entries(pack_dir)
    entry.write_bytes(entry.read_bytes()[:-10])
    assert cases_cache.generated(pack) == generate(pack)
    assert generations == ["cleo-en", "cleo-en"]
    cases_cache.generated(pack)
    assert generations == ["cleo-en", "cleo-en"]  # written again, whole


def test_templates_with_problems_raise_and_store_nothing(pack_dir, generations):
    text = (pack_dir / "follow_ups.yaml").read_text(encoding="utf-8")
    at = text.index("        - \"Who else {")
    (pack_dir / "follow_ups.yaml").write_text(text[:at] + "        - \"Who {no_such_slot} else?\"\n" + text[at:],
                                              encoding="utf-8")
    pack = compile_pack(pack_dir, check_examples=False)
    with pytest.raises(CorpusError):
        cases_cache.generated(pack)
    with pytest.raises(CorpusError):
        cases_cache.generated(pack)
    assert generations == ["cleo-en", "cleo-en"] and corpus_entries(pack_dir) == []


def test_one_process_reads_the_entry_once_until_it_changes(pack_dir, generations, monkeypatch):
    read = entry_reads(monkeypatch)
    pack = compile_pack(pack_dir, check_examples=False)
    first = cases_cache.generated(pack)  # generated, stored, remembered
    again = cases_cache.generated(compile_pack(pack_dir, check_examples=False))
    assert generations == ["cleo-en"] and read.count("corpus") == 1  # the first look only
    assert again == first and again is not first and all(a is not b for a, b in zip(again, first))
    again[0].cases.clear()  # a caller's groups are its own: the remembered ones are not changed
    assert cases_cache.generated(pack) == first
    entry, = corpus_entries(pack_dir)
    blob = entry.read_bytes()
    entry.unlink()
    entry.write_bytes(blob)  # the same entry, written again by another process: read again
    assert cases_cache.generated(pack) == first and read.count("corpus") == 2 and generations == ["cleo-en"]
    entry.write_bytes(blob[:-10])  # damaged: generated again
    assert cases_cache.generated(pack) == first and generations == ["cleo-en", "cleo-en"]
