"""The service's endpoints: module-level functions, each reading the app's service from the request.

``common``    what every endpoint shares: :func:`~.common.admit` (key, readiness, memory),
              :func:`~.common.on_store` (the tenant's store), :func:`~.common.decision_record`
``classify``  ``/v1/classify``, its batch, and ``/v1/explain``
``memory``    the tenants' turns, recall, ingest, stats and deletes
``pack``      the rule pack: status, reload, rules, source files, regressions
``editing``   the pack's own files edited from the playground (``--writable-pack``)
``meta``      health, readiness, metrics, the OpenAPI document, the problem types

Each endpoint is registered beside its function (:func:`cleo_rules.serve.routes.endpoint`),
with what the OpenAPI document says of it; importing this package registers
them all, and the playground's page and files and the OpenAPI document's page
(:mod:`cleo_rules.serve.api_page`). :func:`registered` is every endpoint, the
bundled ones and any registered since; an app routes exactly those registered
when it is built, and its OpenAPI document lists exactly those.
"""

from __future__ import annotations

from . import classify, editing, memory, meta, pack  # registered first: routed (and documented) in this order
from .. import api_page, playground  # the pages after the API
from ..routes import registered, routes

__all__ = ["ROUTES", "registered", "routes"]

MODULES = (classify, memory, pack, editing, meta, playground, api_page)  # the modules that register endpoints
#: the routes of the bundled endpoints (an app is built from :func:`routes`, every endpoint registered when it is)
ROUTES = routes()
