"""Deprecated: the prefilter's one scan is :mod:`cleo_rules.prefilter.scan` (``cleo_rules.retrieval.index`` is a
vector index); its names are also :mod:`cleo_rules.prefilter`'s own."""

from __future__ import annotations

import warnings

from . import scan


def __getattr__(name: str):
    if name not in scan.__all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"cleo_rules.prefilter.index is deprecated; import {name} from cleo_rules.prefilter",
                  DeprecationWarning, stacklevel=2)
    return getattr(scan, name)
