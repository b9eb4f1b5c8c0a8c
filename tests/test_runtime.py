"""PackManager: versions, hot reload, and bad packs that never serve.

The fixture packs ``tests/packs/mini-1.0``, ``mini-1.1`` and ``mini-2.0``
differ in version and in one rule each, so the same message gets a
different decision from each of them.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from cleo_rules import load_pack
from cleo_rules.errors import CleoError, PackError, PackNotFound, PackVersionError, Problem
from cleo_rules import runtime
from cleo_rules.runtime import PackManager, load_checked, fingerprint

from helpers.runtime import HISTORY, MESSAGES, VERSIONS, edit, expected_decisions, hammer


@pytest.fixture
def pack_dir(tmp_path):
    d = tmp_path / "pack"
    shutil.copytree(VERSIONS["1.0.0"], d)
    return d


def replace_pack(pack_dir: Path, version: str) -> None:
    """Overwrite the pack's files with another version's, one file at a time."""
    for f in VERSIONS[version].iterdir():
        shutil.copy(f, pack_dir / f.name)


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def test_the_fixture_packs_really_differ():
    packs = {v: load_pack(d) for v, d in VERSIONS.items()}
    assert len({p.content_hash for p in packs.values()}) == 3
    kinds = {v: [p.classify(m, HISTORY).kind for m in MESSAGES[:2]] for v, p in packs.items()}
    assert kinds == {"1.0.0": ["substantive", "substantive"], "1.1.0": ["follow_up", "substantive"],
                     "2.0.0": ["substantive", "correction"]}


# -- loading and versions ------------------------------------------------------

def test_manager_serves_and_stamps_every_decision(pack_dir):
    m = PackManager(pack_dir)
    d = m.classify("Go with the other one.", HISTORY)
    assert (d.kind, d.pack, d.pack_version, d.pack_hash) == ("follow_up", "mini", "1.0.0", m.pack.content_hash)
    assert d.query == "Which van insurer should we use?\nGo with the other one."
    assert m.pack_dir == pack_dir and m.reloads == 0 and m.rejections == 0 and m.last_error is None
    assert m.explain("Go with the other one.").decision == m.classify("Go with the other one.")
    assert m.status() == {"pack": "mini", "version": "1.0.0", "hash": m.pack.content_hash, "path": str(pack_dir),
                          "require": None, "reloads": 0, "rejections": 0, "last_error": None, "watching": False,
                          "corpus": None, "gate": "no corpus: the gate ran the examples only", "bases": []}


def test_default_source_is_the_bundled_pack_and_names_resolve():
    assert PackManager().pack.name == "cleo-en"
    assert PackManager("cleo-en", require="^1").pack.name == "cleo-en"


def test_first_load_must_succeed(tmp_path):
    with pytest.raises(PackNotFound):
        PackManager(tmp_path / "nothing")
    with pytest.raises(PackVersionError) as info:
        PackManager(VERSIONS["1.0.0"], require=">=2")
    assert "mini 1.0.0 is outside the required version range >=2" in str(info.value)


def test_version_range_is_enforced_on_every_reload(pack_dir, caplog):
    m = PackManager(pack_dir, require=">=1.0,<2")
    replace_pack(pack_dir, "1.1.0")
    assert m.reload() is True and m.pack.version == "1.1.0"
    replace_pack(pack_dir, "2.0.0")
    assert m.reload() is False
    assert m.pack.version == "1.1.0"
    assert isinstance(m.last_error, PackVersionError)
    assert m.last_error.problems[0].message == "mini 2.0.0 is outside the required version range >=1.0,<2"
    assert "mini 2.0.0 is outside the required version range" in caplog.text


def test_reload_to_another_source(pack_dir):
    m = PackManager(pack_dir)
    assert m.reload(VERSIONS["2.0.0"]) is True
    assert (m.pack.version, m.pack_dir) == ("2.0.0", VERSIONS["2.0.0"])
    assert m.classify("Not that one, the other one.").kind == "correction"
    assert m.reload("./no/such/pack") is False
    assert isinstance(m.last_error, PackNotFound) and m.pack.version == "2.0.0"


def test_reload_of_unchanged_pack_is_not_a_swap(pack_dir):
    m = PackManager(pack_dir)
    first = m.pack
    assert m.reload() is False
    assert m.pack is first and m.reloads == 0 and m.last_error is None


# -- bad packs never serve ---------------------------------------------------------

BROKEN = {
    "bad YAML": ("vocabulary.yaml", "words: [first, second,", "words: [first, second,]]"),
    "schema error": ("corrections.yaml", "description: The user has tried it already.", "descripton: oops"),
    "failing example": ("follow_ups.yaml", '"Could you tell me more?"]', '"Could you tell me more?", "Say more."]'),
    "catastrophic pattern": ("follow_ups.yaml", r"pattern: '\btell (?:me|us) more\b'",
                             r"pattern: '\btell (?:me|us) more\b(?:\w+\s?)+!'"),
    "object tag": ("pack.yaml", "description: Small test pack.", "description: !!python/object/apply:os.getcwd []"),
    "file outside the pack": ("pack.yaml", "follow_ups.yaml]", "follow_ups.yaml, ../../etc/passwd]"),
}
EXPECTED_CODE = {"bad YAML": "E110", "schema error": None, "failing example": "E134",
                 "catastrophic pattern": "E131", "object tag": "E111", "file outside the pack": "E119"}


@pytest.mark.parametrize("case", BROKEN)
def test_broken_pack_is_rejected_and_the_old_one_keeps_answering(pack_dir, caplog, case):
    m = PackManager(pack_dir)
    before = m.pack
    answer = m.classify("Go with the other one.", HISTORY)
    replace_pack(pack_dir, "1.1.0")  # a version bump with a break in it
    name, old, new = BROKEN[case]
    edit(pack_dir / name, old, new)
    caplog.set_level(logging.WARNING, logger="cleo_rules")
    assert m.reload() is False
    assert m.pack is before
    assert m.classify("Go with the other one.", HISTORY) == answer
    assert (m.reloads, m.rejections) == (0, 1)
    err = m.last_error
    assert isinstance(err, PackError)
    lead = err.problems[0]
    if EXPECTED_CODE[case]:
        assert lead.code == EXPECTED_CODE[case], err.report()
    assert lead.file.endswith(name) and lead.line > 0  # file:line:col for people
    assert f"still serving mini 1.0.0 ({before.content_hash})" in caplog.text
    assert lead.message in caplog.text
    with pytest.raises(PackError):
        m.reload(strict=True)
    assert m.pack is before
    # fixing the file lets the new version in
    edit(pack_dir / name, new, old)
    assert m.reload() is True and m.pack.version == "1.1.0" and m.last_error is None


def test_unexpected_failure_in_the_gate_keeps_the_old_pack(pack_dir, caplog):
    calls = []

    def gate(path, *, require=None):
        calls.append(path)
        if len(calls) > 1:
            raise RuntimeError("disk on fire")
        return load_checked(path, require=require)

    m = PackManager(pack_dir, gate=gate, cache_size=0)
    assert m.reload() is False
    assert m.pack.version == "1.0.0"
    assert "RuntimeError: disk on fire" in str(m.last_error)
    assert isinstance(m.last_error, CleoError)
    assert "rejected by an unexpected error" in caplog.text


def test_removed_directory_is_rejected(pack_dir):
    m = PackManager(pack_dir)
    shutil.rmtree(pack_dir)
    assert m.reload() is False
    assert isinstance(m.last_error, PackNotFound)
    assert m.classify("Go with the other one.").pack_version == "1.0.0"


# -- the corpus hook -------------------------------------------------------------------

def write_corpus(pack_dir: Path, cases: str) -> Path:
    """A hand-written corpus beside ``pack_dir`` (where the gate looks for it)."""
    corpus = pack_dir.parent / "corpus"
    corpus.mkdir(exist_ok=True)
    (corpus / "regressions.yaml").write_text("kind: corpus\ncases:\n" + cases, encoding="utf-8")
    return corpus


WRONG_CASE = """\
  - id: regression/wrong
    message: "Go with the other one."
    expect: substantive
