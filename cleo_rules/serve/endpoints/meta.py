"""The service's own endpoints: health, readiness, metrics, its OpenAPI document and its problem types.

None needs a key: ``/healthz`` answers as soon as the process is up,
``/readyz`` says what the service still waits for (503 until it is ready).
Where the server keeps things (the pack's and corpus's paths, errors naming
its files) ``/readyz`` shows only without keys or to a key for every tenant,
as every endpoint that reports the pack does (:func:`.common.serving_status`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from ..problems import PROBLEM_TYPES, ServiceError, type_uri
from ..responses import json_response
from ..routes import endpoint, ref
from .common import serving_status, service_of

__all__ = ["healthz", "metrics", "openapi_json", "problem_type", "readyz", "openapi_schemas"]


def openapi_schemas(settings) -> dict:
    """What /readyz answers when the service is ready."""
    return {
        "Ready": {
            "type": "object", "required": ["ready", "pack", "memory", "model"],
            "properties": {"ready": {"const": True}, "pack": ref("PublicPackStatus"), "memory": {"type": "boolean"},
                           "model": {"enum": ["not used", "warm"]},
                           "embedding": {"type": ["object", "null"], "description": (
                               "The embedding model with memory (null without): backend (onnx or torch), "
                               "model, model_sha256, runtime, threads (applied once, when it loaded)."),
                               "required": ["backend", "model"],
                               "properties": {"backend": {"type": "string"}, "model": {"type": "string"},
                                              "threads": {"type": "integer", "minimum": 1}}}},
        },
    }


@endpoint("GET", "/healthz", summary="The process is up", secured=False)
async def healthz(request: Request) -> Response:
    return json_response({"status": "ok"})


@endpoint("GET", "/readyz", summary="Ready to answer: pack loaded and, with memory, the model warm (the server's "
          "paths only without keys or to a key for every tenant)", ok="Ready", statuses=(503,), secured=False,
          schemas=openapi_schemas)
async def readyz(request: Request) -> Response:
    service = service_of(request)
    shown = service.shows_paths(request)
    memory = service.settings.memory is not None
    model = ("not used" if not memory else "warm" if service.model_warm
             else "failed" if service.model_error is not None else "loading")
    if not service.ready:
        try:
            service.require_ready(detailed=shown)
        except ServiceError as exc:
            exc.extra.update(pack=serving_status(request, service.manager) if service.manager else None, model=model)
            raise
    embedding = service.embedder.describe() if memory else None
    return json_response({"ready": True, "pack": serving_status(request), "memory": memory,
                          "model": model, "embedding": embedding})


@endpoint("GET", "/metrics", summary="Prometheus metrics", secured=False, forbidden=False,
          ok={"description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}})
async def metrics(request: Request) -> Response:
    return Response(service_of(request).metrics.render(), media_type=METRICS_CONTENT_TYPE)


@endpoint("GET", "/openapi.json", summary="This document", secured=False, forbidden=False,
          ok={"description": "OpenAPI 3.1"})
async def openapi_json(request: Request) -> Response:
    """The document built for this app's settings when the app was (``app.state.openapi``, JSON bytes)."""
    return Response(request.app.state.openapi, media_type="application/json")


@endpoint("GET", "/problems/{name}", summary="What a problem type means", secured=False, forbidden=False,
          ok={"description": "The problem type"}, params={"name": {"enum": sorted(PROBLEM_TYPES)}}, statuses=(404,))
async def problem_type(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in PROBLEM_TYPES:
        raise ServiceError("not-found", f"no problem type {name[:60]!r}")
    status, title, description = PROBLEM_TYPES[name]
    return json_response({"type": type_uri(name), "status": status, "title": title, "description": description})
