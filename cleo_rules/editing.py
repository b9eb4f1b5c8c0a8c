"""Editing a team's own rule pack: one file changed, the whole pack judged, written only if it passes.

What the playground's rule editor does (``cleo-rules playground --writable-pack``), as one call::

    from cleo_rules.editing import editable_files, edit_file

    files = editable_files("rules/")            # the manifest, the files it lists, the corpus's own files
    edit = edit_file("rules/", "rules/follow_ups.yaml", new_text, base=files[2].sha256)
    edit.written, [p.format() for p in edit.problems]

**Which files.** Those of the pack itself (:func:`editable_files`): its
manifest, each file its ``files:`` lists that lies inside the pack, and the
hand-written files at the top of its corpus (``corpus/regressions.yaml``).
Never a generated corpus file (``cleo-rules corpus build`` writes those), a
file of another pack, nor anything of a bundled or installed pack
(:func:`refuse_unwritable`, E240): the bundled ``cleo-en`` and every pack in
``site-packages`` are read-only here.

**Judged whole, before anything is written.** The pack's files and its corpus
are copied into a private temporary directory with the edit in place (its
bases are not: the copy is judged at home where the pack is,
:func:`~cleo_rules.pack.compose.judged_as`, so each base it names by a
relative path, and theirs, is the very directory the pack is built on), and
the copy is judged by the serving gate's own judgement
(:func:`cleo_rules.runtime.check_dir`: compile, lints, the version range
required, every example and the corpus). Its problems, placed at
``file:line:col`` in the copy, are placed back at the real files. Only a pack
with no error is written; warnings and notes (an open case to close) are
returned either way. A text over the size limit of every pack file
(:data:`~cleo_rules.reading.load.MAX_FILE_BYTES`, 1 MiB) is refused as the
loader refuses such a file (E114).

**Templates, slots and limits.** The generated corpus is built from them, so
an edit of one leaves it stale (E231) and is not written, unless it asks for
the corpus to be built again with it (``rebuild``): the copy's
``corpus/generated/`` is rebuilt from the edited pack as ``cleo-rules corpus
build`` would, judged with it, and the files it changed are written with the
edit.

**Written atomically.** The new text goes to a temporary file in the same
directory, which replaces the file in one rename (its mode kept), so the
runtime's watcher and every reader see the old file or the new one, never a
part. ``base``, the SHA-256 of the text the edit started from, guards
against overwriting a change made meanwhile in another editor: when the file
is another now, nothing is written (:class:`EditConflict`, E242). The gate's
verdict is remembered by content (:func:`cleo_rules.runtime.check_dir`), so the
pack written is accepted by a :class:`~cleo_rules.runtime.PackManager` at
once, without judging it again; and the pack judged is handed over with the
edit (:attr:`Edit.accepted`), which a manager serving the pack's directory
serves as it would load it from the files written, without compiling or
reading them again (:meth:`~cleo_rules.runtime.PackManager.adopt`). The
compiled-pack cache's entries made while an edit is judged are written once
the editing pauses (:func:`cleo_rules.pack.cache.written_later`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from .corpus.files import corpus_dir_of, corpus_files
from .errors import CleoError, Problem, UsageError
from .reading.load import MANIFEST, MAX_FILE_BYTES, display, load_yaml, resolve_member

if TYPE_CHECKING:
    from .runtime import CheckedPack

__all__ = ["Edit", "EditConflict", "PackFile", "edit_file", "editable_files", "read_file", "refuse_unwritable", "warm"]

log = logging.getLogger("cleo_rules")

_lock = threading.Lock()  # one edit at a time in a process: each judges the whole pack


class EditConflict(UsageError):
    """The file changed on disk since the edit began (its SHA-256 is not the ``base`` given); nothing was written."""

    code = "E242"


@dataclass(frozen=True)
class PackFile:
    """A file of a pack that can be edited: ``name`` as messages show it, ``path``, and its ``role``: ``manifest``,
    ``rules`` (a file the manifest lists) or ``corpus`` (a hand-written file at the top of the corpus)."""

    name: str
    path: Path
    role: str

    def to_dict(self) -> dict:
        raw = _bytes(self.path)
        return {"file": self.name, "role": self.role, "bytes": len(raw) if raw is not None else None,
                "sha256": _sha(raw) if raw is not None else None}


@dataclass(frozen=True)
class Edit:
    """What :func:`edit_file` did.

    ``file`` is the file as shown; ``written`` whether its new text is on
    disk; ``problems`` everything the judgement found, errors first, placed
    at the real files; ``sha256`` the SHA-256 of the file on disk now (the
    ``base`` of a next edit); ``pack`` the edited pack's name, version and
    content hash (None when it does not compile); ``rebuilt`` the generated
    corpus files written or removed with it (an edit with ``rebuild``);
    ``accepted`` the gate's acceptance of the pack as judged, when it was
    written (:meth:`cleo_rules.runtime.PackManager.adopt` serves it at once).
    """

    file: str
    written: bool
    problems: tuple[Problem, ...]
    sha256: str
    pack: dict | None = None
    rebuilt: tuple[str, ...] = ()
    accepted: CheckedPack | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def to_dict(self) -> dict:
        errors = len(self.errors())
        return {"file": self.file, "written": self.written, "ok": self.ok, "sha256": self.sha256, "pack": self.pack,
                "errors": errors, "problems": [p.to_dict() for p in self.problems], "rebuilt": list(self.rebuilt)}


def _bytes(path: Path) -> bytes | None:
    """The bytes of a regular file within the size bound, or None."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    return raw if len(raw) <= MAX_FILE_BYTES else None


