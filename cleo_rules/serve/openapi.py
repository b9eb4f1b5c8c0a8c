"""The OpenAPI 3.1 document served at ``/openapi.json``.

Built from the settings, so the limits it states (``maxLength``,
``maxItems``, ``maximum``) are the ones the running service applies. The
request schemas say exactly what :mod:`cleo_rules.serve.body` accepts;
a history item that is an object is judged by the classifier's own history
reader, which decides what it may hold, once its ``content`` is within the
same limit as a history string. No string or field name may hold a lone surrogate, which
JSON Schema cannot state: the descriptions say it.
"""

from __future__ import annotations

import functools
from importlib import metadata

from .. import families
from ..explain import REASONS
from ..kinds import DecisionKind, Source
from ..reading.load import MAX_FILE_BYTES
from ..tenant_names import TENANT_SYNTAX
from .problems import PROBLEM_TYPES, type_uri

__all__ = ["document", "request_schemas"]

REF = "#/components/schemas/"
#: how a file of the pack is named to a request (:func:`cleo_rules.serve.endpoints.common.file_namer`)
FILE_NAMED = ("The file: to a key for every tenant (or without keys) as the server names it, relative to its "
              "working directory or whole; to any other key from the pack it belongs to, "
              "`<pack NAME>/follow_ups.yaml` or `<base pack NAME>/follow_ups.yaml`.")


def _ref(name: str) -> dict:
    return {"$ref": REF + name}


def request_schemas(settings) -> dict:
    """The JSON Schemas of the request bodies, by component name."""
    text = {"type": "string", "maxLength": settings.max_message_chars}
    limit = settings.max_message_chars
    history_item = {
        "description": "An earlier turn: a string is a user message; an object is a role-tagged turn "
                       "{\"role\": \"user\" | \"assistant\", \"content\": str} (OpenAI and LangChain chat "
                       "convention), whose contents the classifier checks.",
        "oneOf": [
            {**text, "description": "an earlier user message"},
            {"type": "object",
             "description": f"a role-tagged turn; its content holds at most {limit} characters of text (a string, "
                            f"or the texts of a list of parts in all); the classifier checks its members",
             "properties": {"content": {"not": {"type": "string", "minLength": limit + 1}}},
             "examples": [{"role": "assistant", "content": "Hadley Commercial is the cheaper of the two."}]},
        ],
    }
    history = {
        "description": "Earlier turns, oldest first; null or absent means none.",
        "type": ["array", "null"],
        "maxItems": settings.max_history,
        "items": _ref("HistoryItem"),
    }
    return {
        "HistoryItem": history_item,
        "ClassifyRequest": {
            "type": "object",
            "required": ["message"],
            "additionalProperties": False,
            "properties": {"message": {**text, "description": "The user's message, as typed."},
                           "history": _ref("History")},
        },
        "History": history,
        "BatchRequest": {
            "type": "object",
            "required": ["items"],
            "additionalProperties": False,
            "properties": {"items": {"type": "array", "maxItems": settings.max_batch,
                                     "description": "Each item is read as a ClassifyRequest; a bad item gets an "
                                                    "error object in its place, the others are answered.",
                                     "items": _ref("ClassifyRequest")}},
        },
        "RegressionRequest": {
            "type": "object",
            "required": ["message", "expect"],
            "additionalProperties": False,
            "properties": {
                "message": {**text, "description": "The user's message, as typed."},
                "history": _ref("History"),
                "expect": {"enum": ["skip", "correction", "follow_up", "substantive"],
                           "description": "The kind the pack must give the message."},
                "write": {"type": "boolean", "default": False,
                          "description": "Append the case to the regressions file (needs --writable-corpus)."},
            },
        },
        "TurnRequest": {
            "type": "object",
            "required": ["message"],
            "additionalProperties": False,
            "properties": {
                "message": {**text, "description": "The user's message, as typed."},
                "history": _ref("History"),
                "k": {"type": ["integer", "null"], "minimum": 1, "maximum": settings.max_k,
                      "description": f"Results to ask for (default {settings.default_k})."},
            },
        },
    }


