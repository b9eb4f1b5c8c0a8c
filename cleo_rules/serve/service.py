"""What one app holds and the checks every endpoint shares: :class:`Service`.

The app keeps its :class:`Service` in ``app.state.service``; the endpoints
(:mod:`cleo_rules.serve.endpoints`) read it from the request. It holds the
settings, the keys, the metrics, the pack manager and the tenants' stores.

On start-up the pack is loaded (and, with memory, the embedding model
warmed) in the background: ``/healthz`` answers at once, ``/readyz`` and
every ``/v1`` request answer 503 until both are done. A pack that does not
pass the acceptance gate never serves; the service tries again when its
files change (with watching off too: it has nothing else to serve).

The event loop only moves bytes: parsing, checking and classifying a body run on
worker threads (:meth:`Service.off_loop`), as do a reload and the work on a tenant's
store (its own thread, :meth:`Service.on_tenant`), so ``/healthz`` and SIGTERM are
answered while requests work. A store whose database cannot be used just now
(busy, or a PostgreSQL server that cannot be reached) is a 503 with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.requests import Request

from ..errors import CleoError, PackError, StoreError
from .keys import KeyRing
from .metrics import Metrics
from .problems import ServiceError
from .responses import JSON_TYPES
from .settings import ServeSettings, valid_tenant
from .tenants import Overloaded, RequestTimeout, Tenants, bounded

if TYPE_CHECKING:
    from ..runtime import PackManager

log = logging.getLogger("cleo_rules.serve")

__all__ = ["RETRY_AFTER", "Service"]

RETRY_AFTER = "1"
#: store errors that pass: the database is busy (E302: another process holds an SQLite store; E307: every
#: pooled connection is in use) or its PostgreSQL server cannot be reached (E306)
TRANSIENT_STORE_ERRORS = {
    "E302": "the tenant's memory store is busy: another process holds its database",
    "E306": "the database of the tenant's memory store cannot be reached",
    "E307": "the tenant's memory store is busy: every connection to its database is in use",
}


def _bad_tenant(name: str) -> ServiceError:
    return ServiceError("invalid-request", f"{name[:80]!r} is not a tenant name: [a-z0-9][a-z0-9_-]{{0,62}}",
                        field="tenant")


def _unavailable(exc: StoreError, tenant: str) -> ServiceError:
    """A store error that passes as a 503 (the full error goes to the log, never to the client)."""
    log.warning("memory store of tenant %s unavailable: %s", tenant, exc)
    return ServiceError("not-ready", f"{TRANSIENT_STORE_ERRORS[exc.code]}; retry later", code=exc.code,
                        headers={"Retry-After": RETRY_AFTER})


class Service:
    """What one app holds: settings, keys, metrics, the pack manager, the tenants' stores."""

    def __init__(self, settings: ServeSettings):
        self.settings = settings
        self.keys = KeyRing.load(settings.keys) if settings.keys is not None else None
        self.metrics = Metrics(self._live)
        self.manager: PackManager | None = None  # once the first pack is accepted
        self.pack_error: CleoError | None = None
        self.startup_rejections = 0
        self.model_warm = settings.memory is None
        self.model_error: Exception | None = None
        self.tenants: Tenants | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        if settings.memory is not None:
            from ..retrieval.embed import Embedder  # numpy only; the runtime waits for the first encode
            from .tenants import SharedEmbedder

            self.embedder = SharedEmbedder(Embedder(settings.model))
            self.tenants = Tenants(settings.memory, self.embedder, open_stores=settings.open_stores,
                                   queue=settings.queue)

    # -- life ------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.manager is not None and self.model_warm

    def _live(self) -> dict:
        return {"pack": self.manager, "startup_rejections": self.startup_rejections, "ready": self.ready,
                "open_stores": self.tenants.open_count if self.tenants is not None else 0}

    def start(self) -> None:
        jobs = [("cleo-serve-pack", self._load_pack)]
        if isinstance(self.settings.memory, Path):
            self.settings.memory.mkdir(parents=True, exist_ok=True)
        if self.settings.memory is not None:  # a directory or a postgresql:// URL
            jobs.append(("cleo-serve-model", self._warm_model))
        for name, target in jobs:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _load_pack(self) -> None:
        from ..runtime import PackManager

        s = self.settings
        interval = s.watch_interval or 1.0
        while not self._stopping.is_set():
            try:
                manager = PackManager(s.pack, require=s.require, watch=s.watch_interval > 0, interval=interval)
            except Exception as exc:  # noqa: BLE001 - a pack that cannot serve leaves the service not ready
                self._rejected(exc, interval)
                continue
            if self._stopping.is_set():
                manager.stop()
                return
            self.manager, self.pack_error = manager, None
            p = manager.pack
            log.info("serving rule pack %s %s (%s) from %s%s", p.name, p.version, p.content_hash, manager.pack_dir,
                     f", watching every {s.watch_interval:g} s" if s.watch_interval > 0 else "")
            return

    def _rejected(self, exc: Exception, interval: float) -> None:
        """Note a pack that cannot serve, then wait until its files change (or the service stops)."""
        from ..pack.sources import resolve_pack
        from ..runtime import fingerprint

        self.pack_error = exc if isinstance(exc, CleoError) else CleoError(f"{type(exc).__name__}: {exc}")
        self.startup_rejections += 1
        report = exc.report() if isinstance(exc, PackError) else str(exc)
        log.error("rule pack %s cannot serve; not ready until its files change:\n%s", self.settings.pack or "cleo-en",
                  report)
        try:
            pack_dir = resolve_pack(self.settings.pack)
            seen = fingerprint(pack_dir)
        except CleoError:
            pack_dir, seen = None, None
        while not self._stopping.wait(interval):
            if pack_dir is not None and fingerprint(pack_dir) != seen:
                return

    def _warm_model(self) -> None:
        try:
            seconds = self.embedder.warm()
        except Exception as exc:  # noqa: BLE001 - the service stays not ready and says why
            self.model_error = exc
            log.error("the embedding model could not be loaded; not ready: %s", exc)
            return
        self.model_warm = True
        d = self.embedder.describe()  # a custom embedder may say less than the bundled backends
        threads = d.get("threads")
        log.info("embedding model %s warm in %.1f s (%s backend, %s, %s thread%s)", self.embedder.model_name, seconds,
                 d.get("backend", "custom"), d.get("runtime") or "runtime unknown", threads or "?",
                 "" if threads == 1 else "s")

    def stop(self) -> None:
        """Stop watching and close every store cleanly (indexes saved). Blocking."""
        self._stopping.set()
        if self.manager is not None:
            self.manager.stop()
        if self.tenants is not None:
            closed = self.tenants.close_all()
            log.info("closed %d memory store%s", closed, "" if closed == 1 else "s")

    # -- checks shared by the endpoints ------------------------------------------

    def authorize(self, request: Request, tenant: str | None = None, *, admin: bool = False):
        """401 without a valid key, 403 for a tenant (or an admin action) the key does not cover."""
        if self.keys is None:
            if tenant is not None and not valid_tenant(tenant):
                raise _bad_tenant(tenant)
            return None
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        key = self.keys.lookup(token.strip()) if scheme.lower() == "bearer" else None
        if key is None:
            detail = ("no Authorization header; send 'Authorization: Bearer KEY'" if not header
                      else "the key is not valid for this service")
            raise ServiceError("unauthorized", detail, headers={"WWW-Authenticate": 'Bearer realm="cleo-rules"'})
        if tenant is not None:
            if not valid_tenant(tenant):
                raise _bad_tenant(tenant)
            if not key.may_use(tenant):
                raise ServiceError("forbidden", f"this key may not use tenant {tenant!r}")
        if admin and not key.all_tenants:
            raise ServiceError("forbidden", "reloading the pack needs a key for every tenant (*)")
        return key

    @property
    def packs(self) -> PackManager:
        """The pack manager; only called after :meth:`require_ready`, which answers 503 until there is one."""
        if self.manager is None:
            raise ServiceError("not-ready", "the rule pack is loading", headers={"Retry-After": RETRY_AFTER})
        return self.manager

    def require_ready(self) -> None:
        if self.ready:
            return
        if self.manager is None:
            why = (f"the rule pack was rejected: {str(self.pack_error).splitlines()[0]}" if self.pack_error
                   else "the rule pack is loading")
        elif self.model_error is not None:
            why = f"the embedding model could not be loaded: {self.model_error}"
        else:
            why = "the embedding model is warming up"
        raise ServiceError("not-ready", why, headers={"Retry-After": RETRY_AFTER})

    def require_memory(self) -> Tenants:
        """The tenants' stores; 404 for a service started without memory."""
        if self.tenants is None:
            raise ServiceError("unknown-tenant", "this service has no memory (it was started without --memory)")
        return self.tenants

    async def read_body(self, request: Request, limit: int, types: tuple[str, ...]) -> bytes:
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media not in types and not (types is JSON_TYPES and media.endswith("+json")):
            got = f"Content-Type {media!r}" if media else "no Content-Type"
            raise ServiceError("unsupported-media-type", f"expected {types[0]}, got {got}", accept=list(types))
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise ServiceError("payload-too-large", f"the body is {int(length)} bytes; the limit is {limit}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ServiceError("payload-too-large", f"the body is over the limit of {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def off_loop(self, work):
        """``work()`` on a worker thread, the loop free meanwhile; 503 after ``request_timeout`` s (work runs on)."""
        seconds = self.settings.request_timeout
        try:
            return await bounded(asyncio.get_running_loop().run_in_executor(None, work), seconds)
        except RequestTimeout:
            raise ServiceError("timeout", f"the request took longer than {seconds:g} s",
                               headers={"Retry-After": RETRY_AFTER}) from None

    async def store_exists(self, tenant: str) -> bool:
        """Whether ``tenant`` has a store; looked up off the loop unless already known (a database query)."""
        tenants = self.require_memory()
        if tenants.known(tenant):
            return True
        try:
            return await self.off_loop(lambda: tenants.exists(tenant))
        except StoreError as exc:
            if exc.code in TRANSIENT_STORE_ERRORS:
                raise _unavailable(exc, tenant) from exc
            raise

    async def on_tenant(self, request: Request, tenant: str, work, *, timeout: float):
        """Run ``work(store)`` on the tenant's thread: overload, timeouts and a store that cannot be used just
        now become 503 problems."""
        tenants = self.require_memory()
        try:
            return await tenants.run(tenant, work, timeout=timeout)
        except Overloaded as exc:
            route = request.scope.get("route")
            self.metrics.shed.labels(route.path if route is not None else "unmatched").inc()
            raise ServiceError("overloaded", f"tenant {tenant!r} already has {exc.pending} requests waiting or "
                                             f"running", headers={"Retry-After": RETRY_AFTER}) from None
        except RequestTimeout:
            raise ServiceError("timeout", f"the request took longer than {timeout:g} s",
                               headers={"Retry-After": RETRY_AFTER}) from None
        except StoreError as exc:
            if exc.code in TRANSIENT_STORE_ERRORS:
                raise _unavailable(exc, tenant) from exc
            raise
