"""API keys: stored hashed, each naming the tenants it may use.

A key file holds one key per line: the key's SHA-256 (never the key
itself), then the tenants it may use, comma-separated, or ``*`` for every
tenant. ``#`` starts a comment; blank lines are ignored::

    # cleo-rules service keys
    sha256:3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b  acme,globex  # support desk
    sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  *

``cleo-rules serve --keys FILE --new-key acme,globex`` makes a random key,
appends its line and prints the key once. Keys are 256-bit random tokens,
so a plain SHA-256 is enough to keep a stolen file from being replayed.

A key for ``*`` may also reload the pack (``POST /v1/pack/reload``) and
sees the server's paths and a refused pack's reasons wherever the pack is
reported (``/readyz``, ``GET /v1/pack``, a 503); any valid key may classify
and read the rest of the pack's status. ``serve`` and ``playground`` take
the same file.

A running service reads its key file again when the file changes (its size,
times or inode, looked at every ``watch_interval`` seconds) and on SIGHUP
(:class:`KeyFile`): keys added work and keys removed stop working without a
restart. A file that does not load then (a malformed line, unreadable) keeps
the keys read before, and the error is logged.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..tenant_names import TENANT_SYNTAX, valid_tenant

__all__ = ["Key", "KeyFile", "KeyRing", "hash_key", "new_key"]

log = logging.getLogger("cleo_rules.serve")

ALL = "*"
PREFIX = "sha256:"
_LINE = re.compile(r"(?P<hash>\S+)\s+(?P<tenants>\S+)\s*(?:#.*)?")
_HEX = re.compile(r"[0-9a-f]{64}")


def hash_key(key: str) -> str:
    """How a key is stored: ``sha256:<hex>``."""
    return PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random key (``cleo_`` and 43 URL-safe characters)."""
    return "cleo_" + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Key:
    """One stored key: its hash, the tenants it may use, where it was written."""

    digest: str
    tenants: frozenset[str]
    line: int = 0

    @property
    def all_tenants(self) -> bool:
        return ALL in self.tenants

    def may_use(self, tenant: str) -> bool:
        return self.all_tenants or tenant in self.tenants


class KeyRing:
    """The keys of one key file, looked up by hash."""

    def __init__(self, keys=(), *, source: str = "<keys>"):
        self.source = source
        self._by_digest: dict[str, Key] = {}
        for key in keys:
            self._by_digest[key.digest] = key

    def __len__(self) -> int:
        return len(self._by_digest)

    @classmethod
    def load(cls, path) -> "KeyRing":
        """Read a key file; a malformed line is a :class:`~cleo_rules.errors.UsageError` naming ``file:line``."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read the key file {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise UsageError(f"the key file {path} is not UTF-8 text") from None
        keys = []
        seen: dict[str, int] = {}
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{path}:{number}"
            m = _LINE.fullmatch(line)
            if m is None:
                raise UsageError(f"{where}: expected 'sha256:<64 hex digits> TENANT[,TENANT...]' or '... *'; "
                                 f"add keys with `cleo-rules serve --keys {path} --new-key TENANTS`")
            digest, tenants = m["hash"], m["tenants"]
            if not digest.startswith(PREFIX) or not _HEX.fullmatch(digest[len(PREFIX):]):
                raise UsageError(f"{where}: {digest[:20]!r} is not a stored key (sha256: and 64 lower-case hex "
                                 f"digits); the file keeps hashes, never the keys themselves")
            names = tenants.split(",")
            bad = [t for t in names if t != ALL and not valid_tenant(t)]
            if bad or (ALL in names and len(names) > 1):
                what = repr(bad[0]) if bad else "'*' mixed with names"
                raise UsageError(f"{where}: {what} is not a tenant list; tenants are {TENANT_SYNTAX} "
                                 f"separated by commas, or * for every tenant")
            if digest in seen:
                raise UsageError(f"{where}: the same key is already listed on line {seen[digest]}")
            seen[digest] = number
            keys.append(Key(digest, frozenset(names), number))
        return cls(keys, source=str(path))

    def lookup(self, presented: str | None) -> Key | None:
        """The stored key matching the key ``presented``, or None."""
        if not presented:
            return None
        digest = hash_key(presented)
        key = self._by_digest.get(digest)
        if key is not None and hmac.compare_digest(key.digest, digest):
            return key
        return None

    @staticmethod
    def append(path, tenants: str) -> str:
        """Make a new key for ``tenants`` (``a,b`` or ``*``), append its hash to ``path``; return the key."""
        names = [t.strip() for t in tenants.split(",") if t.strip()]
        if not names or (ALL in names and len(names) > 1) or any(t != ALL and not valid_tenant(t) for t in names):
            raise UsageError(f"--new-key takes tenant names separated by commas ({TENANT_SYNTAX}), "
                             f"or * for every tenant; got {tenants!r}")
        path = Path(path)
        head = ""
        if path.exists():
            KeyRing.load(path)  # never append to a file that would not load
            existing = path.read_bytes()
            if existing and not existing.endswith(b"\n"):
                head = "\n"
        else:
            head = "# cleo-rules service keys: sha256 of each key, then the tenants it may use (or *)\n"
        key = new_key()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(f"{head}{hash_key(key)}  {','.join(names)}\n")
        return key


def _signature(path: Path):
    """What tells a changed key file from the one read: its inode, size and times (None: it cannot be seen)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class KeyFile:
    """A key file and the keys last read from it, read again when it changes.

    ``ring`` is the :class:`KeyRing` in use: loading fails loudly at start
    (:class:`~cleo_rules.errors.UsageError`), but a file that stops loading
    later keeps the keys read before (the error is logged once per change).
    """

    def __init__(self, path):
        self.path = Path(path)
        self._seen = _signature(self.path)
        self.ring = KeyRing.load(self.path)
        self.reloads = 0
        self.failures = 0

    def refresh(self, *, force: bool = False) -> bool:
        """Read the file again if it changed since it was last looked at (or ``force``); whether new keys serve."""
        seen = _signature(self.path)
        if seen == self._seen and not force:
            return False
        self._seen = seen
        try:
            ring = KeyRing.load(self.path)
        except UsageError as exc:
            self.failures += 1
            log.error("the key file could not be read again; the %d key%s read before stay in use: %s",
                      len(self.ring), "" if len(self.ring) == 1 else "s", exc)
            return False
        self.ring = ring
        self.reloads += 1
        log.info("read the key file %s again: %d key%s", self.path, len(ring), "" if len(ring) == 1 else "s")
        return True
