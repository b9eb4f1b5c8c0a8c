"""An edit's pack handed to the manager serving it (issue 24), and the cache's entries written after the edit.

The pack an edit was judged in (a copy of the pack's directory) is served from the pack's directory by
:meth:`PackManager.adopt` exactly as loading that directory gives it, compiled afresh or read back from the
compiled-pack cache, field for field, its bases' too, without compiling or judging it again; when the directory's
files are not those judged, the manager loads them as :meth:`PackManager.reload` does. The entries the compile and
the corpus make while an edit is judged are written later (:func:`cleo_rules.pack.cache.written_later`), and are
then what would have been written at once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cleo_rules import runtime
from cleo_rules.corpus.cases_cache import generated
from cleo_rules.editing import edit_file, read_file
from cleo_rules.incremental import clear_memos
from cleo_rules.pack import cache, cache_key, compile as compile_module, snapshot
from cleo_rules.pack.compile import compile_pack
from cleo_rules.resources import rules_dir
from cleo_rules.runtime import PackManager

from helpers.packs import same_pack

FOLLOW_UPS = "rules/follow_ups.yaml"
MANIFEST = "rules/pack.yaml"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV, str(where))
    monkeypatch.setattr(cache, "QUIET", 3600.0)  # nothing is written later unless a test flushes it
    yield where
    cache.flush()


def make(kind: str, where: Path) -> tuple[Path, str]:
    """A pack at ``where`` (its directory, and the file its edits change: a rule's description, the manifest's): a
    copy of cleo-en with its corpus, a team pack on cleo-en, a team pack on a standalone base named by a relative
    path, or on a base named so that is built on a standalone base named so in turn."""
    from cleo_rules.starter import init_pack

    if kind == "copy":
        shutil.copytree(rules_dir(), where / "rules")
        shutil.copytree(rules_dir().parent / "corpus", where / "corpus")
        return where / "rules", FOLLOW_UPS
    init_pack(str(where / "team"))
    base = {"relative": "../../shared/base/rules", "chain": "../up/rules"}.get(kind)
    if kind == "relative":
        init_pack(str(where / "shared" / "base"), standalone=True)
    if kind == "chain":  # a base built on a base, each named by a relative path
        init_pack(str(where / "team" / "up" / "core"), standalone=True)
        (where / "team" / "up" / "rules").mkdir(parents=True)
        (where / "team" / "up" / "rules" / "pack.yaml").write_text(
            "pack: up\nversion: 1.0.0\nlocale: en\nextends: [../core/rules]\n", encoding="utf-8")
    if base is not None:
        manifest = where / "team" / "rules" / "pack.yaml"
        text = manifest.read_text(encoding="utf-8")
        named = text.replace("  - pack: cleo-en\n    version: \"^1.0\"", f"  - pack: {base}")
        assert named != text
        manifest.write_text(named, encoding="utf-8")
    return where / "team" / "rules", MANIFEST


def edited(text: str, name: str, i: int) -> str:
    if name == FOLLOW_UPS:
        return re.sub(r"(\n    description: )", rf"\g<1>(edit {i}) ", text, count=1)
    return re.sub(r"\n  (\(edit \d+\) )?A team's rule pack", f"\n  (edit {i}) A team's rule pack", text, count=1)


def same_composition(a, b) -> None:
    assert a.composition == b.composition  # each base's name, version, hash, directory, spec and origin
    for mine, theirs in zip(a.composition.bases, b.composition.bases, strict=True):
        assert mine.manifest == theirs.manifest and dict(mine.sources) == dict(theirs.sources)
        for x, y in zip(mine.sources.values(), theirs.sources.values(), strict=True):
            assert (x.values, x.keys, x.styles) == (y.values, y.keys, y.styles)


def loaded_afresh(pack_dir: Path, monkeypatch):
    """The pack in ``pack_dir`` compiled from nothing: no cache, nothing the process remembers."""
    clear_memos()
    with monkeypatch.context() as m:
        m.setenv(cache.ENV, "off")
        return compile_pack(pack_dir, check_examples=False)


@pytest.fixture
def spied(monkeypatch):
    """Every compile and every verdict run, by the pack's name."""
    calls: list[str] = []
    real_compile, real_check = compile_module._compile, runtime.check_compiled

    def compiling(path):
        calls.append(f"compile {path}")
        return real_compile(path)

    def checking(pack, *args, **kwargs):
        calls.append(f"check {pack.name}")
        return real_check(pack, *args, **kwargs)

    monkeypatch.setattr(compile_module, "_compile", compiling)
    monkeypatch.setattr(runtime, "check_compiled", checking)
    return calls


