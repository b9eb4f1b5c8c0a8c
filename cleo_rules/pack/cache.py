"""The compiled-pack cache: a pack compiled once is read back in milliseconds until anything it is made of changes.

**Where.** ``$CLEO_RULES_CACHE`` names the directory (``off`` turns the cache
off); without it, ``$XDG_CACHE_HOME/cleo-rules``, else
``~/.cache/cleo-rules``. Never inside the package. The directory is created
mode 0700 and used only when it belongs to the user and no one else may write
to it; otherwise packs are compiled as if there were no cache, with a warning.

**The key** is a SHA-256 over everything a compile reads or runs
(:mod:`.cache_key`): the pack's files, the schemas, the code and the libraries
it runs on. A pack the cache cannot vouch for (a member missing, unreadable,
over the size bound or outside the pack) is compiled as usual and not cached,
so every error is found and placed by the compiler, as without a cache; a pack
that does not compile is never written.

**An entry** is the compiled pack as plain data (:mod:`.snapshot`: JSON,
nothing that can run code); the corpus its templates generate, under the same
key (:mod:`cleo_rules.corpus.cases_cache`); the serving gate's acceptance of a
pack and its corpus (:func:`cleo_rules.runtime.load_checked`, whose key adds
every corpus file); or the decisions a corpus run made, under a key of what
decides them (:mod:`cleo_rules.corpus.decisions_cache`). Each is written to a
temporary file in the directory and renamed over the entry (``os.replace``), so
a reader sees a whole entry or none, whatever other processes do. Each entry
carries an HMAC-SHA256 of its key and contents under a secret of 32 random
bytes kept in the directory (``key``, mode 0600, created once): an entry that
is truncated, corrupted, written under another key or by someone without the
secret is ignored and the pack compiled again. At most :data:`MAX_ENTRIES` of
each kind are kept (:data:`MAX_DECISION_ENTRIES` of decisions), the least
recently used removed first. While an edit of a pack is judged
(:func:`written_later`), the compiled pack's, the corpus's and the decisions'
entries are written by a background thread once the editing pauses, never on
the path of the request; the gate's acceptance is written at once.

**Relocated.** An entry serves a pack from any directory; so does a pack
compiled in this process: :func:`relocate` gives a pack compiled from one
directory as compiling another directory holding the very same files would
(its key the same), without reading them again. And a process that compiles
the same files again (a check run twice, the same pack in two directories)
takes the pack it last read back or stored under that key, relocated, instead
of reading and decoding its entry again, while the entry is the one it saw
then (the same file, size and modification time: an entry rewritten, damaged or
removed since is read, or the pack compiled, as the first time); at most
:data:`MAX_RECENT` packs are remembered (:class:`Recent`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import stat
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from ..incremental import Recent
from ..reading.load import MANIFEST
from . import cache_key
from .model import Pack
from .snapshot import Unstorable, from_data, relocated, to_data

__all__ = ["ENV", "ENTRY_KINDS", "MAX_ENTRIES", "Store", "compiled", "flush", "key_of", "location", "relocate",
           "store_entry", "written_later"]

log = logging.getLogger("cleo_rules")

ENV = "CLEO_RULES_CACHE"
#: what an entry holds: a compiled pack, the corpus its templates generate, the serving gate's acceptance, or the
#: decisions a corpus run made (by what decides them: :mod:`cleo_rules.corpus.decisions_cache`)
ENTRY_KINDS = ("pack", "corpus", "gate", "decisions")
MAX_ENTRIES = 32  # of each kind but decisions
MAX_DECISION_ENTRIES = 8  # a few MB each: the decisions on a corpus of thousands of cases
MAX_ENTRY_BYTES = 256 << 20
_OFF = frozenset({"off", "0", "no", "false", "none"})
_MAGIC = b"cleo-rules compiled pack\n"
_SECRET = "key"
_STALE_TEMP = 3600.0  # seconds after which a temporary file is a crashed writer's
_warned: set[str] = set()
_keys: weakref.WeakKeyDictionary[Pack, str] = weakref.WeakKeyDictionary()  # see key_of
_keys_lock = threading.Lock()
MAX_RECENT = 2  # packs: one the size of cleo-en holds about 17 MB, much of it shared with its relocations


def _warn_once(message: str, level: int = logging.WARNING) -> None:
    if message not in _warned:
        _warned.add(message)
        log.log(level, "%s; packs are compiled without the cache", message)


def location() -> Path | None:
    """The cache directory this process would use, or None when the cache is off."""
    setting = os.environ.get(ENV, "").strip()
    if setting.lower() in _OFF:
        return None
    if setting:
        return Path(setting).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):  # the XDG specification ignores a relative path
        return Path(xdg) / "cleo-rules"
    try:
        return Path.home() / ".cache" / "cleo-rules"
    except RuntimeError:  # no home directory
        return None


# -- the store -------------------------------------------------------------------------------------------


def _private(st: os.stat_result, mask: int) -> bool:
    """Whether a file is the user's own and none of the ``mask`` permission bits are set."""
    mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return mine and not st.st_mode & mask


