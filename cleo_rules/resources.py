"""Where the bundled rule pack, schemas and sample data live.

In a source checkout they are the top-level ``rules/`` and ``schemas/``
directories; an installed wheel carries copies under ``cleo_rules/_data``.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent
_INSTALLED = _PKG / "_data"
_CHECKOUT = _PKG.parent


def _find(name: str) -> Path:
    for base in (_INSTALLED, _CHECKOUT):
        candidate = base / name
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bundled {name}/ not found beside {_PKG}")


def rules_dir() -> Path:
    """The bundled default pack (``cleo-en``)."""
    return _find("rules")


def schemas_dir() -> Path:
    return _find("schemas")


def data_dir() -> Path:
    """Sample memory and evaluation data shipped with the package."""
    return _PKG / "data"
