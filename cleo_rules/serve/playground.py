"""The playground for conversation designers, served by the same application.

``GET /`` is one page (plain HTML, CSS and an ES module under
``cleo_rules/serve/static/``, shipped in the package: no CDN, no build
step, nothing fetched from elsewhere). It runs a conversation through
``/v1/classify/batch`` and reads, besides the service's own endpoints:

``GET /v1/pack/rules``          every rule of the pack serving now, with its ``file`` and ``line``
``GET /v1/pack/source?file=F``  the lines of one file of that pack (its manifest and rule files only)
``POST /v1/pack/regressions``   a turn as a ``regressions.yaml`` case: its YAML, appended to the corpus
                                beside the pack when the service runs with ``--writable-corpus``
``POST /v1/tenants/{t}/recall`` what the tenant's memory recalls for the shaped query and for the raw
                                message, side by side (nothing is traced)

``GET /v1/pack`` also carries, for the page's live loop, the located
``problems`` of the last pack refused and where saved regressions go
(:func:`pack_extras`). The page polls it and runs the conversation again
when the pack's hash changes.
"""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..errors import CleoError, PackError
from ..kinds import DecisionKind
from .problems import ServiceError
from .responses import JSON_TYPES, json_response
from .validate import check_unicode, history_error, parse_json, read_classify, read_turn

if TYPE_CHECKING:
    from ..runtime import PackManager
    from .settings import Settings
    from .tenants import Tenants


class Service(Protocol):
    """What the playground needs of the service (:class:`cleo_rules.serve.app.Service`), which builds it."""

    settings: Settings

    @property
    def packs(self) -> PackManager: ...

    def authorize(self, request: Request, tenant: str | None = None, *, admin: bool = False) -> Any: ...

    def require_ready(self) -> None: ...

    def require_tenant(self, tenant: str) -> Tenants: ...

    async def read_body(self, request: Request, limit: int, types: tuple[str, ...]) -> bytes: ...

    async def off_loop(self, work) -> Any: ...

    async def on_tenant(self, request: Request, tenant: str, work, *, timeout: float) -> Any: ...

__all__ = ["ASSETS", "CSP", "pack_extras", "routes"]

#: the page's files, by the name they are served under, with their media types
ASSETS = {
    "playground.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
}
INDEX = "index.html"
#: the page may load its own files and talk to this service, nothing else
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
MAX_SOURCE_BYTES = 1 << 20
KINDS = tuple(DecisionKind)


def _static(name: str) -> bytes:
    return (resources.files(__package__ or "cleo_rules.serve") / "static" / name).read_bytes()


def _rule_record(rule) -> dict:
    return {"id": rule.id, "kind": rule.kind, "file": rule.file, "line": rule.line,
            "description": getattr(rule, "description", "")}


def pack_files(pack) -> dict[str, Path]:
    """The files of ``pack`` the source endpoint may show, by the name its rules give them (``rule.file``)."""
    from ..pack.sources import display

    root = Path(pack.path).resolve()
    names = {display(Path(pack.path) / "pack.yaml")} | {r.file for r in (*pack.rules, *pack.referent_rules)}
    out = {}
    for name in sorted(names):
        path = Path(name)
        path = (path if path.is_absolute() else Path.cwd() / path).resolve()
        if path == root or root in path.parents:
            out[name] = path
    return out


def _regressions(service: Service) -> tuple[Path, bool]:
    from ..corpus.regressions import regressions_path
    from ..resources import inside_package

    target = regressions_path(service.packs.pack)
    return target, service.settings.writable_corpus and not inside_package(target) and target.parent.is_dir()


def pack_extras(service: Service) -> dict:
    """What ``GET /v1/pack`` adds for the playground: the last refusal's located problems, the regressions file."""
    from ..corpus.files import display

    error = service.packs.last_error
    problems = [p.to_dict() for p in error.problems] if isinstance(error, PackError) else []
    target, writable = _regressions(service)
    return {"problems": problems, "regressions": {"file": display(target), "writable": writable}}


def _read_regression(body, settings) -> tuple[str, list, str, bool]:
    check_unicode(body)
    if not isinstance(body, dict):
        raise ServiceError("invalid-request", "the body must be a JSON object with message, history and expect")
    allowed = ("message", "history", "expect", "write")
    for key in body:
        if key not in allowed:
            raise ServiceError("invalid-request", f"unknown field {key!r}; the body takes {', '.join(allowed)}",
                               field=key)
    message, history = read_classify({k: body[k] for k in ("message", "history") if k in body}, settings)
    expect = body.get("expect")
    if not isinstance(expect, str) or expect not in KINDS:
        raise ServiceError("invalid-request", f"expect must be one of {', '.join(KINDS)}", field="expect")
    write = body.get("write", False)
    if not isinstance(write, bool):
        raise ServiceError("invalid-request", "write must be true or false", field="write")
    return message, history, expect, write


