"""The serving gate remembers what it accepted (``runtime.load_checked``), by the content of every file it judged.

The same pack and corpus are accepted again without running the corpus; one
byte changed in the pack or in any corpus file is judged again, and a
failing case refuses the pack as it does without the cache; a refusal is
never remembered; a remembered acceptance that is not whole is ignored.
"""

from __future__ import annotations

import shutil

import pytest

from cleo_rules import runtime
from cleo_rules.corpus import corpus_dir_of
from cleo_rules.errors import PackError
from cleo_rules.pack import cache
from cleo_rules.resources import rules_dir

from helpers.runtime import WRONG_CASE

CORPUS = corpus_dir_of(rules_dir())


@pytest.fixture
def pack_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    shutil.copytree(rules_dir(), tmp_path / "rules")
    shutil.copytree(CORPUS, tmp_path / "corpus")
    return tmp_path / "rules"


@pytest.fixture
def verdicts(monkeypatch):
    """Every pack the gate judged (ran its examples and corpus on), by name."""
    judged: list[str] = []
    real = runtime.check_compiled

    def spy(pack, *args, **kwargs):
        judged.append(pack.name)
        return real(pack, *args, **kwargs)

    monkeypatch.setattr(runtime, "check_compiled", spy)
    return judged


def gate_entries(pack_dir):
    return sorted((pack_dir.parent / "cache").glob("gate-*.json"))


def refusal(pack_dir, monkeypatch) -> PackError:
    with monkeypatch.context() as m:
        m.setenv(cache.ENV, "off")
        with pytest.raises(PackError) as err:
            runtime.load_checked(pack_dir)
    return err.value


def test_an_accepted_pack_is_accepted_again_without_running_its_corpus(pack_dir, verdicts):
    first = runtime.load_checked(pack_dir)
    assert verdicts == ["cleo-en"] and len(gate_entries(pack_dir)) == 1
    again = runtime.load_checked(pack_dir)
    assert verdicts == ["cleo-en"] and again.content_hash == first.content_hash
    manager = runtime.PackManager(pack_dir)
    assert verdicts == ["cleo-en"] and manager.pack.content_hash == first.content_hash


@pytest.mark.parametrize("where", ["regressions.yaml", "generated/vocab.nod.yaml", "generated/_cross-rule.yaml"])
def test_one_byte_of_a_corpus_file_is_judged_again(where, pack_dir, verdicts):
    runtime.load_checked(pack_dir)
    path = pack_dir.parent / "corpus" / where
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("#", "# ", 1) if "#" in text else text + "\n", encoding="utf-8")
    runtime.load_checked(pack_dir)
    assert verdicts == ["cleo-en", "cleo-en"] and len(gate_entries(pack_dir)) == 2


def test_a_failing_case_added_later_refuses_the_pack_as_without_the_cache(pack_dir, verdicts, monkeypatch):
    runtime.load_checked(pack_dir)
    with open(pack_dir.parent / "corpus" / "regressions.yaml", "a", encoding="utf-8") as fh:
        fh.write(WRONG_CASE)
    with pytest.raises(PackError) as err:
        runtime.load_checked(pack_dir)
    assert err.value.problems == refusal(pack_dir, monkeypatch).problems
    assert any(p.code == "E230" for p in err.value.problems)
    with pytest.raises(PackError):  # a refusal is never remembered: judged again, refused again
        runtime.load_checked(pack_dir)
    assert len(verdicts) == 4 and len(gate_entries(pack_dir)) == 1  # with the cache: 3; without it: 1


def test_one_byte_of_the_pack_is_judged_again(pack_dir, verdicts):
    runtime.load_checked(pack_dir)
    text = (pack_dir / "vocabulary.yaml").read_text(encoding="utf-8")
    (pack_dir / "vocabulary.yaml").write_text(text.replace("#", "# ", 1), encoding="utf-8")
    runtime.load_checked(pack_dir)
    assert verdicts == ["cleo-en", "cleo-en"]


@pytest.mark.parametrize("damage", ["truncated", "another pack's"])
def test_a_remembered_acceptance_that_is_not_whole_is_ignored(damage, pack_dir, verdicts):
    runtime.load_checked(pack_dir)
    entry, = gate_entries(pack_dir)
    if damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:-3])
    else:  # a pack entry's bytes under the gate's name
        pack_entry, = sorted((pack_dir.parent / "cache").glob("pack-*.json"))
        entry.write_bytes(pack_entry.read_bytes())
    runtime.load_checked(pack_dir)
    assert verdicts == ["cleo-en", "cleo-en"]
    runtime.load_checked(pack_dir)
    assert verdicts == ["cleo-en", "cleo-en"]  # written again, whole


def test_a_corpus_with_a_link_is_always_judged(pack_dir, verdicts):
    corpus = pack_dir.parent / "corpus"
    (corpus / "kept").mkdir()
    (corpus / "kept" / "more.yaml").write_text("kind: corpus\ncases: []\n", encoding="utf-8")
    (corpus / "more.yaml").symlink_to(corpus / "kept" / "more.yaml")  # inside the corpus: read, and accepted
    runtime.load_checked(pack_dir)
    runtime.load_checked(pack_dir)
    assert verdicts == ["cleo-en", "cleo-en"] and gate_entries(pack_dir) == []  # never remembered
