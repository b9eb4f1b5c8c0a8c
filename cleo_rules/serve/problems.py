"""Errors as ``application/problem+json`` (RFC 9457).

Every error the service answers is one JSON object with ``type``,
``title``, ``status`` and ``detail``, plus ``instance`` (the request path)
and ``request_id`` (also in the ``X-Request-ID`` header and in the log).
A problem about one field of the request names it in ``field``, written as
a client would reach it: ``message``, ``history[2]``, ``items[3].history``.

``type`` is a relative URI, ``/problems/<name>``, that the service itself
answers with the problem's description (see :data:`PROBLEM_TYPES`).
"""

from __future__ import annotations

import json

__all__ = ["PROBLEM_TYPES", "RETRY_AFTER", "ServiceError", "problem_body", "type_uri"]

MEDIA_TYPE = "application/problem+json"
#: the seconds a 503 asks the client to wait before it tries again (its Retry-After header)
RETRY_AFTER = "1"

#: name -> (status, title, description): every kind of problem the service answers
PROBLEM_TYPES: dict[str, tuple[int, str, str]] = {
    "invalid-json": (400, "The body is not valid JSON",
                     "The request body could not be read as one JSON document (UTF-8, no NaN or Infinity)."),
    "invalid-request": (400, "A field of the request is wrong",
                        "`field` names the field; `detail` says what it must be. The OpenAPI document at "
                        "/openapi.json describes every request."),
    "invalid-history": (400, "The history was refused",
                        "History items are strings (earlier user messages) or {\"role\": \"user\" | \"assistant\", "
                        "\"content\": str}, oldest first. `detail` is the classifier's own reason."),
    "invalid-ingest": (400, "The ingest body has malformed lines",
                       "With strict=true nothing is ingested when any line is malformed; `problems` lists each "
                       "one with its line number."),
    "unauthorized": (401, "A valid key is needed",
                     "Send `Authorization: Bearer KEY` with a key from the service's key file."),
    "forbidden": (403, "This key may not use that tenant",
                  "The key names the tenants it may use; ask for a key that names this one."),
    "host-not-allowed": (403, "This service does not answer to that host name",
                         "Without keys the service answers only a Host that names this machine (localhost, "
                         "127.0.0.1, [::1], with any port) or a name given with --allowed-hosts, so that a web page "
                         "whose name resolves to this machine (DNS rebinding) cannot use it. Reach it by one of "
                         "those names, or start it with --allowed-hosts NAME for a reverse proxy in front of it."),
    "origin-not-allowed": (403, "A change from another origin",
                           "A request that can change something (any method but GET, HEAD and OPTIONS) and "
                           "carries an Origin header must come from the service's own origin: the same scheme, "
                           "host and port. Pages of other sites may not write to it."),
    "not-found": (404, "Nothing is here", "No endpoint, tenant or item answers to this path."),
    "unknown-tenant": (404, "No such tenant",
                       "The tenant has no memory store yet. Only an ingest (POST /v1/tenants/{tenant}/memory) "
                       "creates one."),
    "method-not-allowed": (405, "Method not allowed", "The path exists but not with this method; see `Allow`."),
    "request-timeout": (408, "The request was not sent in time",
                        "A client has --read-timeout seconds to send a request's headers, and again to send its "
                        "whole body; this one took longer, and the connection is closed. Send it again at a steadier "
                        "pace (an operator may raise --read-timeout for large bodies on slow links)."),
    "tenant-schema-conflict": (409, "The tenant's memory store cannot be told apart from another's",
                               "The PostgreSQL schema that would hold this tenant's memory records another tenant, "
                               "or cannot tell whose it is (`code` E308). Nothing was read or written. An operator "
                               "must resolve it: `cleo-rules memory tenants --db URL` lists such schemas and "
                               "`--adopt SCHEMA --tenant NAME` gives each to its tenant."),
    "payload-too-large": (413, "The body is too large",
                          "The service's limit is in `detail`; split the request (or raise --max-body-bytes / "
                          "--max-ingest-bytes)."),
    "unsupported-media-type": (415, "Wrong content type",
                               "JSON endpoints take `Content-Type: application/json`; an ingest takes JSON Lines "
                               "(`application/x-ndjson`)."),
    "corpus-not-writable": (409, "The regression was not written",
                            "The service appends saved regressions only when started with --writable-corpus, "
                            "never into an installed cleo-rules package, only to a regressions file whose "
                            "`cases:` list ends it (E206), and never past the 1 MiB every corpus file is held to "
                            "(E207). `yaml` holds the case to add by hand; `code` the error code."),
    "pack-not-writable": (409, "The pack's files are not edited here",
                          "The playground edits the pack's own files only when started with --writable-pack, and "
                          "never a bundled or installed pack (`code` E240)."),
    "edit-conflict": (412, "The file changed since the edit began",
                      "The file on disk is no longer the text the edit started from (`If-Match` names its SHA-256; "
                      "`code` E242): someone saved it meanwhile. Nothing was written; load the file again and redo "
                      "the edit."),
    "pack-rejected": (422, "The rule pack was rejected",
                      "The pack on disk did not pass the acceptance gate; the pack that was serving keeps "
                      "serving. `problems` lists the reasons."),
    "internal-error": (500, "Internal error",
                       "Something failed inside the service. It is logged with `request_id`; report that id."),
    "not-ready": (503, "Not ready yet",
                  "The service is loading its rule pack or warming its embedding model (GET /readyz tells when "
                  "it is ready), or the tenant's memory store cannot be used just now: its database is busy or "
                  "cannot be reached (`code` E302, E306 or E307). Retry after `Retry-After` seconds. An ingest "
                  "that failed part way says how far it got: lines 1 to `stored_lines` of the body are stored, "
                  "none from `first_unstored_line` on."),
    "overloaded": (503, "Too many requests waiting",
                   "This tenant's queue is full; the request was not started. Retry after `Retry-After` "
                   "seconds."),
    "server-busy": (503, "Too many request bodies being received",
                    "The service holds at most --max-body-bytes-in-flight bytes of request bodies while it reads "
                    "them, all requests together; this body would have gone over, so it was not read (or not "
                    "further) and the connection is closed. Retry after `Retry-After` seconds."),
    "stopping": (503, "The service is stopping",
                 "The service received SIGTERM and is finishing what it can within --drain-timeout. An ingest "
                 "still running at half of it stops after the batch it was writing: `stored_lines` says how many "
                 "lines of the body are stored, and the lines from `first_unstored_line` on are to be sent again "
                 "(to a running service; ingesting lines again is idempotent). A request still running at the "
                 "end of it is given up."),
    "timeout": (503, "The request took too long",
                "The request ran past the service's time limit and was answered without a result. An ingest "
                "keeps every batch it committed; ingesting the same lines again is idempotent."),
}