def _sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


# -- which files -----------------------------------------------------------------------------------------------------


def refuse_unwritable(pack_dir) -> None:
    """Raise :class:`~cleo_rules.errors.UsageError` (E240) when ``pack_dir`` is the bundled pack or a pack installed
    in ``site-packages``: only a team's own pack is edited."""
    from .resources import in_installed_distribution, rules_dir

    where = Path(pack_dir).resolve()
    what = None
    if where == rules_dir().resolve():
        what = "the bundled pack cleo-en"
    elif in_installed_distribution(where):
        what = "a pack installed as a Python package (site-packages)"
    if what is not None:
        raise UsageError(f"{display(where)} is {what}; only a team's own pack can be edited, never a bundled or "
                         f"installed one: start one with `cleo-rules init` (or copy this one) and edit that",
                         code="E240")


def editable_files(pack_dir) -> list[PackFile]:
    """The files of the pack in ``pack_dir`` that :func:`edit_file` edits: the manifest, each file its ``files:``
    lists that lies inside the pack (links followed), and the hand-written files at the top of its corpus."""
    pack_dir = Path(pack_dir)
    manifest = pack_dir / MANIFEST
    out = [PackFile(display(manifest), manifest, "manifest")]
    src, _ = load_yaml(manifest)
    listed = src.data.get("files") if src is not None and isinstance(src.data, dict) else None
    for name in listed if isinstance(listed, list) else []:
        member = resolve_member(pack_dir, name) if isinstance(name, str) else None
        if member is not None and member.is_file() and all(f.path != member for f in out):
            out.append(PackFile(display(member), member, "rules"))
    corpus = corpus_dir_of(pack_dir)
    for path in corpus_files(corpus)[0]:
        if resolve_member(corpus, path.name) is not None and path.is_file():
            out.append(PackFile(display(path), path, "corpus"))
    return out


def _find(pack_dir: Path, name: str) -> PackFile:
    files = editable_files(pack_dir)
    for f in files:
        if name == f.name:
            return f
    shown = name if len(name) <= 200 else name[:200] + "..."
    raise UsageError(f"{shown!r} is not a file of pack {display(pack_dir)} that can be edited; its files: "
                     f"{', '.join(f.name for f in files)}", code="E241")


def read_file(pack_dir, name: str) -> tuple[str, str]:
    """``(text, sha256)`` of the editable file ``name`` (as :func:`editable_files` names it) of the pack."""
    pack_dir = Path(pack_dir)
    refuse_unwritable(pack_dir)
    found = _find(pack_dir, name)
    raw = _bytes(found.path)
    if raw is None:
        _unreadable(found)
    try:
        return raw.decode("utf-8"), _sha(raw)
    except UnicodeDecodeError:
        raise CleoError(f"cannot read file: {found.name} is not valid UTF-8", code="E108") from None


