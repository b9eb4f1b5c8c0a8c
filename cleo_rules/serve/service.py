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
(busy, or a PostgreSQL server that cannot be reached) is a 503 with ``Retry-After``;
an ingest that failed so part way says which lines of its body are stored. A
PostgreSQL schema that cannot be told to be the tenant's own (E308) is a 409.

Request bodies are received within a deadline and one budget of bytes for
all requests (:mod:`cleo_rules.serve.receive`). The key file is read again
when it changes and on SIGHUP (:meth:`Service.reload_keys`). On SIGTERM,
:meth:`Service.drain` starts the drain clock: ingests stop taking lines at
half of ``drain_timeout`` and :meth:`Service.stop` gives up on stores still
busy at its end, so the process exits within it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.requests import Request

from ..errors import CleoError, PackError, StoreError
from .keys import KeyFile, KeyRing
from .metrics import Metrics
from .problems import RETRY_AFTER, ServiceError
from .receive import BodyBudget, receive_body
from ..tenant_names import not_a_tenant, valid_tenant
from .settings import ServeSettings
from .tenants import Overloaded, RequestTimeout, Tenants, bounded

if TYPE_CHECKING:
    from ..runtime import PackManager

log = logging.getLogger("cleo_rules.serve")

__all__ = ["RETRY_AFTER", "Service"]

#: store errors that pass: the database is busy (E302: another process holds an SQLite store; E307: every
#: pooled connection is in use) or its PostgreSQL server cannot be reached (E306)
TRANSIENT_STORE_ERRORS = {
    "E302": "the tenant's memory store is busy: another process holds its database",
    "E306": "the database of the tenant's memory store cannot be reached",
    "E307": "the tenant's memory store is busy: every connection to its database is in use",
}


def _bad_tenant(name: str) -> ServiceError:
    return ServiceError("invalid-request", not_a_tenant(name), field="tenant")


def stored_lines(stored: int) -> tuple[str, dict]:
    """What a problem about an ingest that stopped part way says of the body: a sentence for its detail, and
    its members ``stored_lines`` and ``first_unstored_line``."""
    done = f"lines 1-{stored} of the body are stored" if stored else "nothing from the body is stored"
    return (f"{done}; send the lines from line {stored + 1} on again (ingesting lines again is idempotent)",
            {"stored_lines": stored, "first_unstored_line": stored + 1})


def _unavailable(exc: StoreError, tenant: str) -> ServiceError:
    """A store error that passes as a 503 (the full error goes to the log, never to the client); an ingest's
    says how far it got."""
    log.warning("memory store of tenant %s unavailable: %s", tenant, exc)
    detail, extra = f"{TRANSIENT_STORE_ERRORS[exc.code]}; retry later", {}
    if exc.stored_lines is not None:
        sentence, extra = stored_lines(exc.stored_lines)
        detail += f"; {sentence}"
    return ServiceError("not-ready", detail, code=exc.code, headers={"Retry-After": RETRY_AFTER}, **extra)


def _not_its_own(exc: StoreError, tenant: str) -> ServiceError:
    """E308: the schema that would hold the tenant's memory is not known to be its own (409; whose it is, and
    any other tenant's name, go to the log only)."""
    log.error("memory store of tenant %s refused (%s): %s", tenant, exc.code, exc)
    return ServiceError("tenant-schema-conflict", f"the PostgreSQL schema that would hold tenant {tenant!r}'s memory "
                                                  f"records another tenant or cannot tell whose it is; nothing was "
                                                  f"read or written. An operator must resolve it with `cleo-rules "
                                                  f"memory tenants --db URL` (--adopt SCHEMA --tenant NAME)",
                        code=exc.code)


def _store_problem(exc: StoreError, tenant: str) -> ServiceError | None:
    """The problem a store error of ``tenant``'s is to the client (503 while it passes, 409 for a schema not
    known to be its own), or None for any other (a 500)."""
    if exc.code in TRANSIENT_STORE_ERRORS:
        return _unavailable(exc, tenant)
    if exc.code == "E308":
        return _not_its_own(exc, tenant)
    return None


