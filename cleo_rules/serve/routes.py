"""The endpoint registry: an endpoint is one function and one registration, routed and documented from it.

Each endpoint function is registered with :func:`endpoint`, which says next
to the function what the OpenAPI document says of it: its summary, request
body, answer, the problems it may answer and its parameters, and the
component schemas it names (a builder of ``{name: schema}`` from the
settings, so the limits the document states are the running service's).
The app's route table (:func:`routes`) and the OpenAPI document
(:func:`cleo_rules.serve.openapi.document`) are both built from the one
registry, so nothing is routed that is not documented, and the reverse::

    @endpoint("GET", "/v1/example", summary="An example", ok="Example",
              schemas=lambda settings: {"Example": {"type": "object"}})
    async def example(request): ...

A path parameter is documented from the route's path (``{tenant}``,
``{id:path}``); ``params`` gives one a schema of its own. ``summary`` may be
a function of whether the service has keys. A registration outside the
package (a test's) is taken back with :func:`unregister`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Endpoint", "HTML_PAGE", "REF", "documented_path", "endpoint", "ref", "registered", "routes", "unregister"]

REF = "#/components/schemas/"
#: the 200 answer of a page for people
HTML_PAGE = {"description": "The page", "content": {"text/html": {"schema": {"type": "string"}}}}
_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}")


def ref(name: str) -> dict:
    """A JSON Schema reference to the component schema ``name``."""
    return {"$ref": REF + name}


def documented_path(path: str) -> str:
    """A route's path as the OpenAPI document writes it: ``{id:path}`` is ``{id}``."""
    return _PARAM.sub(lambda m: "{" + m.group(1) + "}", path)


@dataclass(frozen=True)
class Endpoint:
    """One registered endpoint: the function answering ``method`` on ``path``, and what its document says.

    ``ok`` is the component schema of the 200 answer's JSON (None: no
    content), or the whole 200 response object. ``statuses`` are the problems
    it may answer; 403 (and 401 with keys, when ``secured``) are added unless
    ``forbidden`` is false. ``body`` is the request body's schema (a component
    name, or a schema) of media type ``body_type``. ``query`` are further
    parameters (query or header), ``params`` schemas for path parameters.
    ``schemas`` builds the component schemas it names, from the settings.
    """

    method: str
    path: str
    function: Callable
    summary: str | Callable[[bool], str]
    ok: str | dict | None = None
    statuses: tuple[int, ...] = ()
    body: str | dict | None = None
    body_type: str = "application/json"
    query: tuple[dict, ...] = ()
    params: dict[str, dict] = field(default_factory=dict)
    secured: bool = True
    forbidden: bool = True
    schemas: Callable[..., dict] | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.method, documented_path(self.path)

    def path_params(self) -> list[str]:
        return _PARAM.findall(self.path)


_REGISTRY: dict[tuple[str, str], Endpoint] = {}


def endpoint(method: str, path: str, **doc) -> Callable:
    """Register the decorated function as the endpoint answering ``method`` on ``path`` (see :class:`Endpoint`)."""

    def register(function: Callable) -> Callable:
        entry = Endpoint(method.upper(), path, function, **doc)
        if entry.key in _REGISTRY and _REGISTRY[entry.key].function is not function:
            raise ValueError(f"{entry.method} {entry.path} is registered already")
        _REGISTRY[entry.key] = entry
        return function

    return register


def unregister(method: str, path: str) -> None:
    """Take back the endpoint answering ``method`` on ``path``."""
    del _REGISTRY[(method.upper(), documented_path(path))]


def registered() -> list[Endpoint]:
    """Every endpoint registered, in the order registered."""
    return list(_REGISTRY.values())


def routes(endpoints=None) -> list:
    """The Starlette routes of ``endpoints`` (default: every endpoint registered)."""
    from starlette.routing import Route

    return [Route(e.path, e.function, methods=[e.method]) for e in (registered() if endpoints is None else endpoints)]