def type_uri(name: str) -> str:
    return f"/problems/{name}"


class ServiceError(Exception):
    """A problem to answer: raised in a handler, turned into problem+json by the app.

    ``name`` is a key of :data:`PROBLEM_TYPES`; ``extra`` adds members to
    the problem object (``field``, ``problems``, ...); ``headers`` are sent
    with it (``Retry-After``, ``WWW-Authenticate``, ``Allow``).
    """

    def __init__(self, name: str, detail: str, *, headers: dict | None = None, status: int | None = None, **extra):
        super().__init__(detail)
        default_status, title, _ = PROBLEM_TYPES[name]
        self.name = name
        self.status = status or default_status
        self.title = title
        self.detail = detail
        self.headers = dict(headers or {})
        self.extra = {k: v for k, v in extra.items() if v is not None}

    def body(self, *, instance: str | None = None, request_id: str | None = None) -> dict:
        return problem_body(self.name, self.detail, status=self.status, instance=instance, request_id=request_id,
                            **self.extra)


def problem_body(name: str, detail: str, *, status: int | None = None, instance: str | None = None,
                 request_id: str | None = None, **extra) -> dict:
    """The problem object for ``name``."""
    default_status, title, _ = PROBLEM_TYPES[name]
    body = {"type": type_uri(name), "title": title, "status": status or default_status, "detail": detail}
    if instance is not None:
        body["instance"] = instance
    if request_id is not None:
        body["request_id"] = request_id
    body.update(extra)
    return body


def encode_json(body) -> bytes:
    """A problem (or any JSON value) as compact UTF-8 JSON. A lone surrogate, which UTF-8 cannot hold, is
    written as its ``\\udXXX`` escape rather than failing (requests holding one are refused, so none
    should be left to answer)."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":")).encode("ascii")