class Store:
    """The cache directory, with its secret: entries read and written by key."""

    def __init__(self, root: Path, secret: bytes):
        self.root = root
        self._secret = secret

    @classmethod
    def open(cls, root: Path | None = None) -> Store | None:
        """The store at ``root`` (default :func:`location`), created if missing; None when off or not private."""
        root = root if root is not None else location()
        if root is None:
            return None
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = root.stat()
        except OSError as exc:
            _warn_once(f"the pack cache {root} cannot be created: {exc.strerror or exc}", logging.INFO)
            return None
        if not stat.S_ISDIR(st.st_mode) or not _private(st, 0o022):
            _warn_once(f"the pack cache {root} is not a directory only its owner may write to")
            return None
        secret = cls._secret_in(root)
        if secret is None:
            _warn_once(f"the pack cache's key {root / _SECRET} is not a 32-byte file only its owner may read")
            return None
        return cls(root, secret)

    @staticmethod
    def _secret_in(root: Path) -> bytes | None:
        path = root / _SECRET
        for _ in range(2):
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except FileNotFoundError:
                Store._make_secret(root, path)
                continue
            except OSError:
                return None
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode) or not _private(st, 0o077):
                    return None
                secret = fh.read(33)
            return secret if len(secret) == 32 else None
        return None

    @staticmethod
    def _make_secret(root: Path, path: Path) -> None:
        """Write a new secret, whole, unless another process has just written one (which is then used)."""
        secret = secrets.token_bytes(32)
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-key-", dir=root)  # mode 0600
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secret)
            os.link(tmp, path)  # appears whole, and never replaces a secret another process made
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: created exclusively, then written
            try:
                made = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except OSError:
                pass
            else:
                with os.fdopen(made, "wb") as fh:
                    fh.write(secret)
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    def path(self, key: str, kind: str = "pack") -> Path:
        return self.root / f"{kind}-{key}.json"

    def _mac(self, kind: str, key: str, payload: bytes) -> bytes:
        signed = f"{kind}-{key}\n".encode() + payload
        return hmac.new(self._secret, signed, hashlib.sha256).hexdigest().encode()

    def read(self, key: str, kind: str = "pack") -> dict | None:
        """The entry of ``kind`` (one of :data:`ENTRY_KINDS`) stored under ``key``, or None when there is none or it is
        not exactly what was written."""
        path = self.path(key, kind)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
                    return None
                blob = fh.read(MAX_ENTRY_BYTES + 1)
        except OSError:
            return None
        head, mac, payload = blob[:len(_MAGIC)], blob[len(_MAGIC):len(_MAGIC) + 64], blob[len(_MAGIC) + 65:]
        if head != _MAGIC or blob[len(_MAGIC) + 64:len(_MAGIC) + 65] != b"\n" or \
                not hmac.compare_digest(mac, self._mac(kind, key, payload)):
            return None
        try:
            doc = json.loads(payload)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        try:
            os.utime(path)  # recently used: pruned last
        except OSError:
            pass
        return doc

    def seen(self, key: str, kind: str = "pack", *, touch: bool = False) -> tuple | None:
        """The entry of ``kind`` under ``key`` as the file system shows it (inode, size, modification time), or None
        when there is none; with ``touch`` marked recently used first (pruned last). An entry written or changed
        since shows otherwise."""
        path = self.path(key, kind)
        try:
            if touch:
                os.utime(path, follow_symlinks=False)
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None

    def write(self, key: str, doc: dict, kind: str = "pack") -> None:
        """Store ``doc`` under ``key``: a whole new entry appears at once, or nothing changes."""
        payload = json.dumps(doc, separators=(",", ":")).encode("ascii")
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.root)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + self._mac(kind, key, payload) + b"\n" + payload)
            os.replace(tmp, self.path(key, kind))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self._prune()

    def _prune(self) -> None:
        """Keep the :data:`MAX_ENTRIES` most recently used entries of each kind (:data:`MAX_DECISION_ENTRIES` of
        decisions); remove a crashed writer's temporary files."""
        entries: dict[str, list] = {kind: [] for kind in ENTRY_KINDS}
        now = time.time()
        try:
            names = os.listdir(self.root)
        except OSError:
            return
        for name in names:
            full = self.root / name
            try:
                mtime = full.stat().st_mtime
                kind = name.split("-", 1)[0]
                if name.startswith(".tmp-") and now - mtime > _STALE_TEMP:
                    full.unlink()
                elif kind in entries and name.endswith(".json"):
                    entries[kind].append((mtime, name))
            except OSError:
                continue
        for kind, found in entries.items():
            for _, name in sorted(found)[:-(MAX_DECISION_ENTRIES if kind == "decisions" else MAX_ENTRIES)]:
                try:
                    (self.root / name).unlink()
                except OSError:
                    pass