class Service:
    """What one app holds: settings, keys, metrics, the pack manager, the tenants' stores."""

    def __init__(self, settings: ServeSettings):
        self.settings = settings
        self.key_file = KeyFile(settings.keys) if settings.keys is not None else None
        self.metrics = Metrics(self._live)
        self.bodies = BodyBudget(settings.max_body_bytes_in_flight)
        self.metrics.body_bytes.set_function(lambda: self.bodies.in_use)
        self.drain_deadline: float | None = None  # set on SIGTERM: when the process is to be gone
        self.ingests_stop_at: float | None = None  # ... and when ingests stop taking lines
        self.abandoned = False  # stores still busy at the drain deadline were left to the exit
        self.manager: PackManager | None = None  # once the first pack is accepted
        self.pack_error: CleoError | None = None
        self.startup_rejections = 0
        self.model_warm = settings.memory is None
        self.model_error: Exception | None = None
        self.tenants: Tenants | None = None
        self._stopping = threading.Event()
        self._keys_wake = threading.Event()  # SIGHUP, or stop()
        self._keys_forced = False
        self._threads: list[threading.Thread] = []
        if settings.memory is not None:
            from ..retrieval.embed import Embedder  # numpy only; the runtime waits for the first encode
            from .tenants import SharedEmbedder

            self.embedder = SharedEmbedder(Embedder(settings.model))
            self.tenants = Tenants(settings.memory, self.embedder, open_stores=settings.open_stores,
                                   queue=settings.queue)

    # -- life ------------------------------------------------------------------

    @property
    def keys(self) -> KeyRing | None:
        """The keys in use (None: a service without keys lets every request in)."""
        return self.key_file.ring if self.key_file is not None else None

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
        if self.key_file is not None:
            jobs.append(("cleo-serve-keys", self._watch_keys))
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
            if s.writable_pack:  # its first edit then finds what the process memoizes of it
                from ..editing import warm

                warm(manager.pack_dir, require=manager.require)
            return

    def _rejected(self, exc: Exception, interval: float) -> None:
        """Note a pack that cannot serve, then wait until its files change (or the service stops)."""
        from ..pack.discovery import resolve_pack
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

    def _watch_keys(self) -> None:
        """Read the key file again when it changes (every ``watch_interval`` s; 0: on SIGHUP only) or on SIGHUP."""
        assert self.key_file is not None
        interval = self.settings.watch_interval or None
        while not self._stopping.is_set():
            self._keys_wake.wait(interval)
            self._keys_wake.clear()
            if self._stopping.is_set():
                return
            forced, self._keys_forced = self._keys_forced, False
            self.key_file.refresh(force=forced)

    def reload_keys(self) -> None:
        """Read the key file again now (SIGHUP); safe to call from a signal handler."""
        if self.key_file is None:  # nothing to read; and no logging from a signal handler
            return
        self._keys_forced = True
        self._keys_wake.set()

    def drain(self) -> None:
        """SIGTERM: start the drain clock (the first call only). Safe to call from a signal handler."""
        if self.drain_deadline is None:
            now = time.monotonic()
            self.ingests_stop_at = now + self.settings.drain_timeout / 2
            self.drain_deadline = now + self.settings.drain_timeout

    def ingests_stopping(self) -> bool:
        """Whether an ingest should stop taking lines: half of the drain time has passed."""
        return self.ingests_stop_at is not None and time.monotonic() >= self.ingests_stop_at

    def stop(self) -> None:
        """Stop watching and close every store cleanly (indexes saved). Blocking; after SIGTERM, until the
        drain deadline at most: stores still busy then are left to the exit (their committed batches are kept,
        an index not saved is caught up from the database on the next open)."""
        self._stopping.set()
        self._keys_wake.set()
        if self.manager is not None:
            self.manager.stop()
        tenants = self.tenants
        if tenants is None:
            return
        counted: list[int] = []
        closer = threading.Thread(target=lambda: counted.append(tenants.close_all()), name="cleo-serve-close",
                                  daemon=True)
        closer.start()
        closer.join(None if self.drain_deadline is None else max(self.drain_deadline - time.monotonic(), 0.5))
        if closer.is_alive():
            self.abandoned = True
            log.error("memory stores still busy at the drain deadline (%g s after SIGTERM): exiting without them; "
                      "every committed batch is kept", self.settings.drain_timeout)
            return
        closed = counted[0] if counted else 0
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

    def require_ready(self, *, detailed: bool = True) -> None:
        """503 with ``Retry-After`` until the service is ready; the reason (a refused pack's or model's error only
        when ``detailed``: it may name the server's files)."""
        if self.ready:
            return
        hidden = "the service's log says why"
        if self.manager is None:
            why = (("the rule pack was rejected: " + (str(self.pack_error).splitlines()[0] if detailed else hidden))
                   if self.pack_error else "the rule pack is loading")
        elif self.model_error is not None:
            why = f"the embedding model could not be loaded: {self.model_error if detailed else hidden}"
        else:
            why = "the embedding model is warming up"
        raise ServiceError("not-ready", why, headers={"Retry-After": RETRY_AFTER})

    def require_memory(self) -> Tenants:
        """The tenants' stores; 404 for a service started without memory."""
        if self.tenants is None:
            raise ServiceError("unknown-tenant", "this service has no memory (it was started without --memory)")
        return self.tenants

    async def read_body(self, request: Request, limit: int, types: tuple[str, ...]) -> bytes:
        """The request's body (see :func:`~cleo_rules.serve.receive.receive_body`): 415, 413, 408, or 503 when
        the bodies being read would go over ``max_body_bytes_in_flight``."""
        return await receive_body(request, limit, types, budget=self.bodies, timeout=self.settings.read_timeout,
                                  metrics=self.metrics)

    def shows_paths(self, request: Request) -> bool:
        """Whether the request may see where the server keeps things: without keys, or with a key for every
        tenant (a missing or unknown key is no error here)."""
        keys = self.keys
        if keys is None:
            return True
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        key = keys.lookup(token.strip()) if scheme.lower() == "bearer" else None
        return key is not None and key.all_tenants

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
            problem = _store_problem(exc, tenant)
            if problem is None:
                raise
            raise problem from exc

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
            problem = _store_problem(exc, tenant)
            if problem is None:
                raise
            raise problem from exc
