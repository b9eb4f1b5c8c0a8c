"""What every endpoint shares: the service a request may use, its tenant's store, decisions as answered.

Each endpoint reads the app's :class:`~cleo_rules.serve.service.Service`
through :func:`admit`, which also answers the checks every ``/v1`` request
passes first (a key, readiness, memory for a tenant). Work on a tenant's
store goes through :func:`on_store`, which answers for a tenant without one.

Where the server keeps things (the pack's and the corpus's paths, a refused
pack's reason and located problems, which name its files) only an operator
sees: a request to a service without keys, or with a key for every tenant.
:meth:`Service.shows_paths <cleo_rules.serve.service.Service.shows_paths>`
decides it for every endpoint that reports the pack: :func:`admit` (a 503's
reason), :func:`serving_status` (``/readyz``, ``GET /v1/pack``, a reload),
the regressions file ``/v1/pack`` and ``/v1/pack/regressions`` name, and
the names of the pack's files (:func:`file_namer`: ``/v1/pack/rules`` and
``/v1/pack/source``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath
from typing import TYPE_CHECKING, cast

from starlette.requests import Request

from ..problems import ServiceError

if TYPE_CHECKING:
    from ..service import Service

__all__ = ["JSONL_TYPES", "PRIVATE", "add_timings", "admit", "decision_record", "file_namer", "flag", "on_store",
           "serving_status", "service_of"]

JSONL_TYPES = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines")

#: the members of the pack's status that say where the server keeps things, or may (an error naming a file,
#: problems placed at its files): an operator's only
PRIVATE = ("path", "corpus", "last_error", "problems")


def service_of(request: Request) -> Service:
    """The :class:`~cleo_rules.serve.service.Service` of the request's app."""
    return cast("Service", request.app.state.service)


def admit(request: Request, tenant: str | None = None, *, admin: bool = False) -> Service:
    """The app's service, once the request may use it: a key that covers ``tenant`` (or, with ``admin``,
    every tenant): 401/403, a malformed tenant name 400; the service ready: 503 with ``Retry-After``; and
    for a ``tenant``, a service with memory: 404."""
    service = service_of(request)
    service.authorize(request, tenant, admin=admin)
    service.require_ready(detailed=service.shows_paths(request))
    if tenant is not None:
        service.require_memory()
    return service


def serving_status(request: Request, manager=None, **extra) -> dict:
    """The status of the pack serving (``manager``, else the service's) with ``extra`` members, as ``request``
    may see it: whole to an operator (:meth:`~cleo_rules.serve.service.Service.shows_paths`), to any other
    without :data:`PRIVATE`."""
    service = service_of(request)
    status = {**(manager if manager is not None else service.packs).status(), **extra}
    if service.shows_paths(request):
        return status
    return {k: v for k, v in status.items() if k not in PRIVATE}


def file_namer(request: Request, pack) -> Callable[[str], str]:
    """How a file of ``pack`` (named as the loader names it: a rule's ``file``, a problem's) is named to
    ``request``: as the server names it to an operator (:meth:`~cleo_rules.serve.service.Service.shows_paths`),
    else from the pack it belongs to (``<pack team>/corrections.yaml``, ``<base pack cleo-en>/follow_ups.yaml``:
    :func:`~cleo_rules.pack.files.pack_file_names`), a file of none of them by its file name alone."""
    if service_of(request).shows_paths(request):
        return lambda name: name
    from ...pack.files import pack_file_names

    names = pack_file_names(pack)
    return lambda name: names[name].name if name in names else PurePath(name).name


async def on_store(request: Request, tenant: str, work, *, timeout: float | None = None, create: bool = False):
    """``work(store)`` on ``tenant``'s store, on the tenant's own thread; its result.

    A tenant without a store is a 404 (only an ingest, ``create``, makes
    one); a full queue, the time limit (``timeout``, default the request
    timeout) and a store that cannot be used just now are 503s.
    """
    service = service_of(request)
    if not create and not await service.store_exists(tenant):
        raise ServiceError("unknown-tenant", f"tenant {tenant!r} has no memory store; an ingest creates one")
    seconds = service.settings.request_timeout if timeout is None else timeout
    return await service.on_tenant(request, tenant, work, timeout=seconds)


def decision_record(decision) -> dict:
    """A decision as ``classify --jsonl`` writes it: its ``to_dict()`` without the message."""
    record = decision.to_dict()
    record.pop("message", None)
    return record


def add_timings(request: Request, timings, stages=None) -> None:
    """Add stage timings to the response's ``Server-Timing``: ``timings`` is ``{stage: seconds}`` (only
    ``stages``, in their order, each 0 when missing) or ``[(stage, seconds)]``."""
    pairs = [(stage, timings.get(stage, 0.0)) for stage in stages] if stages is not None else list(timings)
    request.scope.setdefault("cleo.timings", []).extend(pairs)


def flag(request: Request, name: str) -> bool:
    """A true/false query parameter (absent: false); a 400 naming it when it is neither."""
    value = request.query_params.get(name)
    if value is None or value.lower() in ("0", "false", "no", ""):
        return False
    if value.lower() in ("1", "true", "yes"):
        return True
    raise ServiceError("invalid-request", f"{name} must be true or false, not {value[:40]!r}", field=name)
