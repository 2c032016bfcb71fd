"""/metrics (Prometheus) and /readyz (the database answers and is at the newest migration).

/readyz says "ready" (200) or "not ready" (503) and nothing more, unless it is asked with the
metrics token: then why, and which migration the database and the code are at. A stranger
learns neither the version nor the database's errors.

/metrics reads the database at scrape time (see service_layer/queries/ops.py for why) and
adds this process's own HTTP counters. It answers a bearer token when
REPLYGUARD_METRICS_TOKEN is set, and otherwise loopback clients only: the numbers cover
every workspace, so they are the operator's, not a tenant's.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoint annotations at run time.

import ipaddress
import time
from collections.abc import Iterator

from fastapi import APIRouter, HTTPException
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from replyguard.adapters.db.migrate import code_heads
from replyguard.entrypoints.web.api import PREFIX as API_PREFIX
from replyguard.entrypoints.web.context import WebContext
from replyguard.entrypoints.web.security import same_secret
from replyguard.service_layer.queries.ops import OpsSnapshot, database_revision, ops_snapshot


class DatabaseCollector(Collector):
    def __init__(self, ctx: WebContext) -> None:
        self.ctx = ctx

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        with self.ctx.scoped.installation() as uow:
            snap = ops_snapshot(uow)
        yield from _families(snap, self.ctx.app.clock.now().timestamp())
        took = GaugeMetricFamily(
            "replyguard_metrics_read_seconds", "Time this scrape spent reading the database"
        )
        took.add_metric([], time.perf_counter() - started)
        yield took


def _families(snap: OpsSnapshot, now: float) -> Iterator[Metric]:
    steps = GaugeMetricFamily("replyguard_steps", "Steps by state, every workspace", labels=["state"])
    for state, n in sorted(snap.steps_by_state.items()):
        steps.add_metric([state], n)
    yield steps
    sends = CounterMetricFamily("replyguard_sends", "Emails the transport accepted (steps sent)")
    sends.add_metric([], snap.steps_by_state.get("sent", 0))
    yield sends
    refusals = CounterMetricFamily(
        "replyguard_send_refusals", "Sends refused by the re-check at send time", labels=["reason"]
    )
    for reason, n in sorted(snap.refusals_by_reason.items()):
        refusals.add_metric([reason], n)
    yield refusals
    replies = CounterMetricFamily("replyguard_replies", "Replies recorded, by kind", labels=["kind"])
    for kind, n in sorted(snap.replies_by_kind.items()):
        replies.add_metric([kind], n)
    yield replies
    latency = HistogramMetricFamily(
        "replyguard_reply_cancel_seconds",
        "From an inbound reply stored to its reply transaction (queued steps cancelled) committed",
    )
    buckets = [(str(le), n) for le, n in snap.latency_buckets] + [("+Inf", snap.latency_count)]
    latency.add_metric([], buckets, sum_value=snap.latency_sum)
    yield latency
    lag = GaugeMetricFamily("replyguard_worker_lag_seconds", "Age of the oldest due step not yet claimed")
    lag.add_metric([], snap.worker_lag_seconds)
    yield lag
    errors = CounterMetricFamily(
        "replyguard_inbound_source_errors", "Errors reading an inbound source", labels=["workspace", "source"]
    )
    age = GaugeMetricFamily(
        "replyguard_inbound_source_poll_age_seconds",
        "Since the last completed read of an inbound source",
        labels=["workspace", "source"],
    )
    for src in snap.sources:
        errors.add_metric([src.workspace, src.source], src.errors)
        if src.last_poll_at is not None:
            age.add_metric([src.workspace, src.source], max(now - src.last_poll_at.timestamp(), 0.0))
    yield errors
    yield age
    backlog = GaugeMetricFamily(
        "replyguard_notice_backlog", "Notices in the outbox: not yet delivered on every channel"
    )
    backlog.add_metric([], snap.notice_backlog)
    yield backlog
    inbound = GaugeMetricFamily(
        "replyguard_inbound_messages", "Inbound messages by status", labels=["status"]
    )
    for status, n in sorted(snap.inbound_by_status.items()):
        inbound.add_metric([status], n)
    yield inbound


#: Methods counted under their own name. The HTTP server hands any token over as the method,
#: and every label value is a series kept for the process's life: the others are "other".
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class HttpMetrics:
    """This process's requests, by route template (never the raw path: it may hold a secret)
    and method (a known one, or "other"): a bounded set of series, whatever clients send."""

    def __init__(self, app: ASGIApp, registry: CollectorRegistry) -> None:
        self.app = app
        self.requests = Counter(
            "replyguard_http_requests",
            "HTTP requests served by this process",
            ["method", "route", "status"],
            registry=registry,
        )
        self.seconds = Histogram(
            "replyguard_http_request_seconds",
            "HTTP request duration in this process",
            ["route"],
            registry=registry,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            if scope.get("path", "").startswith(API_PREFIX) and not route.startswith(API_PREFIX):
                route = API_PREFIX + route  # routers included with a prefix keep their own path
            method = scope.get("method", "")
            self.requests.labels(method if method in _METHODS else "other", route, str(status)).inc()
            self.seconds.labels(route).observe(time.perf_counter() - started)


def _loopback(request: Request) -> bool:
    try:
        return request.client is not None and ipaddress.ip_address(request.client.host).is_loopback
    except ValueError:
        return False


def router(ctx: WebContext, registry: CollectorRegistry) -> APIRouter:
    routes = APIRouter(include_in_schema=False)
    registry.register(DatabaseCollector(ctx))
    heads = code_heads()

    def operator(request: Request) -> bool:
        """Does the request carry the metrics token (when one is set)?"""
        token = ctx.settings.metrics_token
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        return bool(token) and scheme.lower() == "bearer" and same_secret(given.strip(), token or "")

    @routes.get("/metrics")
    def metrics(request: Request) -> Response:
        if ctx.settings.metrics_token:
            if not operator(request):
                raise HTTPException(404)
        elif not _loopback(request):
            raise HTTPException(404)
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @routes.get("/readyz")
    def readyz(request: Request) -> JSONResponse:
        details = operator(request)
        try:
            with ctx.scoped.installation() as uow:
                uow.session.execute(text("SELECT 1"))
                revision = database_revision(uow)
        except SQLAlchemyError as exc:
            down = {"reason": "database unreachable", "error": exc.__class__.__name__}
            return JSONResponse({"status": "not ready", **(down if details else {})}, 503)
        if revision not in heads:
            why: dict[str, object] = {
                "reason": "migrations pending",
                "database": revision,
                "code": sorted(heads),
            }
            return JSONResponse({"status": "not ready", **(why if details else {})}, 503)
        return JSONResponse({"status": "ready", **({"revision": revision} if details else {})})

    return routes
