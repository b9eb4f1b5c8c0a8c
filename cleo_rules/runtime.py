"""Serving rule packs in a long-running process: versions, hot reload, bad packs that never win.

:class:`PackManager` holds the compiled pack that answers every request and
swaps in a new one only after it passes :func:`load_checked`, the single gate:

1. load: plain YAML only, bounded files, schema, lints (including
   catastrophic patterns), compile (:func:`~cleo_rules.pack.compile.load_pack`);
2. the version range the runtime requires, if any;
3. the one verdict (:func:`cleo_rules.pack_check.check_compiled`): every example,
   counterexample and request form of every rule, and the pack's own
   checked-in corpus (``corpus/`` beside the pack directory, when it has one).
   Without a corpus only the examples check the pack (a rule file cut short
   at a rule boundary still passes): :meth:`PackManager.status` and the log
   say so (:data:`NO_CORPUS`). An acceptance is remembered by the content of
   every file checked, so the same pack and corpus start serving at once.

A pack that fails any step is rejected: the reasons are logged on the
``cleo_rules`` logger, kept in :attr:`PackManager.last_error`, and the
previous pack keeps serving. The swap is one reference assignment of a
fully built, immutable :class:`~cleo_rules.pack.model.Pack`, and every
call reads that reference once, so a request is answered wholly by one pack
and its decision names that pack's version and content hash.

A pack the gate checked elsewhere (an edit checked in a copy of the pack's
directory: :mod:`cleo_rules.editing`) is served by
:meth:`PackManager.adopt` when the directory holds the very files checked,
as loading them would give it, without compiling or checking it again.

Reload by calling :meth:`PackManager.reload`, or let the manager poll the
pack directory and its corpus (:meth:`PackManager.watch`; no extra
dependency), and those of every directory the pack is built on
(``extends:``, :mod:`cleo_rules.pack.compose`); the gate checks the composed
pack whole, with the corpus of each base::

    with PackManager("rules/", require=">=1.0,<2", watch=True, interval=1.0) as packs:
        decision = packs.classify("Yes, go with the second one.", history)
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from .corpus.files import corpus_dir_of, corpus_files
from .errors import CleoError, PackError
from .pack import cache, cache_key
from .pack.compile import load_pack
from .pack.compose import base_dirs, directory_bases
from .reading.load import MANIFEST, load_yaml, resolve_member
from .pack.model import Pack
from .pack.discovery import VersionRange, check_pack_version, resolve_pack
from .pack_check import PackCheck, check, check_compiled

log = logging.getLogger("cleo_rules")

__all__ = ["CheckedPack", "PackManager", "check_dir", "check_for_adoption", "fingerprint", "load_checked"]

#: files whose content makes up a pack on disk (rule files, manifest, corpus)
WATCHED_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
MAX_WATCHED_FILES = 1000
#: What :meth:`PackManager.status` and the log say of a pack with no corpus beside it.
NO_CORPUS = "no corpus: the gate ran the examples only"


# --------------------------------------------------------------------------
# The acceptance gate
# --------------------------------------------------------------------------


def load_checked(pack_dir, *, require=None) -> Pack:
    """Load ``pack_dir`` and return the compiled pack only if it may serve.

    Validates, lints and compiles, checks ``require`` (a version range such
    as ``">=1.0,<2"``), then checks the pack with :func:`cleo_rules.pack_check.check_compiled`:
    every example, counterexample and request form, and the pack's corpus
    (``corpus/`` beside the pack directory, when there is one): any failing
    example or case, stale generated file or corpus problem rejects the pack.
    Raises :class:`~cleo_rules.errors.PackError` (or a subclass) listing the
    reasons, or :class:`~cleo_rules.errors.PackNotFound`.

    An acceptance is remembered in the compiled-pack cache
    (:mod:`cleo_rules.pack.cache`) under a key over every file of the pack and
    of its corpus, the code and the libraries: the very same pack and corpus
    are accepted again, by any process, without running the corpus; a
    refusal is never remembered.
    """
    before = _verdict_key(pack_dir)
    pack = load_pack(Path(pack_dir), check_examples=False, require=require)
    store = cache.Store.open() if before is not None else None
    if store is not None and _verdict_key(pack_dir) == before:  # the pack loaded is the one keyed
        if store.read(str(before), kind="gate") == {"accepted": pack.content_hash}:
            return pack
    errors = check_compiled(pack).errors()
    if errors:
        raise PackError(errors, pack=str(pack_dir))
    _remember(store, before, pack_dir, pack)
    return pack


def check_dir(pack_dir, *, require=None) -> PackCheck:
    """The gate's whole check of ``pack_dir``, as :func:`cleo_rules.pack_check.check` gives it.

    The same check as :func:`load_checked` (compile, ``require``, examples and
    corpus), with everything it found, warnings and open corpus cases too;
    :meth:`~cleo_rules.pack_check.PackCheck.as_error` is what :func:`load_checked`
    would raise. A pack that passes is remembered as :func:`load_checked` remembers
    it, under a key over the files' contents, not where they are: the same
    files accepted later, from any directory, start serving at once (what
    the playground's editing does: :mod:`cleo_rules.editing`).
    """
    return check_for_adoption(pack_dir, require=require)[0]


@dataclass(frozen=True)
class CheckedPack:
    """A pack whose check passed, as it was checked (``pack``, compiled where it was checked), and ``key``, the verdict
    key of the files it was checked from (the pack's and every corpus file's content): what
    :meth:`PackManager.adopt` serves from a directory holding those very files."""

    pack: Pack
    key: str


def check_for_adoption(pack_dir, *, require=None) -> tuple[PackCheck, CheckedPack | None]:
    """:func:`check_dir`, and the :class:`CheckedPack` of the pack when it passes (None when it does not, or when its
    files cannot be vouched for, or changed while it was checked)."""
    before = _verdict_key(pack_dir)
    result = check(Path(pack_dir), require=str(require) if require is not None else None)
    if not (result.ok and result.pack is not None and before is not None):
        return result, None
    if not _remember(cache.Store.open(), before, pack_dir, result.pack):
        return result, None
    return result, CheckedPack(result.pack, before)


def _remember(store, before: str | None, pack_dir, pack: Pack) -> bool:
    """Keep the gate's acceptance of ``pack`` under ``before``, its verdict key, unless the files changed while it
    was checked (then nothing is kept); whether they are the files checked."""
    if before is None or _verdict_key(pack_dir) != before:
        return False
    if store is not None:  # at once, even while an edit is checked (a few bytes): the files are served on it
        try:
            store.write(str(before), {"accepted": pack.content_hash}, kind="gate")
        except OSError:
            pass
    return True


def _verdict_key(pack_dir) -> str | None:
    """What the gate's verdict on the pack in ``pack_dir`` rests on, as a cache key: every input of the compiled
    pack (:func:`cleo_rules.pack.cache_key.key`) and every file of its corpus; None when one cannot be vouched for
    (a link, a file that cannot be read or is over the size bound: the gate then checks it, and says why)."""
    path = Path(pack_dir)
    manifest = path / MANIFEST if path.is_dir() else path
    if resolve_member(manifest.parent, manifest.name) is None:
        return None
    found: list = []
    corpora = [corpus_dir_of(manifest.parent)] + [corpus_dir_of(layer.path) for layer in base_dirs(manifest.parent)]
    for i, corpus in enumerate(corpora):  # the pack's corpus, and each base's, which the gate runs too
        hand, generated = corpus_files(corpus)
        found.append((i, corpus.is_dir()))
        for file in hand + generated:
            digest = None if file.is_symlink() else cache_key.file_digest(file)
            if digest is None:
                return None
            found.append((i, file.relative_to(corpus).as_posix(), digest))
    return cache_key.key(manifest.parent, manifest, more=["gate", found])


# --------------------------------------------------------------------------
# Fingerprints of a pack directory
# --------------------------------------------------------------------------


class _HashCache:
    """``sha256`` of files, recomputed only when size or mtime changed.

    A file modified within :attr:`RACY` seconds of being hashed is hashed
    again on every call, so two writes inside one mtime tick are not missed.
    """

    RACY = 2.0

    def __init__(self):
        self._seen: dict[str, tuple[int, int, str]] = {}
        self.members: dict[str, list[str]] = {}  # manifest digest -> the files it lists

    def digest(self, path: str, st: os.stat_result) -> str:
        old = self._seen.get(path)
        fresh = time.time() - st.st_mtime < self.RACY
        if old is not None and old[:2] == (st.st_mtime_ns, st.st_size) and not fresh:
            return old[2]
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 16), b""):
                h.update(block)
        digest = h.hexdigest()
        self._seen[path] = (st.st_mtime_ns, st.st_size, digest)
        return digest


def _entry(root: Path, full: str, cache: _HashCache) -> str:
    try:
        st = os.stat(full)
        digest = cache.digest(full, st)
    except OSError:  # removed between listing and reading: part of a change in progress
        return f"{os.path.relpath(full, root)}\0-1\0unreadable"
    return f"{os.path.relpath(full, root)}\0{st.st_size}\0{digest}"


def _members(root: Path, cache: _HashCache) -> list[str]:
    """The manifest of the pack in ``root`` and every file it lists that lies in the pack (hidden ones too)."""
    manifest = root / MANIFEST
    try:
        digest = cache.digest(str(manifest), os.stat(manifest))
    except OSError:
        return []
    if resolve_member(root, MANIFEST) is None:  # a link out of the pack: the gate refuses it, nothing to list
        return [str(manifest)]
    if digest not in cache.members:
        src, _ = load_yaml(manifest)
        names = src.data.get("files") if src is not None and isinstance(src.data, dict) else None
        found = [str(manifest)]
        for name in names if isinstance(names, list) else []:
            member = resolve_member(root, name) if isinstance(name, str) else None
            if member is not None:
                found.append(str(member))
        cache.members = {digest: found}  # one manifest at a time
    return cache.members[digest]


def fingerprint(pack_dir, *, _cache: _HashCache | None = None) -> str:
    """A digest of every pack file under ``pack_dir``: names, sizes and contents.

    The manifest and every file it lists come first, whatever their names
    (a member may be a hidden file). Then the other files ending in
    :data:`WATCHED_SUFFIXES`, hidden files and directories excluded (editor
    swap files), up to :data:`MAX_WATCHED_FILES`. A missing directory has the
    fingerprint ``"missing"``. Touching a file without changing it does not
    change the fingerprint.
    """
    cache = _cache or _HashCache()
    root = Path(pack_dir)
    if not root.is_dir():
        return "missing"
    members = _members(root, cache)
    entries = [_entry(root, full, cache) for full in members]
    listed = set(members)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(WATCHED_SUFFIXES):
                continue
            full = os.path.join(dirpath, name)
            if full in listed:
                continue
            entries.append(_entry(root, full, cache))
            if len(entries) >= MAX_WATCHED_FILES:
                break
        if len(entries) >= MAX_WATCHED_FILES:
            break
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()


# --------------------------------------------------------------------------
# The manager
# --------------------------------------------------------------------------


def _within(pack: Pack, require: VersionRange | None) -> bool:
    try:
        check_pack_version(pack, require)
    except PackError:
        return False
    return True


def _gate_note(pack_dir) -> str:
    """What the log adds when the gate had no corpus to run."""
    return "" if corpus_dir_of(pack_dir).is_dir() else f"; {NO_CORPUS}"


class _Refusal(Exception):
    """A pack that did not pass the gate: ``error`` says why, ``fingerprint`` which files."""

    def __init__(self, error: BaseException, fingerprint: str | None):
        super().__init__(str(error))
        self.error = error
        self.fingerprint = fingerprint


@dataclass(frozen=True)
class _Serving:
    """What answers requests: replaced as a whole, never edited."""

    pack: Pack
    pack_dir: Path
    fingerprint: str


class PackManager:
    """Holds the serving pack and swaps in a new one atomically once it is accepted.

    ``spec`` is a pack directory, the name of an installed pack, or None
    for the bundled pack. ``require`` is a version range every pack must
    satisfy. ``watch=True`` starts polling the directory every ``interval``
    seconds. ``cache_size`` accepted packs are remembered by fingerprint, so
    switching back to a pack already seen is instant. The first load must
    succeed (there is nothing else to serve): it raises the loader's error.

    Attributes: :attr:`pack` (serving now), :attr:`pack_dir`,
    :attr:`last_error` (why the most recent reload was refused; None after a
    success), :attr:`reloads` (packs swapped in since start),
    :attr:`rejections` (packs refused).
    """

    def __init__(self, spec=None, *, require=None, watch: bool = False, interval: float = 1.0,
                 cache_size: int = 4, gate=load_checked):
        self._require = VersionRange.parse(require) if require is not None else None
        self._gate = gate
        self._lock = threading.RLock()  # one reload at a time; readers never take it
        self._hashes = _HashCache()
        self._cache: OrderedDict = OrderedDict()
        self._cache_size = max(0, int(cache_size))
        self._refused: tuple[Path, str] | None = None  # (dir, fingerprint) last rejected
        self._pending: str | None = None  # fingerprint seen once by the watcher, not yet settled
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.last_error: CleoError | None = None
        self.reloads = 0
        self.rejections = 0
        pack_dir = resolve_pack(spec)
        try:
            pack, fp = self._load(pack_dir)
        except _Refusal as refusal:
            raise refusal.error from None
        self._serving = _Serving(pack, pack_dir, fp)
        log.info("rule pack %s %s (%s) serving from %s%s", pack.name, pack.version, pack.content_hash, pack_dir,
                 _gate_note(pack_dir))
        if watch:
            self.watch(interval)

    # -- reading: one reference read per call -----------------------------

    @property
    def pack(self) -> Pack:
        """The pack serving now."""
        return self._serving.pack

    @property
    def pack_dir(self) -> Path:
        return self._serving.pack_dir

    @property
    def require(self) -> VersionRange | None:
        return self._require

    def classify(self, message: str, history=()):
        """Classify with the pack serving now (see :meth:`Pack.classify`)."""
        return self._serving.pack.classify(message, history)

    def explain(self, message: str, history=()):
        return self._serving.pack.explain(message, history)

    def status(self) -> dict:
        """What serves and how it was checked: ``corpus`` is the corpus directory the gate ran (None: there is
        none, and ``gate`` says :data:`NO_CORPUS`)."""
        serving = self._serving
        corpus = corpus_dir_of(serving.pack_dir)
        has_corpus = corpus.is_dir()
        return {
            "pack": serving.pack.name, "version": serving.pack.version, "hash": serving.pack.content_hash,
            "path": str(serving.pack_dir), "require": str(self._require) if self._require else None,
            "reloads": self.reloads, "rejections": self.rejections,
            "last_error": str(self.last_error) if self.last_error else None, "watching": self.watching,
            "corpus": str(corpus) if has_corpus else None,
            "gate": "examples and corpus" if has_corpus else NO_CORPUS,
            "bases": [b.record() for b in serving.pack.composition.bases],
        }

    # -- loading -----------------------------------------------------------

    def _fingerprint(self, pack_dir: Path) -> str:
        """The pack's files and, when it has one, its corpus's, and so of each directory it is built on (an
        installed base changes only when it is installed again): a change to any is checked again."""
        fp = fingerprint(pack_dir, _cache=self._hashes)
        if fp == "missing":
            return fp
        parts = [fp]
        for where in [Path(pack_dir), *directory_bases(Path(pack_dir))]:
            if where != Path(pack_dir):
                parts.append(fingerprint(where, _cache=self._hashes))
            corpus = corpus_dir_of(where)
            if corpus.is_dir():
                parts.append(fingerprint(corpus, _cache=self._hashes))
        return parts[0] if len(parts) == 1 else hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def _load(self, pack_dir: Path, attempts: int = 3) -> tuple[Pack, str]:
        """Accept ``pack_dir`` as one consistent snapshot: ``(pack, fingerprint)``.

        The directory is fingerprinted before and after loading; if its files
        changed meanwhile the result may mix old and new files, so it is
        thrown away and the load tried again. Raises :class:`_Refusal`.
        """
        before = "missing"
        for _ in range(attempts):
            before = self._fingerprint(pack_dir)
            key = (str(pack_dir), before)
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key], before
            try:
                pack = self._gate(pack_dir, require=self._require)
            except Exception as exc:  # noqa: BLE001 - checked below; nothing may stop the old pack serving
                if self._fingerprint(pack_dir) != before:
                    continue  # a half-written change, not a verdict on the pack
                raise _Refusal(exc, before) from exc
            if self._fingerprint(pack_dir) != before:
                continue
            if self._cache_size:
                self._cache[key] = pack
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            return pack, before
        raise _Refusal(CleoError(f"the files of rule pack {pack_dir} kept changing while it was loading; "
                                 f"it is tried again once they are saved"), None)

    def reload(self, spec=None, *, strict: bool = False) -> bool:
        """Load the pack again (or the pack ``spec`` names) and swap it in if it is accepted.

        Returns True when a different pack now serves, False when the pack
        was refused or is the one already serving. A refused pack is logged
        with its reasons and kept in :attr:`last_error`; the previous pack
        keeps serving. ``strict=True`` also raises the error.
        """
        with self._lock:
            old = self._serving
            pack_dir = old.pack_dir
            try:
                if spec is not None:
                    pack_dir = resolve_pack(spec)
                pack, fp = self._load(pack_dir)
            except _Refusal as refusal:
                self._refuse(old, pack_dir, refusal.error, refusal.fingerprint)
                if strict:
                    raise refusal.error from None
                return False
            except CleoError as exc:  # the spec names no pack
                self._refuse(old, spec, exc, None)
                if strict:
                    raise
                return False
            return self._swap(old, pack, pack_dir, fp)

    def _swap(self, old: _Serving, pack: Pack, pack_dir: Path, fp: str) -> bool:
        self.last_error = None
        self._refused = None
        if pack is old.pack or (pack.content_hash == old.pack.content_hash and pack_dir == old.pack_dir):
            self._serving = _Serving(old.pack, pack_dir, fp)  # same content: nothing to swap
            return False
        self._serving = _Serving(pack, pack_dir, fp)
        self.reloads += 1
        log.info("rule pack %s %s (%s) from %s replaced %s %s (%s)%s", pack.name, pack.version,
                 pack.content_hash, pack_dir, old.pack.name, old.pack.version, old.pack.content_hash,
                 _gate_note(pack_dir))
        return True

    def adopt(self, accepted: CheckedPack) -> bool:
        """Serve the pack of ``accepted`` (checked in a copy of the serving directory: the playground's editing)
        when the serving directory's files are now the very files it was checked from, as :meth:`reload` would
        serve them, without compiling or reading them again (:func:`cleo_rules.pack.cache.relocate`); otherwise
        :meth:`reload`. Returns what :meth:`reload` returns."""
        with self._lock:
            old = self._serving
            fp = self._fingerprint(old.pack_dir)
            pack = cache.relocate(accepted.pack, old.pack_dir)
            if pack is None or _verdict_key(old.pack_dir) != accepted.key or \
                    self._fingerprint(old.pack_dir) != fp or not _within(pack, self._require):
                return self.reload()
            if self._cache_size:
                self._cache[(str(old.pack_dir), fp)] = pack
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            return self._swap(old, pack, old.pack_dir, fp)

    def _refuse(self, old: _Serving, where, exc: BaseException, fp: str | None) -> None:
        self.rejections += 1
        self._refused = (Path(where), fp) if fp is not None else None
        if isinstance(exc, CleoError):
            self.last_error = exc
            report_of = getattr(exc, "report", None)
            report = report_of() if callable(report_of) else str(exc)
            log.warning("rule pack %s rejected; still serving %s %s (%s):\n%s", where, old.pack.name,
                        old.pack.version, old.pack.content_hash, report)
        else:
            self.last_error = CleoError(f"loading rule pack {where} failed: {type(exc).__name__}: {exc}")
            log.error("rule pack %s rejected by an unexpected error; still serving %s %s (%s)", where,
                      old.pack.name, old.pack.version, old.pack.content_hash, exc_info=exc)

    # -- watching ----------------------------------------------------------

    def poll(self) -> bool:
        """One poll: reload if the serving directory's files changed and have settled.

        A change is loaded once two polls in a row see the same files, so a
        save in several steps is not loaded half-way. A refused version is
        not tried again until the files change again. Returns True when a
        new pack was swapped in.
        """
        with self._lock:
            serving = self._serving
            fp = self._fingerprint(serving.pack_dir)
            if fp == serving.fingerprint or self._refused == (serving.pack_dir, fp):
                self._pending = None
                if fp == serving.fingerprint and self._refused is not None:
                    self._refused = self.last_error = None  # the files are back to what serves
                    log.info("rule pack %s is back to the version serving; the last rejection no longer applies",
                             serving.pack_dir)
                return False
            if fp != self._pending:
                self._pending = fp  # seen once; load when the next poll sees the same
                return False
            self._pending = None
            return self.reload()

    def watch(self, interval: float = 1.0) -> None:
        """Poll the pack directory every ``interval`` seconds in a daemon thread."""
        if interval <= 0:
            raise ValueError("interval must be positive")
        with self._lock:
            if self.watching:
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._watch_loop, args=(interval,), name="cleo-rules-pack-watch",
                                            daemon=True)
            self._thread.start()

    def _watch_loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.poll()
            except Exception:  # noqa: BLE001 - the watcher must outlive any one bad poll
                log.exception("rule pack watcher: poll failed; still serving %s", self._serving.pack)

    @property
    def watching(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop watching (if watching). The manager keeps serving its pack."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None

    def __enter__(self) -> "PackManager":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self):
        p = self._serving.pack
        return f"<PackManager serving {p.name} {p.version} ({p.content_hash}) from {self._serving.pack_dir}>"
