"""The OpenAPI document as a page to read: ``GET /docs``, its script and style sheet under ``GET /docs/{name}``.

The page is plain HTML, CSS and one ES module shipped in the package
(``cleo_rules/serve/static/api/``), written for this service: the script
reads ``/openapi.json`` from the service that served it and lists every path
and operation (its summary, whether it needs a key, its parameters, request
body and responses) and every schema the document names, each linked where
it is used. No third-party renderer is shipped, nothing is fetched from
another host, and the page's Content-Security-Policy is the playground's
(:data:`cleo_rules.serve.playground.CSP`): its own files and this service
only, no inline script or style.

Like ``/openapi.json`` the page needs no key (it shows what the document
does, which any client may read) and is behind the Host guard as every
request is (:mod:`cleo_rules.serve.hosts`).
"""

from __future__ import annotations

import functools
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from .playground import PAGE_HEADERS
from .problems import ServiceError
from .routes import HTML_PAGE, endpoint

__all__ = ["ASSETS", "INDEX", "asset", "files", "page"]

#: the page's files, by the name they are served under (``/docs/{name}``), with their media types
ASSETS = {
    "api.js": "text/javascript; charset=utf-8",
    "api.css": "text/css; charset=utf-8",
}
INDEX = "index.html"


@functools.cache
def files() -> dict[str, bytes]:
    """The page and its files, by name, read from the package once per process."""
    root = resources.files(__package__ or "cleo_rules.serve") / "static" / "api"
    return {name: (root / name).read_bytes() for name in (INDEX, *ASSETS)}


@endpoint("GET", "/docs", summary="This document as a page to read (HTML; its files are the package's own)",
          ok=HTML_PAGE, secured=False, forbidden=False)
async def page(request: Request) -> Response:
    return Response(files()[INDEX], media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


@endpoint("GET", "/docs/{name}", summary="The API page's script and style sheet", ok={"description": "The file"},
          params={"name": {"enum": sorted(ASSETS)}}, statuses=(404,), secured=False, forbidden=False)
async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:
        raise ServiceError("not-found", f"the API page has no file {name[:60]!r}")
    return Response(files()[name], media_type=ASSETS[name], headers=PAGE_HEADERS)
