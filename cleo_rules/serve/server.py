"""Serving the app with uvicorn: a deadline for a request's headers, SIGTERM's drain, SIGHUP's key reload.

:func:`serve` runs the app (:func:`cleo_rules.serve.run` calls it). What it
sets of uvicorn, besides the address:

* the HTTP protocol is h11's, with a deadline (:class:`DeadlineProtocol`):
  a request's headers must arrive within ``read_timeout`` seconds of their
  first byte (of the connection, for its first request), else the connection
  is closed, after a 408 problem when part of them came. uvicorn keeps its
  own limits: ``timeout_keep_alive`` (5 s: an idle connection between
  requests is closed) and h11's 16 KiB for the request line and headers.
  The body's deadline is the app's (:mod:`cleo_rules.serve.receive`).
* SIGTERM (or SIGINT) starts the drain (:meth:`Service.drain
  <cleo_rules.serve.service.Service.drain>`): the socket stops listening,
  requests in flight have until ``drain_timeout`` seconds after the signal,
  then uvicorn gives up the rest (each answered a 503 problem), and the
  stores are closed within what is left of it.
* SIGHUP reads the key file again (:meth:`Service.reload_keys
  <cleo_rules.serve.service.Service.reload_keys>`).
"""

from __future__ import annotations

import logging
import math
import os
import signal
import threading
import time
from typing import Any, cast

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .problems import encode_json, problem_body

log = logging.getLogger("cleo_rules.serve")

__all__ = ["DeadlineProtocol", "serve"]


def _late_answer(seconds: float) -> bytes:
    """A whole HTTP/1.1 408 response, problem+json, for headers that came too late (no request to frame)."""
    body = encode_json(problem_body("request-timeout", f"the request's headers did not arrive within {seconds:g} s; "
                                                  f"the connection is closed", status=408))
    head = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/problem+json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body))
    return head + body


class DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, with a deadline for each request's headers.

    The clock starts when the connection opens and again at the first byte
    of each later request, and stops when the headers are whole; if it runs
    out first, the connection is closed (after a 408 problem when part of
    the headers came). ``read_timeout`` and ``on_late`` (called once per
    connection closed so) are set by :func:`protocol`.
    """

    read_timeout: float = 30.0
    on_late: Any = None

    def connection_made(self, transport) -> None:  # type: ignore[override]  # uvicorn narrows the transport
        super().connection_made(transport)
        self._deadline = None
        self._arm()

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.read_timeout, self._late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _in_request(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def data_received(self, data: bytes) -> None:
        if not self._in_request():
            self._arm()  # these bytes begin a request's headers
        super().data_received(data)
        if self._in_request():
            self._disarm()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _late(self) -> None:
        self._deadline = None
        if self._in_request() or self.transport.is_closing():
            return
        if self.conn.trailing_data[0]:  # part of a request came: say why it ends
            self.transport.write(_late_answer(self.read_timeout))
        if self.on_late is not None:
            self.on_late()
        self.transport.close()


def protocol(read_timeout: float, on_late=None) -> type[DeadlineProtocol]:
    """A :class:`DeadlineProtocol` class with ``read_timeout`` seconds for headers."""
    return cast(type[DeadlineProtocol], type("Protocol", (DeadlineProtocol,),
                                             {"read_timeout": read_timeout, "on_late": staticmethod(on_late)
                                              if on_late is not None else None}))


class _Server(uvicorn.Server):
    """uvicorn's server, telling the service when the drain starts and when it listens."""

    def __init__(self, config, service, on_listening=None):
        super().__init__(config)
        self.service = service
        self.on_listening = on_listening

    def handle_exit(self, sig, frame) -> None:
        self.service.drain()  # the first signal starts the clock
        super().handle_exit(sig, frame)

    async def startup(self, sockets=None):
        await super().startup(sockets)
        if self.started and self.on_listening is not None:
            for listening in self.servers:
                for sock in listening.sockets:
                    self.on_listening(*sock.getsockname()[:2])
                    return

    async def shutdown(self, sockets=None):
        deadline = self.service.drain_deadline
        if deadline is not None:  # what is left of the drain, from the signal on (not from now)
            cast(Any, self.config).timeout_graceful_shutdown = max(deadline - time.monotonic(), 0.0)
        await super().shutdown(sockets)


def serve(app, settings, *, on_listening=None) -> None:
    """Serve ``app`` (built for ``settings``) with uvicorn until SIGTERM or SIGINT, then drain and return."""
    service = app.state.service
    metrics = service.metrics
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None,
                            access_log=settings.access_log, lifespan="on",
                            http=protocol(settings.read_timeout, metrics.read_timeouts.inc),
                            timeout_graceful_shutdown=math.ceil(settings.drain_timeout))
    server = _Server(config, service, on_listening)
    hangup = None
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGHUP"):
        hangup = signal.signal(signal.SIGHUP, lambda signum, frame: service.reload_keys())
    try:
        server.run()
    finally:
        if hangup is not None:
            signal.signal(signal.SIGHUP, hangup)
        if service.abandoned:  # threads still writing past the drain deadline: do not wait for them
            logging.shutdown()
            os._exit(1)
