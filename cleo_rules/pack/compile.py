"""Compile a pack directory into an immutable :class:`~cleo_rules.pack.model.Pack`.

Stages: read the manifest and files (:mod:`.load`), validate each against its
JSON Schema and lint it (:mod:`.validate`, :mod:`.backtracking`), build the
rules and the :class:`~cleo_rules.matcher.Matcher` (:mod:`.model`), then check
every example, counterexample and request form against the compiled pack
(:mod:`.examples`). All problems are collected; any error raises
:class:`~cleo_rules.errors.PackError` with the most useful one first. The
pack keeps the files it was built from, with positions, and each rule its
pointer, so later stages place their findings without reading a file again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import MappingProxyType

from .. import families
from ..errors import PackError, PackNotFound, Problem
from ..reading.load import MANIFEST, MAX_FILES, LoadedFile, display, load_yaml, pointer_join, resolve_member
from ..resources import rules_dir
from . import cache, compose
from .examples import find_example_problems
from .model import DEFAULT_CONTEXT, NOTHING, Base, Composition, Pack, PackSettings, name_packs
from .discovery import check_pack_version, resolve_pack
from .templates import lint_combine, lint_context

__all__ = ["compile_pack", "compile_with_examples", "load_pack"]


def _find_manifest(path) -> tuple[Path, Path]:
    p = Path(path) if path is not None else rules_dir()
    if p.is_dir():
        manifest = p / MANIFEST
    else:
        manifest, p = p, p.parent
    if not manifest.is_file():
        where = Path(path) if path is not None else p
        raise PackNotFound(f"no rule pack at {display(where)}: {MANIFEST} not found")
    if resolve_member(p, MANIFEST) is None:  # a link out of the pack: never read, never echoed
        raise PackError([Problem("E106", f"{MANIFEST} is a link to a file outside the pack directory",
                                 display(manifest), line=1, col=1, rank=0,
                                 help="put the manifest itself in the pack directory, or name the directory "
                                      "it lives in")], pack=display(p))
    return p, manifest


def _short(name) -> str:
    """A file name as a message shows it: at most 80 characters."""
    text = repr(name)
    return text if len(text) <= 80 else f"{text[:60]}...{text[-16:]} ({len(str(name))} characters)"


def compile_pack(path=None, *, check_examples: bool = True) -> Pack:
    """Load, validate, lint and compile the pack at ``path`` (default: bundled).

    With ``check_examples`` (the default) every example, counterexample and
    request form must do what it says, or :class:`PackError` is raised.
    """
    pack = _compile_cached(path)
    if check_examples:
        problems = find_example_problems(pack)
        if any(p.severity == "error" for p in problems):
            raise PackError(problems, pack=display(Path(pack.path)))
    return pack


def compile_with_examples(path=None) -> tuple[Pack, list[Problem]]:
    """Compile the pack at ``path`` and check its examples without refusing it for them.

    Returns ``(pack, problems)``: ``problems`` are the examples,
    counterexamples and request forms that fail (placed at ``file:line:col``),
    for commands that still work on such a pack (``explain``, ``classify``)
    and say what fails. Any other problem raises :class:`PackError` as
    :func:`compile_pack` does.
    """
    pack = _compile_cached(path)
    return pack, find_example_problems(pack)


def _compile_cached(path) -> Pack:
    """:func:`_compile`, or the same pack read back from the compiled-pack cache (:mod:`.cache`) when nothing
    it is made of has changed (the code of a rule family registered from outside the package included)."""
    pack_dir, manifest_path = _find_manifest(path)
    return cache.compiled(pack_dir, manifest_path, lambda: _compile(path))


def _compile(path) -> Pack:
    """The compiled pack, which keeps its files; raises on every problem but failing examples.

    The manifest is read and checked, and the packs it is built on
    (:mod:`.compose`: each base's manifest and files, in the order they
    apply); then every file each pack lists, each by the rule family its
    ``kind:`` names (:mod:`cleo_rules.families`), leaving out the rules a
    later pack disables or replaces; then each family, in the registry's
    order, finishes its rules.
    """
    pack_dir, manifest_path = _find_manifest(path)
    problems: list[Problem] = []
    manifest, found = load_yaml(manifest_path, display(manifest_path))
    if manifest is None:
        raise PackError(found, pack=display(pack_dir), read=(None, {}))
    packs = compose.layers(pack_dir, manifest, problems)
    raw_settings: dict = {}
    context = dict(DEFAULT_CONTEXT)
    for layer in packs:  # each pack's settings and templates over the ones before it, key by key
        given, templates = _read_manifest(layer.manifest, problems)
        raw_settings.update(given)
        context.update(templates)
    settings = PackSettings(**raw_settings)
    own: dict[str, LoadedFile | None] = {}  # the pack's own files as read, for a PackError to keep
    files = [_read_files(layer.path, layer.manifest, problems, own if li == len(packs) - 1 else None)
             for li, layer in enumerate(packs)]
    chosen = compose.plan(packs, files, problems)
    build = families.Build(problems)
    for li, layer_files in enumerate(files):
        keep = chosen.keep(li) if len(packs) > 1 else None
        for _, src, family in layer_files:
            family.read_file(src, build, keep)
    if len(packs) > 1:  # a rule that replaces another takes its place
        for built in build.rules.values():
            built.sort(key=lambda rule: chosen.slot.get(rule.id, len(chosen.slot)))
    rules = {f.kind: f.finish(build.rules.get(f.kind, []), build) for f in families.registered()
             if f.items is not None and (f in families.BUILTIN or f.kind in build.rules)}
    shown = {src.display: layer.name for layer, layer_files in zip(packs, files) for _, src, _ in layer_files}
    shown.update((layer.manifest.display, layer.name) for layer in packs)
    if any(p.severity == "error" for p in problems):
        raise PackError(name_packs(problems, shown) if len(packs) > 1 else problems, pack=display(pack_dir),
                        read=(manifest, own))
    mdata = manifest.data if isinstance(manifest.data, dict) else {}
    hashes = [_digest(packs, files, layer) for layer in range(len(packs))]
    composition = Composition(
        tuple(Base(layer.name, layer.version, hashes[i], layer.path, layer.spec, layer.origin, layer.manifest,
                   MappingProxyType({name: src for name, src, _ in files[i]}))
              for i, layer in enumerate(packs[:-1])),
        MappingProxyType(chosen.disabled), MappingProxyType(chosen.replaced)) if len(packs) > 1 else NOTHING
    data = build.data
    return Pack(name=mdata.get("pack", "?"), version=mdata.get("version", "0.0.0"), locale=mdata.get("locale", ""),
                description=mdata.get("description", ""), path=pack_dir, content_hash=hashes[-1], settings=settings,
                family_rules=rules, context=MappingProxyType(context),
                slots=MappingProxyType(data.get("slots", {})), slots_seed=data.get("slots_seed", 0),
                lexicon=MappingProxyType(data.get("lexicon", {})),
                referent_words=MappingProxyType(data.get("referent_words", {})), manifest=manifest,
                sources=MappingProxyType({name: src for name, src, _ in files[-1]}), composition=composition)


def _digest(packs, files, index: int) -> str:
    """The content hash of the pack ``packs[index]`` with the packs it is built on: of its manifest and files
    alone when it extends nothing (as it always was), else of each of its packs' in the order they apply."""
    def one(i: int) -> list:
        return [packs[i].manifest.data] + [s.data for _, s, _ in files[i]]

    sub = packs[index].sub
    parts = one(index) if not sub else [one(i) for i in (*sub, index)]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False,
                                     default=str).encode()).hexdigest()[:16]