def _turn_schemas() -> dict:
    """A decision, a batch of them, a turn and its results."""
    nullable_str = {"type": ["string", "null"]}
    return {
        "Decision": {
            "type": "object",
            "description": "The classifier's decision, as `cleo-rules classify --jsonl` writes it.",
            "required": ["kind", "rule", "span", "matched", "query", "anchor", "pack", "pack_version", "pack_hash",
                         "note"],
            "properties": {
                "kind": {"enum": list(DecisionKind)},
                "rule": nullable_str,
                "span": {"type": ["array", "null"], "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                         "description": "[start, end) of the matched text in the message (code points)."},
                "matched": nullable_str,
                "query": {**nullable_str, "description": "What retrieval should search; null: nothing."},
                "anchor": {**nullable_str, "description": "The earlier message combined into the query."},
                "pack": {"type": "string"}, "pack_version": {"type": "string"}, "pack_hash": {"type": "string"},
                "note": nullable_str,
            },
        },
        "ItemError": {
            "type": "object", "required": ["error"],
            "properties": {"error": _ref("Problem")},
        },
        "BatchResponse": {
            "type": "object", "required": ["results"],
            "properties": {"results": {"type": "array", "items": {"oneOf": [_ref("Decision"), _ref("ItemError")]}}},
        },
        "Result": {
            "type": "object",
            "required": ["source", "id", "item", "title", "date", "text", "score"],
            "properties": {
                "source": {"enum": list(Source)}, "id": {"type": "string"},
                "item": {"type": "string"}, "title": {"type": "string"}, "date": {"type": "string"},
                "text": {"type": "string"}, "score": {"type": "number"},
            },
        },
        "TurnResponse": {
            "type": "object",
            "description": "One turn, as `cleo-rules turn --jsonl` writes it, and the id of its trace row.",
            "required": ["kind", "rule", "query", "anchor", "results", "context", "trace_id"],
            "properties": {
                "kind": {"enum": list(DecisionKind)},
                "rule": nullable_str, "query": nullable_str, "anchor": nullable_str,
                "results": {"type": "array", "items": _ref("Result")},
                "context": {"type": "string", "description": "The context block for the model."},
                "note": {"type": "string"},
                "trace_id": {"type": ["integer", "null"]},
            },
        },
    }


def _explain_schemas() -> dict:
    """An explanation: the decision, every rule's attempt, the near misses."""
    nullable_str = {"type": ["string", "null"]}
    span = {"type": ["array", "null"], "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
            "description": "[start, end) of the rule's match in the message (code points)."}
    return {
        "Explanation": {
            "type": "object",
            "description": "What `cleo-rules explain --json` prints: the decision, every rule's attempt in the order "
                           "the walk applies them, and the near misses.",
            "required": ["decision", "normalized", "words", "attempts", "parts", "near_misses"],
            "properties": {
                "decision": _ref("Decision"),
                "normalized": {"type": "string", "description": "The text the patterns saw."},
                "words": {"type": "array", "items": {"type": "string"}},
                "attempts": {"type": "array", "items": _ref("Attempt")},
                "parts": {"type": "array", "items": {"type": "object"}},
                "near_misses": {"type": "array", "items": _ref("NearMiss"), "description": (
                    "The rules whose prefilter words are in the message and which did not take it, in the order "
                    "tried, the referent rules last.")},
            },
        },
        "Attempt": {
            "type": "object", "required": ["stage", "rule", "fired", "tried", "span", "matched", "note"],
            "properties": {"stage": {"type": "string"}, "rule": nullable_str, "fired": {"type": "boolean"},
                           "tried": {"type": "boolean"}, "span": span, "matched": nullable_str,
                           "note": {"type": "string"}},
        },
        "NearMiss": {
            "type": "object", "required": ["rule", "stage", "reason", "setting", "detail", "span", "matched"],
            "properties": {
                "rule": {**nullable_str, "description": "null for a stage's whole test (the vocabulary test)."},
                "stage": {"type": "string"},
                "reason": {"enum": list(REASONS), "description": "\n".join(f"{k}: {v}" for k, v in REASONS.items())},
                "setting": {**nullable_str, "description": "The rule's key or the pack's setting at work."},
                "detail": {"type": "string"}, "span": span, "matched": nullable_str,
            },
        },
    }


def _store_schemas() -> dict:
    """What an ingest, the stats and a delete answer."""
    return {
        "IngestReport": {
            "type": "object",
            "required": ["source", "lines", "added", "updated", "unchanged", "skipped", "problems", "seconds",
                         "timings"],
            "properties": {
                "source": {"type": "string"},
                **{n: {"type": "integer"} for n in ("lines", "added", "updated", "unchanged", "skipped")},
                "problems": {"type": "array", "items": {"type": "object"}},
                "seconds": {"type": "number"}, "timings": {"type": "object"},
            },
        },
        "MemoryStats": {"type": "object", "required": ["conversations", "documents", "snippets", "passages"]},
        "Deleted": {
            "type": "object", "required": ["source", "id", "deleted"],
            "properties": {"source": {"enum": list(Source)}, "id": {"type": "string"},
                           "deleted": {"const": True}},
        },
    }


def _pack_schemas() -> dict:
    """The pack serving now, as its status and the playground read it."""
    nullable_str = {"type": ["string", "null"]}
    return {
        "PackStatus": {
            "type": "object",
            "description": "The pack serving and the last refusal. path, corpus, last_error and problems (where the "
                           "server keeps things, or errors naming its files) only when the service has no keys or "
                           "the request a key for every tenant; to another key regressions.file is named from the "
                           "directory holding the pack and its corpus (corpus/regressions.yaml).",
            "required": ["pack", "version", "hash", "reloads", "rejections", "watching"],
            "properties": {
                "pack": {"type": "string"}, "version": {"type": "string"}, "hash": {"type": "string"},
                "path": {"type": "string"}, "require": nullable_str, "reloads": {"type": "integer"},
                "rejections": {"type": "integer"}, "last_error": nullable_str, "watching": {"type": "boolean"},
                "problems": {"type": "array", "items": _ref("PackProblem"),
                             "description": "The last refused pack's problems, located; empty after a success."},
                "corpus": nullable_str, "gate": {"type": "string"}, "bases": _ref("PackBases"),
                "regressions": {"type": "object", "required": ["file", "writable"],
                                "description": "Where saved regressions go, and whether this service appends them.",
                                "properties": {"file": {"type": "string"}, "writable": {"type": "boolean"}}},
                "editing": {"type": "object", "required": ["writable"],
                            "description": "Whether the playground edits the pack's own files (--writable-pack).",
                            "properties": {"writable": {"type": "boolean"}}},
            },
        },
        "PublicPackStatus": {
            "type": "object",
            "description": "The pack's status as /readyz shows it: without path, corpus and last_error (where the "
                           "server keeps things) unless the service has no keys or the request a key for every "
                           "tenant, which see the whole PackStatus.",
            "required": ["pack", "version", "hash", "reloads", "rejections", "watching"],
            "properties": {
                "pack": {"type": "string"}, "version": {"type": "string"}, "hash": {"type": "string"},
                "require": nullable_str, "reloads": {"type": "integer"}, "rejections": {"type": "integer"},
                "watching": {"type": "boolean"}, "gate": {"type": "string"}, "bases": _ref("PackBases"),
            },
        },
        "PackBases": {
            "type": "array", "description": "The packs the pack is built on (extends:), in the order they apply; "
                                            "empty for a pack that extends nothing.",
            "items": {"type": "object", "required": ["name", "version", "hash"],
                      "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                                     "hash": {"type": "string"}}},
        },
        "PackProblem": {
            "type": "object",
            "required": ["code", "severity", "file", "line", "col", "message", "help"],
            "properties": {
                "code": {"type": "string"}, "severity": {"enum": ["error", "warning", "note"]},
                "file": {"type": "string"},
                "line": {"type": "integer"}, "col": {"type": "integer"}, "pointer": {"type": "string"},
                "rule": nullable_str, "message": {"type": "string"}, "help": {"type": "string"},
                "pack": {"type": ["string", "null"], "description": "In a pack built on others, the pack whose file "
                                                                    "the problem is in."},
            },
        },
        "PackRules": {
            "type": "object", "required": ["pack", "version", "hash", "rules", "bases", "disabled", "replaced"],
            "properties": {
                "pack": {"type": "string"}, "version": {"type": "string"}, "hash": {"type": "string"},
                "rules": {"type": "array", "items": {
                    "type": "object", "required": ["id", "kind", "file", "line", "pack"],
                    "properties": {"id": {"type": "string"},
                                   "kind": {"enum": list(families.rule_kinds())},
                                   "file": {"type": "string", "description": FILE_NAMED},
                                   "line": {"type": "integer"}, "description": {"type": "string"},
                                   "pack": {"type": "string", "description": "The pack the rule comes from: this "
                                                                             "one, or a base."}}}},
                "bases": _ref("PackBases"),
                "disabled": _ref("LeftOut"), "replaced": _ref("LeftOut"),
            },
        },
        "LeftOut": {
            "type": "array", "description": "Rules of a base the pack leaves out: `by` the pack that disabled or "
                                            "replaced it, `of` the pack it was of.",
            "items": {"type": "object", "required": ["rule", "by", "of"],
                      "properties": {"rule": {"type": "string"}, "by": {"type": "string"}, "of": {"type": "string"}}},
        },
        "PackSource": {
            "type": "object", "required": ["file", "hash", "lines"],
            "properties": {"file": {"type": "string", "description": FILE_NAMED}, "hash": {"type": "string"},
                           "lines": {"type": "array", "items": {"type": "string"}}},
        },
        "RegressionSaved": {
            "type": "object", "required": ["id", "yaml", "file", "written", "open"],
            "properties": {"id": {"type": "string"}, "yaml": {"type": "string",
                                                             "description": "The case, as an item of `cases:`."},
                           "file": {"type": "string"}, "written": {"type": "boolean"},
                           "open": {"type": "boolean", "description": (
                               "The pack does not get the case right yet, so it is saved `open: true`: `check` "
                               "reports it without failing, and asks for it to be closed once it passes.")}},
        },
    }


def _editing_schemas() -> dict:
    """The files the playground edits (--writable-pack), one file's text, and an edit judged."""
    nullable_str = {"type": ["string", "null"]}
    return {
        "PackFiles": {
            "type": "object", "required": ["writable", "files"],
            "properties": {"writable": {"type": "boolean"}, "files": {"type": "array", "items": {
                "type": "object", "required": ["file", "role", "bytes", "sha256"],
                "properties": {"file": {"type": "string"},
                               "role": {"enum": ["manifest", "rules", "corpus"]},
                               "bytes": {"type": ["integer", "null"]}, "sha256": nullable_str}}}},
        },
        "PackFileText": {
            "type": "object", "required": ["file", "text", "sha256"],
            "properties": {"file": {"type": "string"}, "text": {"type": "string"},
                           "sha256": {"type": "string", "description": "What If-Match names to edit this text."}},
        },
        "Edited": {
            "type": "object", "required": ["file", "written", "ok", "sha256", "pack", "errors", "problems"],
            "description": "An edit judged with the whole pack: written only when `ok` (and the text is new).",
            "properties": {
                "file": {"type": "string"}, "written": {"type": "boolean", "description": (
                    "Whether the new text is on disk: false when the pack does not pass with it (`ok` false), or "
                    "when it is the file's text already")},
                "ok": {"type": "boolean", "description": "Whether the pack passes the acceptance gate with the edit."},
                "sha256": {"type": "string", "description": "The file on disk now: If-Match for the next edit."},
                "pack": {"type": ["object", "null"], "description": "The edited pack: name, version, hash (null "
                                                                    "when it does not compile)."},
                "errors": {"type": "integer"},
                "problems": {"type": "array", "items": _ref("PackProblem"),
                             "description": "Every finding at its file:line:col, errors first, then warnings and "
                                            "notes (an open case, one to close)."},
                "serving": {"type": "object", "description": "The pack serving now: name, version, hash."},
                "rebuilt": {"type": "array", "items": {"type": "string"},
                            "description": "The generated corpus files written or removed with the edit (rebuild)."},
            },
        },
    }


def _service_schemas() -> dict:
    """Recall, a reload, readiness and the problem every error is."""
    return {
        "RecallResponse": {
            "type": "object", "required": ["decision", "shaped", "raw"],
            "properties": {
                "decision": _ref("Decision"),
                "shaped": {"type": ["array", "null"], "items": _ref("Result"),
                           "description": "Recalled for the shaped query; null when no search is made."},
                "raw": {"type": "array", "items": _ref("Result"),
                        "description": "What the message searched as typed would have recalled."},
            },
        },
        "Reloaded": {"allOf": [_ref("PackStatus"), {"type": "object", "required": ["reloaded"],
                                                    "properties": {"reloaded": {"type": "boolean"}}}]},
        "Ready": {
            "type": "object", "required": ["ready", "pack", "memory", "model"],
            "properties": {"ready": {"const": True}, "pack": _ref("PublicPackStatus"), "memory": {"type": "boolean"},
                           "model": {"enum": ["not used", "warm"]},
                           "embedding": {"type": ["object", "null"], "description": (
                               "The embedding model with memory (null without): backend (onnx or torch), "
                               "model, model_sha256, runtime, threads (applied once, when it loaded)."),
                               "required": ["backend", "model"],
                               "properties": {"backend": {"type": "string"}, "model": {"type": "string"},
                                              "threads": {"type": "integer", "minimum": 1}}}},
        },
        "Problem": {
            "type": "object",
            "description": "RFC 9457 problem details. `field` names the request field at fault.",
            "required": ["type", "title", "status", "detail"],
            "properties": {
                "type": {"enum": [type_uri(n) for n in PROBLEM_TYPES]},
                "title": {"type": "string"}, "status": {"type": "integer"}, "detail": {"type": "string"},
                "instance": {"type": "string"}, "request_id": {"type": "string"}, "field": {"type": "string"},
                "code": {"type": "string", "description": "The error code (docs/errors.md), where one applies."},
                "stored_lines": {"type": "integer", "minimum": 0, "description": (
                    "An ingest that stopped part way: lines 1 to stored_lines of the body are stored.")},
                "first_unstored_line": {"type": "integer", "minimum": 1, "description": (
                    "An ingest that stopped part way: send the body again from this line on.")},
                "report": {**_ref("IngestReport"), "description": "What an ingest stopped by SIGTERM did."},
            },
        },
    }


def _problems(*statuses: int) -> dict:
    described = {
        400: "The body or a field is wrong (`field` names it); a string or field name holding a lone surrogate "
             "(`\\ud800`, not Unicode) is refused with `code` E319.",
        401: "No valid key.",
        403: "The key does not cover this tenant; or the Host is not one the service answers to, or a change "
             "came from another origin (`type` says which).",
        404: "Unknown tenant or item.", 413: "The body is over the limit.", 415: "Wrong Content-Type.",
        408: "The body did not arrive within --read-timeout seconds; the connection is closed.",
        409: "The regression was not written (`yaml` holds it); the pack's files are not edited here; or the "
             "tenant's PostgreSQL schema is not known to be its own (E308: an operator resolves it with `cleo-rules "
             "memory tenants`); `type` says which.",
        412: "The file changed on disk since the edit began; nothing was written.",
        422: "The pack on disk was rejected.",
        503: "Not ready, queue full, too many bodies being received, over the time limit, or stopping "
             "(`Retry-After`); an ingest that stopped part way says which lines are stored (`stored_lines`).",
    }
    return {str(s): {"description": described[s],
                     "content": {"application/problem+json": {"schema": _ref("Problem")}}} for s in statuses}


def _json(schema: str) -> dict:
    return {"application/json": {"schema": _ref(schema)}}


def _operation(keys: bool, summary: str, *, body=None, ok, statuses, params=(), body_type="application/json",
               secured=True, query=()) -> dict:
    """One operation: answers ``ok`` (a schema name, or None), and the problems of ``statuses``."""
    auth = {401} if keys and secured else set()  # 403 is every operation's: a key's tenants, a foreign Host or Origin
    operation = {"summary": summary, "responses": {"200": {"description": "OK", "content": _json(ok)} if ok
                                                   else {"description": "OK"}}}
    operation["responses"].update(_problems(*sorted(set(statuses) | {403} | auth)))
    if body is not None:
        operation["requestBody"] = {"required": True, "content": {body_type: {"schema": body}}}
    parameters = list(params) + list(query)
    if parameters:
        operation["parameters"] = parameters
    if secured and keys:
        operation["security"] = [{"bearer": []}]
    elif not secured:
        operation["security"] = []
    return operation


def _pages() -> dict:
    """The pages for people, each with its own files: the playground, and this document's page. No key needed."""
    html = {"200": {"description": "The page", "content": {"text/html": {"schema": {"type": "string"}}}}}

    def files(summary: str, names: list[str]) -> dict:
        return {"get": {"summary": summary, "security": [],
                        "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"enum": names}}],
                        "responses": {"200": {"description": "The file"}, **_problems(404)}}}

    return {
        "/": {"get": {"summary": "The playground for conversation designers (HTML)", "security": [],
                      "responses": html}},
        "/playground/{name}": files("The playground's scripts and style sheet",
                                    ["editor.js", "playground.css", "playground.js"]),
        "/docs": {"get": {"summary": "This document as a page to read (HTML; its files are the package's own)",
                          "security": [], "responses": html}},
        "/docs/{name}": files("The API page's script and style sheet", ["api.css", "api.js"]),
    }


def _pack_paths(op, keys: bool) -> dict:
    """The rule pack's operations: status, reload, rules, sources, regressions and the files edited."""
    file_query = {"name": "file", "in": "query", "required": True, "schema": {"type": "string"},
                  "description": "The file as /v1/pack/files names it."}
    return {
        "/v1/pack": {"get": op("The rule pack serving now", ok="PackStatus", statuses=[503])},
        "/v1/pack/reload": {"post": op("Load the pack again; it serves only if it passes the acceptance gate"
                                       + (" (a key for every tenant, *)" if keys else ""),
                                       ok="Reloaded", statuses=[422, 503])},
        "/v1/pack/rules": {"get": op("Every rule of the pack serving now, with its file and line", ok="PackRules",
                                     statuses=[503])},
        "/v1/pack/source": {"get": op(
            "The lines of one of the pack's files (its manifest and rule files)", ok="PackSource",
            query=[{"name": "file", "in": "query", "required": True, "schema": {"type": "string"},
                    "description": "The file as /v1/pack/rules names it to the same key (its `file`); no other "
                                   "name."}],
            statuses=[400, 404, 413, 503])},
        "/v1/pack/regressions": {"post": op(
            "A turn as a regressions case: its YAML, appended to the corpus beside the pack with write=true "
            "(--writable-corpus" + ("; a key for every tenant, *" if keys else "") + ")",
            body=_ref("RegressionRequest"), ok="RegressionSaved", statuses=[400, 408, 409, 413, 415, 503])},
        "/v1/pack/files": {"get": op(
            "The pack's own files the playground edits (--writable-pack; none without it)", ok="PackFiles",
            statuses=[503])},
        "/v1/pack/file": {
            "get": op("One file the playground edits: its text and SHA-256", ok="PackFileText",
                      query=[file_query], statuses=[400, 404, 409, 503]),
            "put": op("Edit one file: the whole pack is judged by the acceptance gate with the new text, written "
                      "(atomically) and served only if it passes; answered 200 either way, `written` says "
                      "(--writable-pack"
                      + ("; a key for every tenant, *" if keys else "") + ")",
                      body={"type": "string", "maxLength": MAX_FILE_BYTES,
                            "description": "The file's new text, UTF-8, at most 1 MiB (every pack file's limit)."},
                      body_type="text/plain", ok="Edited",
                      query=[file_query, {"name": "If-Match", "in": "header", "schema": {"type": "string"},
                                          "description": "The SHA-256 of the text the edit started from, quoted: "
                                                         "412 when the file is another now."},
                             {"name": "rebuild", "in": "query", "schema": {"type": "boolean"},
                              "description": "Build corpus/generated/ again from the edited pack (as `cleo-rules "
                                             "corpus build`), judge it and write it with the edit: for an edit of "
                                             "templates, slots or limits, which leaves the corpus stale."}],
                      statuses=[400, 404, 408, 409, 412, 413, 415, 503]),
        },
    }


def document(settings, *, keys: bool) -> dict:
    """The OpenAPI document for a service started with ``settings``."""
    try:
        version = metadata.version("cleo-rules")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        version = "0"
    op = functools.partial(_operation, keys)
    tenant = {"name": "tenant", "in": "path", "required": True,
              "schema": {"type": "string", "pattern": f"^{TENANT_SYNTAX}$"}}

    paths = {
        "/v1/classify": {"post": op("Classify one message", body=_ref("ClassifyRequest"), ok="Decision",
                                    statuses=[400, 408, 413, 415, 503])},
        "/v1/classify/batch": {"post": op("Classify many messages, answered in order", body=_ref("BatchRequest"),
                                          ok="BatchResponse", statuses=[400, 408, 413, 415, 503])},
        "/v1/explain": {"post": op("Classify one message and say why: every rule's attempt and the near misses",
                                   body=_ref("ClassifyRequest"), ok="Explanation",
                                   statuses=[400, 408, 413, 415, 503])},
        "/v1/tenants/{tenant}/turns": {"post": op(
            "One turn end to end: classify, search the tenant's memory, build the context, trace it",
            body=_ref("TurnRequest"), ok="TurnResponse", params=[tenant],
            statuses=[400, 404, 408, 409, 413, 415, 503])},
        "/v1/tenants/{tenant}/memory": {
            "post": op("Ingest JSON Lines (the `memory ingest` format); creates the tenant's store",
                       body={"type": "string", "description": "One conversation or document per line."},
                       body_type="application/x-ndjson", ok="IngestReport", params=[tenant],
                       query=[{"name": "strict", "in": "query", "schema": {"type": "boolean"},
                               "description": "Reject the whole body if any line is malformed."}],
                       statuses=[400, 404, 408, 409, 413, 415, 503]),
            "get": op("What the tenant's store holds", ok="MemoryStats", params=[tenant],
                      statuses=[400, 404, 409, 503]),
        },
        "/v1/tenants/{tenant}/memory/{source}/{id}": {"delete": op(
            "Delete a conversation or a document", ok="Deleted",
            params=[tenant, {"name": "source", "in": "path", "required": True,
                             "schema": {"enum": list(Source)}},
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            statuses=[400, 404, 409, 503])},
        **_pack_paths(op, keys),
        "/v1/tenants/{tenant}/recall": {"post": op(
            "What the tenant's memory recalls for the shaped query and for the message as typed (not traced)",
            body=_ref("TurnRequest"), ok="RecallResponse", params=[tenant],
            statuses=[400, 404, 408, 409, 413, 415, 503])},
        **_pages(),
        "/healthz": {"get": op("The process is up", ok=None, statuses=[], secured=False)},
        "/readyz": {"get": op("Ready to answer: pack loaded and, with memory, the model warm (the server's paths "
                              "only without keys or to a key for every tenant)", ok="Ready",
                              statuses=[503], secured=False)},
        "/metrics": {"get": {"summary": "Prometheus metrics", "security": [],
                             "responses": {"200": {"description": "Prometheus text format",
                                                   "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
        "/openapi.json": {"get": {"summary": "This document", "security": [],
                                  "responses": {"200": {"description": "OpenAPI 3.1"}}}},
        "/problems/{name}": {"get": {"summary": "What a problem type means", "security": [],
                                     "parameters": [{"name": "name", "in": "path", "required": True,
                                                     "schema": {"enum": sorted(PROBLEM_TYPES)}}],
                                     "responses": {"200": {"description": "The problem type"},
                                                   **_problems(404)}}},
    }
    components = {"schemas": {**request_schemas(settings), **_turn_schemas(), **_explain_schemas(),
                              **_store_schemas(), **_pack_schemas(), **_editing_schemas(), **_service_schemas()}}
    if keys:
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer",
                                                    "description": "A key from the service's key file."}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "cleo-rules", "version": version,
                 "description": "Decide, before retrieval, what an assistant with memory should search for on "
                                "each user turn; run turns against each tenant's memory. "
                                + ("Every request's Host must name this machine or an allowed host. " if
                                   not keys or settings.allowed_hosts else "")
                                + "A request that changes something and carries an Origin must come from this "
                                  "service's own origin (403 otherwise)."},
        "paths": paths,
        "components": components,
    }
