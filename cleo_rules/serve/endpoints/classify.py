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

from ..body import BadRequest, parse_json, read_batch, read_classify
from ..responses import JSON_TYPES, json_response
from .common import add_timings, admit, decision_record

__all__ = ["classify", "classify_batch", "explain"]


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
