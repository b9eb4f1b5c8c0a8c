"""The ASGI application: endpoints, keys, limits, readiness and metrics over the library.

:func:`create_app` builds a Starlette app from :class:`~cleo_rules.serve.settings.Settings`.
Every endpoint is a thin layer: read and check the request, call the
library (:class:`~cleo_rules.PackManager`, :class:`~cleo_rules.turn.Recall`,
:class:`~cleo_rules.retrieval.MemoryStore`), answer with the library's own
``to_dict()`` forms. The service never interprets a history beyond its JSON
shape; the classifier's ``TypeError``/``ValueError`` about one becomes a 400
problem naming the field.

On start-up the pack is loaded (and, with memory, the embedding model
warmed) in the background: ``/healthz`` answers at once, ``/readyz`` and
every ``/v1`` request answer 503 until both are done. A pack that does not
pass the acceptance gate never serves; the service tries again when its
files change (with watching off too: it has nothing else to serve).

The event loop only moves bytes: parsing, checking and classifying a body run on
worker threads (:meth:`Service.off_loop`), as do a reload and the work on a tenant's
store (its own thread), so ``/healthz`` and SIGTERM are answered while requests work.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import CleoError, IngestError, PackError
from ..kinds import Source
from . import openapi, playground
from .hosts import HostGuard
from .responses import JSON_TYPES, json_response
from .keys import KeyRing
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .metrics import Metrics
from .problems import MEDIA_TYPE as PROBLEM_MEDIA_TYPE
from .problems import PROBLEM_TYPES, ServiceError, encode, type_uri
from ..tenant_names import not_a_tenant, valid_tenant
from .settings import Settings
from .tenants import Overloaded, RequestTimeout, Tenants, bounded
from .validate import history_error, parse_json, read_batch, read_classify, read_turn

if TYPE_CHECKING:
    from ..runtime import PackManager

log = logging.getLogger("cleo_rules.serve")

__all__ = ["Service", "create_app"]

JSONL_TYPES = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines")
RETRY_AFTER = "1"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def decision_record(decision) -> dict:
    """A decision as ``classify --jsonl`` writes it: its ``to_dict()`` without the message."""
    record = decision.to_dict()
    record.pop("message", None)
    return record


def add_timing(request: Request, name: str, seconds: float) -> None:
    request.scope.setdefault("cleo.timings", []).append((name, seconds))


class Service:
    """What one app holds: settings, keys, metrics, the pack manager, the tenants' stores."""

    def __init__(self, settings: Settings):
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
        from ..pack.sources import resolve_pack
        from ..runtime import PackManager, fingerprint

        s = self.settings
        interval = s.watch_interval or 1.0
        while not self._stopping.is_set():
            try:
                manager = PackManager(s.pack, require=s.require, watch=s.watch_interval > 0, interval=interval)
            except Exception as exc:  # noqa: BLE001 - a pack that cannot serve leaves the service not ready
                self.pack_error = exc if isinstance(exc, CleoError) else CleoError(f"{type(exc).__name__}: {exc}")
                self.startup_rejections += 1
                report = exc.report() if isinstance(exc, PackError) else str(exc)
                log.error("rule pack %s cannot serve; not ready until its files change:\n%s", s.pack or "cleo-en",
                          report)
                try:
                    pack_dir = resolve_pack(s.pack)
                    seen = fingerprint(pack_dir)
                except CleoError:
                    pack_dir, seen = None, None
                while not self._stopping.wait(interval):
                    if pack_dir is not None and fingerprint(pack_dir) != seen:
                        break
                continue
            if self._stopping.is_set():
                manager.stop()
                return
            self.manager, self.pack_error = manager, None
            p = manager.pack
            log.info("serving rule pack %s %s (%s) from %s%s", p.name, p.version, p.content_hash, manager.pack_dir,
                     f", watching every {s.watch_interval:g} s" if s.watch_interval > 0 else "")
            return

    def _warm_model(self) -> None:
        try:
            seconds = self.embedder.warm()
        except Exception as exc:  # noqa: BLE001 - the service stays not ready and says why
            self.model_error = exc
            log.error("the embedding model could not be loaded; not ready: %s", exc)
            return
        self.model_warm = True
        d = self.embedder.describe()
        log.info("embedding model %s warm in %.1f s (%s backend, %s, %d thread%s)", self.embedder.model_name, seconds,
                 d["backend"], d["runtime"], d["threads"], "" if d["threads"] == 1 else "s")

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

    def require_tenant(self, tenant: str) -> Tenants:
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

    async def on_tenant(self, request: Request, tenant: str, work, *, timeout: float):
        """Run ``work(store)`` on the tenant's thread: overload, timeouts and store failures become problems."""
        tenants = self.require_tenant(tenant)
        try:
            return await tenants.run(tenant, work, timeout=timeout)
        except Overloaded:
            route = request.scope.get("route")
            self.metrics.shed.labels(route.path if route is not None else "unmatched").inc()
            raise ServiceError("overloaded", f"tenant {tenant!r} already has {tenants.queue} requests waiting or "
                                             f"running", headers={"Retry-After": RETRY_AFTER}) from None
        except RequestTimeout:
            raise ServiceError("timeout", f"the request took longer than {timeout:g} s",
                               headers={"Retry-After": RETRY_AFTER}) from None


