"""Packs built on other packs: a manifest's ``extends:`` and ``disable:``.

A team that wants one more correction does not copy ``cleo-en``; it writes a
small pack that names it::

    pack: acme
    version: 0.1.0
    locale: en
    extends: [cleo-en]               # or {pack: cleo-en, version: ">=1.0,<2"}, or cleo-en@^1.0
    disable: [correction.change-of-mind]
    settings: {max_follow_up_words: 10}
    files: [corrections.yaml]

Each base is the bundled pack (``cleo-en``), an installed pack by name (see
:mod:`.sources`) or a directory relative to the manifest (``./base``,
``../shared/rules``: from the pack's real directory, links followed,
:func:`base_dir`), each with an optional version range. A base may build
on others in turn. The packs are applied in order, a base's own bases before
it and the pack itself last (:func:`layers`): each one's ``settings`` and
``context`` override the earlier ones' key by key, its files add their rules,
and a rule whose id an earlier pack already has replaces that rule, in its
place; ``disable`` turns rules of the packs before it (or its own) off
(:func:`plan`). Two bases that share an id: the later one wins. A base named
twice (two bases built on one) is applied once, where it first comes.

What cannot be composed is a located problem at the ``extends:`` or
``disable:`` item of the manifest that says it: a base that cannot be found
(E150, with the nearest installed pack or directory), a base outside the
version range asked (E151, with a range that holds it), a cycle (E152, naming
every pack on it), a ``disable`` id that no rule of the packs so far has
(E153, with the nearest id), a version range that cannot be read (E154), a
base whose manifest cannot be read (E155) and more than :data:`MAX_PACKS`
packs in all (E156).
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PackNotFound, Problem
from ..reading.load import MANIFEST, LoadedFile, display, load_yaml, pointer_join
from ..resources import rules_dir
from .model import LeftOut
from .discovery import Version, VersionRange, VersionRangeError, available_packs, resolve_name

__all__ = ["BUNDLED_PACK", "MAX_PACKS", "Declared", "Layer", "Plan", "Ref", "base_dir", "base_dirs", "directory_bases",
           "home_of", "judged_as", "layers", "plan", "read_refs"]

#: the bundled pack's name, as ``extends:`` names it
BUNDLED_PACK = "cleo-en"
#: packs in one composition, the pack itself included
MAX_PACKS = 16


@dataclass(frozen=True)
class Declared:
    """A manifest's composition keys, each default the one its JSON Schema states (``schemas/pack.schema.json``;
    a test holds the two equal): the packs it ``extends`` and the rule ids it turns off (``disable``)."""

    extends: tuple = ()
    disable: tuple = ()


@dataclass(frozen=True)
class Ref:
    """One ``extends:`` item as written: the pack (``spec``), the range asked (None: any version), and where the
    item and its range are in the manifest (JSON pointers)."""

    spec: str
    range: VersionRange | None
    pointer: str
    range_pointer: str


@dataclass(frozen=True)
class Layer:
    """One pack of a composition: its name, version and directory, its manifest as loaded, how the manifest that
    extends it named it (``spec``, empty for the pack itself) and what it is (``origin``: ``bundled``,
    ``installed``, ``directory``, or empty for the pack itself); ``sub`` the indices, among the composition's
    layers, of the packs it is built on itself, in the order they apply."""

    name: str
    version: str
    path: Path
    manifest: LoadedFile
    spec: str = ""
    origin: str = ""
    sub: tuple[int, ...] = ()

    def disable(self) -> list[tuple[str, str]]:
        """``(rule id, pointer)`` of each ``disable:`` item that is a string."""
        data = self.manifest.data if isinstance(self.manifest.data, dict) else {}
        given: Any = data.get("disable", Declared.disable)
        return [(rid, pointer_join("/disable", i)) for i, rid in enumerate(given)
                if isinstance(rid, str) and rid] if isinstance(given, (list, tuple)) else []


def path_like(spec: str) -> bool:
    """Whether ``extends`` names the pack ``spec`` by a path (else by its name)."""
    return "/" in spec or os.sep in spec or spec.startswith(".") or spec.endswith((".yaml", ".yml"))


def read_refs(manifest: LoadedFile, problems: list[Problem] | None = None) -> list[Ref]:
    """The ``extends:`` items of ``manifest`` that name a pack; a range that cannot be read is an E154 (added to
    ``problems``) and its item left out. Items of the wrong shape are the schema's findings."""
    data = manifest.data if isinstance(manifest.data, dict) else {}
    given: Any = data.get("extends", Declared.extends)
    out = []
    for i, item in enumerate(given if isinstance(given, (list, tuple)) else ()):
        ptr = pointer_join("/extends", i)
        spec: str | None = None
        text: str | None = None
        range_ptr = ptr
        if isinstance(item, str) and item.strip():
            spec = item.strip()
            if "@" in spec and not path_like(spec):
                name, _, after = spec.partition("@")
                spec, text = name.strip(), after.strip()
        elif isinstance(item, dict) and isinstance(item.get("pack"), str) and item["pack"].strip():
            spec, range_ptr = item["pack"].strip(), pointer_join(ptr, "version")
            given_range = item.get("version")  # an empty one is the schema's finding
            text = given_range if isinstance(given_range, str) and given_range.strip() else None
        if not spec:
            continue
        wanted = None
        if text is not None:
            try:
                wanted = VersionRange.parse(text)
            except VersionRangeError as exc:
                if problems is not None:
                    problems.append(manifest.problem("E154", f"{spec}: {exc}", range_ptr, rank=1,
                                                     help="write a range such as >=1.0,<2, ^1.2, ~1.2.3 or 1.x"))
                continue
        out.append(Ref(spec, wanted, ptr, range_ptr))
    return out


