"""The Host and Origin a request may carry: the defence against DNS rebinding and cross-site writes.

A service without keys answers whoever reaches it, which is why it binds
loopback only. That alone does not keep browsers out: a web page can make its
own name resolve to 127.0.0.1 (DNS rebinding) and then call the service as a
page of its own site, reading every answer. The request still names that
site in its ``Host`` header. So without keys the service answers only a
``Host`` that names this machine: ``localhost``, a loopback address
(``127.0.0.1``, ``[::1]``), with or without a port, or a name given with
``--allowed-hosts`` (a reverse proxy on this machine). Anything else is
refused with 403 ``host-not-allowed``, as Vite, webpack-dev-server and Rails
refuse a host they were not told of. With keys the ``Host`` is not checked
unless ``--allowed-hosts`` is given: every request needs a key, and a browser
never adds one to a page's request by itself.

A request that can change something (any method but GET, HEAD and OPTIONS:
an ingest, a delete, a regression written, a reload) and carries an
``Origin`` header must come from the service's own origin: the same scheme,
host and port as the request itself (its ``Host`` and the scheme it came in
by, ``X-Forwarded-Proto`` from a proxy on this machine included). Otherwise it
is refused with 403 ``origin-not-allowed``, keys or not. The service sends no
CORS headers, so no page of another origin can use it anyway; this keeps a
write that needs no answer (a form post) from happening at all. A request
without ``Origin`` (curl, a runtime's HTTP client) passes.

Nothing here imports Starlette: :class:`HostGuard` is plain ASGI.
"""

from __future__ import annotations

import ipaddress
import re

from .problems import MEDIA_TYPE, ServiceError, encode_json

__all__ = ["HostGuard", "LOOPBACK_NAMES", "allowed_host", "host_name", "parse_allowed_hosts", "same_origin"]

#: the names every service answers to, besides any loopback address
LOOPBACK_NAMES = ("localhost",)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_HOST_SHOWN = 100  # characters of a refused Host or Origin quoted back in the problem

# a Host header or the authority of an Origin: a name or IPv4 address, or an IPv6 address in brackets; a port
_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9._~-]+))(?::(?P<port>[0-9]{1,5}))?", re.ASCII)
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_ALLOWED = re.compile(rf"\.?{_LABEL}(?:\.{_LABEL})*", re.ASCII)


def host_name(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a ``Host`` value, lower case, an IPv6 address in brackets; None when malformed."""
    m = _HOST.fullmatch(value.strip().lower())
    if m is None:
        return None
    port = int(m["port"]) if m["port"] is not None else None
    if port is not None and port > 65535:
        return None
    if m["v6"] is not None:
        try:
            return f"[{ipaddress.IPv6Address(m['v6'])}]", port
        except ValueError:
            return None
    return m["name"].removesuffix("."), port


def _loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_host(value: str, allowed: tuple[str, ...] = ()) -> bool:
    """Whether a ``Host`` value names this machine or one of ``allowed`` (``.example.com``: it and its subdomains)."""
    parsed = host_name(value)
    if parsed is None:
        return False
    name = parsed[0]
    if _loopback(name):
        return True
    for entry in allowed:
        if entry.startswith("."):
            if name == entry[1:] or name.endswith(entry):
                return True
        elif name == entry:
            return True
    return False


def parse_allowed_hosts(values) -> tuple[str, ...]:
    """``--allowed-hosts`` values (each a name or several, comma-separated) as lower-case names, checked.

    A name (``cleo.internal``), a domain and its subdomains (``.example.com``)
    or an IP address; no scheme, port or wildcard. Raises :class:`ValueError`
    naming the first entry that is none of those.
    """
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        for entry in str(value).split(","):
            entry = entry.strip().lower()
            if not entry:
                continue
            name = entry.removesuffix(".") if not entry.startswith("[") else entry
            try:
                address = ipaddress.ip_address(name.strip("[]"))
            except ValueError:
                if _ALLOWED.fullmatch(name) is None:
                    raise ValueError(f"allowed host {entry[:MAX_HOST_SHOWN]!r} is not a host name: give a name "
                                     f"(cleo.example.com), a domain with its subdomains (.example.com) or an IP "
                                     f"address, without scheme, port or wildcard") from None
                out.append(name)
            else:
                out.append(f"[{address}]" if address.version == 6 else str(address))
    return tuple(dict.fromkeys(out))


def same_origin(origin: str, scheme: str, host: str | None) -> bool:
    """Whether an ``Origin`` value is the origin of a request that came in by ``scheme`` to ``host`` (its Host)."""
    scheme = scheme.lower()
    theirs, sep, authority = origin.strip().lower().partition("://")
    if not sep or host is None:
        return False
    mine, other = host_name(host), host_name(authority)
    if mine is None or other is None or theirs != scheme:
        return False
    default = DEFAULT_PORTS.get(scheme)
    return mine[0] == other[0] and (mine[1] or default) == (other[1] or default)


class HostGuard:
    """Pure ASGI middleware: refuses a foreign ``Host`` (when ``check_host``) and a write from another origin.

    Placed inside the middleware that gives every request its id, so a
    refusal is a problem+json like any other, counted in the metrics.
    """

    def __init__(self, app, *, allowed: tuple[str, ...] = (), check_host: bool = True):
        self.app = app
        self.allowed = allowed
        self.check_host = check_host

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = origin = None
        for name, value in scope["headers"]:
            if name == b"host" and host is None:
                host = value.decode("latin-1")
            elif name == b"origin" and origin is None:
                origin = value.decode("latin-1")
        error = None
        if self.check_host and host is not None and not allowed_host(host, self.allowed):
            error = ServiceError("host-not-allowed", f"this service does not answer to the host {host[:MAX_HOST_SHOWN]!r}: "
                                                     f"it answers to {', '.join(self._names())}")
        elif origin is not None and scope.get("method", "GET") not in SAFE_METHODS and \
                not same_origin(origin, scope.get("scheme", "http"), host):
            error = ServiceError("origin-not-allowed", f"a {scope.get('method')} from origin {origin[:MAX_HOST_SHOWN]!r} "
                                                       f"is refused: only pages of this service's own origin may "
                                                       f"change anything")
        if error is None:
            await self.app(scope, receive, send)
            return
        body = encode_json(error.body(instance=scope.get("path"), request_id=scope.get("cleo.request_id")))
        await send({"type": "http.response.start", "status": error.status,
                    "headers": [(b"content-type", MEDIA_TYPE.encode("ascii")),
                                (b"content-length", str(len(body)).encode("ascii"))]})
        await send({"type": "http.response.body", "body": body})

    def _names(self) -> list[str]:
        return ["localhost", "127.0.0.1", "[::1]", *self.allowed]
