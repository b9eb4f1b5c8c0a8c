"""The service's endpoints: module-level functions, each reading the app's service from the request.

``common``    what every endpoint shares: :func:`~.common.admit` (key, readiness, memory),
              :func:`~.common.on_store` (the tenant's store), :func:`~.common.decision_record`
``classify``  ``/v1/classify``, its batch, and ``/v1/explain``
``memory``    the tenants' turns, recall, ingest, stats and deletes
``pack``      the rule pack: status, reload, rules, source files, regressions
``editing``   the pack's own files edited from the playground (``--writable-pack``)
``meta``      health, readiness, metrics, the OpenAPI document, the problem types

:data:`ROUTES` is the route table the app is built from (the playground's
page and files, and the OpenAPI document's page, :mod:`cleo_rules.serve.api_page`,
included); the OpenAPI document lists exactly these.
"""

from __future__ import annotations

from starlette.routing import Route

from .. import api_page, playground
from . import classify, editing, memory, meta, pack

__all__ = ["ROUTES"]

ROUTES = [
    Route("/v1/classify", classify.classify, methods=["POST"]),
    Route("/v1/classify/batch", classify.classify_batch, methods=["POST"]),
    Route("/v1/explain", classify.explain, methods=["POST"]),
    Route("/v1/tenants/{tenant}/turns", memory.turns, methods=["POST"]),
    Route("/v1/tenants/{tenant}/memory", memory.ingest, methods=["POST"]),
    Route("/v1/tenants/{tenant}/memory", memory.memory_stats, methods=["GET"]),
    Route("/v1/tenants/{tenant}/memory/{source}/{id:path}", memory.delete_item, methods=["DELETE"]),
    Route("/v1/pack", pack.pack_status, methods=["GET"]),
    Route("/v1/pack/reload", pack.pack_reload, methods=["POST"]),
    Route("/healthz", meta.healthz, methods=["GET"]),
    Route("/readyz", meta.readyz, methods=["GET"]),
    Route("/metrics", meta.metrics, methods=["GET"]),
    Route("/openapi.json", meta.openapi_json, methods=["GET"]),
    Route("/docs", api_page.page, methods=["GET"]),
    Route("/docs/{name}", api_page.asset, methods=["GET"]),
    Route("/problems/{name}", meta.problem_type, methods=["GET"]),
    Route("/", playground.page, methods=["GET"]),
    Route("/playground/{name}", playground.asset, methods=["GET"]),
    Route("/v1/pack/rules", pack.pack_rules, methods=["GET"]),
    Route("/v1/pack/source", pack.pack_source, methods=["GET"]),
    Route("/v1/pack/regressions", pack.regressions, methods=["POST"]),
    Route("/v1/tenants/{tenant}/recall", memory.recall, methods=["POST"]),
    Route("/v1/pack/files", editing.pack_files_list, methods=["GET"]),
    Route("/v1/pack/file", editing.file_text, methods=["GET"]),
    Route("/v1/pack/file", editing.edit_file, methods=["PUT"]),
]