def _installed_names() -> list[str]:
    return sorted({p.name for p in available_packs() if not p.error} | {BUNDLED_PACK})


def _suggest(spec: str, here: Path) -> str:
    """Did-you-mean help for a base that cannot be found: the nearest installed pack, or a directory."""
    if not path_like(spec) and (home_of(here) / spec / MANIFEST).is_file():
        return f"did you mean ./{spec}? a directory is named by a path (./{spec}); a bare word names an installed pack"
    names = _installed_names()
    close = difflib.get_close_matches(os.path.basename(spec.rstrip("/")), names, n=1, cutoff=0.6)
    guess = f"did you mean {close[0]!r}? " if close else ""
    return (f"{guess}installed packs: {', '.join(names)}; a directory is named by a path relative to the manifest "
            f"(./base)")


# -- where a base named by a path is ----------------------------------------------------------------------------

_stand_ins: dict[str, Path] = {}  # a private copy of a pack being judged (its real path) -> the pack's real directory


def home_of(pack_dir) -> Path:
    """The real directory of the pack in ``pack_dir``: the path with every link followed, as the kernel follows
    them (a ``..`` after a link leads up from where the link leads). A private copy of a pack made to judge an
    edit (:func:`judged_as`) is at home where the pack is. Bases named by a relative path are read from here,
    and a pack is one pack of a composition (a cycle) by it."""
    real = os.path.realpath(pack_dir)
    return _stand_ins.get(real) or Path(real)


def base_dir(spec: str, here) -> Path:
    """The directory ``extends: [spec]`` (a path: :func:`path_like`) names from the manifest of the pack in
    ``here``: relative to the pack's real directory (:func:`home_of`), every link followed; a path to a
    ``pack.yaml`` names its directory. The one resolution of a base by its path: composing, the watcher's list
    of directories, the cache's key and the judging of an edit all go through it, so the base a pack is checked
    with is the base it is served with, however the pack's directory is named."""
    path = Path(spec) if os.path.isabs(spec) else home_of(here) / spec
    if path.name == MANIFEST and not path.is_dir():
        path = path.parent
    return Path(os.path.realpath(path))


@contextlib.contextmanager
def judged_as(copy, pack_dir) -> Iterator[None]:
    """Within it, the pack in the directory ``copy`` (a private copy of the pack in ``pack_dir``, as an edit is
    judged in) is at home in ``pack_dir``: its bases named by a relative path are the very directories the pack's
    are, and a base that names the pack closes a cycle on the copy."""
    key = os.path.realpath(copy)
    _stand_ins[key] = home_of(pack_dir)
    try:
        yield
    finally:
        _stand_ins.pop(key, None)


def locate(spec: str, here: Path) -> tuple[Path, str]:
    """``(directory, origin)`` of the pack ``spec`` names from a manifest in ``here``; :class:`PackNotFound`."""
    if path_like(spec):
        path = base_dir(spec, here)
        if not (path / MANIFEST).is_file():
            raise PackNotFound(f"no rule pack at {display(path)}: {MANIFEST} not found")
        return path, "directory"
    if spec == BUNDLED_PACK:
        return rules_dir(), "bundled"
    return resolve_name(spec), "installed"


