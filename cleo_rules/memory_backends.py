"""Where a memory lives: the registry from a location's scheme to the backend that opens it.

A location is a directory (the embedded store: SQLite and hnswlib) or a URL
whose scheme names a backend (``postgresql://`` and ``postgres://``: the
PostgreSQL store). Everything that opens a memory by its location looks its
backend up here: :func:`~cleo_rules.retrieval.locate.open_memory` (and so
``Recall.open`` and the CLI's ``--db``), the service's ``--memory`` and its
tenants' stores, and the checks of ``serve`` and ``memory tenants``.

Adding a backend is one :class:`~cleo_rules.retrieval.base.MemoryBase`
subclass and one :func:`register` call::

    register("lists", MemoryBackend("lists", open=open_lists, tenants=lists_of_tenants))

A registration names its backend as a :class:`MemoryBackend` or as
``"module:attribute"``, loaded on first use under :meth:`Registration.imports`;
this module imports no store, so a location whose extra is not installed is a
:class:`~cleo_rules.errors.MissingExtra` naming the extra it needs. A
string that names no registered scheme is a directory, as it always was.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import MissingExtra
from .extras import MEMORY_MODULES, POSTGRES_MODULES, missing_extra

__all__ = ["MemoryBackend", "Registration", "TenantStores", "backend_for", "register", "store_imports", "unregister"]

_SCHEME = re.compile(r"([a-z][a-z0-9+.-]*)://", re.IGNORECASE)


class TenantStores(Protocol):
    """The service's view of a backend: one store per tenant under one location (see :mod:`cleo_rules.serve.tenants`).

    A directory holds one directory per tenant; a PostgreSQL database one
    schema per tenant. Called from the tenants' threads and a worker thread.
    """

    def known(self, name: str) -> bool:
        """Whether the tenant is known to have a store without looking."""
        ...

    def exists(self, name: str) -> bool:
        """Whether the tenant has a store (only an ingest creates one); ``ValueError`` for a malformed name."""
        ...

    def open(self, name: str, embedder, **options) -> Any:
        """Open (creating when missing, unless ``create=False``) the tenant's store, a ``Memory``."""
        ...

    def close(self) -> None:
        """Release what the stores share (a connection pool), once every store is closed."""
        ...


@dataclass(frozen=True)
class MemoryBackend:
    """What the callers of a backend need of it.

    ``open(location, embedder=None, **options)`` opens the memory at
    ``location`` with the options of :func:`~cleo_rules.retrieval.locate.open_memory`.
    ``tenants(location, options)`` is the service's :class:`TenantStores`
    under ``location``; it may take its own settings out of the ``options``
    dict (PostgreSQL's ``pool_size``), the rest go to each tenant's ``open``.
    ``describe(location)`` is the location as it may be shown (a URL without
    its password).
    """

    name: str
    open: Callable[..., Any]
    tenants: Callable[[Any, dict], TenantStores]
    describe: Callable[[Any], str] = str


@dataclass(frozen=True)
class Registration:
    """A backend registered for ``scheme`` (``None``: a directory, the default).

    ``extra`` and ``what`` make the :class:`MissingExtra` raised when one of
    ``modules`` (or of the ``[memory]`` extra's) is missing; a backend that
    needs only the ``[memory]`` extra leaves them alone.
    """

    scheme: str | None
    target: MemoryBackend | str
    extra: str = "memory"
    what: str = "memory store"
    modules: frozenset[str] = frozenset()

    def missing(self) -> MissingExtra:
        """The error that says what to install for this backend."""
        return MissingExtra(self.extra, self.what)

    @contextmanager
    def imports(self) -> Iterator[None]:
        """Run imports of this backend; a missing module of its extra raises :class:`MissingExtra`."""
        try:
            yield
        except ModuleNotFoundError as exc:
            top = (exc.name or "").split(".")[0]
            if self.modules and top in MEMORY_MODULES | self.modules:
                raise self.missing() from exc
            extra = missing_extra(exc)
            if extra is None:
                raise
            raise extra from exc

    def load(self) -> MemoryBackend:
        """The backend, imported on first use."""
        if isinstance(self.target, MemoryBackend):
            return self.target
        module, _, name = self.target.partition(":")
        with self.imports():
            return getattr(importlib.import_module(module), name)


_REGISTRY: dict[str | None, Registration] = {}


def register(scheme: str | None, target: MemoryBackend | str, *, extra: str = "memory",
             what: str = "memory store", modules=frozenset()) -> Registration:
    """Open locations ``scheme://...`` (``None``: a directory) with ``target`` from now on; return the registration.

    ``target`` is a :class:`MemoryBackend` or ``"module:attribute"`` naming
    one. A scheme registered before is replaced.
    """
    if scheme is not None and not _SCHEME.fullmatch(f"{scheme}://"):
        raise ValueError(f"not a URL scheme: {scheme!r}")
    key = None if scheme is None else scheme.lower()
    found = _REGISTRY[key] = Registration(key, target, extra, what, frozenset(modules))
    return found


def unregister(scheme: str) -> None:
    """Forget the backend of ``scheme``; its locations are directories again. The default cannot be removed."""
    if scheme is None:
        raise ValueError("the backend of a directory cannot be unregistered")
    _REGISTRY.pop(scheme.lower(), None)


def backend_for(location) -> Registration:
    """The registration of ``location``'s backend: its URL scheme's, or the directory's."""
    if isinstance(location, str):
        head = _SCHEME.match(location)
        if head is not None:
            found = _REGISTRY.get(head.group(1).lower())
            if found is not None:
                return found
    return _REGISTRY[None]


def store_imports(location):
    """Run imports of the store at ``location``; a missing module of its extra raises :class:`MissingExtra`."""
    return backend_for(location).imports()


register(None, "cleo_rules.retrieval.store:BACKEND")
for _scheme in ("postgresql", "postgres"):
    register(_scheme, "cleo_rules.retrieval.postgres:BACKEND", extra="postgres", what="PostgreSQL memory store",
             modules=POSTGRES_MODULES)
