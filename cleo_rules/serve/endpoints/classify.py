"""``POST /v1/classify``, ``POST /v1/classify/batch`` and ``POST /v1/explain``: the classifier over HTTP.

The body is read and judged (:mod:`cleo_rules.serve.body`) and the message
classified on a worker thread, by the one pack serving when the request
began. A batch answers every item in order; an item the body reader
refuses gets its problem in its place, the others are answered. An
explanation (:meth:`Pack.explain <cleo_rules.pack.model.Pack.explain>`) is
the same decision with every rule's attempt and the near misses, what the
playground shows of a turn no rule took; it is not counted among the
decisions served.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from ...explain import REASONS
from ...kinds import DecisionKind
from ..body import BadRequest, parse_json, read_batch, read_classify, request_schemas
from ..responses import JSON_TYPES, json_response
from ..routes import endpoint, ref
from .common import add_timings, admit, decision_record

__all__ = ["classify", "classify_batch", "explain", "explain_schemas", "openapi_schemas"]


def openapi_schemas(settings) -> dict:
    """A classify request and a batch of them (their models' schemas at the limits of ``settings``), a decision and a
    batch's answer."""
    nullable_str = {"type": ["string", "null"]}
    return {
        **request_schemas(settings, "ClassifyRequest", "BatchRequest"),
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
            "properties": {"error": ref("Problem")},
        },
        "BatchResponse": {
            "type": "object", "required": ["results"],
            "properties": {"results": {"type": "array", "items": {"oneOf": [ref("Decision"), ref("ItemError")]}}},
        },
    }


def explain_schemas(settings) -> dict:
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
                "decision": ref("Decision"),
                "normalized": {"type": "string", "description": "The text the patterns saw."},
                "words": {"type": "array", "items": {"type": "string"}},
                "attempts": {"type": "array", "items": ref("Attempt")},
                "parts": {"type": "array", "items": {"type": "object"}},
                "near_misses": {"type": "array", "items": ref("NearMiss"), "description": (
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
                "needs": {"type": "string", "description": "What the rule needs, in the pack's terms."},
                "lacks": {"type": "string", "description": "What the message lacks of it, on the span tested."},
            },
        },
    }


@endpoint("POST", "/v1/classify", summary="Classify one message", body="ClassifyRequest", ok="Decision",
          statuses=(400, 408, 413, 415, 503), schemas=openapi_schemas)
async def classify(request: Request) -> Response:
    service = admit(request)
    settings = service.settings
    raw = await service.read_body(request, settings.max_body_bytes, JSON_TYPES)
    pack = service.packs.pack  # read once: one pack answers the whole request

    def work():
        message, history = read_classify(parse_json(raw), settings)
        start = time.perf_counter()
        return pack.classify(message, history), time.perf_counter() - start  # the decision, then the time

    decision, seconds = await service.off_loop(work)
    add_timings(request, [("classify", seconds)])
    service.metrics.decided(decision)
    return json_response(decision_record(decision))


@endpoint("POST", "/v1/classify/batch", summary="Classify many messages, answered in order", body="BatchRequest",
          ok="BatchResponse", statuses=(400, 408, 413, 415, 503), schemas=openapi_schemas)
async def classify_batch(request: Request) -> Response:
    service = admit(request)
    settings, metrics = service.settings, service.metrics
    raw = await service.read_body(request, settings.max_body_bytes, JSON_TYPES)
    pack = service.packs.pack

    def work():
        items = read_batch(parse_json(raw), settings)
        start = time.perf_counter()
        out = []
        for n, item in enumerate(items):
            try:
                message, history = read_classify(item, settings, field=f"items[{n}]")
            except BadRequest as exc:  # this item is refused; the others are answered
                out.append({"error": exc.body()})
                continue
            decision = pack.classify(message, history)
            metrics.decided(decision)
            out.append(decision_record(decision))
        return out, time.perf_counter() - start

    results, seconds = await service.off_loop(work)
    add_timings(request, [("classify", seconds)])
    return json_response({"results": results})


@endpoint("POST", "/v1/explain", summary="Classify one message and say why: every rule's attempt and the near misses",
          body="ClassifyRequest", ok="Explanation", statuses=(400, 408, 413, 415, 503), schemas=explain_schemas)
async def explain(request: Request) -> Response:
    service = admit(request)
    settings = service.settings
    raw = await service.read_body(request, settings.max_body_bytes, JSON_TYPES)
    pack = service.packs.pack

    def work():
        message, history = read_classify(parse_json(raw), settings)
        start = time.perf_counter()
        return pack.explain(message, history), time.perf_counter() - start

    explanation, seconds = await service.off_loop(work)
    add_timings(request, [("explain", seconds)])
    return json_response({**explanation.to_dict(), "decision": decision_record(explanation.decision)})
