"""The playground for conversation designers, served by the same application.

``GET /`` is one page (plain HTML, CSS and an ES module under
``cleo_rules/serve/static/``, shipped in the package: no CDN, no build
step, nothing fetched from elsewhere), its files under ``GET /playground/{name}``.
It runs a conversation through ``/v1/classify/batch`` and reads, besides the
service's own endpoints (:mod:`cleo_rules.serve.endpoints.pack` and
:mod:`~cleo_rules.serve.endpoints.memory`):

``GET /v1/pack/rules``          every rule of the pack serving now, with its ``file`` and ``line``
``GET /v1/pack/source?file=F``  the lines of one file of that pack (its manifest and rule files only)
``POST /v1/pack/regressions``   a turn as a ``regressions.yaml`` case: its YAML, appended to the corpus
                                beside the pack when the service runs with ``--writable-corpus``
``POST /v1/tenants/{t}/recall`` what the tenant's memory recalls for the shaped query and for the raw
                                message, side by side (nothing is traced)
``GET|PUT /v1/pack/file``       with ``--writable-pack``, a file of the pack's own, edited in the page
                                (``editor.js``; :mod:`cleo_rules.serve.endpoints.editing`)

``GET /v1/pack`` also carries, for the page's live loop, the located
``problems`` of the last pack refused and where saved regressions go
(:func:`cleo_rules.serve.endpoints.pack.pack_extras`). The page polls it and
runs the conversation again when the pack's hash changes.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from .problems import ServiceError
from .routes import HTML_PAGE, endpoint

__all__ = ["ASSETS", "CSP", "INDEX", "asset", "load_files", "page"]

#: the page's files, by the name they are served under, with their media types
ASSETS = {
    "playground.js": "text/javascript; charset=utf-8",
    "editor.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
}
INDEX = "index.html"
#: the page may load its own files and talk to this service, nothing else
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
PAGE_HEADERS = {"Content-Security-Policy": CSP, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer"}


def load_files() -> dict[str, bytes]:
    """The page and its files, by name, read from the package once per app (``app.state.playground``)."""
    root = resources.files(__package__ or "cleo_rules.serve") / "static"
    return {name: (root / name).read_bytes() for name in (INDEX, *ASSETS)}


@endpoint("GET", "/", summary="The playground for conversation designers (HTML)", ok=HTML_PAGE, secured=False,
          forbidden=False)
async def page(request: Request) -> Response:
    return Response(request.app.state.playground[INDEX], media_type="text/html; charset=utf-8",
                    headers=PAGE_HEADERS)


@endpoint("GET", "/playground/{name}", summary="The playground's scripts and style sheet",
          ok={"description": "The file"}, params={"name": {"enum": sorted(ASSETS)}}, statuses=(404,), secured=False,
          forbidden=False)
async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:
        raise ServiceError("not-found", f"the playground has no file {name[:60]!r}")
    return Response(request.app.state.playground[name], media_type=ASSETS[name], headers=PAGE_HEADERS)