"""


def test_accept_runs_the_pack_corpus_beside_it(pack_dir):
    """A pack whose examples pass but whose corpus beside it has a failing case is rejected, and a manager
    keeps serving the pack it had."""
    m = PackManager(pack_dir)
    corpus = write_corpus(pack_dir, WRONG_CASE)
    with pytest.raises(PackError) as info:
        load_checked(pack_dir)
    failing = [p for p in info.value.problems if p.code == "E230"]
    assert [p.rule for p in failing] == ["vocab.choice"] and failing[0].file.endswith("regressions.yaml")
    assert failing[0].line == 3  # the case starts on the third line
    replace_pack(pack_dir, "1.1.0")
    assert m.reload() is False and m.pack.version == "1.0.0"
    assert "E230" in [p.code for p in m.last_error.problems]
    shutil.rmtree(corpus)
    assert m.reload() is True and m.pack.version == "1.1.0"


def test_corpus_runner_absent_means_examples_are_the_gate(pack_dir):
    # every pack's examples, counterexamples and request forms are checked by load_pack
    edit(pack_dir / "vocabulary.yaml", '"Go with the other one."]', '"Go with the other one.", "Pick a card."]')
    with pytest.raises(PackError) as info:
        load_checked(pack_dir)
    assert info.value.problems[0].code == "E134"


# -- consistency of a snapshot ------------------------------------------------------------

def test_files_changing_during_a_load_are_not_served_half_way(pack_dir):
    """A gate that edits the pack while it loads: the first result mixes two
    states, so it is discarded and the load tried again on settled files."""
    state = {"n": 0}

    def gate(path, *, require=None):
        state["n"] += 1
        pack = load_checked(path, require=require)
        if state["n"] == 2:  # the first reload: a second file lands mid-load
            replace_pack(pack_dir, "2.0.0")
        return pack

    m = PackManager(pack_dir, gate=gate, cache_size=0)
    replace_pack(pack_dir, "1.1.0")
    assert m.reload() is True
    assert m.pack.version == "2.0.0" and state["n"] == 3
    assert m.pack.content_hash == load_pack(VERSIONS["2.0.0"]).content_hash


def test_fingerprint_follows_content_not_timestamps(pack_dir):
    fp = fingerprint(pack_dir)
    os.utime(pack_dir / "pack.yaml", ns=(1, 1))
    assert fingerprint(pack_dir) == fp
    (pack_dir / ".pack.yaml.swp").write_text("editor state")
    (pack_dir / "notes.txt").write_text("not part of the pack")
    assert fingerprint(pack_dir) == fp
    edit(pack_dir / "pack.yaml", "1.0.0", "1.0.1")
    assert fingerprint(pack_dir) != fp
    assert fingerprint(pack_dir / "gone") == "missing"


# -- watching ------------------------------------------------------------------------------

def test_watcher_picks_up_a_new_version(pack_dir):
    with PackManager(pack_dir, watch=True, interval=0.05) as m:
        assert m.watching
        replace_pack(pack_dir, "1.1.0")
        assert wait_for(lambda: m.pack.version == "1.1.0")
        assert m.classify("Perfect, that works.", HISTORY).kind == "follow_up"
        assert m.reloads == 1
    assert not m.watching


def test_watcher_rejects_a_broken_change_once_and_keeps_serving(pack_dir, caplog):
    caplog.set_level(logging.WARNING, logger="cleo_rules")
    m = PackManager(pack_dir, watch=True, interval=0.05)
    try:
        replace_pack(pack_dir, "1.1.0")
        edit(pack_dir / "vocabulary.yaml", "words: [first, second,", "words: [first, second,]]")
        assert wait_for(lambda: m.rejections == 1)
        time.sleep(0.3)  # several more polls: the same broken files are not tried again
        assert m.rejections == 1 and m.pack.version == "1.0.0"
        assert "YAML syntax error" in str(m.last_error)
        assert caplog.text.count("rejected") == 1
        edit(pack_dir / "vocabulary.yaml", "words: [first, second,]]", "words: [first, second,")
        assert wait_for(lambda: m.pack.version == "1.1.0")
        assert m.last_error is None and m.reloads == 1
    finally:
        m.stop()


def test_watcher_ignores_a_touch(pack_dir):
    m = PackManager(pack_dir, cache_size=0)
    calls = []
    real = m._gate
    m._gate = lambda path, require=None: calls.append(path) or real(path, require=require)
    os.utime(pack_dir / "vocabulary.yaml")
    assert m.poll() is False and m.poll() is False
    assert calls == []


def test_a_change_loads_once_it_has_settled(pack_dir):
    m = PackManager(pack_dir)
    replace_pack(pack_dir, "1.1.0")
    assert m.poll() is False          # first sight of the change
    assert m.pack.version == "1.0.0"
    assert m.poll() is True           # unchanged since: load it
    assert m.pack.version == "1.1.0"


def test_stop_and_watch_again(pack_dir):
    m = PackManager(pack_dir)
    m.watch(0.05)
    m.watch(0.05)  # already watching: no second thread
    threads = [t for t in threading.enumerate() if t.name == "cleo-rules-pack-watch"]
    assert len(threads) == 1 and threads[0].daemon
    m.stop()
    assert not m.watching
    with pytest.raises(ValueError):
        m.watch(0)


# -- many threads, many swaps ----------------------------------------------------------------

def test_concurrent_classification_while_swapping_many_times():
    """Four threads classify continuously while the main thread swaps among
    three packs 300 times. Every decision must name one of the three valid
    packs and equal exactly what that pack decides for the message."""
    expected = expected_decisions()
    order = ["1.1.0", "2.0.0", "1.0.0"]
    m = PackManager(VERSIONS["1.0.0"])
    decisions, versions = hammer(m, expected, lambda i: m.reload(VERSIONS[order[i % 3]]), swaps=300)
    assert (m.reloads, m.rejections) == (300, 0), m.last_error  # a lost swap is a refusal: say why
    assert versions == {"1.0.0", "1.1.0", "2.0.0"}
    assert len(decisions) > 1000


def test_concurrent_classification_while_compiling_and_rejecting(tmp_path):
    """No cache: every swap compiles while the threads classify, and every
    other attempt is a broken pack, which must never answer."""
    expected = expected_decisions()
    broken = tmp_path / "broken"
    shutil.copytree(VERSIONS["2.0.0"], broken)
    edit(broken / "corrections.yaml", "pattern: '\\bnot (?:that|this) one\\b'", "pattern: '\\bnot (?:that|this one\\b'")
    order = [VERSIONS["1.1.0"], broken, VERSIONS["2.0.0"], broken, VERSIONS["1.0.0"], broken]
    m = PackManager(VERSIONS["1.0.0"], cache_size=0)
    refused = []

    def swap(i):
        if not m.reload(order[i % len(order)]) and order[i % len(order)] != broken:
            refused.append(str(m.last_error))

    decisions, versions = hammer(m, expected, swap, swaps=12)
    assert refused == []  # a good pack refused says why
    assert (m.reloads, m.rejections) == (6, 6)
    assert len(versions) >= 2
