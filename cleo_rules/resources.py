"""Where the bundled rule pack, its schemas, its corpus and the sample data live.

The repository keeps the pack (``rules/``), the schemas (``schemas/``) and the
corpus (``corpus/``) at its top, where they are edited. The wheel maps them into
the package as ``cleo_rules/_data/rules``, ``_data/schemas`` and ``_data/corpus``
(the build backend's own configuration, see pyproject.toml);
an editable install of a checkout has no ``_data`` and reads the top-level
directories beside the package. Both are found through
:mod:`importlib.resources` by the one function :func:`bundled`, so the checkout
and an installed wheel read the same files by the same code. (The embedding
model is a package of its own, ``cleo-rules-minilm``, found by
:func:`cleo_rules.retrieval.onnx_backend.bundled_model_dir`.)
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["BUNDLED", "bundled", "checkout_root", "corpus_dir", "data_dir", "in_installed_distribution",
           "inside_package", "installed", "package_dir", "rules_dir", "schemas_dir"]

BUNDLED = ("rules", "schemas", "corpus")
_PROJECT = "cleo-rules"


def package_dir() -> Path:
    """The directory of the imported ``cleo_rules`` package."""
    root = resources.files(__package__ or "cleo_rules")
    return Path(str(root))


def checkout_root(pkg: Path | None = None) -> Path | None:
    """The source checkout holding ``pkg`` (the imported package by default), when it is imported from one."""
    parent = (pkg or package_dir()).parent
    pyproject = parent / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return parent if f'name = "{_PROJECT}"' in text else None


def inside_package(path) -> bool:
    """Whether ``path`` lies inside the imported ``cleo_rules`` package (an installed wheel's files).

    Nothing cleo-rules writes may go there: ``corpus build`` and saving a
    regression refuse such a target. A checkout's top-level ``rules/`` and
    ``corpus/`` are beside the package, not inside it.
    """
    inside = package_dir().resolve()
    resolved = Path(path).resolve()
    return resolved == inside or inside in resolved.parents


def in_installed_distribution(path) -> bool:
    """Whether ``path`` lies in an installed distribution: the package of an installed cleo-rules wheel (its
    bundled pack), or a ``site-packages`` or ``dist-packages`` directory (any pack installed with pip)."""
    import sysconfig

    try:
        resolved = Path(path).resolve()
    except OSError:
        return False
    if installed() and inside_package(resolved):
        return True
    if {"site-packages", "dist-packages"} & set(resolved.parts):
        return True
    roots = {sysconfig.get_paths().get(k) for k in ("purelib", "platlib")} - {None}
    return any(resolved == Path(r).resolve() or Path(r).resolve() in resolved.parents for r in roots if r)


def installed() -> bool:
    """Whether the bundled files come from an installed wheel (``_data`` inside the package)."""
    return (package_dir() / "_data" / "rules").is_dir()


def bundled(name: str) -> Path:
    """The bundled directory ``name`` (one of :data:`BUNDLED`).

    An installed wheel's ``cleo_rules/_data/<name>``; in a checkout (editable
    install), the top-level ``<name>/`` beside the package.
    """
    if name not in BUNDLED:
        raise ValueError(f"{name!r} is not bundled; bundled directories: {', '.join(BUNDLED)}")
    pkg = package_dir()
    candidate = pkg / "_data" / name
    if candidate.is_dir():
        return candidate
    root = checkout_root(pkg)
    if root is not None and (root / name).is_dir():
        return root / name
    raise FileNotFoundError(f"the bundled {name}/ is missing: neither {candidate} nor a checkout's {name}/ "
                            f"beside {pkg} exists; reinstall cleo-rules")


def rules_dir() -> Path:
    """The bundled default pack (``cleo-en``)."""
    return bundled("rules")


def schemas_dir() -> Path:
    """The JSON Schemas of rule files, manifests and corpus files."""
    return bundled("schemas")


def corpus_dir() -> Path:
    """The bundled pack's corpus."""
    return bundled("corpus")


def data_dir() -> Path:
    """Sample memory and evaluation data shipped with the package."""
    return package_dir() / "data"
