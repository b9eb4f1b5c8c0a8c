"""The compiled-pack cache (``pack/cache.py``, ``pack/snapshot.py``): read back exactly, never stale, never trusted blindly.

A pack read back from the cache is the pack its files compile to (every
stored field, the compiled patterns, the prefilter's requirements, every
decision). One byte changed in any kind of file the bundled pack has
recompiles, and the decision or the located error is what a compile without
the cache gives. An entry that is truncated, corrupted, tampered with or not
JSON is ignored and the pack compiled again, and nothing in it is ever
executed. Two processes writing at once leave a whole entry; another version
of cleo-rules, ``regex``, PyYAML or jsonschema is another key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import regex
import yaml

from cleo_rules.errors import PackError
from cleo_rules.incremental import clear_memos
from cleo_rules.pack import cache, cache_key, snapshot
from cleo_rules.pack import compile as compile_mod
from cleo_rules.pack.compile import compile_pack, compile_with_examples
from cleo_rules.resources import inside_package, rules_dir

from helpers import MINI, ROOT
from helpers.packs import QUOTES, entry_reads, probe_messages, same_pack

# a one-word name ending like a people's adjective ("-ian") names a person only as a given name
CALLER = ["Who called while I was out?", {"role": "assistant", "content": "Adrian called about the invoice."}]
ALBUM = ["What did Elbow release in 2008?",
         {"role": "assistant", "content": "The Seldom Seen Kid, their fourth album, came out in March 2008."}]


@pytest.fixture(scope="module")
def bundled():
    """The bundled pack compiled without the cache: what every read-back must equal."""
    with pytest.MonkeyPatch.context() as m:
        m.setenv(cache.ENV, "off")
        return compile_pack(check_examples=False)


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A cache holding the bundled pack's entry (and its secret)."""
    where = tmp_path_factory.mktemp("warm") / "cache"
    with pytest.MonkeyPatch.context() as m:
        m.setenv(cache.ENV, str(where))
        compile_pack(check_examples=False)
    assert len(entries(where)) == 1
    return where


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty cache, this test's own."""
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV, str(where))
    return where


@pytest.fixture
def warm_dir(tmp_path, monkeypatch, warm):
    """This test's own cache, holding the bundled pack's entry already."""
    where = tmp_path / "cache"
    shutil.copytree(warm, where)
    monkeypatch.setenv(cache.ENV, str(where))
    return where


@pytest.fixture
def mini(tmp_path):
    """A copy of a small pack, for what does not depend on the pack."""
    shutil.copytree(MINI, tmp_path / "mini")
    return tmp_path / "mini"


@pytest.fixture
def compiles(monkeypatch):
    """Every pack compiled from its files (not read back from the cache), by the path it was asked for."""
    calls: list = []
    real = compile_mod._compile

    def spy(path):
        calls.append(path)
        return real(path)

    monkeypatch.setattr(compile_mod, "_compile", spy)
    return calls


def entries(where: Path) -> list[Path]:
    return sorted(where.glob("pack-*.json"))


def uncached(path, monkeypatch):
    """The pack at ``path`` compiled with the cache off."""
    with monkeypatch.context() as m:
        m.setenv(cache.ENV, "off")
        return compile_pack(path, check_examples=False)


def uncached_error(path, monkeypatch) -> PackError:
    with monkeypatch.context() as m:
        m.setenv(cache.ENV, "off")
        with pytest.raises(PackError) as err:
            compile_pack(path, check_examples=False)
    return err.value


def test_a_pack_read_back_is_the_pack_its_files_compile_to(cache_dir, compiles, bundled):
    first = compile_pack(check_examples=False)
    assert len(compiles) == 1 and len(entries(cache_dir)) == 1
    again = compile_pack(check_examples=False)
    assert len(compiles) == 1  # read back, not compiled
    _, problems = compile_with_examples()
    assert problems == [] and len(compiles) == 1
    same_pack(again, first)
    same_pack(again, bundled)
    for message, history in probe_messages(first):
        assert again.classify(message, history) == first.classify(message, history)
        assert again.explain(message, history).decision == first.explain(message, history).decision