def _read_manifest(manifest: LoadedFile, problems: list[Problem]) -> tuple[dict, dict]:
    """The settings a manifest gives and its context templates, its problems added (schema, templates)."""
    from ..reading.validate import find_schema_problems

    problems += find_schema_problems(manifest, "pack")
    mdata = manifest.data if isinstance(manifest.data, dict) else {}
    given_settings = mdata.get("settings")
    raw_settings = given_settings if isinstance(given_settings, dict) else {}
    given = {k: v for k, v in raw_settings.items() if k in PackSettings.__dataclass_fields__}
    if isinstance(given.get("combine"), str):
        problems += lint_combine(manifest, given["combine"])
    if isinstance(given.get("combine_resolved"), str):
        problems += lint_combine(manifest, given["combine_resolved"], "combine_resolved", ("referent", "message"))
    if isinstance(given.get("combine_correction"), str):
        problems += lint_combine(manifest, given["combine_correction"], "combine_correction", ())
    given_context = mdata.get("context")
    problems += lint_context(manifest, given_context)
    context = {k: v for k, v in given_context.items() if isinstance(v, str)} if isinstance(given_context, dict) else {}
    return given, context


def _read_files(pack_dir: Path, manifest: LoadedFile, problems: list[Problem],
                read: dict[str, LoadedFile | None] | None = None) -> list[tuple[str, LoadedFile, families.Family]]:
    """Every file the manifest lists, loaded and checked against its family's schema: ``(name in the manifest,
    file, family)``; a file that cannot be read, or of no known kind, is left out with its problem. ``read``,
    when given, gets each file loaded (None for one that could not be read) by its name in the manifest."""
    from ..reading.validate import find_schema_problems

    mdata = manifest.data if isinstance(manifest.data, dict) else {}
    given_files = mdata.get("files")
    names = given_files if isinstance(given_files, list) else []
    if len(names) > MAX_FILES:
        problems.append(manifest.problem("E118", f"{len(names)} files listed, at most {MAX_FILES}", "/files",
                                         rank=1, help="merge rule files"))
        names = names[:MAX_FILES]
    files = []
    for i, name in enumerate(names):
        member = _member(pack_dir, manifest, pointer_join("/files", i), name, problems)
        if member is None:
            continue
        src, found = load_yaml(member, display(member))
        if read is not None:
            read[name] = src
        if src is None:
            problems += found
            continue
        family, found = families.family_of_file(src)
        problems += found
        if family is None:
            continue
        problems += find_schema_problems(src, family.schema_source)
        files.append((name, src, family))
    return files


