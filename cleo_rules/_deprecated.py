"""Names kept working after a rename, with a :class:`DeprecationWarning` on each use.

A module whose name moved sets ``__getattr__ = moved(__name__, {"Old":
"New"})``: ``module.Old`` and ``from module import Old`` then give
``module.New`` and warn once per place, as Python shows deprecations, naming
the new spelling. The old names are listed in ``CHANGELOG.md``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved"]


def moved(module: str, renamed: Mapping[str, str | tuple[str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that answers each old name of ``renamed`` with the new one, warning.

    A value is the new name in the same module, or ``(attribute, advice)``:
    the attribute that stands in for the old name and what the warning tells
    its users to do instead.
    """

    def __getattr__(name: str) -> Any:
        new = renamed.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        attribute, advice = new if isinstance(new, tuple) else (new, f"use {module}.{new}")
        warnings.warn(f"{module}.{name} is deprecated; {advice}", DeprecationWarning, stacklevel=2)
        return getattr(sys.modules[module], attribute)

    return __getattr__
