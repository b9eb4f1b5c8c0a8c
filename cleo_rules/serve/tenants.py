"""The tenants' memory stores: one directory (or database schema) each, opened lazily, kept in a bounded LRU.

The root's backend (:mod:`cleo_rules.memory_backends`) says where each
tenant's store is: ``ROOT/<tenant>/`` is one :class:`~cleo_rules.retrieval.MemoryStore`
(:class:`~cleo_rules.retrieval.store.DirectoryTenants`); with a
``postgresql://`` URL for a root, each tenant is one
:class:`~cleo_rules.retrieval.postgres.PgStore` (schema ``cleo_<tenant>``),
and all of them share one connection pool (:class:`~cleo_rules.retrieval.postgres.PgTenants`).
A store is opened on first use and, like everything done with it, on the
tenant's own thread: a store's SQLite connection belongs to the thread that
opened it, and one thread per tenant also means a tenant's requests run one
at a time, in order, while different tenants run side by side. At most
``open_stores`` idle stores stay open; the least recently used idle one is
closed (its indexes saved) when another has to open. A store busy with
requests is never closed under them.

Each tenant admits ``queue`` requests at a time, running or waiting; one
more is refused at once with :class:`Overloaded` (the service answers 503
with ``Retry-After``), so a burst never piles up unbounded work. One of the
slots is kept for a write (:class:`Write`: an ingest, a delete): reads
(turns, recalls, stats) may hold ``queue - 1`` at most, so readers, however
many, never shed a write (with ``queue`` 1 there is nothing to keep).

All tenants share one embedding model (:class:`SharedEmbedder`), loaded and
warmed once per process. Its encodes are scheduled
(:mod:`cleo_rules.serve.scheduler`): what a :class:`Write` encodes goes to the
bulk lane, a slice at a time, and a turn's query goes ahead of it. This module
imports the memory store only when a store is opened, and an embedding runtime
only through the embedder.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from ..tenant_names import valid_tenant
from .scheduler import EmbedScheduler, bulk_lane, in_bulk_lane

if TYPE_CHECKING:
    from ..memory_backends import TenantStores
    from ..retrieval.memory import Memory

log = logging.getLogger("cleo_rules.serve")

__all__ = ["Overloaded", "RequestTimeout", "SharedEmbedder", "Tenants", "Write", "bounded"]

class Overloaded(Exception):
    """The tenant's queue is full (for a read: all but the slot kept for a write); nothing was started.

    ``pending`` requests of the tenant were waiting or running; ``limit`` is
    how many this request's kind may find there.
    """

    def __init__(self, name: str, pending: int = 0, limit: int = 0):
        super().__init__(name)
        self.pending = pending
        self.limit = limit


class Write:
    """Work that changes a tenant's store (an ingest, a delete): ``Write(work)`` is called as ``work`` is.

    Given to :meth:`Tenants.run`, it may take the slot of the tenant's queue
    kept for writes, and what it encodes goes to the bulk lane of the
    embedding scheduler (behind every turn's query).
    """

    __slots__ = ("work",)

    def __init__(self, work):
        self.work = work

    def __call__(self, store):
        return self.work(store)


class RequestTimeout(Exception):
    """Work ran past its time limit (raised instead of a ``TimeoutError`` the work itself might raise)."""


async def bounded(future, timeout: float):
    """The result of an asyncio ``future``, or :class:`RequestTimeout` after ``timeout`` seconds.

    The future is cancelled on time-out: work not yet started is dropped,
    work on a thread runs to its end.
    """
    done, _ = await asyncio.wait({future}, timeout=timeout)
    if not done:
        future.cancel()
        raise RequestTimeout(timeout)
    return future.result()


class SharedEmbedder:
    """One embedding model for every tenant's store, its encodes scheduled queries first.

    Wraps a :class:`~cleo_rules.retrieval.embed.Embedder` (or anything with
    ``encode(list[str])``). An encode made under
    :func:`~cleo_rules.serve.scheduler.bulk_lane` (a :class:`Write`'s) goes
    to the scheduler's bulk lane, any other to its query lane. The ONNX
    Runtime backend runs the two lanes side by side; any other embedder one
    encode at a time (a torch tokenizer is not safe to share between
    threads). See :mod:`cleo_rules.serve.scheduler`.
    """

    def __init__(self, embedder, *, slice: int | None = None):
        self._embedder = embedder
        side_by_side = getattr(embedder, "backend", None) == "onnx"  # one session and tokenizer, thread-safe
        options = {} if slice is None else {"slice": slice}
        self.scheduler = EmbedScheduler(embedder.encode, side_by_side=side_by_side, **options)

    @property
    def model_name(self):
        return self._embedder.model_name

    @property
    def loaded(self) -> bool:
        return self._embedder.loaded

    @property
    def dim(self) -> int:
        return self._embedder.dim

    @property
    def backend(self):
        return getattr(self._embedder, "backend", None)

    def provenance(self) -> dict:
        """What a store records of the embedder (see ``retrieval.provenance``); ``custom`` when it does not say."""
        get = getattr(self._embedder, "provenance", None)
        found = get() if callable(get) else None
        return found if isinstance(found, dict) else {"backend": "custom", "model_sha256": None, "runtime": None}

    def describe(self) -> dict:
        """What the embedder is (backend, model, runtime, threads), loading nothing."""
        get = getattr(self._embedder, "describe", None)
        found = get() if callable(get) else None
        return found if isinstance(found, dict) else {"backend": self.backend or "custom", "model": self.model_name}

    def encode(self, texts):
        texts = list(texts)
        return self.scheduler.bulk(texts) if in_bulk_lane() else self.scheduler.query(texts)

    def close(self) -> None:
        """Stop the scheduler's bulk worker (after the encodes already waiting for it)."""
        self.scheduler.close()

    def warm(self) -> float:
        """Load the model and run one encode; return the seconds it took."""
        start = time.perf_counter()
        self.encode(["warming up the embedding model"])
        return time.perf_counter() - start


class _Tenant:
    """One tenant's store and the thread that owns it."""

    __slots__ = ("name", "executor", "store", "pending", "after")

    def __init__(self, name: str, after: Future | None):
        self.name = name
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"cleo-tenant-{name}")
        self.store: Memory | None = None
        self.pending = 0
        self.after = after  # the previous store of this tenant, still closing


class Tenants:
    """Every tenant's store, opened on demand; used from the event loop's thread, but for :meth:`exists`,
    which may ask the database and so runs on a worker thread.

    ``embedder`` is shared by all stores (a :class:`SharedEmbedder`).
    """

    def __init__(self, root, embedder, *, open_stores: int = 32, queue: int = 16, store_options=None):
        from ..memory_backends import backend_for

        self.backend = backend_for(root)
        self.location = root if self.backend.scheme is not None else Path(root)
        self.root = self.location if isinstance(self.location, Path) else None
        self._stores: TenantStores | None = None  # the backend's, made on first use
        self._stores_lock = threading.Lock()  # first use may come from two threads at once
        self.embedder = embedder
        self.open_stores = int(open_stores)
        self.queue = int(queue)
        self.store_options = dict(store_options or {})
        self._tenants: OrderedDict[str, _Tenant] = OrderedDict()
        self._closing: dict[str, Future] = {}
        self._closed = False

    def path(self, name: str) -> Path:
        if not valid_tenant(name):  # the router and the handlers check first; this is the last line
            raise ValueError(f"not a tenant name: {name!r}")
        if self.root is None:
            raise ValueError("the tenants live in a database, not in directories")
        return self.root / name

    @property
    def stores(self) -> TenantStores:
        """The backend's tenants (:class:`~cleo_rules.memory_backends.TenantStores`), its module imported now."""
        with self._stores_lock:
            if self._stores is None:
                self._stores = self.backend.load().tenants(self.location, self.store_options)
            return self._stores

    def known(self, name: str) -> bool:
        """Whether the tenant is known to have a store without looking (its store is open, or was found)."""
        return name in self._tenants or (self._stores is not None and self._stores.known(name))

    def exists(self, name: str) -> bool:
        """Whether the tenant has a store (only an ingest creates one): a file's presence, or a database query."""
        if self.known(name):
            return True
        return self.stores.exists(name)

    @property
    def read_limit(self) -> int:
        """How many requests of a tenant a read may find waiting or running: all but the slot kept for a write."""
        return self.queue - 1 if self.queue > 1 else self.queue

    @property
    def open_count(self) -> int:
        return sum(1 for t in self._tenants.values() if t.store is not None)

    async def run(self, name: str, work, *, timeout: float):
        """Run ``work(store)`` on the tenant's thread and return its result.

        Opens (creating when missing) the store first if it is not open.
        ``work`` wrapped in :class:`Write` is a write (see the class).
        Raises :class:`Overloaded` at once when the tenant's queue is full,
        and :class:`RequestTimeout` after ``timeout`` seconds (work already
        running goes on to its end; work still waiting is dropped).
        """
        if self._closed:
            raise RuntimeError("the tenants' stores are closed")
        tenant = self._tenants.get(name)
        if tenant is None:
            if not valid_tenant(name):
                raise ValueError(f"not a tenant name: {name!r}")
            tenant = self._tenants[name] = _Tenant(name, self._closing.pop(name, None))
        self._tenants.move_to_end(name)
        limit = self.queue if isinstance(work, Write) else self.read_limit
        if tenant.pending >= limit:
            raise Overloaded(name, tenant.pending, limit)
        tenant.pending += 1
        loop = asyncio.get_running_loop()
        try:
            future = tenant.executor.submit(self._call, tenant, work)
        except BaseException:
            tenant.pending -= 1
            raise
        future.add_done_callback(lambda _f: loop.call_soon_threadsafe(self._release, tenant))
        self._evict()
        return await bounded(asyncio.wrap_future(future), timeout)

    def _call(self, tenant: _Tenant, work):
        if tenant.store is None:
            if tenant.after is not None:
                try:
                    tenant.after.result()  # the store this one replaces has saved and closed
                except Exception:  # noqa: BLE001 - logged where it failed; the database is still the truth
                    pass
                tenant.after = None
            stores = self.stores
            tenant.store = stores.open(tenant.name, self.embedder, **self.store_options)
            log.info("opened the memory store of tenant %s", tenant.name)
        if isinstance(work, Write):
            with bulk_lane():
                return work(tenant.store)
        return work(tenant.store)

    def _release(self, tenant: _Tenant) -> None:
        tenant.pending -= 1
        self._evict()

    def _evict(self) -> None:
        """Close least recently used idle stores while more than ``open_stores`` are held."""
        excess = len(self._tenants) - self.open_stores
        if excess <= 0:
            return
        for name, tenant in list(self._tenants.items()):
            if excess <= 0:
                break
            if tenant.pending:
                continue
            del self._tenants[name]
            self._closing[name] = self._close(tenant)
            excess -= 1

    def _close(self, tenant: _Tenant) -> Future:
        def close():
            if tenant.store is not None:
                try:
                    tenant.store.close()
                    log.info("closed the memory store of tenant %s", tenant.name)
                finally:
                    tenant.store = None

        future = tenant.executor.submit(close)
        tenant.executor.shutdown(wait=False)
        return future

    def close_all(self) -> int:
        """Close every store after the work already queued for it (blocking); return how many were open."""
        self._closed = True
        open_now = self.open_count
        futures = [self._close(t) for t in self._tenants.values()]
        self._tenants.clear()
        for future in futures + list(self._closing.values()):
            try:
                future.result()
            except Exception:  # noqa: BLE001 - one store failing to save must not keep the others open
                log.exception("a memory store failed to close cleanly")
        if self._stores is not None:
            self._stores.close()
        close = getattr(self.embedder, "close", None)
        if callable(close):
            close()  # every store's work is done: nothing is left to encode
        return open_now
