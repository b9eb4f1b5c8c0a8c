"""Prometheus metrics of one service process (``GET /metrics``).

Each app has its own registry, so two apps in one process never share
counters. Exposed:

``cleo_http_requests_total{endpoint,method,status}``           requests answered
``cleo_http_request_duration_seconds{endpoint,method,status}`` time inside the service (histogram)
``cleo_http_requests_in_flight``                               requests being answered now
``cleo_requests_shed_total{endpoint}``                         turns and ingests refused with 503: queue full
``cleo_request_body_bytes_in_flight``                          bytes of request bodies being read now
``cleo_request_bodies_refused_total``                          bodies refused with 503: over the bytes in flight
``cleo_request_read_timeouts_total``                           requests whose headers or body came too late
``cleo_decisions_total{kind}``                                 classifier decisions, turns and batches included
``cleo_regex_timeouts_total{rule}``                            decisions whose rule ran out of time
``cleo_turn_stage_seconds{stage}``                             stage timings of turns (histogram)
``cleo_pack_reloads_total``, ``cleo_pack_rejections_total``    hot reloads swapped in and refused
``cleo_pack_info{pack,version,hash}``                          1 for the pack serving now
``cleo_open_stores``                                           tenants' memory stores open now
``cleo_ready``                                                 1 once the service is ready

``endpoint`` is the route's path template (``/v1/tenants/{tenant}/turns``),
never the raw path, so tenants and ids do not multiply the series; a path no
route answers is ``unmatched``. ``method`` is one of :data:`METHODS`, any
other method ``other``: whatever clients send, the series stay bounded.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

LATENCY_BUCKETS = (0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
STAGE_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
STAGES = ("classify", "embed", "search", "metadata", "context", "trace", "total")
TIMEOUT_NOTE = "timeout in "  # how a decision names a rule that ran out of time
#: the methods counted by name (RFC 9110's and PATCH); a request with any other is counted as ``other``
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})


class Metrics:
    """The counters and histograms of one app, and :meth:`render` for ``/metrics``.

    ``status`` is a callable returning what the live collector reports:
    ``{"pack": PackManager or None, "open_stores": int, "ready": bool}``.
    """

    def __init__(self, status):
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("cleo_http_requests", "HTTP requests answered, by endpoint, method and status.",
                                ("endpoint", "method", "status"), registry=r)
        self.latency = Histogram("cleo_http_request_duration_seconds",
                                 "Time from receiving a request to starting its response, by endpoint, method "
                                 "and status.", ("endpoint", "method", "status"), buckets=LATENCY_BUCKETS,
                                 registry=r)
        self.in_flight = Gauge("cleo_http_requests_in_flight", "Requests being answered now.", registry=r)
        self.shed = Counter("cleo_requests_shed", "Requests refused with 503 because the tenant's queue was full.",
                            ("endpoint",), registry=r)
        self.body_bytes = Gauge("cleo_request_body_bytes_in_flight", "Bytes of request bodies being read now.",
                                registry=r)
        self.bodies_refused = Counter("cleo_request_bodies_refused", "Request bodies refused with 503: they would "
                                                                     "have gone over the bytes in flight.", registry=r)
        self.read_timeouts = Counter("cleo_request_read_timeouts", "Requests whose headers or body did not arrive "
                                                                   "in time (408, or the connection closed).",
                                     registry=r)
        self.decisions = Counter("cleo_decisions", "Classifier decisions, by kind.", ("kind",), registry=r)
        self.timeouts = Counter("cleo_regex_timeouts", "Decisions whose rule ran out of time (searched as typed).",
                                ("rule",), registry=r)
        self.stages = Histogram("cleo_turn_stage_seconds", "Seconds per stage of a turn.", ("stage",),
                                buckets=STAGE_BUCKETS, registry=r)
        self._kinds: dict = {}
        self._stages = {stage: self.stages.labels(stage) for stage in STAGES}
        self._children: dict[tuple[str, str, int], tuple] = {}
        r.register(_Live(status))

    def request(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request; ``endpoint`` is a route's template or ``unmatched``, ``method`` any."""
        if method not in METHODS:
            method = "other"
        key = (endpoint, method, status)
        pair = self._children.get(key)
        if pair is None:
            labels = (endpoint, method, str(status))
            pair = self._children[key] = (self.requests.labels(*labels), self.latency.labels(*labels))
        pair[0].inc()
        pair[1].observe(seconds)

    def decided(self, decision) -> None:
        child = self._kinds.get(decision.kind)
        if child is None:
            child = self._kinds[decision.kind] = self.decisions.labels(decision.kind)
        child.inc()
        note = decision.note
        if note and note.startswith(TIMEOUT_NOTE):
            self.timeouts.labels(note[len(TIMEOUT_NOTE):]).inc()

    def turn(self, timings: dict) -> None:
        for stage, seconds in timings.items():
            child = self._stages.get(stage)
            if child is not None:
                child.observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Live:
    """Values read at scrape time: the pack manager's counters, open stores, readiness."""

    def __init__(self, status):
        self._status = status

    def describe(self):
        return []

    def collect(self):
        status = self._status()
        manager = status.get("pack")
        reloads = CounterMetricFamily("cleo_pack_reloads", "Rule packs swapped in by hot reload since start.")
        rejections = CounterMetricFamily("cleo_pack_rejections", "Rule packs refused by the acceptance gate.")
        info = GaugeMetricFamily("cleo_pack_info", "The rule pack serving now.", labels=("pack", "version", "hash"))
        reloads.add_metric((), manager.reloads if manager is not None else 0)
        # refusals before the first pack served count too, so the counter never goes down
        rejections.add_metric((), status.get("startup_rejections", 0) + (manager.rejections if manager else 0))
        if manager is not None:
            pack = manager.pack
            info.add_metric((pack.name, pack.version, pack.content_hash), 1)
        yield reloads
        yield rejections
        yield info
        yield GaugeMetricFamily("cleo_open_stores", "Tenants' memory stores open now.",
                                value=status.get("open_stores", 0))
        yield GaugeMetricFamily("cleo_ready", "1 once the pack is loaded and, with memory, the model is warm.",
                                value=1 if status.get("ready") else 0)
