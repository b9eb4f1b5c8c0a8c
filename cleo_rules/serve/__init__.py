"""``cleo-rules serve``: one HTTP service for assistant runtimes in any language.

An ASGI application (Starlette, served by uvicorn) over the library: the
classifier behind a hot-reloading :class:`~cleo_rules.PackManager`, turns
against one memory store per tenant, keys that name the tenants they may
use, problem+json errors, limits, readiness and Prometheus metrics. One
process; scale out by running more behind a load balancer (pack reload,
counters and the store cache are per process).

::

    from cleo_rules.serve import ServeSettings, create_app, run
    run(ServeSettings(memory="/srv/cleo-memory", keys="/etc/cleo/keys", host="0.0.0.0"))

The modules, each with one job:

``settings``   the configuration and its limits (:class:`ServeSettings`); tenant names
``keys``       API keys, stored hashed, and the tenants each may use
``hosts``      the Host and Origin a request may carry
``problems``   RFC 9457 problem details, one type per kind of error
``body``       reading request bodies: JSON shape and limits, the field at fault (:class:`~.body.BadRequest`)
``tenants``    the tenants' stores: lazily opened, LRU-bounded, one thread each, one shared model
``metrics``    the Prometheus registry of one app
``routes``     the endpoint registry: an endpoint is one function and one registration
``openapi``    the OpenAPI document, generated from the registry and the settings
``service``    what one app holds (settings, keys, pack, stores) and the checks its endpoints share
``endpoints``  the endpoints, one module per area, and the route table
``playground`` the playground's page and files
``receive``    receiving request bodies: a deadline each, one budget of bytes for all
``app``        the app: routes, the middleware around them, problems for errors
``server``     uvicorn, as the service runs it: the headers' deadline, SIGTERM's drain, SIGHUP

Needs the ``serve`` extra (``pip install 'cleo-rules[serve]'``); the
memory store's dependencies only with ``--memory``. Importing this package
imports neither Starlette nor an embedding runtime.
"""

from __future__ import annotations

from .settings import DEFAULTS, ServeSettings, is_loopback

__all__ = ["DEFAULTS", "ServeSettings", "create_app", "run"]


def create_app(settings: ServeSettings | None = None):
    """The ASGI app for ``settings`` (see :func:`cleo_rules.serve.app.create_app`)."""
    from .app import create_app as _create

    return _create(settings)


def run(settings: ServeSettings, *, on_listening=None) -> None:
    """Serve ``settings`` with uvicorn until SIGTERM or SIGINT, then drain and close.

    Refuses (:class:`~cleo_rules.errors.UsageError`) to bind anything but
    loopback without a key file, and to edit a bundled or installed pack
    (``writable_pack``, E240). On SIGTERM the listening socket closes,
    requests in flight finish (until ``drain_timeout`` seconds after the
    signal; an ingest still running at half of it stops after its batch and
    says which lines are stored), the pack watcher stops and every store is
    closed with its indexes saved, within what is left of the drain. SIGHUP
    reads the key file again. ``on_listening(host, port)`` is called once
    the socket listens (with port 0, the port the system chose). See
    :mod:`cleo_rules.serve.server` for what is set of uvicorn.
    """
    from ..errors import UsageError

    if settings.keys is None and not is_loopback(settings.host):
        raise UsageError(f"without --keys the service only binds loopback (127.0.0.1, ::1, localhost), not "
                         f"{settings.host}; give --keys FILE to let other machines in")
    if settings.writable_pack:  # a bundled or installed pack is never edited: refused before anything starts
        from ..editing import refuse_unwritable
        from ..pack.discovery import resolve_pack

        refuse_unwritable(resolve_pack(settings.pack))
    from .server import serve

    serve(create_app(settings), settings, on_listening=on_listening)
