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
``openapi``    the OpenAPI document, built from the settings
``service``    what one app holds (settings, keys, pack, stores) and the checks its endpoints share
``endpoints``  the endpoints, one module per area, and the route table
``playground`` the playground's page and files
``app``        the app: routes, the middleware around them, problems for errors

Needs the ``serve`` extra (``pip install 'cleo-rules[serve]'``); the
memory store's dependencies only with ``--memory``. Importing this package
imports neither Starlette nor an embedding runtime.
"""

from __future__ import annotations

import math

from .settings import DEFAULTS, ServeSettings, Settings, is_loopback

__all__ = ["DEFAULTS", "ServeSettings", "Settings", "create_app", "run"]


def create_app(settings: ServeSettings | None = None):
    """The ASGI app for ``settings`` (see :func:`cleo_rules.serve.app.create_app`)."""
    from .app import create_app as _create

    return _create(settings)


def run(settings: ServeSettings, *, on_listening=None) -> None:
    """Serve ``settings`` with uvicorn until SIGTERM or SIGINT, then drain and close.

    Refuses (:class:`~cleo_rules.errors.UsageError`) to bind anything but
    loopback without a key file. On SIGTERM the listening socket closes,
    requests in flight finish (up to ``drain_timeout`` seconds), the pack
    watcher stops and every store is closed with its indexes saved.
    ``on_listening(host, port)`` is called once the socket listens (with
    port 0, the port the system chose).
    """
    from ..errors import UsageError

    if settings.keys is None and not is_loopback(settings.host):
        raise UsageError(f"without --keys the service only binds loopback (127.0.0.1, ::1, localhost), not "
                         f"{settings.host}; give --keys FILE to let other machines in")
    import uvicorn

    app = create_app(settings)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None,
                            access_log=settings.access_log, lifespan="on",
                            timeout_graceful_shutdown=math.ceil(settings.drain_timeout))
    server_class = uvicorn.Server
    if on_listening is not None:
        class Server(uvicorn.Server):
            async def startup(self, sockets=None):
                await super().startup(sockets)
                if self.started:
                    for listening in self.servers:
                        for sock in listening.sockets:
                            on_listening(*sock.getsockname()[:2])
                            return

        server_class = Server
    server_class(config).run()
