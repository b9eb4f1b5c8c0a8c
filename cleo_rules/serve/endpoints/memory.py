"""The tenants' memory: turns, what a turn would recall, ingest, stats and deletes.

``POST /v1/tenants/{tenant}/turns``                   one turn end to end (classify, search, context, trace)
``POST /v1/tenants/{tenant}/recall``                  the playground's view: shaped query beside the message as
                                                      typed, nothing traced
``POST /v1/tenants/{tenant}/memory``                  ingest JSON Lines; the only request that creates a store
``GET /v1/tenants/{tenant}/memory``                   what the store holds
``DELETE /v1/tenants/{tenant}/memory/{source}/{id}``  forget one conversation or document

The body is judged on a worker thread before the store is looked up; the
work on the store runs on the tenant's own thread (:func:`.common.on_store`).

An ingest hands the store its body's lines one by one (:class:`LineFeed`)
and stops handing them once the service has been draining for half of its
``drain_timeout``: the store writes what it was given and the client gets a
503 ``stopping`` problem saying which lines are stored. An ingest that fails
on its database part way says the same in its problem (503 when the
database is busy or out of reach, else 500).
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

from ...errors import IngestError, StoreError
from ...kinds import DecisionKind, Source
from ..body import parse_json, read_turn, request_schemas
from ..problems import ServiceError
from ..responses import JSON_TYPES, json_response
from ..routes import endpoint, ref
from ..service import RETRY_AFTER, stored_lines
from ..tenants import Write
from .common import JSONL_TYPES, add_timings, admit, decision_record, flag, on_store

if TYPE_CHECKING:
    from ..service import Service

__all__ = ["LineFeed", "delete_item", "ingest", "memory_stats", "recall", "openapi_schemas", "turns"]

log = logging.getLogger("cleo_rules.serve")

TURN_STAGES = ("classify", "embed", "search", "metadata", "context", "trace")
INGEST_STAGES = ("parse", "embed", "sql", "index", "save")


def openapi_schemas(settings) -> dict:
    """A turn request (limits from ``settings``), a turn's and a recall's answer, and what an ingest, the stats
    and a delete answer."""
    nullable_str = {"type": ["string", "null"]}
    return {
        **request_schemas(settings, "TurnRequest"),
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
                "results": {"type": "array", "items": ref("Result")},
                "context": {"type": "string", "description": "The context block for the model."},
                "note": {"type": "string"},
                "trace_id": {"type": ["integer", "null"]},
            },
        },
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
        "RecallResponse": {
            "type": "object", "required": ["decision", "shaped", "raw"],
            "properties": {
                "decision": ref("Decision"),
                "shaped": {"type": ["array", "null"], "items": ref("Result"),
                           "description": "Recalled for the shaped query; null when no search is made."},
                "raw": {"type": "array", "items": ref("Result"),
                        "description": "What the message searched as typed would have recalled."},
            },
        },
    }


async def _turn_body(request: Request, tenant: str) -> tuple[Service, str, list, int]:
    """The service and the ``(message, history, k)`` of a turn or recall request, once admitted."""
    service = admit(request, tenant)
    settings = service.settings
    raw = await service.read_body(request, settings.max_body_bytes, JSON_TYPES)
    message, history, k = await service.off_loop(lambda: read_turn(parse_json(raw), settings))  # judged, then worked
    return service, message, history, k


@endpoint("POST", "/v1/tenants/{tenant}/turns",
          summary="One turn end to end: classify, search the tenant's memory, build the context, trace it",
          body="TurnRequest", ok="TurnResponse", statuses=(400, 404, 408, 409, 413, 415, 503), schemas=openapi_schemas)
async def turns(request: Request) -> Response:
    tenant = request.path_params["tenant"]
    service, message, history, k = await _turn_body(request, tenant)
    pack = service.packs.pack

    def work(store):
        from ...turn import Recall

        return Recall(store, pack, k=k).turn(message, history)

    turn = await on_store(request, tenant, work)
    add_timings(request, turn.timings, TURN_STAGES)
    service.metrics.decided(turn.decision)
    service.metrics.turn(turn.timings)
    record = turn.to_dict()
    record["trace_id"] = turn.trace_id
    return json_response(record)


@endpoint("POST", "/v1/tenants/{tenant}/recall",
          summary="What the tenant's memory recalls for the shaped query and for the message as typed (not traced)",
          body="TurnRequest", ok="RecallResponse", statuses=(400, 404, 408, 409, 413, 415, 503), schemas=openapi_schemas)
async def recall(request: Request) -> Response:
    tenant = request.path_params["tenant"]
    service, message, history, k = await _turn_body(request, tenant)
    pack = service.packs.pack

    def work(store):
        decision = pack.classify(message, history)
        shaped = store.search(decision.query, k=k).results if decision.query is not None else None
        raw = store.search(message, k=k).results if message.strip() else []
        return decision, shaped, raw

    decision, shaped, raw = await on_store(request, tenant, work)
    return json_response({"decision": decision_record(decision),
                          "shaped": [r.to_dict() for r in shaped] if shaped is not None else None,
                          "raw": [r.to_dict() for r in raw]})


class LineFeed:
    """The lines of an ingest body, handed out until ``stop()`` says to stop; ``stopped`` once it did with
    lines left (a blank rest is no line)."""

    def __init__(self, raw: bytes, stop):
        self.raw = raw
        self.stop = stop
        self.stopped = False

    def __iter__(self):
        body = io.BytesIO(self.raw)
        for line in body:
            if self.stop():
                self.stopped = bool(line.strip() or self.raw[body.tell():].strip())
                return
            yield line


@endpoint("POST", "/v1/tenants/{tenant}/memory",
          summary="Ingest JSON Lines (the `memory ingest` format); creates the tenant's store",
          body={"type": "string", "description": "One conversation or document per line."},
          body_type="application/x-ndjson", ok="IngestReport",
          query=({"name": "strict", "in": "query", "schema": {"type": "boolean"},
                  "description": "Reject the whole body if any line is malformed."},),
          statuses=(400, 404, 408, 409, 413, 415, 503), schemas=openapi_schemas)
async def ingest(request: Request) -> Response:
    tenant = request.path_params["tenant"]
    service = admit(request, tenant)
    strict = flag(request, "strict")
    raw = await service.read_body(request, service.settings.max_ingest_bytes, JSONL_TYPES)
    feed = LineFeed(raw, service.ingests_stopping)
    try:
        report = await on_store(request, tenant, Write(lambda store: store.ingest_jsonl(feed, strict=strict)),
                                timeout=service.settings.ingest_timeout, create=True)
    except IngestError as exc:  # strict, and a line is malformed: nothing was ingested
        raise ServiceError("invalid-ingest", str(exc).splitlines()[0],
                           problems=[p.to_dict() for p in exc.problems]) from None
    except StoreError as exc:  # a store error the service does not pass as a 503: still say how far it got
        if exc.stored_lines is None:
            raise
        log.error("ingest into tenant %s failed: %s", tenant, exc)
        sentence, extra = stored_lines(exc.stored_lines)
        raise ServiceError("internal-error", f"the tenant's memory store failed during the ingest; it is logged as "
                                             f"request {request.scope.get('cleo.request_id')}; {sentence}",
                           code=exc.code, **extra) from None
    add_timings(request, report.timings, INGEST_STAGES)
    record = report.to_dict()
    record["source"] = "request body"
    for problem in record["problems"]:
        problem["file"] = "request body"
    if feed.stopped:
        sentence, extra = stored_lines(report.lines)
        raise ServiceError("stopping", f"the service is stopping: the ingest stopped after line {report.lines}; "
                                       f"{sentence} to a running service", headers={"Retry-After": RETRY_AFTER},
                           report=record, **extra)
    return json_response(record)


@endpoint("GET", "/v1/tenants/{tenant}/memory", summary="What the tenant's store holds", ok="MemoryStats",
          statuses=(400, 404, 409, 503), schemas=openapi_schemas)
async def memory_stats(request: Request) -> Response:
    tenant = request.path_params["tenant"]
    admit(request, tenant)
    stats = await on_store(request, tenant, lambda store: store.stats())
    stats.pop("path", None)  # where the server keeps it is not the client's business
    return json_response(stats)


@endpoint("DELETE", "/v1/tenants/{tenant}/memory/{source}/{id:path}", summary="Delete a conversation or a document",
          ok="Deleted", params={"source": {"enum": list(Source)}}, statuses=(400, 404, 409, 503), schemas=openapi_schemas)
async def delete_item(request: Request) -> Response:
    tenant = request.path_params["tenant"]
    admit(request, tenant)
    source, item_id = request.path_params["source"], request.path_params["id"]
    if source not in tuple(Source):
        raise ServiceError("invalid-request", f"source must be conversation or document, not {source[:40]!r}",
                           field="source")

    def work(store):
        return store.delete_conversation(item_id) if source == "conversation" else store.delete_document(item_id)

    if not await on_store(request, tenant, Write(work)):
        raise ServiceError("not-found", f"tenant {tenant!r} has no {source} {item_id!r}")
    return json_response({"source": source, "id": item_id, "deleted": True})
