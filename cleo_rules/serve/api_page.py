"""The OpenAPI document as a page to read: ``GET /docs`` (Swagger UI), its files under ``GET /docs/{name}``.

The page is Swagger UI as the ``swagger-ui-py`` package ships it (a
dependency of the ``serve`` extra: its ``swagger-ui-bundle.js``,
``swagger-ui.css`` and their licence, served from this service), started by
a script of the package's own (``cleo_rules/serve/static/api/docs.js``) on
``/openapi.json`` of the service that served it, with its validator badge
off: nothing is fetched from another host. The page's Content-Security-Policy
is the playground's (:data:`cleo_rules.serve.playground.CSP`): its own files
and this service only, no inline script or style.

Like ``/openapi.json`` the page needs no key (it shows what the document
does, which any client may read; "Try it out" sends a request as any client
would, with the key given to "Authorize") and is behind the Host guard as
every request is (:mod:`cleo_rules.serve.hosts`).
"""

from __future__ import annotations

import functools
from importlib import resources, util
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from .playground import PAGE_HEADERS
from .problems import ServiceError
from .routes import HTML_PAGE, endpoint

__all__ = ["ASSETS", "INDEX", "OWN", "SWAGGER_UI", "VENDORED", "asset", "files", "page", "vendored_dir"]

JS, CSS = "text/javascript; charset=utf-8", "text/css; charset=utf-8"
#: the page's own files (``cleo_rules/serve/static/api/``), by the name they are served under
OWN = {"docs.js": JS, "docs.css": CSS}
#: Swagger UI's files, from the ``swagger-ui-py`` package's ``static/``, by the name they are served under
VENDORED = {"swagger-ui-bundle.js": JS, "swagger-ui.css": CSS, "LICENSE": "text/plain; charset=utf-8"}
#: every file under ``/docs/{name}``, with its media type
ASSETS = {**OWN, **VENDORED}
INDEX = "index.html"
#: the distribution that ships Swagger UI, and its package
SWAGGER_UI = ("swagger-ui-py", "swagger_ui")


def vendored_dir() -> Path | None:
    """Where the installed ``swagger-ui-py`` keeps Swagger UI's files (found without importing it), or None."""
    spec = util.find_spec(SWAGGER_UI[1])
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "static"


@functools.cache
def files() -> dict[str, bytes]:
    """The page and its files, by name, read once per process; Swagger UI's only when it is installed."""
    root = resources.files(__package__ or "cleo_rules.serve") / "static" / "api"
    out = {name: (root / name).read_bytes() for name in (INDEX, *OWN)}
    vendor = vendored_dir()
    if vendor is not None and all((vendor / name).is_file() for name in VENDORED):
        out.update((name, (vendor / name).read_bytes()) for name in VENDORED)
    return out


@endpoint("GET", "/docs", summary="This document as a page to read (HTML: Swagger UI, served by this service)",
          ok=HTML_PAGE, secured=False, forbidden=False)
async def page(request: Request) -> Response:
    return Response(files()[INDEX], media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


@endpoint("GET", "/docs/{name}", summary="The API page's files: its own script and style sheet, Swagger UI's and its "
          "licence", ok={"description": "The file"},
          params={"name": {"enum": sorted(ASSETS)}}, statuses=(404,), secured=False, forbidden=False)
async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:
        raise ServiceError("not-found", f"the API page has no file {name[:60]!r}")
    served = files()
    if name not in served:
        raise ServiceError("not-found", f"the API page's {name} is Swagger UI's, from the {SWAGGER_UI[0]} package, "
                                        f"which is not installed: pip install 'cleo-rules[serve]'")
    return Response(served[name], media_type=ASSETS[name], headers=PAGE_HEADERS)