#: the packs read back or stored most recently (:func:`compiled`)
_recent: Recent[Pack] = Recent("pack", MAX_RECENT)


# -- writing entries, now or later -----------------------------------------------------------------------


_later = threading.local()
#: (kind, key) -> (store, what to write, what to call once it is written)
_pending: dict[tuple[str, str], tuple[Store, Callable[[], dict], Callable[[], object] | None]] = {}
_pending_lock = threading.Condition()
_writer: threading.Thread | None = None
QUIET = 1.0  # seconds without a new entry to write before the entries waiting are written
PENDING = 2  # of each kind: the newest; an older one waiting is dropped


@contextlib.contextmanager
def written_later():
    """Within it, the entries this thread stores (:func:`store_entry`) are made and written by a background thread
    once no new one has come for :data:`QUIET` seconds (the :data:`PENDING` newest of each kind; those left
    when the process exits are written then): work off the path of a request that must answer quickly (the
    playground's editing). What is written is what would have been written at once."""
    was = getattr(_later, "on", False)
    _later.on = True
    try:
        yield
    finally:
        _later.on = was


def store_entry(store: Store, key: str, make: Callable[[], dict], kind: str = "pack",
                written: Callable[[], object] | None = None) -> None:
    """Store ``make()`` under ``key``: now, or later within :func:`written_later`, then call ``written()``. An entry
    that cannot be made (a value the snapshot does not store) or written is left out, as if there were no cache."""
    if not getattr(_later, "on", False):
        _write_entry(store, key, make, kind, written)
        return
    global _writer
    with _pending_lock:
        _pending.pop((kind, key), None)
        _pending[(kind, key)] = (store, make, written)
        waiting = [k for k in _pending if k[0] == kind]
        for old in waiting[:-PENDING]:
            del _pending[old]
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=_write_pending, name="cleo-rules-cache-writer", daemon=True)
            _writer.start()
        _pending_lock.notify_all()


def _write_entry(store: Store, key: str, make: Callable[[], dict], kind: str,
                 written: Callable[[], object] | None = None) -> None:
    try:
        store.write(key, make(), kind)
    except Unstorable as exc:  # what the pack holds says why: a family's rules the snapshot cannot write
        log.info("pack cache entry %s-%s not written: %s", kind, key, exc)
    except (OSError, ValueError, TypeError) as exc:
        log.debug("pack cache entry %s-%s not written: %s: %s", kind, key, type(exc).__name__, exc)
    else:
        if written is not None:
            written()


