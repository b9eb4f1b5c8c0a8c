"""Editing the pack's own files from the playground (``--writable-pack``): a thin layer over :mod:`cleo_rules.editing`.

``GET /v1/pack/files``          the files that can be edited (manifest, the files it lists, the corpus's own)
``GET /v1/pack/file?file=F``    one of them: its text and SHA-256
``PUT /v1/pack/file?file=F``    its new text (``text/plain`` or YAML, UTF-8, at most 1 MiB), with ``If-Match: "SHA"``
                                naming the text it started from: judged with the whole pack by the acceptance gate,
                                written (atomically) only if the pack passes, then served at once; ``rebuild=true``
                                builds the generated corpus again with it (an edit of templates, slots or limits)

A service started without ``--writable-pack`` lists no file and answers 409
``pack-not-writable`` to the others. Every edit is a write: behind the Host
and Origin guard (:mod:`cleo_rules.serve.hosts`, a foreign ``Origin`` is a
403) and, with keys, a key for every tenant.

An edit that was judged is answered 200 whether it was written or not:
``written`` and ``ok`` say which, ``problems`` lists every finding at its
``file:line:col`` (a designer's half-typed edit is an answer to show, not a
failed request). An edit whose file changed on disk meanwhile is a 412
``edit-conflict``, nothing written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from ...errors import CleoError, UsageError
from ..problems import ServiceError
from ...reading.load import MAX_FILE_BYTES
from ..responses import json_response
from ..routes import endpoint, ref
from .common import admit, flag

if TYPE_CHECKING:
    from ..service import Service

__all__ = ["TEXT_TYPES", "edit_file", "file_text", "pack_files_list"]

TEXT_TYPES = ("text/plain", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml")

#: the file a request names, as /v1/pack/files names it
FILE_QUERY = {"name": "file", "in": "query", "required": True, "schema": {"type": "string"},
              "description": "The file as /v1/pack/files names it."}


def openapi_schemas(settings) -> dict:
    """The files the playground edits (--writable-pack), one file's text, and an edit judged."""
    nullable_str = {"type": ["string", "null"]}
    return {
        "PackFiles": {
            "type": "object", "required": ["writable", "files"],
            "properties": {"writable": {"type": "boolean"}, "files": {"type": "array", "items": {
                "type": "object", "required": ["file", "role", "bytes", "sha256"],
                "properties": {"file": {"type": "string"},
                               "role": {"enum": ["manifest", "rules", "corpus"]},
                               "bytes": {"type": ["integer", "null"]}, "sha256": nullable_str}}}},
        },
        "PackFileText": {
            "type": "object", "required": ["file", "text", "sha256"],
            "properties": {"file": {"type": "string"}, "text": {"type": "string"},
                           "sha256": {"type": "string", "description": "What If-Match names to edit this text."}},
        },
        "Edited": {
            "type": "object", "required": ["file", "written", "ok", "sha256", "pack", "errors", "problems"],
            "description": "An edit judged with the whole pack: written only when `ok` (and the text is new).",
            "properties": {
                "file": {"type": "string"}, "written": {"type": "boolean", "description": (
                    "Whether the new text is on disk: false when the pack does not pass with it (`ok` false), or "
                    "when it is the file's text already")},
                "ok": {"type": "boolean", "description": "Whether the pack passes the acceptance gate with the edit."},
                "sha256": {"type": "string", "description": "The file on disk now: If-Match for the next edit."},
                "pack": {"type": ["object", "null"], "description": "The edited pack: name, version, hash (null "
                                                                    "when it does not compile)."},
                "errors": {"type": "integer"},
                "problems": {"type": "array", "items": ref("PackProblem"),
                             "description": "Every finding at its file:line:col, errors first, then warnings and "
                                            "notes (an open case, one to close)."},
                "serving": {"type": "object", "description": "The pack serving now: name, version, hash."},
                "rebuilt": {"type": "array", "items": {"type": "string"},
                            "description": "The generated corpus files written or removed with the edit (rebuild)."},
            },
        },
    }


def _writable(service: Service, request: Request) -> None:
    if not service.settings.writable_pack:
        raise ServiceError("pack-not-writable", "this service was started without --writable-pack: the pack's files "
                                                "are read only (GET /v1/pack/source shows them)")
    service.authorize(request, admin=True)


def _name(request: Request) -> str:
    name = request.query_params.get("file")
    if not name:
        raise ServiceError("invalid-request", "file is required: a file of the pack, as /v1/pack/files names it",
                           field="file")
    return name