def _unreadable(found: PackFile) -> NoReturn:
    raise CleoError(f"cannot read file: {found.name} is not a regular file of at most {MAX_FILE_BYTES} bytes",
                    code="E108")


# -- the copy the edit is judged in ---------------------------------------------------------------------------------


def _mirror(real: Path, inside: Path, copy: Path) -> None:
    """Put the file ``real`` of directory ``inside`` at ``copy``: its content when it lies inside (links followed),
    else a link to where it leads, which the loader then refuses as it refuses the real one."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    if resolve_member(inside, os.path.relpath(real, inside)) is not None:
        if real.is_file():
            shutil.copyfile(real, copy)
        elif real.is_dir():  # the loader says what it says of a directory listed as a file
            copy.mkdir(exist_ok=True)
    elif os.path.lexists(real):
        os.symlink(os.path.realpath(real), copy)


def _stage(pack_dir: Path, target: PackFile, data: bytes, root: Path) -> tuple[Path, Path]:
    """Copy the pack (its manifest, the files the manifest as edited lists) and its corpus into ``root``, laid
    out as they are (the corpus beside the pack), with ``data`` as ``target``'s content; ``(pack, corpus)``. The
    bases are not copied: the copy is judged at home where the pack is (:func:`~cleo_rules.pack.compose.judged_as`),
    so each base it names by a relative path, and theirs, is the very directory the pack's is.
    """
    corpus = corpus_dir_of(pack_dir)
    staged_pack, staged_corpus = root / pack_dir.name, root / "corpus"
    staged_pack.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pack_dir / MANIFEST, staged_pack / MANIFEST)
    for path in (p for group in corpus_files(corpus) for p in group):
        _mirror(path, corpus, staged_corpus / path.relative_to(corpus))
    at = (staged_pack / os.path.relpath(target.path, pack_dir)) if target.role != "corpus" else \
        staged_corpus / os.path.relpath(target.path, corpus)
    at.parent.mkdir(parents=True, exist_ok=True)
    at.write_bytes(data)
    src, _ = load_yaml(staged_pack / MANIFEST)  # the manifest as edited says which files the pack has
    listed = src.data.get("files") if src is not None and isinstance(src.data, dict) else None
    for name in listed if isinstance(listed, list) else []:
        if not isinstance(name, str) or not name or "\x00" in name or os.path.isabs(name) or \
                ".." in Path(name).parts:
            continue  # refused by the loader for its name alone, in the copy as in the pack
        copy = staged_pack / name
        if copy.resolve() != at.resolve() and not os.path.lexists(copy):
            _mirror(pack_dir / name, pack_dir, copy)
    return staged_pack, staged_corpus


def _placed(p: Problem, moves: list[tuple[Path, Path]]) -> Problem:
    """``p`` with its file, and any path in its message and help, moved from the copy to the real files."""
    file = p.file
    if file:
        here = Path(os.path.normpath(Path.cwd() / file))
        for staged, real in moves:
            if here == staged or staged in here.parents:
                file = display(real / here.relative_to(staged))
                break
    message, help = p.message, p.help
    for staged, real in moves:
        for form in sorted({str(staged), display(staged)}, key=len, reverse=True):
            message, help = message.replace(form, display(real)), help.replace(form, display(real))
    return replace(p, file=file, message=message, help=help)


@dataclass
class _Judged:
    """What judging a copy found: ``problems`` placed at the real files, the edited ``pack``'s identity, and with a
    rebuild the generated corpus files to write (their real paths; None: to remove)."""

    problems: list[Problem]
    pack: dict | None
    generated: dict[Path, bytes | None]
    accepted: CheckedPack | None = None


def _schemas_beside(real_corpus: Path, staged_corpus: Path) -> None:
    """Copy the corpus schema where a generated file names it from (:func:`~cleo_rules.corpus.files.schema_ref`),
    so a file rebuilt in the copy names it as one built in the corpus would."""
    pairs = ((real_corpus / "generated", staged_corpus / "generated"), (real_corpus, staged_corpus),
             (real_corpus.parent, staged_corpus.parent))
    for real, staged in pairs:
        schema = real / "schemas" / "corpus.schema.json"
        if schema.is_file():
            (staged / "schemas").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(schema, staged / "schemas" / "corpus.schema.json")


def _rebuild(staged_pack: Path, staged_corpus: Path, real_corpus: Path) -> dict[Path, bytes | None]:
    """Rebuild the copy's generated corpus from the edited pack, as `cleo-rules corpus build` would: the files
    written (their bytes) and removed (None), by their real paths. Nothing when the pack does not compile (the
    judgement says why)."""
    from .corpus.build import build_corpus
    from .corpus.model import CorpusError
    from .errors import PackError
    from .pack.compile import compile_pack

    try:
        pack = compile_pack(staged_pack, check_examples=False)
    except PackError:
        return {}
    _schemas_beside(real_corpus, staged_corpus)
    try:
        built = build_corpus(pack, staged_corpus)
    except CorpusError:  # broken templates: the judgement places them
        return {}
    out: dict[Path, bytes | None] = {}
    for shown, gone in [(w, False) for w in built.written] + [(r, True) for r in built.removed]:
        staged = Path(os.path.normpath(Path.cwd() / shown))
        real = real_corpus / staged.relative_to(staged_corpus)
        out[real] = None if gone else staged.read_bytes()
    return out


def _judged(pack_dir: Path, target: PackFile, data: bytes, require, rebuild: bool) -> _Judged:
    """The gate's judgement of the pack with ``data`` as ``target`` (and, with ``rebuild``, its generated corpus
    built again from it): its problems (placed at the real files, errors first), the edited pack's identity (None
    when it does not compile) and the generated files rebuilt."""
    from .pack.cache import written_later
    from .pack.compose import judged_as
    from .runtime import check_for_adoption

    root = _root(pack_dir)
    try:
        staged_pack, staged_corpus = _stage(pack_dir, target, data, root)
        # the cache's entries are written once the editing pauses, off the request's path
        with judged_as(staged_pack, pack_dir), written_later():
            generated = _rebuild(staged_pack, staged_corpus, corpus_dir_of(pack_dir)) if rebuild else {}
            result, accepted = check_for_adoption(staged_pack, require=require)
        found = result.errors()  # what the gate refuses a pack for, as it says it
        if result.error is not None:
            found += [p for p in result.error.problems if p.severity != "error"]
        if result.verdict is not None:
            found += [p for p in result.verdict.problems if p.severity != "error"]
            report = result.verdict.corpus_report
            if report is not None:
                found += [p for p in report.problems if p.severity != "error"] + report.open_problems()
        # the pack's own files named as the pack is named (as the editor lists them), its corpus's as it is found
        moves = [(staged_pack, Path(os.path.abspath(pack_dir))), (staged_corpus, corpus_dir_of(pack_dir))]
        placed = [_placed(p, moves) for p in found]
        placed.sort(key=lambda p: (p.severity != "error", p.severity != "warning", p.rank))
        pack = result.pack
        identity = {"name": pack.name, "version": pack.version, "hash": pack.content_hash} if pack else None
        return _Judged(placed, identity, generated, accepted)
    finally:
        shutil.rmtree(root, ignore_errors=True)


_roots: dict[Path, Path] = {}  # each pack's private directory its copies are judged in, one copy at a time


def _root(pack_dir: Path) -> Path:
    """A new, empty private directory to judge a copy of the pack in: at the same path as the pack's last one
    when it can be made there again, so the copy's files are named alike from one edit to the next and what is
    remembered of each file by its text and name (:func:`~cleo_rules.reading.load.parse_yaml`, the corpus's files,
    its cases) serves again for the files the edit did not change. Called under the edit lock."""
    known = _roots.get(pack_dir.resolve())
    if known is not None:
        try:
            known.mkdir(mode=0o700)  # exclusively: a path someone else took meanwhile is not used
            return known
        except OSError:
            pass
    root = Path(os.path.realpath(tempfile.mkdtemp(prefix="cleo-rules-edit-")))
    _roots[pack_dir.resolve()] = root
    return root


# -- the edit ------------------------------------------------------------------------------------------------------


def _current(target: PackFile, base: str | None) -> bytes:
    """The file's bytes now; :class:`EditConflict` when they are not those ``base`` names."""
    raw = _bytes(target.path)
    if raw is None:
        _unreadable(target)
    if base is not None and _sha(raw) != base.strip().strip('"').lower():
        raise EditConflict(f"{target.name} changed on disk since the edit began (it is {_sha(raw)[:12]} now, not "
                           f"{base.strip()[:12]}); nothing was written")
    return raw