def _member(pack_dir: Path, manifest: LoadedFile, ptr: str, name, problems: list[Problem]) -> Path | None:
    """The path of the file ``name`` the manifest lists at ``ptr``, when it is a file inside the pack."""
    member = resolve_member(pack_dir, name) if isinstance(name, str) else None
    if member is None:
        problems.append(manifest.problem("E119", f"file {_short(name)} is outside the pack directory", ptr, rank=1,
                                         help="list files by a path inside the pack, without '..' or a leading '/'"))
        return None
    try:
        is_file = member.is_file()
    except OSError as exc:  # a name too long for the file system, a loop of links
        problems.append(manifest.problem("E108", f"cannot read file: {exc.strerror or exc} ({_short(name)})", ptr,
                                         rank=1, help="name a file the file system can open"))
        return None
    if not is_file:
        problems.append(manifest.problem("E115", f"file {_short(name)} not found in {display(pack_dir)}", ptr,
                                         rank=1, help="create the file or remove it from the files list"))
        return None
    return member


def load_pack(path=None, *, check_examples: bool = True, require=None) -> Pack:
    """Load the pack at ``path`` (a directory or its ``pack.yaml``); the bundled pack by default.

    ``path`` may also be the name of an installed pack (entry point group
    ``cleo_rules.packs``, see :mod:`.sources`). ``require``, a version range
    such as ``">=1.0,<2"`` or ``"^1.2"``, refuses a pack outside it.

    Raises :class:`~cleo_rules.errors.PackError` listing every problem,
    best first, :class:`~cleo_rules.errors.PackVersionError` for a version
    outside ``require``, or :class:`~cleo_rules.errors.PackNotFound`.
    """
    pack = compile_pack(resolve_pack(path), check_examples=check_examples)
    check_pack_version(pack, require)
    return pack