@pytest.mark.parametrize("kind", ["copy", "team", "relative", "chain"])
def test_an_edit_is_served_as_loading_the_files_written_gives_it(kind, tmp_path, cache_dir, spied, monkeypatch):
    pack_dir, name = make(kind, tmp_path)
    monkeypatch.chdir(pack_dir.parent)
    manager = PackManager(pack_dir)
    text, sha = read_file(pack_dir, name)
    for i in range(2):  # the second from what the first left remembered
        edit = edit_file(pack_dir, name, edited(text, name, i), base=sha)
        assert edit.written and edit.accepted is not None and edit.pack is not None, [p.format() for p in edit.errors()]
        text, sha = edited(text, name, i), edit.sha256
        assert edit.pack["hash"] != manager.pack.content_hash
        spied.clear()
        assert manager.adopt(edit.accepted) is True
        assert spied == []  # neither compiled nor judged again
        served = manager.pack
        assert served is not edit.accepted.pack and served.path == pack_dir
        assert served.content_hash == edit.pack["hash"] == manager.status()["hash"]
        assert manager.reloads == i + 1 and manager.last_error is None
        fresh = loaded_afresh(pack_dir, monkeypatch)
        same_pack(served, fresh)
        same_composition(served, fresh)
        if kind == "relative":
            assert served.composition.bases[0].path.resolve() == (tmp_path / "shared" / "base" / "rules").resolve()
        cache.flush()  # the entry written after the edit reads back as the same pack, from the directory
        spied.clear()
        read_back = compile_pack(pack_dir, check_examples=False)
        assert spied == [] and read_back is not served
        same_pack(served, read_back)
        same_composition(served, read_back)
    assert manager.reload() is False  # what serves is what the files are


def test_a_pack_is_relocated_only_to_the_very_files_it_was_compiled_from(tmp_path, cache_dir, monkeypatch):
    pack_dir, _ = make("team", tmp_path / "one")
    other, _ = make("team", tmp_path / "two")
    pack = compile_pack(pack_dir, check_examples=False)
    moved = cache.relocate(pack, other)
    assert moved is not None and moved.path == other and cache.key_of(moved) == cache.key_of(pack)
    same_pack(moved, loaded_afresh(other, monkeypatch))
    path = other / "corrections.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "# one byte more\n", encoding="utf-8")
    assert cache.relocate(pack, other) is None
    with monkeypatch.context() as m:  # a pack the cache never keyed is never relocated
        m.setenv(cache.ENV, "off")
        assert cache.relocate(compile_pack(pack_dir, check_examples=False), pack_dir) is None


def test_relocated_is_the_round_trip_through_an_entry(tmp_path, monkeypatch):
    pack_dir, _ = make("relative", tmp_path / "one")
    other, _ = make("relative", tmp_path / "two")
    monkeypatch.setenv(cache.ENV, "off")
    pack = compile_pack(pack_dir, check_examples=False)
    keyed = cache_key.keyed(other, other / "pack.yaml")
    assert keyed is not None
    bases = keyed[1]
    assert [b.resolve() for b in bases] == [(tmp_path / "two" / "shared" / "base" / "rules").resolve()]
    moved = snapshot.relocated(pack, other, other / "pack.yaml", bases)
    round_trip = snapshot.from_data(snapshot.to_data(pack), other, other / "pack.yaml", bases)
    same_pack(moved, round_trip)
    same_composition(moved, round_trip)
    with pytest.raises(ValueError):
        snapshot.relocated(pack, other, other / "pack.yaml", [])


