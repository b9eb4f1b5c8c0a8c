"""Receiving request bodies: a deadline for each, and one budget of bytes for all of them.

A body must arrive whole within ``read_timeout`` seconds of the service
starting to read it; past that it is answered 408 (``request-timeout``) and
the connection is closed, so a client sending a byte now and then holds
nothing for long. (The headers have their own deadline, kept by the server's
protocol: :mod:`cleo_rules.serve.server`.)

All the bodies being read at once hold at most ``max_body_bytes_in_flight``
bytes (:class:`BodyBudget`, counted as bytes arrive). A body whose
``Content-Length`` does not fit in what is left is answered 503
(``server-busy``, ``Retry-After``) before a byte of it is read; a body sent
in chunks is refused the same way at the chunk that would go over. So many
large bodies with their last byte withheld cannot make the process buffer
more than the budget.

Every answer given before the whole body was read closes the connection
(:class:`~cleo_rules.serve.app.Frame` adds ``Connection: close``), so the
rest of the body is never read.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request

from .problems import RETRY_AFTER, ServiceError
from .responses import JSON_TYPES

__all__ = ["BodyBudget", "receive_body"]


class BodyBudget:
    """The bytes of request bodies being read now, all requests together, and their limit.

    Used on the event loop's thread only (no lock): :meth:`take` and
    :meth:`give` run between awaits.
    """

    def __init__(self, limit: int):
        self.limit = int(limit)
        self.in_use = 0

    def fits(self, size: int) -> bool:
        return self.in_use + size <= self.limit

    def take(self, size: int) -> bool:
        """Count ``size`` more bytes as held; False (nothing counted) when they would go over the limit."""
        if not self.fits(size):
            return False
        self.in_use += size
        return True

    def give(self, size: int) -> None:
        self.in_use -= size


def _busy(budget: BodyBudget, size: int | None) -> ServiceError:
    what = f"its {size} bytes" if size is not None else "it"
    return ServiceError("server-busy", f"the service is receiving {budget.in_use} bytes of request bodies already; "
                                       f"{what} would go over its limit of {budget.limit}; retry later",
                        headers={"Retry-After": RETRY_AFTER})


def _check_type(request: Request, types: tuple[str, ...]) -> None:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media not in types and not (types is JSON_TYPES and media.endswith("+json")):
        got = f"Content-Type {media!r}" if media else "no Content-Type"
        raise ServiceError("unsupported-media-type", f"expected {types[0]}, got {got}", accept=list(types))


async def receive_body(request: Request, limit: int, types: tuple[str, ...], *, budget: BodyBudget,
                       timeout: float, metrics=None) -> bytes:
    """The request's body: of a media type in ``types`` (415), at most ``limit`` bytes (413), whole within
    ``timeout`` seconds (408), within ``budget`` (503 with ``Retry-After``)."""
    _check_type(request, types)
    length = request.headers.get("content-length")
    declared = int(length) if length is not None and length.isascii() and length.isdigit() else None
    if declared is not None and declared > limit:
        raise ServiceError("payload-too-large", f"the body is {declared} bytes; the limit is {limit}")
    if declared is not None and not budget.fits(declared):
        if metrics is not None:
            metrics.bodies_refused.inc()
        raise _busy(budget, declared)
    chunks: list[bytes] = []
    held = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                if held + len(chunk) > limit:
                    raise ServiceError("payload-too-large", f"the body is over the limit of {limit} bytes")
                if not budget.take(len(chunk)):
                    if metrics is not None:
                        metrics.bodies_refused.inc()
                    raise _busy(budget, declared)
                held += len(chunk)
                chunks.append(chunk)
        return b"".join(chunks)
    except TimeoutError:
        if metrics is not None:
            metrics.read_timeouts.inc()
        raise ServiceError("request-timeout", f"the body did not arrive within {timeout:g} s ({held} bytes came); "
                                              f"the connection is closed") from None
    finally:
        budget.give(held)