def routes(service: Service) -> list[Route]:
    """The playground's routes for ``service``'s app."""
    s = service.settings
    index = _static(INDEX)
    assets = {name: _static(name) for name in ASSETS}
    page_headers = {"Content-Security-Policy": CSP, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer"}

    async def page(request: Request) -> Response:
        return Response(index, media_type="text/html; charset=utf-8", headers=page_headers)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            raise ServiceError("not-found", f"the playground has no file {name[:60]!r}")
        return Response(assets[name], media_type=ASSETS[name], headers=page_headers)

    async def pack_rules(request: Request) -> Response:
        service.authorize(request)
        service.require_ready()
        pack = service.packs.pack
        return json_response({"pack": pack.name, "version": pack.version, "hash": pack.content_hash,
                              "rules": [_rule_record(r) for r in (*pack.rules, *pack.referent_rules)]})

    async def pack_source(request: Request) -> Response:
        service.authorize(request)
        service.require_ready()
        pack = service.packs.pack
        name = request.query_params.get("file")
        if not name:
            raise ServiceError("invalid-request", "file is required: a file of the pack, as its rules name it",
                               field="file")
        files = pack_files(pack)
        path = files.get(name)
        if path is None:
            raise ServiceError("not-found", f"pack {pack.name} has no file {name[:200]!r}; its files: "
                                            f"{', '.join(files)}")
        try:
            size = path.stat().st_size
            if size > MAX_SOURCE_BYTES:
                raise ServiceError("payload-too-large", f"{name} is {size} bytes; the playground shows files up to "
                                                        f"{MAX_SOURCE_BYTES}")
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ServiceError("not-found", f"{name} cannot be read now: {exc.strerror or exc}") from None
        return json_response({"file": name, "hash": pack.content_hash, "lines": text.splitlines()})

    async def regressions(request: Request) -> Response:
        from ..corpus.files import display
        from ..corpus.regressions import regression_entry, save_regression
        service.authorize(request)
        service.require_ready()
        raw = await service.read_body(request, s.max_body_bytes, JSON_TYPES)
        message, history, expect, write = await service.off_loop(lambda: _read_regression(parse_json(raw), s))
        if write:
            service.authorize(request, admin=True)
        pack = service.packs.pack
        target, _ = _regressions(service)

        def work():
            entry = regression_entry(message, history, expect, pack=pack)
            return entry, save_regression(pack, entry, write=False, path=target)

        loop = asyncio.get_running_loop()
        try:
            entry, preview = await loop.run_in_executor(None, work)
        except (TypeError, ValueError) as exc:
            raise history_error(exc) from None
        shown = display(target)
        if not write:
            return json_response(preview.to_dict(shown))
        if not s.writable_corpus:
            raise ServiceError("corpus-not-writable", "this service was started without --writable-corpus; "
                                                      "copy the case into the regressions file by hand",
                               yaml=preview.yaml, file=shown)
        try:
            saved = await loop.run_in_executor(None, lambda: save_regression(pack, entry, path=target))
        except CleoError as exc:
            raise ServiceError("corpus-not-writable", str(exc), code=exc.code, yaml=preview.yaml, file=shown) from None
        return json_response(saved.to_dict(shown))

    async def recall(request: Request) -> Response:
        tenant = request.path_params["tenant"]
        service.authorize(request, tenant)
        service.require_ready()
        tenants = service.require_tenant(tenant)
        raw = await service.read_body(request, s.max_body_bytes, JSON_TYPES)
        message, history, k = await service.off_loop(lambda: read_turn(parse_json(raw), s))
        if not tenants.exists(tenant):
            raise ServiceError("unknown-tenant", f"tenant {tenant!r} has no memory store; an ingest creates one")
        pack = service.packs.pack

        def work(store):
            decision = pack.classify(message, history)
            shaped = store.search(decision.query, k=k).results if decision.query is not None else None
            raw = store.search(message, k=k).results if message.strip() else []
            return decision, shaped, raw

        try:
            decision, shaped, raw = await service.on_tenant(request, tenant, work, timeout=s.request_timeout)
        except (TypeError, ValueError) as exc:
            raise history_error(exc) from None
        record = decision.to_dict()
        record.pop("message", None)
        return json_response({"decision": record,
                              "shaped": [r.to_dict() for r in shaped] if shaped is not None else None,
                              "raw": [r.to_dict() for r in raw]})

    return [
        Route("/", page, methods=["GET"]),
        Route("/playground/{name}", asset, methods=["GET"]),
        Route("/v1/pack/rules", pack_rules, methods=["GET"]),
        Route("/v1/pack/source", pack_source, methods=["GET"]),
        Route("/v1/pack/regressions", regressions, methods=["POST"]),
        Route("/v1/tenants/{tenant}/recall", recall, methods=["POST"]),
    ]
