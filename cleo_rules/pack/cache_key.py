"""The compiled-pack cache's key (:mod:`.cache`): a SHA-256 over everything a compile reads or runs.

That is :func:`inputs`, the bytes of the manifest and of every file it lists,
read under the loader's own bounds, and of the JSON Schemas; and
:func:`environment`, the cleo-rules code itself (every module of the package,
so a new version or an edited checkout recompiles) and the versions of Python,
``regex``, PyYAML and jsonschema; and the code of each rule family registered
from outside the package (:func:`~.snapshot.family_code`). Change one byte of
any of them and the key is another. Inputs are a list of ``(role, name,
digest)``: a pack built on another pack adds its base's files with a role of
their own. A pack whose inputs cannot be vouched for (a member missing,
unreadable, over the size bound or outside the pack) has no key: it is
compiled as usual and not cached. Every entry's key is made by
:func:`code_key`, a pack's by :func:`key`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import stat
import sys
from pathlib import Path

import regex
import yaml

from .. import families
from ..reading.load import MANIFEST, MAX_FILE_BYTES, MAX_FILES, LoadedFile, parse_yaml, resolve_member
from ..resources import package_dir, schemas_dir
from . import compose
from .snapshot import FORMAT, family_code

__all__ = ["code_key", "environment", "file_digest", "inputs", "key", "keyed"]

log = logging.getLogger("cleo_rules")


def _read(path: Path) -> bytes | None:
    """The bytes of a regular file within the loader's size bound, or None."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    return raw if len(raw) <= MAX_FILE_BYTES else None


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def file_digest(path: Path) -> str | None:
    """SHA-256 of a regular file within the loader's size bound (links followed), or None."""
    raw = _read(path)
    return None if raw is None else _digest(raw)


def inputs(pack_dir: Path, manifest_path: Path) -> list[tuple[str, str, str]] | None:
    """Every file a compile of this pack reads, as ``(role, name, sha256)``; None when one cannot be vouched for.

    The manifest's ``files`` are read from the very bytes digested, each
    member only if the loader would read it (inside the pack, a regular file,
    within the size bound); so are the manifest and files of every pack it is
    built on (:mod:`.compose`), with the role ``base``. Any doubt (a base that
    cannot be found, a range it is outside) is None, and the pack is compiled
    without the cache.
    """
    found = _inputs(pack_dir, manifest_path)
    return None if found is None else found[0]


def _members(pack_dir: Path, manifest_path: Path, role: str, prefix: str = ""
             ) -> tuple[list[tuple[str, str, str]], LoadedFile] | None:
    """The manifest of one pack and the files it lists, digested, and the manifest as read from those bytes."""
    raw = _read(manifest_path)
    if raw is None:
        return None
    try:
        manifest, _ = parse_yaml(raw.decode("utf-8"), manifest_path, str(manifest_path))
    except UnicodeDecodeError:
        return None
    if manifest is None or not isinstance(manifest.data, dict):
        return None
    names = manifest.data.get("files", [] if "extends" in manifest.data else None)
    if not isinstance(names, list) or len(names) > MAX_FILES or not all(isinstance(n, str) for n in names):
        return None
    found = [(role, prefix + manifest_path.name, _digest(raw))]
    for name in names:
        member = resolve_member(pack_dir, name)
        body = _read(member) if member is not None else None
        if body is None:
            return None
        found.append((role if role == "base" else "member", prefix + name, _digest(body)))
    return found, manifest


def _inputs(pack_dir: Path, manifest_path: Path) -> tuple[list[tuple[str, str, str]], list[Path]] | None:
    """:func:`inputs`, and the directories of the packs it is built on, in the order they apply."""
    own = _members(pack_dir, manifest_path, "manifest")
    if own is None:
        return None
    found, manifest = own
    base_dirs: list[Path] = []
    if "extends" in manifest.data:
        problems: list = []
        packs = compose.layers(pack_dir, manifest, problems)
        if problems:
            return None
        for i, layer in enumerate(packs[:-1]):
            base = _members(layer.path, layer.path / MANIFEST, "base", f"{i}:{layer.spec}:")
            if base is None:
                return None
            found += base[0]
            base_dirs.append(layer.path)
    for schema in sorted(schemas_dir().glob("*.json")):
        body = _read(schema)
        if body is None:
            return None
        found.append(("schema", schema.name, _digest(body)))
    return found, base_dirs


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """SHA-256 of every module of the cleo_rules package: its version, and any edit to a checkout."""
    h = hashlib.sha256()
    root = package_dir()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def _outside_code() -> list[list] | None:
    """``[kind, family_code]`` of each family registered from outside the package; None when one's code cannot be
    read."""
    found = []
    for family in families.outside():
        code = family_code(family)
        if code is None:
            log.info("the code of the rule family %r cannot be read; packs are compiled without the cache", family.kind)
            return None
        found.append([family.kind, code])
    return found


@functools.lru_cache(maxsize=None)
def _dist_version(dist: str, module: str) -> str:
    """The installed version of ``dist`` (whose top-level module is ``module``), without importing either."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        site = Path(spec.origin).parent.parent
        found = sorted(site.glob(f"{dist}-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len(dist) + 1:-len(".dist-info")]
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def environment() -> dict[str, str]:
    """What besides the pack's files decides a compile: the code and the libraries it runs on."""
    return {"format": str(FORMAT), "python": f"{sys.implementation.name} {sys.version}",
            "cleo-rules": _code_digest(), "regex": regex.__version__, "pyyaml": yaml.__version__,
            "jsonschema": _dist_version("jsonschema", "jsonschema")}


def key(pack_dir: Path, manifest_path: Path, *, more: list | None = None) -> str | None:
    """The cache key of the pack in ``pack_dir``; None when it cannot be cached (see :func:`inputs`).

    ``more`` adds inputs of an entry about the pack (the gate's: its corpus files).
    """
    found = keyed(pack_dir, manifest_path, more)
    return None if found is None else found[0]


def keyed(pack_dir: Path, manifest_path: Path, more: list | None = None) -> tuple[str, list[Path]] | None:
    """:func:`key`, and the directories of the packs the pack is built on."""
    found = _inputs(pack_dir, manifest_path)
    if found is None:
        return None
    wanted = code_key(found[0], *([more] if more is not None else []))
    return None if wanted is None else (wanted, found[1])


def code_key(*parts) -> str | None:
    """A SHA-256 over ``parts`` (plain data) and everything besides them that decides what the code makes of them:
    :func:`environment` and the code of each rule family registered from outside the package (:func:`_outside_code`);
    None when that code cannot be read. Every entry's key is one."""
    outside = _outside_code()
    if outside is None:
        return None
    text = json.dumps([environment(), *parts] + ([{"families": outside}] if outside else []), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()