def _refused(exc: UsageError) -> ServiceError:
    if exc.code == "E241":
        return ServiceError("not-found", str(exc), code=exc.code)
    return ServiceError("pack-not-writable", str(exc), code=exc.code)


@endpoint("GET", "/v1/pack/files",
          summary="The pack's own files the playground edits (--writable-pack; none without it)", ok="PackFiles",
          statuses=(503,), schemas=openapi_schemas)
async def pack_files_list(request: Request) -> Response:
    from ...editing import editable_files

    service = admit(request)
    if not service.settings.writable_pack:
        return json_response({"writable": False, "files": []})
    service.authorize(request, admin=True)
    pack_dir = service.packs.pack_dir
    files = await service.off_loop(lambda: [f.to_dict() for f in editable_files(pack_dir)])
    return json_response({"writable": True, "files": files})


@endpoint("GET", "/v1/pack/file", summary="One file the playground edits: its text and SHA-256", ok="PackFileText",
          query=(FILE_QUERY,), statuses=(400, 404, 409, 503), schemas=openapi_schemas)
async def file_text(request: Request) -> Response:
    from ...editing import read_file

    service = admit(request)
    _writable(service, request)
    name = _name(request)
    pack_dir = service.packs.pack_dir
    try:
        text, sha = await service.off_loop(lambda: read_file(pack_dir, name))
    except UsageError as exc:
        raise _refused(exc) from None
    except CleoError as exc:
        raise ServiceError("not-found", str(exc), code=exc.code) from None
    return json_response({"file": name, "text": text, "sha256": sha}, headers={"ETag": f'"{sha}"'})


@endpoint("PUT", "/v1/pack/file",
          summary=lambda keys: "Edit one file: the whole pack is judged by the acceptance gate with the new text, "
          "written (atomically) and served only if it passes; answered 200 either way, `written` says "
          "(--writable-pack" + ("; a key for every tenant, *" if keys else "") + ")",
          body={"type": "string", "maxLength": MAX_FILE_BYTES,
                "description": "The file's new text, UTF-8, at most 1 MiB (every pack file's limit)."},
          body_type="text/plain", ok="Edited",
          query=(FILE_QUERY, {"name": "If-Match", "in": "header", "schema": {"type": "string"},
                              "description": "The SHA-256 of the text the edit started from, quoted: 412 when the "
                                             "file is another now."},
                 {"name": "rebuild", "in": "query", "schema": {"type": "boolean"},
                  "description": "Build corpus/generated/ again from the edited pack (as `cleo-rules corpus build`), "
                                 "judge it and write it with the edit: for an edit of templates, slots or limits, "
                                 "which leaves the corpus stale."}),
          statuses=(400, 404, 408, 409, 412, 413, 415, 503), schemas=openapi_schemas)
async def edit_file(request: Request) -> Response:
    from ...editing import EditConflict, edit_file as edit

    service = admit(request)
    _writable(service, request)
    name = _name(request)
    try:
        raw = await service.read_body(request, MAX_FILE_BYTES, TEXT_TYPES)
    except ServiceError as exc:
        if exc.name == "payload-too-large":
            raise ServiceError("payload-too-large", f"{name[:200]} would be over the limit of {MAX_FILE_BYTES} bytes "
                                                    f"(1 MiB) every pack file is held to; nothing was written",
                               code="E114") from None
        raise
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ServiceError("invalid-request", "the file's text must be UTF-8", field="body") from None
    base = request.headers.get("if-match")
    rebuild = flag(request, "rebuild")
    packs = service.packs
    pack_dir, require = packs.pack_dir, packs.require
    try:
        # judged off the loop; the whole pack and its corpus run, so the request timeout does not apply
        done = await _off_loop(lambda: edit(pack_dir, name, text, base=base, require=require, rebuild=rebuild))
    except EditConflict as exc:
        raise ServiceError("edit-conflict", str(exc), code=exc.code) from None
    except UsageError as exc:
        raise _refused(exc) from None
    if done.accepted is not None:
        await _off_loop(lambda: packs.adopt(done.accepted))  # the pack judged, served as loaded from the files written
    elif done.written:
        await _off_loop(packs.reload)  # accepted at once: the gate's verdict on these very files is remembered
    status = packs.status()
    return json_response({**done.to_dict(), "serving": {"pack": status["pack"], "version": status["version"],
                                                        "hash": status["hash"]}})


async def _off_loop(work):
    import asyncio

    return await asyncio.get_running_loop().run_in_executor(None, work)