def test_the_files_changed_after_the_edit_are_loaded_as_they_are(tmp_path, cache_dir, spied, monkeypatch):
    pack_dir, name = make("team", tmp_path)
    monkeypatch.chdir(pack_dir.parent)
    manager = PackManager(pack_dir)
    text, sha = read_file(pack_dir, name)
    edit = edit_file(pack_dir, name, edited(text, name, 1), base=sha)
    assert edit.written and edit.accepted is not None
    (pack_dir.parent / name).write_text(edited(text, name, 2), encoding="utf-8")  # saved again meanwhile
    spied.clear()
    assert manager.adopt(edit.accepted) is True
    assert any(call.startswith("check") for call in spied)  # loaded and judged as reload does
    fresh = loaded_afresh(pack_dir, monkeypatch)
    assert edit.pack is not None and manager.pack.content_hash == fresh.content_hash != edit.pack["hash"]
    same_pack(manager.pack, fresh)


def test_a_pack_outside_the_range_required_is_not_adopted(tmp_path, cache_dir, monkeypatch):
    pack_dir, _ = make("team", tmp_path)
    monkeypatch.chdir(pack_dir.parent)
    manager = PackManager(pack_dir, require="<0.2")
    served = manager.pack
    text, sha = read_file(pack_dir, MANIFEST)
    edit = edit_file(pack_dir, MANIFEST, text.replace("version: 0.1.0", "version: 0.2.0"), base=sha)
    assert edit.written and edit.accepted is not None  # judged without a range
    assert manager.adopt(edit.accepted) is False and manager.pack is served and manager.rejections == 1
    assert manager.last_error is not None and "0.2.0" in str(manager.last_error)


# -- entries written later ---------------------------------------------------------------------------------------


def entries(where: Path) -> dict[str, dict]:
    store = cache.Store.open(where)
    assert store is not None
    out = {}
    for path in sorted(where.glob("*-*.json")):
        if path.name.startswith("."):  # a writer's temporary file, renamed over its entry when whole
            continue
        kind, key = path.stem.split("-", 1)
        doc = store.read(key, kind)
        assert doc is not None
        out[path.name] = doc
    return out


def test_entries_made_while_an_edit_is_judged_are_written_later_as_they_would_be_at_once(tmp_path, cache_dir,
                                                                                           monkeypatch):
    pack_dir, _ = make("copy", tmp_path)
    with cache.written_later():
        pack = compile_pack(pack_dir, check_examples=False)
        generated(pack)
    assert entries(cache_dir) == {}
    cache.flush()
    later = entries(cache_dir)
    assert sorted(name.split("-")[0] for name in later) == ["corpus", "pack"]
    clear_memos()
    monkeypatch.setenv(cache.ENV, str(tmp_path / "at-once"))
    again = compile_pack(pack_dir, check_examples=False)
    generated(again)
    assert entries(tmp_path / "at-once") == later


def test_the_newest_entries_are_written_once_nothing_new_comes(cache_dir, monkeypatch):
    store = cache.Store.open()
    assert store is not None
    with cache.written_later():
        for i in range(cache.PENDING + 2):
            cache.store_entry(store, f"k{i}", lambda i=i: {"n": i}, kind="gate")
    cache.flush()
    assert entries(cache_dir) == {f"gate-k{i}.json": {"n": i} for i in (2, 3)}
    monkeypatch.setattr(cache, "QUIET", 0.05)
    with cache.written_later():
        cache.store_entry(store, "quiet", lambda: {"n": "quiet"}, kind="gate")
    deadline = time.monotonic() + 60
    while "gate-quiet.json" not in entries(cache_dir):
        assert time.monotonic() < deadline, "the entry waiting was never written"
        time.sleep(0.05)
    assert entries(cache_dir)["gate-quiet.json"] == {"n": "quiet"}


def test_entries_waiting_when_the_process_exits_are_written(tmp_path):
    where = tmp_path / "cache"
    code = ("from cleo_rules.pack import cache\n"
            "cache.QUIET = 3600.0\n"
            "store = cache.Store.open()\n"
            "with cache.written_later():\n"
            "    cache.store_entry(store, 'exit', lambda: {'n': 1}, kind='gate')\n")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, cache.ENV: str(where)}, timeout=120)
    assert entries(where) == {"gate-exit.json": {"n": 1}}