def _write(path: Path, data: bytes) -> None:
    """Replace ``path`` (a link: the file it leads to) with ``data`` in one rename, its mode kept (a new file, a
    generated corpus file a rebuild adds, is made readable by all and writable by its owner)."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def edit_file(pack_dir, name: str, text: str, *, base: str | None = None, require=None, write: bool = True,
              rebuild: bool = False) -> Edit:
    """Judge the pack in ``pack_dir`` with ``text`` as its file ``name``; write ``text`` only if the pack passes.

    ``name`` is one of :func:`editable_files` (by its ``name``); ``base`` the
    SHA-256 of the text the edit started from, checked before judging and
    again just before writing (:class:`EditConflict`); ``require`` the
    version range the pack must satisfy (as the runtime requires it);
    ``write=False`` judges only. ``rebuild`` builds the generated corpus
    again from the edited pack, as ``cleo-rules corpus build`` would, judges
    the pack with it and writes the files it changed with the edit (for an
    edit of templates, slots or limits, which leaves the corpus stale:
    E231). Raises :class:`~cleo_rules.errors.UsageError` for a bundled or
    installed pack (E240) and for a file that is not one of the pack's own
    (E241); a text over the size limit is an :class:`Edit` with its E114
    error, nothing written.
    """
    pack_dir = Path(pack_dir)
    refuse_unwritable(pack_dir)
    target = _find(pack_dir, name)
    data = text.encode("utf-8")
    with _lock:
        now = _current(target, base)
        if len(data) > MAX_FILE_BYTES:
            big = Problem("E114", f"file is {len(data)} bytes, over the limit of {MAX_FILE_BYTES}", target.name,
                          line=1, col=1, rank=1, help="split the file or trim it: every pack and corpus file is held "
                                                      "to 1 MiB")
            return Edit(target.name, False, (big,), _sha(now))
        judged = _judged(pack_dir, target, data, require, rebuild)
        edit = Edit(target.name, False, tuple(judged.problems), _sha(now), judged.pack)
        if not edit.ok or not write or (data == now and not judged.generated):
            return edit
        _current(target, base if base is not None else _sha(now))  # nothing changed it while it was judged
        for path, body in judged.generated.items():  # the corpus first: the edit then finds it up to date
            if body is None:
                path.unlink(missing_ok=True)
            else:
                _write(path, body)
        if data != now:
            _write(target.path, data)
        return replace(edit, written=True, sha256=_sha(data), rebuilt=tuple(display(p) for p in judged.generated),
                       accepted=judged.accepted)


def warm(pack_dir, *, require=None) -> None:
    """Judge the pack in ``pack_dir`` as it is, as an edit would, writing nothing: what the process then memoizes
    (:mod:`cleo_rules.incremental`) holds the pack, so that its first edit is judged as quickly as the next ones
    (``cleo-rules playground --writable-pack`` does it in the background once the pack serves; an edit made
    meanwhile waits for it). Never raises: a pack that cannot be judged is judged by its first edit instead."""
    try:
        pack_dir = Path(pack_dir)
        refuse_unwritable(pack_dir)
        target = editable_files(pack_dir)[0]  # the manifest, as it is
        with _lock:
            raw = _bytes(target.path)
            if raw is not None:
                _judged(pack_dir, target, raw, require, False)
    except Exception as exc:  # noqa: BLE001 - a head start only; the edits judge the pack whatever happens here
        log.debug("pack %s not judged ahead of its edits: %s: %s", pack_dir, type(exc).__name__, exc)
