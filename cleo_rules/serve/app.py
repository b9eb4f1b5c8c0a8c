"""The ASGI application: the endpoints, and the middleware and error handling around them.

:func:`create_app` builds a Starlette app from :class:`~cleo_rules.serve.settings.ServeSettings`:
the routes of :mod:`cleo_rules.serve.endpoints`, a
:class:`~cleo_rules.serve.service.Service` in ``app.state.service`` (which every
endpoint reads from its request), the :class:`~cleo_rules.serve.hosts.HostGuard`
and :class:`Frame` around every request, and the handlers that answer problem+json.

A :class:`~cleo_rules.serve.problems.ServiceError` raised anywhere is
answered as its problem (a body the service refuses is one,
:class:`~cleo_rules.serve.body.BadRequest`); any other exception is a fault
of the service, a 500 problem carrying the request id, logged with its
traceback, never sent. A request the server gives up at the end of the drain
after SIGTERM is answered a 503 ``stopping`` problem. An answer given before
the request's body was read whole closes the connection, so the rest of that
body is never read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
import uuid
from typing import Any, cast

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from . import endpoints, openapi, playground  # endpoints first: the API's routes before the pages'
from .hosts import HostGuard
from .problems import MEDIA_TYPE as PROBLEM_MEDIA_TYPE
from .problems import ServiceError, encode_json
from .service import Service
from .settings import ServeSettings

log = logging.getLogger("cleo_rules.serve")

__all__ = ["Frame", "Service", "create_app"]

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


# --------------------------------------------------------------------------
# Around every request: request id, Server-Timing, metrics, problems
# --------------------------------------------------------------------------


def _problem_response(scope, error: ServiceError) -> Response:
    body = error.body(instance=scope.get("path"), request_id=scope.get("cleo.request_id"))
    return Response(encode_json(body), status_code=error.status, media_type=PROBLEM_MEDIA_TYPE, headers=error.headers)


async def _on_service_error(request: Request, exc: ServiceError) -> Response:
    return _problem_response(request.scope, exc)


async def _on_http_exception(request: Request, exc: HTTPException) -> Response:
    if exc.status_code == 405:
        error = ServiceError("method-not-allowed", f"{request.method} is not allowed on {request.url.path}",
                             headers=dict(exc.headers or {}))
    elif exc.status_code == 404:
        error = ServiceError("not-found", f"nothing answers to {request.url.path[:200]}")
    else:
        error = ServiceError("invalid-request", str(exc.detail), status=exc.status_code, headers=dict(exc.headers or {}))
    return _problem_response(request.scope, error)


def _server_timing(total: float, stages) -> bytes:
    parts = [f"app;dur={total * 1000:.3f}"]
    parts += [f"{name};dur={seconds * 1000:.3f}" for name, seconds in stages]
    return ", ".join(parts).encode("ascii")


def _has_body(scope) -> bool:
    """Whether the request's headers announce a body (a Content-Length other than 0, or chunks)."""
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"0", b"")):
            return True
    return False


class Frame:
    """Pure ASGI middleware around every HTTP request.

    Gives the request an id (the client's ``X-Request-ID`` when it is a
    plain token, else a new one), adds ``X-Request-ID`` and
    ``Server-Timing`` (``app``: milliseconds from receiving the request to
    starting the response, then each stage) to the response, and
    ``Connection: close`` when the request's body was not read whole, counts
    the request in the metrics, and answers any unexpected exception with a
    500 problem carrying the id, logged with its traceback, never sent (a
    request given up at the end of the drain: a 503 ``stopping`` problem).
    """

    def __init__(self, app, service: Service):
        self.app = app
        self.service = service

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        request_id = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                candidate = value.decode("latin-1")
                if _REQUEST_ID.fullmatch(candidate):
                    request_id = candidate
                break
        if request_id is None:
            request_id = uuid.uuid4().hex
        scope["cleo.request_id"] = request_id
        metrics = self.service.metrics
        metrics.in_flight.inc()
        answered = {"status": 500, "seconds": None}
        body = {"read": not _has_body(scope)}

        async def receive_framed():
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body", False):
                body["read"] = True
            return message

        async def send_framed(message):
            if message["type"] == "http.response.start":
                seconds = time.perf_counter() - start
                answered["status"], answered["seconds"] = message["status"], seconds
                headers = list(message.get("headers", ()))
                headers.append((b"x-request-id", request_id.encode("ascii")))
                headers.append((b"server-timing", _server_timing(seconds, scope.get("cleo.timings", ()))))
                if not body["read"]:  # the rest of the body is not wanted: end the connection after the answer
                    headers.append((b"connection", b"close"))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive_framed, send_framed)
        except asyncio.CancelledError:  # the server gives the request up: the drain after SIGTERM is over
            log.warning("request %s: %s %s given up at the end of the drain", request_id, scope.get("method"),
                        scope.get("path"))
            if answered["seconds"] is None:
                error = ServiceError("stopping", "the service is stopping and gave this request up at the end of "
                                                 "its drain time; retry it", headers={"Retry-After": "1"})
                with contextlib.suppress(Exception):
                    await _problem_response(scope, error)(scope, receive, send_framed)
        except ClientDisconnect:
            log.info("request %s: the client went away before sending the whole body", request_id)
            answered["status"] = 499  # as nginx counts it: nobody was left to answer
        except Exception:
            log.exception("request %s: %s %s failed", request_id, scope.get("method"), scope.get("path"))
            if answered["seconds"] is None:
                error = ServiceError("internal-error", f"the request failed inside the service; it is logged as "
                                                       f"request {request_id}")
                with contextlib.suppress(Exception):
                    await _problem_response(scope, error)(scope, receive, send_framed)
        finally:
            metrics.in_flight.dec()
            route = scope.get("route")
            seconds = answered["seconds"] if answered["seconds"] is not None else time.perf_counter() - start
            metrics.request(route.path if route is not None else "unmatched", scope.get("method", ""),
                            answered["status"], seconds)


def create_app(settings: ServeSettings | None = None) -> Starlette:
    """The service as an ASGI app (serve it with uvicorn; :func:`cleo_rules.serve.run` does)."""
    from starlette.middleware import Middleware

    settings = settings or ServeSettings()
    service = Service(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        service.start()
        try:
            yield
        finally:
            await asyncio.get_running_loop().run_in_executor(None, service.stop)

    registered = endpoints.registered()
    app = Starlette(
        routes=endpoints.routes(registered),
        middleware=[Middleware(Frame, service=service),
                    Middleware(HostGuard, allowed=settings.allowed_hosts,
                               check_host=settings.keys is None or bool(settings.allowed_hosts))],
        exception_handlers=cast(Any, {ServiceError: _on_service_error, HTTPException: _on_http_exception}),  # Starlette's handler type is not generic in the exception
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.openapi = json.dumps(openapi.document(settings, keys=service.keys is not None,
                                                    endpoints=registered), ensure_ascii=False,
                                   indent=1).encode("utf-8")
    app.state.playground = playground.load_files()
    return app