def test_an_entry_is_json_with_a_mac_and_private(cache_dir, mini):
    compile_pack(mini, check_examples=False)
    entry, = entries(cache_dir)
    blob = entry.read_bytes()
    head, mac, payload = blob.split(b"\n", 2)
    assert head == b"cleo-rules compiled pack" and len(mac) == 64
    assert json.loads(payload)["format"] == snapshot.FORMAT
    assert entry.stat().st_mode & 0o777 == 0o600 and (cache_dir / "key").stat().st_mode & 0o777 == 0o600
    assert cache_dir.stat().st_mode & 0o777 == 0o700
    assert not list(cache_dir.glob(".tmp-*"))


# one byte of each kind of file the bundled pack has: (file, old, new, after, message, history, what changes)
DECIDING = [
    ("pack.yaml", "min_chars: 10", "min_chars: 30", None, "Yes, the second one.", QUOTES, "kind"),
    ("vocabulary.yaml", "second, third", "secont, third", None, "Yes, the second one.", QUOTES, "rule"),
    ("corrections.yaml", "(?:tried|tested|done|used|had)", "(?:triex|tested|done|used|had)", None,
     "We've tried it, thanks.", [], "kind"),
    ("follow_ups.yaml", "(?:\\b(?:this|these|those)|", "(?:\\b(?:thix|these|those)|", None,
     "Was this album a success?", ALBUM, "rule"),
    ("referents.yaml", "(?:cheaper|cheapest", "(?:cheapxr|cheapest", None, "And the cheaper one?", QUOTES,
     "query"),
    ("lexicon.yaml", '"album"', '"albun"', "  nouns:", "Was this album a success?", ALBUM, "kind"),
    ("given_names.yaml", '"adrian"', '"adriax"', None, "What did he want?", CALLER, "referent"),
    ("slots.yaml", "seed: 2024", "seed: 2025", None, None, None, "slots_seed"),
]


def one_byte(pack_copy, name: str, old: str, new: str, after: str | None = None) -> None:
    assert len(old) == len(new) and sum(x != y for x, y in zip(old, new)) == 1
    text = pack_copy.read(name)
    at = text.index(old, text.index(after) if after else 0)
    pack_copy.write(name, text[:at] + new + text[at + len(old):])


def test_the_bundled_pack_has_these_kinds_of_file():
    manifest = yaml.safe_load((rules_dir() / "pack.yaml").read_text(encoding="utf-8"))
    assert sorted(manifest["files"] + ["pack.yaml"]) == sorted(name for name, *_ in DECIDING)


@pytest.mark.parametrize("name,old,new,after,message,history,what", DECIDING, ids=[d[0] for d in DECIDING])
def test_one_byte_of_any_file_recompiles_with_the_decision_it_makes(
        name, old, new, after, message, history, what, pack_copy, warm_dir, compiles, monkeypatch):
    before = compile_pack(pack_copy.dir, check_examples=False)
    assert compiles == []  # the copy is the bundled pack: read back
    one_byte(pack_copy, name, old, new, after)
    after_change = compile_pack(pack_copy.dir, check_examples=False)
    assert len(compiles) == 1 and len(entries(warm_dir)) == 2  # compiled again, stored apart
    same_pack(after_change, uncached(pack_copy.dir, monkeypatch))
    assert snapshot.to_data(after_change) != snapshot.to_data(before)
    if message is None:
        assert after_change.slots_seed != before.slots_seed
        return
    old_decision, new_decision = before.classify(message, history), after_change.classify(message, history)
    assert getattr(old_decision, what) != getattr(new_decision, what)


BREAKING = [  # one byte that makes each kind of file an error, placed at file:line:col
    ("pack.yaml", "max_follow_up_words: 12", "max_follow_up_words: x2"),
    ("vocabulary.yaml", "kind: vocabulary", "kind: vocabularx"),
    ("corrections.yaml", "kind: corrections", "kind: correctionx"),
    ("follow_ups.yaml", "kind: follow_ups", "kind: follow_upx"),
    ("referents.yaml", "kind: referents", "kind: referentx"),
    ("lexicon.yaml", "kind: lexicon", "kind: lexicox"),
    ("slots.yaml", "seed: 2024", "seed: 2o24"),
]


