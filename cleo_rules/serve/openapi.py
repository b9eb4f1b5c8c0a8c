"""The OpenAPI 3.1 document served at ``/openapi.json``, generated from the endpoint registry.

Every endpoint registered (:mod:`cleo_rules.serve.routes`; the bundled ones
in :mod:`cleo_rules.serve.endpoints`, the playground and ``/docs``) is one
operation here, from what its registration says beside its function: the
summary, request body, answer, problems, parameters and the component
schemas it names, built from the settings, so the limits the document states
(``maxLength``, ``maxItems``, ``maximum``) are the ones the running service
applies. The request schemas say exactly what :mod:`cleo_rules.serve.body`
accepts; a history item that is an object is judged by the classifier's own
history reader, which decides what it may hold, once its ``content`` is
within the same limit as a history string. No string or field name may hold a
lone surrogate, which JSON Schema cannot state: the descriptions say it.
"""

from __future__ import annotations

from importlib import metadata

from ..tenant_names import TENANT_SYNTAX
from .problems import PROBLEM_TYPES, type_uri
from .routes import Endpoint, documented_path, ref, registered

__all__ = ["document", "problem_schemas"]

#: the schema of a path parameter no registration gives one of its own
PATH_PARAMS = {"tenant": {"type": "string", "pattern": f"^{TENANT_SYNTAX}$"}}


def problem_schemas() -> dict:
    """The problem every error is answered as (``Problem``)."""
    return {
        "Problem": {
            "type": "object",
            "description": "RFC 9457 problem details. `field` names the request field at fault.",
            "required": ["type", "title", "status", "detail"],
            "properties": {
                "type": {"enum": [type_uri(n) for n in PROBLEM_TYPES]},
                "title": {"type": "string"}, "status": {"type": "integer"}, "detail": {"type": "string"},
                "instance": {"type": "string"}, "request_id": {"type": "string"}, "field": {"type": "string"},
                "code": {"type": "string", "description": "The error code (docs/errors.md), where one applies."},
                "stored_lines": {"type": "integer", "minimum": 0, "description": (
                    "An ingest that stopped part way: lines 1 to stored_lines of the body are stored.")},
                "first_unstored_line": {"type": "integer", "minimum": 1, "description": (
                    "An ingest that stopped part way: send the body again from this line on.")},
                "report": {**ref("IngestReport"), "description": "What an ingest stopped by SIGTERM did."},
            },
        },
    }


def _problems(*statuses: int) -> dict:
    described = {
        400: "The body or a field is wrong (`field` names it); a string or field name holding a lone surrogate "
             "(`\\ud800`, not Unicode) is refused with `code` E319.",
        401: "No valid key.",
        403: "The key does not cover this tenant; or the Host is not one the service answers to, or a change "
             "came from another origin (`type` says which).",
        404: "Unknown tenant or item.", 413: "The body is over the limit.", 415: "Wrong Content-Type.",
        408: "The body did not arrive within --read-timeout seconds; the connection is closed.",
        409: "The regression was not written (`yaml` holds it); the pack's files are not edited here; or the "
             "tenant's PostgreSQL schema is not known to be its own (E308: an operator resolves it with `cleo-rules "
             "memory tenants`); `type` says which.",
        412: "The file changed on disk since the edit began; nothing was written.",
        422: "The pack on disk was rejected.",
        503: "Not ready, queue full, too many bodies being received, over the time limit, or stopping "
             "(`Retry-After`); an ingest that stopped part way says which lines are stored (`stored_lines`).",
    }
    return {str(s): {"description": described[s],
                     "content": {"application/problem+json": {"schema": ref("Problem")}}} for s in statuses}



def operation(entry: Endpoint, keys: bool) -> dict:
    """What the document says of one registered endpoint, for a service with ``keys`` or without."""
    summary = entry.summary(keys) if callable(entry.summary) else entry.summary
    if isinstance(entry.ok, dict):
        ok = entry.ok
    elif entry.ok:
        ok = {"description": "OK", "content": {"application/json": {"schema": ref(entry.ok)}}}
    else:
        ok = {"description": "OK"}
    statuses = set(entry.statuses)
    if entry.forbidden:  # 403 is every operation's: a key's tenants, a foreign Host or Origin
        statuses |= {403} | ({401} if keys and entry.secured else set())
    doc: dict = {"summary": summary, "responses": {"200": ok, **_problems(*sorted(statuses))}}
    if entry.body is not None:
        schema = ref(entry.body) if isinstance(entry.body, str) else entry.body
        doc["requestBody"] = {"required": True, "content": {entry.body_type: {"schema": schema}}}
    parameters = [{"name": name, "in": "path", "required": True,
                   "schema": entry.params.get(name) or PATH_PARAMS.get(name) or {"type": "string"}}
                  for name in entry.path_params()]
    parameters += list(entry.query)
    if parameters:
        doc["parameters"] = parameters
    if not entry.secured:
        doc["security"] = []
    elif keys:
        doc["security"] = [{"bearer": []}]
    return doc


def components(settings, endpoints) -> dict:
    """The component schemas the endpoints name, and the problem; a name given two schemas is an error."""
    schemas = problem_schemas()
    builders = []
    for entry in endpoints:
        if entry.schemas is not None and entry.schemas not in builders:
            builders.append(entry.schemas)
    for build in builders:
        for name, schema in build(settings).items():
            if schemas.setdefault(name, schema) != schema:
                raise ValueError(f"two endpoints give the schema {name} two definitions")
    return schemas


def document(settings, *, keys: bool, endpoints=None) -> dict:
    """The OpenAPI document for a service started with ``settings``: every registered endpoint (or ``endpoints``)."""
    if endpoints is None:
        from . import endpoints as bundled  # registers the bundled endpoints

        endpoints = bundled.registered()
    try:
        version = metadata.version("cleo-rules")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        version = "0"
    paths: dict = {}
    for entry in endpoints:
        paths.setdefault(documented_path(entry.path), {})[entry.method.lower()] = operation(entry, keys)
    parts = {"schemas": components(settings, endpoints)}
    if keys:
        parts["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer",
                                               "description": "A key from the service's key file."}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "cleo-rules", "version": version,
                 "description": "Decide, before retrieval, what an assistant with memory should search for on "
                                "each user turn; run turns against each tenant's memory. "
                                + ("Every request's Host must name this machine or an allowed host. " if
                                   not keys or settings.allowed_hosts else "")
                                + "A request that changes something and carries an Origin must come from this "
                                  "service's own origin (403 otherwise)."},
        "paths": paths,
        "components": parts,
    }
