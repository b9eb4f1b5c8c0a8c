"""The files a compiled pack was built from, each named from the pack it belongs to, not from where it lies.

The loader names a file as messages do (:func:`~cleo_rules.pack.load.display`):
relative to the working directory when it lies inside it, else by its whole
path, which for a pack installed with pip runs through ``site-packages``.
Where a reader is not to learn where the packs lie (the service's clients that
are not its operators, :meth:`cleo_rules.serve.service.Service.shows_paths`),
each file is named instead by the pack it belongs to and its place in that
pack's directory, as its manifest names it::

    <pack team>/corrections.yaml           the pack's own files (its manifest: <pack team>/pack.yaml)
    <base pack cleo-en>/follow_ups.yaml    those of a base of its composition (``extends:``)

A base named as another pack of the composition is told apart by its place
among the bases (``<base pack shared #2>``). The names say nothing of any
directory above a pack's own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..reading.load import MANIFEST, display

__all__ = ["PackFileName", "pack_file_names"]


@dataclass(frozen=True)
class PackFileName:
    """One file of a composed pack: ``display``, its name as the loader gives it (a rule's ``file``), ``name``,
    its name from its pack (``<pack team>/corrections.yaml``), ``pack`` the name of that pack and ``path``."""

    display: str
    name: str
    pack: str
    path: Path


def _label(name: str, taken: set[str], prefix: str, place: int) -> str:
    label = f"<{prefix} {name}>"
    if label in taken:
        label = f"<{prefix} {name} #{place}>"
    taken.add(label)
    return label


def _within(path: Path, root: Path) -> str:
    """``path`` as named from ``root``, the directory of its pack: its relative path there (links followed when
    the path as given does not lie inside), else its file name alone (never a name that climbs out)."""
    for inner, outer in ((path, root), (path.resolve(), root.resolve())):
        try:
            rel = os.path.relpath(inner, outer)
        except ValueError:  # another drive
            continue
        if not rel.startswith(".."):
            return Path(rel).as_posix()
    return path.name


def pack_file_names(pack) -> dict[str, PackFileName]:
    """Every file ``pack`` was built from (its manifest and rule files, and those of each of its bases), by its
    name as the loader gives it (``display``): each with its name from its own pack (see the module)."""
    taken: set[str] = set()
    layers = [(_label(pack.name, taken, "pack", 0), pack.name, pack.path, pack.manifest, pack.sources)]
    for place, base in enumerate(pack.composition.bases, 1):
        layers.append((_label(base.name, taken, "base pack", place), base.name, base.path, base.manifest,
                       base.sources))
    out: dict[str, PackFileName] = {}
    for label, name, where, manifest, sources in layers:
        root = Path(where)
        files = [(manifest.display, Path(manifest.path)) if manifest is not None
                 else (display(root / MANIFEST), root / MANIFEST)]
        files += [(src.display, Path(src.path)) for src in sources.values()]
        for shown, path in files:
            absolute = path if path.is_absolute() else Path.cwd() / path
            out.setdefault(shown, PackFileName(shown, f"{label}/{_within(absolute, root)}", name, absolute))
    return out