def _range_hint(version: str) -> str:
    try:
        v = Version.parse(version)
    except VersionRangeError:
        return "use a base whose version is semver"
    return (f"did you mean '^{v.major}.{v.minor}'? the base is {version}; ask for a range that holds it, or install "
            f"a version in the range")


class _Walk:
    """Every pack of one composition, bases first (depth first, in the order named), each once."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        self.layers: list[Layer] = []
        self.index: dict[Path, int] = {}

    def root(self, path: Path, manifest: LoadedFile) -> Layer:
        return self.layers[self.visit(path, manifest, "", "", [])]

    def visit(self, path: Path, manifest: LoadedFile, spec: str, origin: str, stack: list[tuple[Path, str]]) -> int:
        data = manifest.data if isinstance(manifest.data, dict) else {}
        given = data.get("pack")
        name = given if isinstance(given, str) else "?"
        real = home_of(path)
        stack = [*stack, (real, name)]
        sub: list[int] = []
        for ref in read_refs(manifest, self.problems):
            found = self._base(ref, path, manifest, stack)
            if found is not None:
                sub += [j for j in (*self.layers[found].sub, found) if j not in sub]
        version = data.get("version")
        self.layers.append(Layer(name, version if isinstance(version, str) else "", path, manifest, spec, origin,
                                 tuple(sub)))
        self.index[real] = len(self.layers) - 1
        return len(self.layers) - 1

    def _base(self, ref: Ref, here: Path, manifest: LoadedFile, stack: list[tuple[Path, str]]) -> int | None:
        """The index of the layer ``ref`` names, walked if new; None (with its problem) when it cannot be used."""
        try:
            path, origin = locate(ref.spec, here)
        except PackNotFound as exc:
            self.problems.append(manifest.problem("E150", f"extends {ref.spec!r}: {exc}", ref.pointer, rank=1,
                                                  help=_suggest(ref.spec, here)))
            return None
        real = home_of(path)
        on_stack = [r for r, _ in stack]
        if real in on_stack:
            cycle = [n for _, n in stack[on_stack.index(real):]] + [stack[on_stack.index(real)][1]]
            self.problems.append(manifest.problem("E152", f"extends {ref.spec!r} makes a cycle: {' -> '.join(cycle)}",
                                                  ref.pointer, rank=1,
                                                  help="a pack cannot be built on itself; remove one of the extends"))
            return None
        known = self.index.get(real)
        if known is None:
            if len(self.layers) + len(stack) >= MAX_PACKS:
                self.problems.append(manifest.problem("E156", f"extends {ref.spec!r}: the composition would hold more "
                                                              f"than {MAX_PACKS} packs", ref.pointer, rank=1,
                                                      help="build on fewer packs"))
                return None
            base, found = load_yaml(path / MANIFEST, display(path / MANIFEST))
            if base is None or not isinstance(base.data, dict):
                self.problems += found
                self.problems.append(manifest.problem("E155", f"extends {ref.spec!r}: the manifest of the pack at "
                                                              f"{display(path)} cannot be read", ref.pointer, rank=1,
                                                      help="fix the base's pack.yaml (its problem is listed too)"))
                return None
        else:
            base = self.layers[known].manifest
        version = base.data.get("version") if isinstance(base.data, dict) else None
        if ref.range is not None and not _holds(ref.range, version):
            self.problems.append(manifest.problem(
                "E151", f"extends {ref.spec!r}: {base.data.get('pack', '?')} {version} is outside the range "
                        f"{ref.range} asked for", ref.range_pointer, rank=1, help=_range_hint(str(version))))
            return None
        return known if known is not None else self.visit(path, base, ref.spec, origin, stack)


def _holds(wanted: VersionRange, version) -> bool:
    try:
        return isinstance(version, str) and wanted.contains(version)
    except VersionRangeError:
        return False


def layers(pack_dir: Path, manifest: LoadedFile, problems: list[Problem]) -> list[Layer]:
    """Every pack of the composition of the pack in ``pack_dir`` (its ``manifest`` as loaded), in the order they
    apply: its bases (each one's own bases first), then the pack itself, last. A pack that extends nothing is the
    one layer. A base that cannot be used is left out, its problem added to ``problems``."""
    walk = _Walk(problems)
    walk.root(Path(pack_dir), manifest)
    return walk.layers  # each after its own bases (``sub`` counts in this list), the pack itself last


def base_dirs(pack_dir: Path) -> list[Layer]:
    """The bases of the pack in ``pack_dir``, as far as they can be found (nothing raised, no problem kept): for
    naming their directories in messages."""
    src, _ = load_yaml(Path(pack_dir) / MANIFEST, display(Path(pack_dir) / MANIFEST))
    return layers(Path(pack_dir), src, [])[:-1] if src is not None and isinstance(src.data, dict) else []


def directory_bases(pack_dir: Path, limit: int = MAX_PACKS) -> list[Path]:
    """The directories the pack in ``pack_dir`` is built on, by paths in its ``extends:`` and theirs (installed
    packs are not followed): what a watcher of the pack watches besides it. Cheap, and never raises."""
    out: list[Path] = []
    todo, seen = [Path(pack_dir)], {home_of(pack_dir)}
    while todo and len(out) < limit:
        here = todo.pop(0)
        src, _ = load_yaml(here / MANIFEST)
        if src is None:
            continue
        for ref in read_refs(src):
            if not path_like(ref.spec):
                continue
            try:
                path, _ = locate(ref.spec, here)
            except (PackNotFound, OSError):
                continue
            if path not in seen:
                seen.add(path)
                out.append(path)
                todo.append(path)
    return out


# -- which rules are built ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Which rule of which layer is built: ``keep(layer)`` says it of an id, ``slot`` places a rule (a
    replacement takes the place of the rule it replaces), ``disabled`` and ``replaced`` are the rules left out."""

    owner: dict
    disabled_by: dict
    slot: dict
    disabled: dict
    replaced: dict

    def keep(self, layer: int) -> Callable[[str | None], bool]:
        def kept(rule_id: str | None) -> bool:
            if rule_id is None:
                return True
            if self.owner.get(rule_id, layer) != layer:
                return False  # a later pack defines it again
            by = self.disabled_by.get(rule_id)
            return by is None or by < layer

        return kept


def _ids(src: LoadedFile, family) -> list[str]:
    items = src.data.get(family.items) if family.items is not None and isinstance(src.data, dict) else None
    return [item["id"] for item in items if isinstance(item, dict) and isinstance(item.get("id"), str)] \
        if isinstance(items, list) else []


def plan(packs: Sequence[Layer], files: Sequence[Sequence[tuple]], problems: list[Problem]) -> Plan:
    """What the composition of ``packs`` (:func:`layers`) builds from ``files`` (each layer's ``(name, file,
    family)``): the last pack to define an id wins, in the first one's place, and ``disable`` takes ids off; a
    ``disable`` id no pack so far defines is an E153 (added to ``problems``, with the nearest id)."""
    owner: dict[str, int] = {}
    slot: dict[str, int] = {}
    definers: dict[str, list[int]] = {}
    for li, layer_files in enumerate(files):
        for _, src, family in layer_files:
            for rid in _ids(src, family):
                slot.setdefault(rid, len(slot))
                owner[rid] = li
                definers.setdefault(rid, []).append(li)
    disabled_by: dict[str, int] = {}
    for li, layer in enumerate(packs):
        for rid, ptr in layer.disable():
            if not any(d <= li for d in definers.get(rid, ())):
                known = [r for r, ds in definers.items() if any(d <= li for d in ds)]
                close = difflib.get_close_matches(rid, known, n=1, cutoff=0.6)
                names = ", ".join(dict.fromkeys(p.name for p in packs[:li + 1]))
                problems.append(layer.manifest.problem(
                    "E153", f"disable names {rid!r}, which no rule of {names} has", ptr, rank=1,
                    help=(f"did you mean {close[0]!r}? " if close else "") + "name a rule by its id "
                         "(`cleo-rules explain` and `check` show the ids)"))
                continue
            disabled_by[rid] = max(li, disabled_by.get(rid, li))
    disabled, replaced = {}, {}
    for rid, ls in definers.items():
        by = disabled_by.get(rid)
        if by is not None and by >= owner[rid]:
            last = max(d for d in ls if d <= by)
            disabled[rid] = LeftOut(rid, packs[by].name, packs[last].name)
        elif len(set(ls)) > 1:
            replaced[rid] = LeftOut(rid, packs[owner[rid]].name, packs[ls[0]].name)
    return Plan(owner, disabled_by, slot, disabled, replaced)
