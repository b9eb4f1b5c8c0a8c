"""Old module names kept working: a module that moved leaves a shim whose every name warns, then forwards."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["forward"]


def forward(old: str, *homes: ModuleType, renamed: dict[str, str] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the shim ``old``: each name is looked up in ``homes``, in order.

    Reading a name raises a :class:`DeprecationWarning` that says where the
    name lives now (``renamed`` maps an old name to its new one), pointing at
    the line that read it; a name no home has is an ``AttributeError``, as
    from any module.
    """
    renamed = dict(renamed or {})

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # the import machinery's own questions (__path__, __wrapped__, ...)
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        new = renamed.get(name, name)
        for home in homes:
            if hasattr(home, new):
                warnings.warn(f"{old}.{name} is deprecated: import {home.__name__}.{new} instead", DeprecationWarning,
                              stacklevel=2)
                return getattr(home, new)
        raise AttributeError(f"module {old!r} has no attribute {name!r}")

    return __getattr__