def _write_pending() -> None:
    while True:
        with _pending_lock:
            while not _pending:
                _pending_lock.wait()
            if _pending_lock.wait(QUIET):  # a new entry came: wait for quiet again
                continue
        flush()


def flush() -> None:
    """Write every entry waiting to be written (:func:`written_later`), now, in this thread."""
    while True:
        with _pending_lock:
            if not _pending:
                return
            (kind, key), (store, make, written) = next(iter(_pending.items()))
            del _pending[(kind, key)]
        _write_entry(store, key, make, kind, written)


atexit.register(flush)


# -- the compile, through the cache ------------------------------------------------------------------------


def compiled(pack_dir: Path, manifest_path: Path, compile: Callable[[], Pack]) -> Pack:
    """The pack in ``pack_dir`` from the cache when its entry is there and whole; else ``compile()``, stored.

    ``compile`` raises on a pack that does not compile: nothing is stored.
    An entry is stored only if the pack's files are the same after the
    compile as before it.
    """
    store = Store.open()
    keyed = cache_key.keyed(pack_dir, manifest_path) if store is not None else None
    if store is None or keyed is None:
        return compile()
    wanted, base_dirs = keyed
    recent = _recent.get(store, wanted)
    if recent is not None:
        try:
            return _known(relocated(recent, pack_dir, manifest_path, base_dirs), wanted)
        except (Unstorable, ValueError) as exc:
            log.debug("pack %s not relocated: %s: %s", recent.name, type(exc).__name__, exc)
    doc = store.read(wanted)
    if doc is not None:
        try:
            pack = _known(from_data(doc, pack_dir, manifest_path, base_dirs), wanted)
        except Exception as exc:  # noqa: BLE001 - an entry this version cannot read is compiled again
            log.debug("pack cache entry %s not used: %s: %s", wanted, type(exc).__name__, exc)
        else:
            _recent.put(store, wanted, pack)
            return pack
    pack = compile()
    if cache_key.key(pack_dir, manifest_path) == wanted:
        _known(pack, wanted)
        store_entry(store, wanted, lambda: to_data(pack), written=lambda: _recent.put(store, wanted, pack))
    return pack


def _known(pack: Pack, wanted: str) -> Pack:
    with _keys_lock:
        _keys[pack] = wanted
    return pack


def key_of(pack: Pack) -> str | None:
    """The key of the files ``pack`` was compiled from (or read back for), when it came through
    :func:`compiled` in this process and they did not change meanwhile; else None.

    What is worked out from the pack alone (the corpus its templates
    generate) may be stored under it, as an entry of another kind.
    """
    with _keys_lock:
        return _keys.get(pack)


def relocate(pack: Pack, pack_dir) -> Pack | None:
    """``pack`` as compiling the pack in ``pack_dir`` would give it, when that directory's files are the very files
    ``pack`` was compiled from, wherever that was (their key is :func:`key_of` ``pack``); else None.

    What depends on where a pack is read from (its directory, each file's path and how messages name it, its
    bases' directories) is made anew for ``pack_dir``, as :func:`compiled` does reading an entry back; the rest is
    shared. So a pack judged in a copy of a directory serves from the directory without compiling or reading it
    again (:meth:`cleo_rules.runtime.PackManager.adopt`).
    """
    wanted = key_of(pack)
    manifest_path = Path(pack_dir) / MANIFEST
    keyed = cache_key.keyed(Path(pack_dir), manifest_path) if wanted is not None else None
    if wanted is None or keyed is None or keyed[0] != wanted:
        return None
    try:
        return _known(relocated(pack, Path(pack_dir), manifest_path, keyed[1]), wanted)
    except (Unstorable, ValueError) as exc:
        log.debug("pack %s not relocated: %s: %s", pack.name, type(exc).__name__, exc)
        return None