def _bad_tenant(name: str) -> ServiceError:
    return ServiceError("invalid-request", not_a_tenant(name), field="tenant")


def _flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name)
    if value is None or value.lower() in ("0", "false", "no", ""):
        return False
    if value.lower() in ("1", "true", "yes"):
        return True
    raise ServiceError("invalid-request", f"{name} must be true or false, not {value[:40]!r}", field=name)


# --------------------------------------------------------------------------
# Endpoints
# --------------------------------------------------------------------------


def _endpoints(service: Service) -> list[Route]:
    s = service.settings
    metrics = service.metrics

    async def classify(request: Request) -> Response:
        service.authorize(request)
        service.require_ready()
        raw = await service.read_body(request, s.max_body_bytes, JSON_TYPES)
        pack = service.packs.pack  # read once: one pack answers the whole request

        def work():
            message, history = read_classify(parse_json(raw), s)
            start = time.perf_counter()
            try:
                return pack.classify(message, history), time.perf_counter() - start  # the decision, then the time
            except (TypeError, ValueError) as exc:
                raise history_error(exc) from None

        decision, seconds = await service.off_loop(work)
        add_timing(request, "classify", seconds)
        metrics.decided(decision)
        return json_response(decision_record(decision))

    async def classify_batch(request: Request) -> Response:
        service.authorize(request)
        service.require_ready()
        raw = await service.read_body(request, s.max_body_bytes, JSON_TYPES)
        pack = service.packs.pack

        def work():
            items = read_batch(parse_json(raw), s)
            start = time.perf_counter()
            out = []
            for n, item in enumerate(items):
                where = f"items[{n}]"
                try:
                    message, history = read_classify(item, s, field=where)
                    decision = pack.classify(message, history)
                except ServiceError as exc:
                    out.append({"error": exc.body()})
                    continue
                except (TypeError, ValueError) as exc:
                    out.append({"error": history_error(exc, where).body()})
                    continue
                metrics.decided(decision)
                out.append(decision_record(decision))
            return out, time.perf_counter() - start

        results, seconds = await service.off_loop(work)
        add_timing(request, "classify", seconds)
        return json_response({"results": results})

    async def turns(request: Request) -> Response:
        tenant = request.path_params["tenant"]
        service.authorize(request, tenant)
        service.require_ready()
        tenants = service.require_tenant(tenant)
        raw = await service.read_body(request, s.max_body_bytes, JSON_TYPES)
        message, history, k = await service.off_loop(lambda: read_turn(parse_json(raw), s))  # judged, then worked
        if not tenants.exists(tenant):
            raise ServiceError("unknown-tenant", f"tenant {tenant!r} has no memory store; an ingest creates one")
        pack = service.packs.pack

        def work(store):
            from ..turn import Recall

            return Recall(store, pack, k=k).turn(message, history)

        try:
            turn = await service.on_tenant(request, tenant, work, timeout=s.request_timeout)
        except (TypeError, ValueError) as exc:
            raise history_error(exc) from None
        for stage in ("classify", "embed", "search", "metadata", "context", "trace"):
            add_timing(request, stage, turn.timings.get(stage, 0.0))
        metrics.decided(turn.decision)
        metrics.turn(turn.timings)
        record = turn.to_dict()
        record["trace_id"] = turn.trace_id
        return json_response(record)

    async def ingest(request: Request) -> Response:
        tenant = request.path_params["tenant"]
        service.authorize(request, tenant)
        service.require_ready()
        service.require_tenant(tenant)
        strict = _flag(request, "strict")
        raw = await service.read_body(request, s.max_ingest_bytes, JSONL_TYPES)

        def work(store):
            return store.ingest_jsonl(raw, strict=strict)

        try:
            report = await service.on_tenant(request, tenant, work, timeout=s.ingest_timeout)
        except IngestError as exc:
            raise ServiceError("invalid-ingest", str(exc).splitlines()[0],
                               problems=[p.to_dict() for p in exc.problems]) from None
        for stage in ("parse", "embed", "sql", "index", "save"):
            add_timing(request, stage, report.timings.get(stage, 0.0))
        record = report.to_dict()
        record["source"] = "request body"
        for problem in record["problems"]:
            problem["file"] = "request body"
        return json_response(record)

    async def memory_stats(request: Request) -> Response:
        tenant = request.path_params["tenant"]
        service.authorize(request, tenant)
        service.require_ready()
        tenants = service.require_tenant(tenant)
        if not tenants.exists(tenant):
            raise ServiceError("unknown-tenant", f"tenant {tenant!r} has no memory store; an ingest creates one")
        stats = await service.on_tenant(request, tenant, lambda store: store.stats(), timeout=s.request_timeout)
        stats.pop("path", None)  # where the server keeps it is not the client's business
        return json_response(stats)

    async def delete_item(request: Request) -> Response:
        tenant = request.path_params["tenant"]
        service.authorize(request, tenant)
        service.require_ready()
        tenants = service.require_tenant(tenant)
        source, item_id = request.path_params["source"], request.path_params["id"]
        if source not in tuple(Source):
            raise ServiceError("invalid-request", f"source must be conversation or document, not {source[:40]!r}",
                               field="source")
        if not tenants.exists(tenant):
            raise ServiceError("unknown-tenant", f"tenant {tenant!r} has no memory store; an ingest creates one")

        def work(store):
            return store.delete_conversation(item_id) if source == "conversation" else store.delete_document(item_id)

        if not await service.on_tenant(request, tenant, work, timeout=s.request_timeout):
            raise ServiceError("not-found", f"tenant {tenant!r} has no {source} {item_id!r}")
        return json_response({"source": source, "id": item_id, "deleted": True})

    async def pack_status(request: Request) -> Response:
        service.authorize(request)
        service.require_ready()
        return json_response({**service.packs.status(), **playground.pack_extras(service)})

    async def pack_reload(request: Request) -> Response:
        service.authorize(request, admin=True)
        service.require_ready()
        manager = service.packs
        loop = asyncio.get_running_loop()
        changed = await loop.run_in_executor(None, manager.reload)
        status = manager.status()
        error = manager.last_error
        if not changed and error is not None:
            problems = [p.to_dict() for p in error.problems] if isinstance(error, PackError) else []
            raise ServiceError("pack-rejected", str(error).splitlines()[0], problems=problems, serving=status)
        return json_response({"reloaded": changed, **status})

    async def healthz(request: Request) -> Response:
        return json_response({"status": "ok"})

    async def readyz(request: Request) -> Response:
        memory = s.memory is not None
        model = ("not used" if not memory else "warm" if service.model_warm
                 else "failed" if service.model_error is not None else "loading")
        if not service.ready:
            try:
                service.require_ready()
            except ServiceError as exc:
                exc.extra.update(pack=service.manager.status() if service.manager else None, model=model)
                raise
        embedding = service.embedder.describe() if memory else None
        return json_response({"ready": True, "pack": service.packs.status(), "memory": memory, "model": model,
                              "embedding": embedding})

    async def metrics_endpoint(request: Request) -> Response:
        return Response(metrics.render(), media_type=METRICS_CONTENT_TYPE)

    document = openapi.document(s, keys=service.keys is not None)
    document_bytes = json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")

    async def openapi_json(request: Request) -> Response:
        return Response(document_bytes, media_type="application/json")

    async def problem_type(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in PROBLEM_TYPES:
            raise ServiceError("not-found", f"no problem type {name[:60]!r}")
        status, title, description = PROBLEM_TYPES[name]
        return json_response({"type": type_uri(name), "status": status, "title": title, "description": description})

    return [
        Route("/v1/classify", classify, methods=["POST"]),
        Route("/v1/classify/batch", classify_batch, methods=["POST"]),
        Route("/v1/tenants/{tenant}/turns", turns, methods=["POST"]),
        Route("/v1/tenants/{tenant}/memory", ingest, methods=["POST"]),
        Route("/v1/tenants/{tenant}/memory", memory_stats, methods=["GET"]),
        Route("/v1/tenants/{tenant}/memory/{source}/{id:path}", delete_item, methods=["DELETE"]),
        Route("/v1/pack", pack_status, methods=["GET"]),
        Route("/v1/pack/reload", pack_reload, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/problems/{name}", problem_type, methods=["GET"]),
    ]


# --------------------------------------------------------------------------
# Around every request: request id, Server-Timing, metrics, problems
# --------------------------------------------------------------------------


def _problem_response(scope, error: ServiceError) -> Response:
    body = error.body(instance=scope.get("path"), request_id=scope.get("cleo.request_id"))
    return Response(encode(body), status_code=error.status, media_type=PROBLEM_MEDIA_TYPE, headers=error.headers)


async def _on_service_error(request: Request, exc: ServiceError) -> Response:
    return _problem_response(request.scope, exc)


async def _on_http_exception(request: Request, exc: HTTPException) -> Response:
    if exc.status_code == 405:
        error = ServiceError("method-not-allowed", f"{request.method} is not allowed on {request.url.path}",
                             headers=dict(exc.headers or {}))
    elif exc.status_code == 404:
        error = ServiceError("not-found", f"nothing answers to {request.url.path[:200]}")
    else:
        error = ServiceError("invalid-request", str(exc.detail), status=exc.status_code, headers=dict(exc.headers or {}))
    return _problem_response(request.scope, error)


def _server_timing(total: float, stages) -> bytes:
    parts = [f"app;dur={total * 1000:.3f}"]
    parts += [f"{name};dur={seconds * 1000:.3f}" for name, seconds in stages]
    return ", ".join(parts).encode("ascii")


class Frame:
    """Pure ASGI middleware around every HTTP request.

    Gives the request an id (the client's ``X-Request-ID`` when it is a
    plain token, else a new one), adds ``X-Request-ID`` and
    ``Server-Timing`` (``app``: milliseconds from receiving the request to
    starting the response, then each stage) to the response, counts the
    request in the metrics, and answers any unexpected exception with a 500
    problem carrying the id, logged with its traceback, never sent.
    """

    def __init__(self, app, service: Service):
        self.app = app
        self.service = service

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        request_id = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                candidate = value.decode("latin-1")
                if _REQUEST_ID.fullmatch(candidate):
                    request_id = candidate
                break
        if request_id is None:
            request_id = uuid.uuid4().hex
        scope["cleo.request_id"] = request_id
        metrics = self.service.metrics
        metrics.in_flight.inc()
        answered = {"status": 500, "seconds": None}

        async def send_framed(message):
            if message["type"] == "http.response.start":
                seconds = time.perf_counter() - start
                answered["status"], answered["seconds"] = message["status"], seconds
                headers = list(message.get("headers", ()))
                headers.append((b"x-request-id", request_id.encode("ascii")))
                headers.append((b"server-timing", _server_timing(seconds, scope.get("cleo.timings", ()))))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_framed)
        except ClientDisconnect:
            log.info("request %s: the client went away before sending the whole body", request_id)
            answered["status"] = 499  # as nginx counts it: nobody was left to answer
        except Exception:
            log.exception("request %s: %s %s failed", request_id, scope.get("method"), scope.get("path"))
            if answered["seconds"] is None:
                error = ServiceError("internal-error", f"the request failed inside the service; it is logged as "
                                                       f"request {request_id}")
                with contextlib.suppress(Exception):
                    await _problem_response(scope, error)(scope, receive, send_framed)
        finally:
            metrics.in_flight.dec()
            route = scope.get("route")
            seconds = answered["seconds"] if answered["seconds"] is not None else time.perf_counter() - start
            metrics.request(route.path if route is not None else "unmatched", scope.get("method", ""),
                            answered["status"], seconds)


def create_app(settings: Settings | None = None) -> Starlette:
    """The service as an ASGI app (serve it with uvicorn; :func:`cleo_rules.serve.run` does)."""
    from starlette.middleware import Middleware

    settings = settings or Settings()
    service = Service(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        service.start()
        try:
            yield
        finally:
            await asyncio.get_running_loop().run_in_executor(None, service.stop)

    app = Starlette(
        routes=_endpoints(service) + playground.routes(service),
        middleware=[Middleware(Frame, service=service),
                    Middleware(HostGuard, allowed=settings.allowed_hosts,
                               check_host=settings.keys is None or bool(settings.allowed_hosts))],
        exception_handlers=cast(Any, {ServiceError: _on_service_error, HTTPException: _on_http_exception}),  # Starlette's handler type is not generic in the exception
        lifespan=lifespan,
    )
    app.state.service = service
    return app