@pytest.mark.parametrize("name,old,new", BREAKING, ids=[b[0] for b in BREAKING])
def test_one_byte_that_breaks_a_file_is_the_located_error_never_the_cached_pack(
        name, old, new, pack_copy, warm_dir, compiles, monkeypatch):
    compile_pack(pack_copy.dir, check_examples=False)
    assert compiles == []  # warm
    one_byte(pack_copy, name, old, new)
    with pytest.raises(PackError) as err:
        compile_pack(pack_copy.dir, check_examples=False)
    expected = uncached_error(pack_copy.dir, monkeypatch)
    assert err.value.problems == expected.problems and err.value.report() == expected.report()
    assert any(p.file.endswith(name) and p.line > 0 and p.col > 0 for p in err.value.problems)
    assert len(entries(warm_dir)) == 1  # a broken pack is never stored


def test_a_pack_is_read_back_in_another_directory_as_that_directorys(tmp_path, warm_dir, compiles, monkeypatch):
    two = tmp_path / "two"
    shutil.copytree(rules_dir(), two)
    monkeypatch.chdir(tmp_path)
    pack = compile_pack(two, check_examples=False)
    assert compiles == [] and pack.path == two
    assert pack.manifest is not None and pack.manifest.display == os.path.join("two", "pack.yaml")
    assert all(src.display == os.path.join("two", name) and src.path == two / name
               for name, src in pack.sources.items())
    for rule in pack.rules + pack.referent_rules:
        assert pack.source(rule).display == rule.file and rule.file.startswith("two")
    same_pack(pack, uncached(two, monkeypatch))
    assert len(compiles) == 1  # the one without the cache


@pytest.fixture
def reads(monkeypatch):
    """Every entry read from the cache, by kind."""
    return entry_reads(monkeypatch)


def test_the_same_files_compiled_again_in_one_process_are_the_pack_remembered(tmp_path, cache_dir, compiles, reads,
                                                                                 monkeypatch):
    copies = [tmp_path / name for name in ("one", "two", "three")]
    for where in copies:
        shutil.copytree(rules_dir(), where)
    monkeypatch.chdir(tmp_path)
    first = compile_pack(copies[0], check_examples=False)
    assert len(compiles) == 1 and len(entries(cache_dir)) == 1
    again = [compile_pack(where, check_examples=False) for where in copies]
    assert len(compiles) == 1 and reads.count("pack") == 1  # the first compile's look; none since
    clear_memos()  # what another process reads back from the entry
    read_back = compile_pack(copies[2], check_examples=False)
    assert reads.count("pack") == 2 and len(compiles) == 1
    same_pack(again[2], read_back)
    for where, pack in zip(copies, again, strict=True):
        assert pack.path == where and pack is not first and cache.key_of(pack) == cache.key_of(first)
        assert all(src.path == where / name for name, src in pack.sources.items())
        same_pack(pack, uncached(where, monkeypatch))


@pytest.mark.parametrize("change", ["rewritten whole", "removed"])
def test_a_remembered_pack_whose_entry_changed_is_read_or_compiled_again(change, warm_dir, compiles, reads, bundled):
    compile_pack(check_examples=False)
    compile_pack(check_examples=False)
    assert reads.count("pack") == 1 and compiles == []
    entry, = entries(warm_dir)
    if change == "removed":
        entry.unlink()
    else:  # the same bytes, written again by another process
        blob = entry.read_bytes()
        entry.unlink()
        entry.write_bytes(blob)
    same_pack(compile_pack(check_examples=False), bundled)
    assert reads.count("pack") == 2 and len(compiles) == (1 if change == "removed" else 0)


def test_at_most_max_recent_packs_are_remembered_in_another_cache_none(tmp_path, cache_dir, mini, compiles, reads,
                                                                      monkeypatch):
    variants = []
    for n in range(cache.MAX_RECENT + 1):
        where = tmp_path / f"v{n}"
        shutil.copytree(mini, where)
        text = (where / "pack.yaml").read_text(encoding="utf-8")
        (where / "pack.yaml").write_text(text.replace("min_chars: 10", f"min_chars: {10 + n}"), encoding="utf-8")
        variants.append(where)
        compile_pack(where, check_examples=False)
    assert len(compiles) == len(variants) and len(entries(cache_dir)) == len(variants)
    before = reads.count("pack")
    for where in variants[1:]:
        compile_pack(where, check_examples=False)
    assert reads.count("pack") == before  # the last MAX_RECENT, remembered
    assert compile_pack(variants[0], check_examples=False).settings.min_chars == 10
    assert reads.count("pack") == before + 1  # the first, forgotten: read back from its entry
    monkeypatch.setenv(cache.ENV, str(tmp_path / "another"))
    compile_pack(variants[0], check_examples=False)
    assert len(compiles) == len(variants) + 1  # another cache knows none of them


