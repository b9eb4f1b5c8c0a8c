"""The rule pack serving now: its status, a reload, and what the playground reads of it.

``GET /v1/pack``                the pack's status, the last refusal's located ``problems`` and where saved
                                regressions go (:func:`pack_extras`); its paths, its corpus and the refusal
                                only to an operator (:func:`.common.serving_status`)
``POST /v1/pack/reload``        load the pack again; it serves only if it passes the acceptance gate
``GET /v1/pack/rules``          every rule of the pack, with its ``file`` and ``line``; each file named from its
                                pack (``<pack team>/corrections.yaml``) to any key but an operator's
                                (:func:`.common.file_namer`); ``shown``, the file as people read it (an
                                installed pack's as ``<installed pack cleo-en>/corrections.yaml``, as
                                ``classify`` names it; :func:`shown_names`)
``GET /v1/pack/source?file=F``  the lines of one file of the pack (its manifest and rule files only), by the name
                                ``/v1/pack/rules`` gives the same key
``POST /v1/pack/regressions``   a turn as a ``regressions.yaml`` case: its YAML, appended to the corpus
                                beside the pack when the service runs with ``--writable-corpus``
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from ... import families
from ...errors import CleoError, PackError
from ..body import parse_json, read_regression, request_schemas
from ..problems import ServiceError
from ..responses import JSON_TYPES, json_response
from ..routes import endpoint, ref
from .common import admit, file_namer, serving_status as status_for

if TYPE_CHECKING:
    from ..service import Service

__all__ = ["pack_extras", "pack_files", "pack_reload", "pack_rules", "pack_source", "pack_status", "regressions",
           "openapi_schemas"]

MAX_SOURCE_BYTES = 1 << 20
#: how a file of the pack is named to a request (:func:`cleo_rules.serve.endpoints.common.file_namer`)
FILE_NAMED = ("The file: to a key for every tenant (or without keys) as the server names it, relative to its "
              "working directory or whole; to any other key from the pack it belongs to, "
              "`<pack NAME>/follow_ups.yaml` or `<base pack NAME>/follow_ups.yaml`.")
ADMIN = " (a key for every tenant, *)"


def _status_schemas() -> dict:
    """The pack's status, as an operator and as any other key sees it, its bases and a located problem."""
    nullable_str = {"type": ["string", "null"]}
    return {
        "PackStatus": {
            "type": "object",
            "description": "The pack serving and the last refusal. path, corpus, last_error and problems (where the "
                           "server keeps things, or errors naming its files) only when the service has no keys or "
                           "the request a key for every tenant; to another key regressions.file is named from the "
                           "directory holding the pack and its corpus (corpus/regressions.yaml).",
            "required": ["pack", "version", "hash", "reloads", "rejections", "watching"],
            "properties": {
                "pack": {"type": "string"}, "version": {"type": "string"}, "hash": {"type": "string"},
                "path": {"type": "string"}, "require": nullable_str, "reloads": {"type": "integer"},
                "rejections": {"type": "integer"}, "last_error": nullable_str, "watching": {"type": "boolean"},
                "problems": {"type": "array", "items": ref("PackProblem"),
                             "description": "The last refused pack's problems, located; empty after a success."},
                "corpus": nullable_str, "gate": {"type": "string"}, "bases": ref("PackBases"),
                "regressions": {"type": "object", "required": ["file", "writable"],
                                "description": "Where saved regressions go, and whether this service appends them.",
                                "properties": {"file": {"type": "string"}, "writable": {"type": "boolean"}}},
                "editing": {"type": "object", "required": ["writable"],
                            "description": "Whether the playground edits the pack's own files (--writable-pack).",
                            "properties": {"writable": {"type": "boolean"}}},
            },
        },
        "PublicPackStatus": {
            "type": "object",
            "description": "The pack's status as /readyz shows it: without path, corpus and last_error (where the "
                           "server keeps things) unless the service has no keys or the request a key for every "
                           "tenant, which see the whole PackStatus.",
            "required": ["pack", "version", "hash", "reloads", "rejections", "watching"],
            "properties": {
                "pack": {"type": "string"}, "version": {"type": "string"}, "hash": {"type": "string"},
                "require": nullable_str, "reloads": {"type": "integer"}, "rejections": {"type": "integer"},
                "watching": {"type": "boolean"}, "gate": {"type": "string"}, "bases": ref("PackBases"),
            },
        },
        "PackBases": {
            "type": "array", "description": "The packs the pack is built on (extends:), in the order they apply; "
                                            "empty for a pack that extends nothing.",
            "items": {"type": "object", "required": ["name", "version", "hash"],
                      "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                                     "hash": {"type": "string"}}},
        },
        "PackProblem": {
            "type": "object",
            "required": ["code", "severity", "file", "line", "col", "message", "help"],
            "properties": {
                "code": {"type": "string"}, "severity": {"enum": ["error", "warning", "note"]},
                "file": {"type": "string"},
                "line": {"type": "integer"}, "col": {"type": "integer"}, "pointer": {"type": "string"},
                "rule": nullable_str, "message": {"type": "string"}, "help": {"type": "string"},
                "pack": {"type": ["string", "null"], "description": "In a pack built on others, the pack whose file "
                                                                    "the problem is in."},
            },
        },
    }


def openapi_schemas(settings) -> dict:
    """The pack serving now, as its status and the playground read it; a regression request (limits from
    ``settings``) and what saving it answers."""
    return {
        **_status_schemas(),
        "PackRules": {
            "type": "object", "required": ["pack", "version", "hash", "rules", "bases", "disabled", "replaced"],
            "properties": {
                "pack": {"type": "string"}, "version": {"type": "string"}, "hash": {"type": "string"},
                "rules": {"type": "array", "items": {
                    "type": "object", "required": ["id", "kind", "file", "line", "pack"],
                    "properties": {"id": {"type": "string"},
                                   "kind": {"enum": list(families.rule_kinds())},
                                   "file": {"type": "string", "description": FILE_NAMED},
                                   "shown": {"type": "string", "description": (
                                       "The file as a page shows it: an installed pack's file named from its "
                                       "pack (<installed pack cleo-en>/corrections.yaml), any other as file.")},
                                   "line": {"type": "integer"}, "description": {"type": "string"},
                                   "pack": {"type": "string", "description": "The pack the rule comes from: this "
                                                                             "one, or a base."}}}},
                "bases": ref("PackBases"),
                "disabled": ref("LeftOut"), "replaced": ref("LeftOut"),
            },
        },
        "LeftOut": {
            "type": "array", "description": "Rules of a base the pack leaves out: `by` the pack that disabled or "
                                            "replaced it, `of` the pack it was of.",
            "items": {"type": "object", "required": ["rule", "by", "of"],
                      "properties": {"rule": {"type": "string"}, "by": {"type": "string"}, "of": {"type": "string"}}},
        },
        "PackSource": {
            "type": "object", "required": ["file", "hash", "lines"],
            "properties": {"file": {"type": "string", "description": FILE_NAMED}, "hash": {"type": "string"},
                           "lines": {"type": "array", "items": {"type": "string"}}},
        },
        "RegressionSaved": {
            "type": "object", "required": ["id", "yaml", "file", "written", "open"],
            "properties": {"id": {"type": "string"}, "yaml": {"type": "string",
                                                             "description": "The case, as an item of `cases:`."},
                           "file": {"type": "string"}, "written": {"type": "boolean"},
                           "open": {"type": "boolean", "description": (
                               "The pack does not get the case right yet, so it is saved `open: true`: `check` "
                               "reports it without failing, and asks for it to be closed once it passes.")}},
        },
        **request_schemas(settings, "RegressionRequest"),
        "Reloaded": {"allOf": [ref("PackStatus"), {"type": "object", "required": ["reloaded"],
                                                    "properties": {"reloaded": {"type": "boolean"}}}]},
    }


def pack_files(pack, *, paths: bool = True) -> dict[str, Path]:
    """The files of ``pack`` the source endpoint may show: those of the pack and of the packs it is built on (read
    only), each by the name ``GET /v1/pack/rules`` gives it: as the loader names it (``rule.file``, relative to the
    working directory or whole) with ``paths``, an operator's; else from its pack (``<pack team>/corrections.yaml``,
    :func:`~cleo_rules.pack.files.pack_file_names`)."""
    from ...pack.files import pack_file_names
    from ...pack.discovery import display

    roots = [Path(where).resolve() for where in (pack.path, *(b.path for b in pack.composition.bases))]
    names = {display(Path(where) / "pack.yaml") for where in (pack.path, *(b.path for b in pack.composition.bases))}
    names |= {r.file for r in pack.all_rules()}
    relative = None if paths else pack_file_names(pack)
    out = {}
    for name in sorted(names):
        path = Path(name)
        path = (path if path.is_absolute() else Path.cwd() / path).resolve()
        if not any(path == root or root in path.parents for root in roots):
            continue
        if relative is None:
            out[name] = path
        elif name in relative:
            out[relative[name].name] = path
    return out


def _regressions_file(service: Service, request: Request, target: Path) -> str:
    """How ``target``, the regressions file, is named to ``request``: as the server names it to an operator
    (:meth:`~cleo_rules.serve.service.Service.shows_paths`), else from the directory that holds the pack and its
    corpus (``corpus/regressions.yaml``), which says nothing of where that is."""
    from ...corpus.files import display

    if service.shows_paths(request):
        return display(target)
    home = Path(service.packs.pack.path).resolve().parent
    return target.relative_to(home).as_posix() if target.is_relative_to(home) else target.name


def _regressions(service: Service) -> tuple[Path, bool]:
    """Where saved regressions go for the pack serving now, and whether this service appends them."""
    from ...corpus.regressions import regressions_path
    from ...resources import inside_package

    target = regressions_path(service.packs.pack)
    return target, service.settings.writable_corpus and not inside_package(target) and target.parent.is_dir()


def pack_extras(service: Service, request: Request) -> dict:
    """What ``GET /v1/pack`` adds for the playground: the last refusal's located problems, the regressions file
    (each as ``request`` may see it), and whether the pack's own files are edited here (``--writable-pack``)."""
    error = service.packs.last_error
    problems = [p.to_dict() for p in error.problems] if isinstance(error, PackError) else []
    target, writable = _regressions(service)
    return {"problems": problems, "regressions": {"file": _regressions_file(service, request, target),
                                                  "writable": writable},
            "editing": {"writable": service.settings.writable_pack}}


@endpoint("GET", "/v1/pack", summary="The rule pack serving now", ok="PackStatus", statuses=(503,), schemas=openapi_schemas)
async def pack_status(request: Request) -> Response:
    service = admit(request)
    return json_response(status_for(request, **pack_extras(service, request)))


@endpoint("POST", "/v1/pack/reload",
          summary=lambda keys: "Load the pack again; it serves only if it passes the acceptance gate"
          + (ADMIN if keys else ""), ok="Reloaded", statuses=(422, 503), schemas=openapi_schemas)
async def pack_reload(request: Request) -> Response:
    manager = admit(request, admin=True).packs
    changed = await asyncio.get_running_loop().run_in_executor(None, manager.reload)
    status = status_for(request, manager)  # an operator's request: whole
    error = manager.last_error
    if not changed and error is not None:
        problems = [p.to_dict() for p in error.problems] if isinstance(error, PackError) else []
        raise ServiceError("pack-rejected", str(error).splitlines()[0], problems=problems, serving=status)
    return json_response({"reloaded": changed, **status})


def shown_names(pack, files) -> dict[str, str]:
    """How each of ``files`` (named as the loader names them) is named to people: a file of an installed pack (one
    in an installed distribution: the bundled pack of a wheel, a pack installed with pip) from that pack's directory,
    ``<installed pack cleo-en>/corrections.yaml``, as ``classify`` and ``check`` name it (a path into
    site-packages says nothing to a reader); any other as it is."""
    from ...resources import in_installed_distribution

    roots = [(Path(where).resolve(), who) for where, who in
             ((pack.path, pack.name), *((b.path, b.name) for b in pack.composition.bases))
             if in_installed_distribution(where)]
    out = {}
    for name in files:
        out[name] = name
        if not roots:
            continue
        path = Path(name)
        path = (path if path.is_absolute() else Path.cwd() / path).resolve()
        for root, who in roots:
            if root in path.parents:
                out[name] = f"<installed pack {who}>/{path.relative_to(root).as_posix()}"
                break
    return out


@endpoint("GET", "/v1/pack/rules", summary="Every rule of the pack serving now, with its file and line",
          ok="PackRules", statuses=(503,), schemas=openapi_schemas)
async def pack_rules(request: Request) -> Response:
    service = admit(request)
    pack = service.packs.pack
    named = file_namer(request, pack)
    every = pack.all_rules()
    # to an operator the names are the server's paths: an installed pack's are named from the pack
    shown = shown_names(pack, {r.file for r in every}) if service.shows_paths(request) else {}
    rules = [{"id": r.id, "kind": r.kind, "file": named(r.file), "shown": shown.get(r.file) or named(r.file),
              "line": r.line, "description": getattr(r, "description", ""),
              "pack": pack.origin(r)} for r in every]
    return json_response({"pack": pack.name, "version": pack.version, "hash": pack.content_hash, "rules": rules,
                          **pack.composition.to_dict()})


@endpoint("GET", "/v1/pack/source", summary="The lines of one of the pack's files (its manifest and rule files)",
          ok="PackSource", statuses=(400, 404, 413, 503), schemas=openapi_schemas,
          query=({"name": "file", "in": "query", "required": True, "schema": {"type": "string"},
                  "description": "The file as /v1/pack/rules names it to the same key (its `file`); no other name."},))
async def pack_source(request: Request) -> Response:
    service = admit(request)
    pack = service.packs.pack
    name = request.query_params.get("file")
    if not name:
        raise ServiceError("invalid-request", "file is required: a file of the pack, as its rules name it",
                           field="file")
    files = pack_files(pack, paths=service.shows_paths(request))
    path = files.get(name)
    if path is None:
        raise ServiceError("not-found", f"pack {pack.name} has no file {name[:200]!r}; its files: {', '.join(files)}")
    try:
        size = path.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise ServiceError("payload-too-large", f"{name} is {size} bytes; the playground shows files up to "
                                                    f"{MAX_SOURCE_BYTES}")
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ServiceError("not-found", f"{name} cannot be read now: {exc.strerror or exc}") from None
    return json_response({"file": name, "hash": pack.content_hash, "lines": text.splitlines()})


@endpoint("POST", "/v1/pack/regressions",
          summary=lambda keys: "A turn as a regressions case: its YAML, appended to the corpus beside the pack with "
          "write=true (--writable-corpus" + ("; a key for every tenant, *" if keys else "") + ")",
          body="RegressionRequest", ok="RegressionSaved", statuses=(400, 408, 409, 413, 415, 503), schemas=openapi_schemas)
async def regressions(request: Request) -> Response:
    from ...corpus.regressions import regression_entry, save_regression

    service = admit(request)
    settings = service.settings
    raw = await service.read_body(request, settings.max_body_bytes, JSON_TYPES)
    message, history, expect, write = await service.off_loop(lambda: read_regression(parse_json(raw), settings))
    if write:
        service.authorize(request, admin=True)
    pack = service.packs.pack
    target, _ = _regressions(service)

    def work():
        entry = regression_entry(message, history, expect, pack=pack)
        return entry, save_regression(pack, entry, write=False, path=target)

    loop = asyncio.get_running_loop()
    entry, preview = await loop.run_in_executor(None, work)
    shown = _regressions_file(service, request, target)
    if not write:
        return json_response(preview.to_dict(shown))
    if not settings.writable_corpus:
        raise ServiceError("corpus-not-writable", "this service was started without --writable-corpus; copy the "
                                                  "case into the regressions file by hand",
                           yaml=preview.yaml, file=shown)
    try:
        saved = await loop.run_in_executor(None, lambda: save_regression(pack, entry, path=target))
    except CleoError as exc:  # the regressions file cannot take the case
        raise ServiceError("corpus-not-writable", str(exc), code=exc.code, yaml=preview.yaml, file=shown) from None
    return json_response(saved.to_dict(shown))