def _ignored_then_rewritten(compiles, bundled) -> None:
    before = len(compiles)
    pack = compile_pack(check_examples=False)
    assert len(compiles) == before + 1  # compiled again
    compile_pack(check_examples=False)
    assert len(compiles) == before + 1  # and the entry written again is whole
    same_pack(pack, bundled)


@pytest.mark.parametrize("damage", ["truncated", "empty", "one byte flipped", "magic", "garbage"])
def test_a_damaged_entry_is_ignored_and_compiled_again(damage, warm_dir, compiles, bundled):
    entry, = entries(warm_dir)
    blob = entry.read_bytes()
    damaged = {"truncated": blob[: len(blob) // 2], "empty": b"",
               "one byte flipped": blob[:-100] + bytes([blob[-100] ^ 0x01]) + blob[-99:],
               "magic": b"X" + blob[1:], "garbage": os.urandom(len(blob))}[damage]
    entry.write_bytes(damaged)
    _ignored_then_rewritten(compiles, bundled)


def _secret(cache_dir: Path) -> bytes:
    return (cache_dir / "key").read_bytes()


def _forge(entry: Path, payload: bytes, secret: bytes) -> None:
    key = entry.name[len("pack-"):-len(".json")]
    mac = hmac.new(secret, key.encode() + b"\n" + payload, hashlib.sha256).hexdigest().encode()
    entry.write_bytes(b"cleo-rules compiled pack\n" + mac + b"\n" + payload)


def test_a_tampered_entry_is_ignored(warm_dir, compiles, bundled):
    entry, = entries(warm_dir)
    head, mac, payload = entry.read_bytes().split(b"\n", 2)
    doc = json.loads(payload)
    doc["settings"]["min_chars"] = 1  # a different pack, under the old mac
    entry.write_bytes(head + b"\n" + mac + b"\n" + json.dumps(doc).encode())
    _ignored_then_rewritten(compiles, bundled)
    _forge(entry, json.dumps(doc).encode(), b"\x00" * 32)  # a mac under a secret that is not the user's
    _ignored_then_rewritten(compiles, bundled)


def test_an_entry_under_another_key_is_ignored(mini, cache_dir, compiles):
    compile_pack(mini, check_examples=False)
    first, = entries(cache_dir)
    text = (mini / "pack.yaml").read_text(encoding="utf-8")
    (mini / "pack.yaml").write_text(text.replace("min_chars: 10", "min_chars: 30"), encoding="utf-8")
    compile_pack(mini, check_examples=False)
    second, = [e for e in entries(cache_dir) if e != first]
    second.write_bytes(first.read_bytes())  # the first pack's entry, whole, under the changed pack's key
    pack = compile_pack(mini, check_examples=False)
    assert len(compiles) == 3 and pack.settings.min_chars == 30


class _Marker:
    """Unpickling this writes a file: the proof that an entry was executed."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (Path(self.path).write_text, ("executed",))


def test_nothing_in_an_entry_is_executed(tmp_path, warm_dir, compiles, bundled):
    entry, = entries(warm_dir)
    marker = tmp_path / "executed"
    # whoever holds the user's secret still cannot make the cache run code: it reads JSON, and only its own types
    _forge(entry, pickle.dumps(_Marker(str(marker))), _secret(warm_dir))
    _ignored_then_rewritten(compiles, bundled)
    doc = json.loads(entry.read_bytes().split(b"\n", 2)[2])
    doc["rules"]["corrections"][0]["class"] = "posix.system"
    doc["identity"]["name"] = {"$enum": ["Path", str(marker)]}
    _forge(entry, json.dumps(doc).encode(), _secret(warm_dir))
    _ignored_then_rewritten(compiles, bundled)
    assert not marker.exists()


@pytest.mark.parametrize("change", ["regex", "cleo-rules", "pyyaml", "jsonschema", "python"])
def test_another_version_of_cleo_rules_or_a_library_is_another_key(change, mini, cache_dir, compiles, monkeypatch):
    compile_pack(mini, check_examples=False)
    with monkeypatch.context() as m:
        if change == "regex":
            m.setattr(regex, "__version__", "1999.1.1")
        elif change == "cleo-rules":
            m.setattr(cache_key, "_code_digest", lambda: "another version")
        elif change == "pyyaml":
            m.setattr(yaml, "__version__", "5.1")
        elif change == "jsonschema":
            real = cache_key._dist_version
            m.setattr(cache_key, "_dist_version", lambda dist, module: "3.0.0" if dist == "jsonschema" else real(dist, module))
        else:
            m.setattr(sys, "version", "3.11.0 (another build)")
        compile_pack(mini, check_examples=False)
        assert len(compiles) == 2 and len(entries(cache_dir)) == 2
    compile_pack(mini, check_examples=False)
    assert len(compiles) == 2  # the first entry still serves the first versions


def test_the_code_digest_changes_with_any_module(tmp_path, monkeypatch):
    package = tmp_path / "cleo_rules"
    shutil.copytree(ROOT / "cleo_rules", package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache_key, "package_dir", lambda: package)
    digest = cache_key._code_digest.__wrapped__
    before = digest()
    assert before == cache_key._code_digest() == cache_key.environment()["cleo-rules"]  # this checkout's code
    path = package / "pack" / "compile.py"
    path.write_bytes(path.read_bytes() + b" ")
    assert digest() != before


def test_a_schema_change_is_another_key(tmp_path, mini, cache_dir, compiles, monkeypatch):
    schemas = tmp_path / "schemas"
    shutil.copytree(ROOT / "schemas", schemas)
    monkeypatch.setattr(cache_key, "schemas_dir", lambda: schemas)
    compile_pack(mini, check_examples=False)
    path = schemas / "vocabulary.schema.json"
    path.write_text(path.read_text(encoding="utf-8") + " ", encoding="utf-8")
    compile_pack(mini, check_examples=False)
    assert len(compiles) == 2


def test_two_processes_writing_at_once_leave_a_whole_entry(cache_dir, compiles, bundled):
    script = textwrap.dedent('''
        import sys, time
        from cleo_rules.pack import cache, cache_key, snapshot
        from cleo_rules.pack.compile import _find_manifest, compile_pack
        start = float(sys.argv[1])
        while time.time() < start:
            time.sleep(0.001)
        pack = compile_pack(check_examples=False)
        store = cache.Store.open()
        doc = snapshot.to_data(pack)
        key = cache_key.key(*_find_manifest(None))
        for _ in range(15):
            store.write(key, doc)
    ''')
    env = {**os.environ, cache.ENV: str(cache_dir), "PYTHONPATH": str(ROOT)}
    start = time.time() + 3.0  # both begin together, with no cache and no secret yet
    procs = [subprocess.Popen([sys.executable, "-c", script, str(start)], env=env, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    reads = whole = 0
    while any(p.poll() is None for p in procs):
        store = cache.Store.open() if (cache_dir / "key").exists() else None
        for entry in entries(cache_dir):
            if store is None:
                break
            doc = store.read(entry.name[len("pack-"):-len(".json")])
            reads += 1
            if doc is not None:  # never a part of an entry: whole, or nothing
                snapshot.from_data(doc, bundled.path, bundled.path / "pack.yaml")
                whole += 1
        time.sleep(0.01)
    for p in procs:
        _, err = p.communicate()
        assert p.returncode == 0, err
    assert whole == reads and len(entries(cache_dir)) == 1 and not list(cache_dir.glob(".tmp-*"))
    pack = compile_pack(check_examples=False)
    assert compiles == []  # read back: the secret both used and the entry they left are whole
    same_pack(pack, bundled, same_process=False)


def test_off_writes_nothing_and_compiles_every_time(tmp_path, mini, compiles, monkeypatch):
    monkeypatch.setenv(cache.ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    compile_pack(mini, check_examples=False)
    compile_pack(mini, check_examples=False)
    assert len(compiles) == 2 and not (tmp_path / "xdg").exists() and cache.location() is None


def test_the_cache_lives_in_the_users_cache_directory(tmp_path, mini, monkeypatch):
    monkeypatch.delenv(cache.ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.location() == tmp_path / "xdg" / "cleo-rules"
    compile_pack(mini, check_examples=False)
    assert len(entries(tmp_path / "xdg" / "cleo-rules")) == 1
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert cache.location() == tmp_path / "home" / ".cache" / "cleo-rules"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.location() == tmp_path / "home" / ".cache" / "cleo-rules"
    assert not inside_package(cache.location())
    monkeypatch.setenv(cache.ENV, "~/elsewhere")
    assert cache.location() == tmp_path / "home" / "elsewhere"


@pytest.mark.parametrize("what", ["directory others may write", "key others may read", "key of the wrong size"])
def test_a_cache_that_is_not_private_is_not_used(what, mini, cache_dir, compiles, caplog):
    compile_pack(mini, check_examples=False)
    if what == "directory others may write":
        cache_dir.chmod(0o777)
    elif what == "key others may read":
        (cache_dir / "key").chmod(0o644)
    else:
        (cache_dir / "key").write_bytes(b"short")
    cache._warned.clear()
    with caplog.at_level("WARNING", logger="cleo_rules"):
        compile_pack(mini, check_examples=False)
        compile_pack(mini, check_examples=False)
    assert len(compiles) == 3 and len(entries(cache_dir)) == 1  # neither read nor written
    assert [r.getMessage() for r in caplog.records if "pack cache" in r.getMessage()] != []


def test_without_hard_links_the_secret_is_still_made_once_and_private(mini, cache_dir, compiles, monkeypatch):
    def no_links(src, dst, *args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    compile_pack(mini, check_examples=False)
    secret = _secret(cache_dir)
    assert len(secret) == 32 and (cache_dir / "key").stat().st_mode & 0o777 == 0o600
    compile_pack(mini, check_examples=False)
    assert len(compiles) == 1 and _secret(cache_dir) == secret and not list(cache_dir.glob(".tmp-*"))


def test_entries_are_pruned_least_recently_used_first(mini, cache_dir, compiles, monkeypatch):
    monkeypatch.setattr(cache, "MAX_ENTRIES", 2)

    def compile_with(min_chars: int) -> None:
        text = (mini / "pack.yaml").read_text(encoding="utf-8")
        (mini / "pack.yaml").write_text(regex.sub(r"min_chars: \d+", f"min_chars: {min_chars}", text),
                                        encoding="utf-8")
        compile_pack(mini, check_examples=False)
        time.sleep(0.01)

    compile_with(10)
    compile_with(20)
    compile_with(10)  # read back: now the most recently used
    compile_with(30)
    assert len(entries(cache_dir)) == 2 and len(compiles) == 3
    compile_with(10)
    assert len(compiles) == 3  # kept
    compile_with(20)
    assert len(compiles) == 4  # pruned


def test_a_pack_the_cache_cannot_vouch_for_is_compiled_and_not_stored(mini, cache_dir, compiles):
    (mini / "corrections.yaml").unlink()
    with pytest.raises(PackError) as err:
        compile_pack(mini, check_examples=False)
    assert err.value.problems[0].code == "E115" and entries(cache_dir) == []
    assert cache_key.key(mini, mini / "pack.yaml") is None


def test_the_command_line_fills_and_reads_the_cache(tmp_path, mini, cache_dir):
    env = {**os.environ, cache.ENV: str(cache_dir), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "cleo_rules", "classify", "--pack", str(mini), "Yes, go with the second one.",
            "-H", "Compare the two van quotes"]
    first = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 0 and len(entries(cache_dir)) == 1
    stamp = entries(cache_dir)[0].stat().st_mtime_ns
    second = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert second.returncode == 0 and second.stdout == first.stdout and "follow_up" in second.stdout
    assert entries(cache_dir)[0].stat().st_mtime_ns >= stamp and len(entries(cache_dir)) == 1
